"""schemathesis against the served OpenAPI document: the real service (SQLite, the demo fleet
loaded) is fuzzed from ``/openapi.json`` with a bounded number of examples per operation
(``MAX_EXAMPLES``), with the auth and microversion headers, and must show no server error,
and every response must match the documented status codes, content types and schemas.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.servers import running, service_env

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
COMMAND = shutil.which("placement-numa", path=str(BIN)) or "placement-numa"
MAX_EXAMPLES = 10
CHECKS = (
    "not_a_server_error,status_code_conformance,content_type_conformance,"
    "response_schema_conformance"
)


def test_schemathesis_finds_no_failure(tmp_path: Path) -> None:
    schemathesis = shutil.which("schemathesis", path=str(BIN)) or shutil.which("schemathesis")
    assert schemathesis, "schemathesis is a test dependency (pip install -e '.[test]')"
    env = service_env(
        PLACEMENT_NUMA_DATABASE_URL=f"sqlite:///{tmp_path / 'st.sqlite'}",
        PLACEMENT_NUMA_ACCESS_LOG="false",
    )
    with running(
        [COMMAND, "serve", "--port", "19230"], 19230, tmp_path / "serve.log", env=env, cwd=tmp_path
    ) as service:
        demo = subprocess.run(
            [COMMAND, "demo", "--url", service.base_url], env=env, capture_output=True, text=True
        )
        assert demo.returncode == 0, demo.stderr
        result = subprocess.run(
            [
                schemathesis,
                "run",
                f"{service.base_url}/openapi.json",
                "--checks",
                CHECKS,
                "--max-examples",
                str(MAX_EXAMPLES),
                "--phases",
                "examples,coverage,fuzzing",
                "--generation-deterministic",
                "--request-timeout",
                "30",
                "-H",
                "x-auth-token: admin",
                "-H",
                "openstack-api-version: placement 1.39",
                "--no-color",
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=900,
            env={**env, "SCHEMATHESIS_HOOKS": ""},
        )
        print(result.stdout[-3000:])
        assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-2000:]
        assert "Traceback" not in service.log_text()
