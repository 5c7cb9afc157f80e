"""schemathesis against the served OpenAPI document (issue 29): the real service (SQLite, the demo
fleet loaded) is fuzzed from ``/openapi.json`` with every check (``tests/schemathesis_runs.py``),
the microversion header pinned to the newest version, absent and ``latest``, seed ``SEED`` and
``MAX_EXAMPLES`` examples per operation (a few minutes in all). Every mode must show no server
error, no hang, no traceback in the service log, and no failure outside the classes that OpenAPI
cannot express (``KNOWN``, named in ``doc/source/reference/api.rst``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.schemathesis_runs import MODES, run_all
from tests.servers import free_port

pytestmark = pytest.mark.slow

MAX_EXAMPLES = 10
# the first free one of PORT.. (another run on this machine, e.g. CI's, may hold PORT: its
# server would answer the readiness probe and this run would fuzz it)
PORT = 19230


def test_schemathesis_finds_no_failure(tmp_path: Path) -> None:
    results, tracebacks = run_all(tmp_path, free_port(range(PORT, PORT + 50)), MAX_EXAMPLES)
    assert [result.mode for result in results] == list(MODES)
    report = "\n".join(result.line() for result in results)
    print(report)
    for result in results:
        assert result.operations >= 40, report
        assert not any(status >= 500 for status in result.statuses), report
        failures = "\n".join(
            f"{code} {operation}: {title}\n  {example}"
            for (code, operation, title), example in sorted(result.failures.items())
        )
        assert not result.failures, f"{result.mode}:\n{failures}"
    assert not tracebacks, tracebacks
