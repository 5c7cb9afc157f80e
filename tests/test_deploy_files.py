"""The deployment files: the systemd unit (checked by systemd-analyze, its commands run for
real), the Dockerfile's user, config mount and HEALTHCHECK (the check's own command run against
a served process), docker-compose.yml's mounts and constraints.txt (Docker's daemon does not run
here: the image itself is not built)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from placement_numa.settings import Settings
from tests.backends import in_ci
from tests.servers import free_port, running, service_env

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
UNIT = ROOT / "etc" / "systemd" / "placement-numa.service"
INSTALLED = "/opt/placement-numa/bin/placement-numa"
VENV_COMMAND = str(Path(sys.executable).with_name("placement-numa"))


def _unit_for_this_venv(tmp_path: Path) -> Path:
    unit = tmp_path / "placement-numa.service"
    unit.write_text(UNIT.read_text().replace(INSTALLED, VENV_COMMAND))
    return unit


def test_systemd_unit_verifies(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        if in_ci():
            pytest.fail("systemd-analyze missing in CI (.ci/run installs systemd)")
        pytest.skip("systemd-analyze not installed")
    done = subprocess.run(
        [analyze, "verify", str(_unit_for_this_venv(tmp_path))],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and done.stderr == "" and done.stdout == "", done.stderr


def _directive(name: str) -> str:
    (value,) = re.findall(rf"^{name}=(.*)$", UNIT.read_text(), re.M)
    return value


def test_systemd_unit_is_unprivileged_and_reloads_with_hup() -> None:
    assert _directive("User") == "placement" and _directive("Group") == "placement"
    assert _directive("ExecReload") == "/bin/kill -HUP $MAINPID"
    assert _directive("KillSignal") == "SIGTERM"
    # configuration errors and a schema to upgrade or adopt first: no restart loop
    assert _directive("RestartPreventExitStatus") == "2 6"


def test_systemd_commands_serve_reload_and_stop(tmp_path: Path) -> None:
    """ExecStart as written (binary, config path, port swapped for this test, and one worker:
    the several-worker reload is tests/test_sighup.py's), then ExecReload's signal and
    KillSignal: served, reloaded while serving, stopped cleanly."""
    conf = tmp_path / "placement.conf"
    conf.write_text(
        f"[placement_database]\nconnection = sqlite:///{tmp_path / 'u.sqlite'}\n"
        "[api]\nauth_strategy = noauth2\n"
    )
    port = free_port(range(19860, 19880))
    argv = shlex.split(_directive("ExecStart"))
    assert argv[0] == INSTALLED
    swap = {INSTALLED: VENV_COMMAND, "/etc/placement/placement.conf": str(conf)}
    swap |= {"0.0.0.0": "127.0.0.1", "8778": str(port), "4": "1"}
    argv = [swap.get(arg, arg) for arg in argv]
    assert "--no-migrate" in argv
    subprocess.run(
        [VENV_COMMAND, "db", "upgrade", "--config-file", str(conf)],
        env=service_env(), check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    env = {k: v for k, v in service_env().items() if not k.startswith("PLACEMENT_NUMA_")}
    with running(argv, port, tmp_path / "unit.log", env=env, timeout=120) as service:
        service.process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 60
        while "reloaded configuration" not in service.log_text():
            assert time.monotonic() < deadline, service.log_text()[-3000:]
            time.sleep(0.2)
        with service.client() as client:
            assert client.get("/resource_providers").status_code == 200
        service.process.send_signal(signal.SIGTERM)
        # uvicorn re-raises the signal after its graceful shutdown: death by SIGTERM, which
        # systemd counts as a clean stop (the signal is the unit's KillSignal)
        code = service.process.wait(timeout=90)
        assert code in (0, -signal.SIGTERM), service.log_text()[-3000:]
        assert "Application shutdown complete" in service.log_text()


def _dockerfile() -> str:
    return (ROOT / "Dockerfile").read_text()


def test_dockerfile_runs_unprivileged_with_config_mount_and_constraints() -> None:
    text = _dockerfile()
    final_stage = text.split("\nFROM ")[-1]
    (user,) = re.findall(r"^USER (\S+)$", final_stage, re.M)
    assert user == "placement"
    assert 'VOLUME ["/etc/placement"]' in final_stage
    assert "PLACEMENT_NUMA_CONFIG_FILE=/etc/placement/placement.conf" in final_stage
    assert "-c /wheels/constraints.txt" in final_stage
    assert "useradd --system --uid 42482" in final_stage


def test_dockerfile_healthcheck_command_against_a_served_process(tmp_path: Path) -> None:
    (command,) = re.findall(r"^\s*CMD (\[.*\])$", _dockerfile().split("HEALTHCHECK", 1)[1], re.M)[
        :1
    ]
    argv = json.loads(command)
    assert argv[0] == "python" and "/healthcheck" in argv[-1]
    port = free_port(range(19880, 19900))
    argv = [sys.executable, *argv[1:-1], argv[-1].replace(":8778/", f":{port}/")]
    env = service_env(PLACEMENT_NUMA_DATABASE_URL=f"sqlite:///{tmp_path / 'h.sqlite'}")
    down = subprocess.run(argv, capture_output=True, timeout=60)
    assert down.returncode != 0  # nothing listening: unhealthy
    serve = [VENV_COMMAND, "serve", "--port", str(port)]
    with running(serve, port, tmp_path / "serve.log", env=env, timeout=120):
        assert subprocess.run(argv, capture_output=True, timeout=60).returncode == 0


def test_compose_mounts_the_config_and_its_file_parses() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    for name in ("migrate", "placement"):
        assert "./etc/compose:/etc/placement:ro" in compose["services"][name]["volumes"]
    settings = Settings(config_file=ROOT / "etc" / "compose" / "placement.conf")
    if "PLACEMENT_NUMA_AUTH_STRATEGY" not in os.environ:
        assert settings.auth_strategy == "noauth2"


def test_constraints_pin_every_runtime_dependency() -> None:
    """Each dependency named in pyproject.toml has exactly one pin in constraints.txt."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = {
        re.split(r"==", line)[0].lower().replace("_", "-").replace(".", "-")
        for line in (ROOT / "constraints.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    }
    named = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        named += [n for n in extra if not n.startswith("placement-numa")]
    for requirement in named:
        name = re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0]
        assert name.lower().replace("_", "-").replace(".", "-") in pins, name
