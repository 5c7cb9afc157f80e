"""The command line as a user meets it: one line and an exit code for expected failures,
client commands that load neither FastAPI nor SQLAlchemy, help that names defaults, and the
demo loader and reshape plan against a real service.

Every subcommand is run against a service (or database) that is not there (port 19299 has no
listener): stderr holds exactly one line, stdout nothing, and the exit code is the documented
one (``placement_numa/cli/failures.py``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from placement_numa import __version__
from placement_numa.cli import build_parser
from tests.servers import HEADERS, running, service_env

ROOT = Path(__file__).resolve().parents[1]
COMMAND = shutil.which("placement-numa", path=str(Path(sys.executable).parent)) or "placement-numa"
DEAD_URL = "http://127.0.0.1:19299"
DEAD_DB = "postgresql://postgres@127.0.0.1:19299/nothing"

# (subcommand, arguments, exit code) against nothing listening.
AGAINST_NOTHING = [
    ("serve", ["serve", "--port", "19298", "--database-url", DEAD_DB], 1),
    ("db", ["db", "upgrade", "--database-url", DEAD_DB], 1),
    ("db-downgrade", ["db", "downgrade", "base", "--yes", "--database-url", DEAD_DB], 1),
    ("reshape", ["reshape", "plan", "--host", "cn1", "--to-flat", "--url", DEAD_URL], 1),
    ("reshape-apply", ["reshape", "apply", "--host", "cn1", "--to-flat", "--url", DEAD_URL], 1),
    ("agent", ["agent", "--once", "--placement-url", DEAD_URL], 1),
    ("demo", ["demo", "--url", DEAD_URL], 1),
    ("schedule", ["schedule", "--vcpus", "2", "--memory-mb", "1024", "--url", DEAD_URL], 1),
    ("defragment", ["defragment", "--vcpus", "2", "--memory-mb", "1024", "--url", DEAD_URL], 1),
    ("export-openapi", ["export-openapi", "--check", "--output", "/nonexistent/openapi.json"], 1),
]


def _run(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [COMMAND, *args], capture_output=True, text=True, env=service_env(), cwd=cwd, timeout=120
    )


def _subcommands() -> set[str]:
    parser = build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return set(action.choices)


def test_every_subcommand_is_covered() -> None:
    # status upgrade check prints oslo.upgradecheck's table: tests/test_upgrade_check.py
    assert _subcommands() == {
        name.split("-apply")[0].split("-downgrade")[0] for name, _, _ in AGAINST_NOTHING
    } | {"status"}


@pytest.mark.parametrize(
    ("args", "code"),
    [(a, c) for _, a, c in AGAINST_NOTHING],
    ids=[n for n, _, _ in AGAINST_NOTHING],
)
def test_against_nothing_one_line_and_exit_code(args: list[str], code: int, tmp_path: Path) -> None:
    result = _run(args, cwd=tmp_path)
    assert result.returncode == code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("command", ["agent", "demo", "reshape", "schedule", "defragment"])
def test_client_commands_load_neither_fastapi_nor_sqlalchemy(command: str) -> None:
    args = {
        "agent": ["agent", "--once", "--placement-url", DEAD_URL],
        "demo": ["demo", "--url", DEAD_URL],
        "reshape": ["reshape", "plan", "--host", "cn1", "--to-flat", "--url", DEAD_URL],
        "schedule": ["schedule", "--vcpus", "2", "--memory-mb", "1024", "--url", DEAD_URL],
        "defragment": ["defragment", "--vcpus", "2", "--memory-mb", "1024", "--url", DEAD_URL],
    }[command]
    code = (
        "import sys\n"
        "from placement_numa.cli import main\n"
        f"main({args!r})\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'fastapi', 'sqlalchemy',"
        " 'uvicorn', 'starlette'}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=service_env()
    )
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout + result.stderr


def test_version_and_help_name_defaults() -> None:
    version = _run(["--version"])
    assert version.returncode == 0 and version.stdout.strip() == f"placement-numa {__version__}"
    parser = build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    todo = list(action.choices.items())
    while todo:
        name, sub = todo.pop()
        text = sub.format_help()
        for option in sub._actions:
            if isinstance(option, argparse._SubParsersAction):
                todo.extend((f"{name} {k}", v) for k, v in option.choices.items())
                continue
            if not option.option_strings or option.dest == "help":
                continue
            assert option.help, f"{name} {option.option_strings} has no help"
            if option.default not in (None, False):
                assert f"default: {option.default}" in text or "default" in option.help, (
                    f"{name} {option.option_strings}: default not shown"
                )


def test_demo_twice_and_reshape_plan_output(tmp_path: Path) -> None:
    import httpx

    env = service_env(PLACEMENT_NUMA_DATABASE_URL=f"sqlite:///{tmp_path / 'demo.sqlite'}")
    with running(
        [COMMAND, "serve", "--port", "19210"], 19210, tmp_path / "serve.log", env=env, cwd=tmp_path
    ) as service:
        url = service.base_url
        first = _run(["demo", "--url", url])
        assert first.returncode == 0, first.stderr
        assert "amd-2s-nps4" in first.stdout
        second = _run(["demo", "--url", url])
        assert second.returncode == 1
        assert len(second.stderr.strip().splitlines()) == 1
        assert "already loaded" in second.stderr and "--if-empty" in second.stderr
        assert "{" not in second.stderr
        skipped = _run(["demo", "--if-empty", "--url", url])
        assert skipped.returncode == 0 and "nothing loaded" in skipped.stdout

        # A guest on the flat host, then its reshape plan: JSON without Python reprs.
        with httpx.Client(base_url=url, headers=HEADERS, timeout=30) as client:
            (legacy,) = client.get("/resource_providers?name=legacy-1").json()["resource_providers"]
            r = client.put(
                f"/allocations/{uuid.uuid4()}",
                json={
                    "allocations": {legacy["uuid"]: {"resources": {"VCPU": 2, "MEMORY_MB": 2048}}},
                    "project_id": "p",
                    "user_id": "u",
                    "consumer_generation": None,
                    "consumer_type": "INSTANCE",
                },
            )
            assert r.status_code == 204, r.text
        topology = tmp_path / "topology.json"
        topology.write_text(
            json.dumps(
                {
                    "cells": [
                        {"id": i, "pcpus": 0, "vcpus": 16, "memory_mb": {"4": 65536}}
                        for i in (0, 1)
                    ],
                    "distances": [[10, 21], [21, 10]],
                }
            )
        )
        plan = _run(
            ["reshape", "plan", "--host", "legacy-1", "--topology", str(topology), "--url", url]
        )
        assert plan.returncode == 0, plan.stderr
        document = json.loads(plan.stdout)
        assert "usages before MEMORY_MB 2048, VCPU 2, after MEMORY_MB 2048, VCPU 2" in " ".join(
            document["summary"]
        )
        assert "{'" not in plan.stdout and "{'" not in plan.stderr
        missing = _run(
            [
                "reshape",
                "plan",
                "--host",
                "legacy-1",
                "--topology",
                str(tmp_path / "absent.json"),
                "--url",
                url,
            ]
        )
        assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
