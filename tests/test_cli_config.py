"""``--config-file`` on every command, and its failures as one line and exit code 2.

Service commands read placement.conf; client commands read nova.conf's ``[placement]`` and
host options (``placement_numa.cli.config_file``). Exit codes: ``placement_numa.cli.failures``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from placement_numa.cli import build_parser, main
from tests.servers import free_port
from tests.sysfs_fixtures import one_cell_vm

# Every command but ``db`` (the adopt engineer's), with the arguments it needs to run.
SERVICE_COMMANDS = {
    "serve": ["serve", "--auth-strategy", "noauth2", "--port", "1"],
    "export-openapi": ["export-openapi", "--output", "-"],
    "status": ["status", "upgrade", "check"],
}
CLIENT_COMMANDS = {
    "agent": ["agent", "--show", "--disk-gb", "1"],
    "demo": ["demo"],
    "reshape": ["reshape", "plan", "--host", "cn1", "--to-flat"],
    "schedule": ["schedule", "--vcpus", "1", "--memory-mb", "512"],
}
ALL_COMMANDS = {**SERVICE_COMMANDS, **CLIENT_COMMANDS}

BAD_FILES = {
    "missing": None,
    "unparsable": "garbage without a section\n[broken\n",
}


def _only_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


def test_every_leaf_command_but_db_takes_config_file() -> None:
    parser = build_parser()
    for argv in ALL_COMMANDS.values():
        args = parser.parse_args([*argv, "--config-file", "x.conf"])
        assert args.config_file == "x.conf"


@pytest.mark.parametrize("problem", sorted(BAD_FILES), ids=sorted(BAD_FILES))
@pytest.mark.parametrize("command", sorted(ALL_COMMANDS), ids=sorted(ALL_COMMANDS))
def test_a_bad_config_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, problem: str
) -> None:
    path = tmp_path / "placement.conf"
    if BAD_FILES[problem] is not None:
        path.write_text(str(BAD_FILES[problem]))
    code = main([*ALL_COMMANDS[command], "--config-file", str(path)])
    line = _only_line(capsys.readouterr().err)
    assert code == 2
    assert str(path) in line
    assert ("not found" if problem == "missing" else "No ':' or '=' found") in line


@pytest.mark.parametrize("command", sorted(SERVICE_COMMANDS), ids=sorted(SERVICE_COMMANDS))
def test_a_value_that_does_not_parse_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    path = tmp_path / "placement.conf"
    path.write_text("[placement_database]\nmax_pool_size = ten\n")
    code = main([*SERVICE_COMMANDS[command], "--config-file", str(path)])
    line = _only_line(capsys.readouterr().err)
    assert code == 2
    assert line == (
        f"placement-numa {command}: {path}: [placement_database] max_pool_size: invalid value:"
        " invalid literal for int() with base 10: 'ten'"
    )


def test_serve_with_a_bad_file_prints_one_line_from_the_console_script(tmp_path: Path) -> None:
    """The installed ``placement-numa`` script itself: no traceback, exit 2."""
    path = tmp_path / "placement.conf"
    path.write_text("[placement]\nmax_allocation_candidates = many\n")
    script = Path(sys.executable).with_name("placement-numa")
    done = subprocess.run(
        [str(script), "serve", "--config-file", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "max_allocation_candidates: invalid value" in _only_line(done.stderr)


def test_client_commands_reach_the_endpoint_of_nova_conf(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``[placement] endpoint_override`` of nova.conf is the URL (here a closed port: the
    one-line unreachable failure, exit 1, names it); ``--url`` still wins over the file."""
    port = free_port(range(19870, 19900))
    nova_conf = tmp_path / "nova.conf"
    nova_conf.write_text(f"[placement]\nendpoint_override = http://127.0.0.1:{port}\n")
    code = main([*CLIENT_COMMANDS["schedule"], "--config-file", str(nova_conf)])
    line = _only_line(capsys.readouterr().err)
    assert code == 1 and f"127.0.0.1:{port}" in line, line

    other = free_port(p for p in range(19870, 19900) if p != port)
    argv = [*CLIENT_COMMANDS["demo"], "--config-file", str(nova_conf)]
    code = main([*argv, "--url", f"http://127.0.0.1:{other}"])
    line = _only_line(capsys.readouterr().err)
    assert code == 1 and f"127.0.0.1:{other}" in line, line


def test_agent_reads_host_options_of_nova_conf_below_its_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sysfs = one_cell_vm(tmp_path)
    nova_conf = tmp_path / "nova.conf"
    nova_conf.write_text("[DEFAULT]\nhost = cn-from-file\n[compute]\ncpu_dedicated_set = 1-3\n")
    argv = ["agent", "--show", "--sysfs-root", str(sysfs), "--disk-gb", "1"]
    monkeypatch.delenv("PLACEMENT_NUMA_AGENT_HOSTNAME", raising=False)

    assert main([*argv, "--config-file", str(nova_conf)]) == 0
    providers = {p["name"]: p for p in json.loads(capsys.readouterr().out)["providers"]}
    assert providers["cn-from-file_NUMA0"]["inventories"]["PCPU"]["total"] == 3

    monkeypatch.setenv("PLACEMENT_NUMA_AGENT_HOSTNAME", "cn-from-env")
    assert main([*argv, "--config-file", str(nova_conf)]) == 0
    names = {p["name"] for p in json.loads(capsys.readouterr().out)["providers"]}
    assert "cn-from-env" in names and "cn-from-file" not in names

    assert main([*argv, "--config-file", str(nova_conf), "--hostname", "cn-flag"]) == 0
    names = {p["name"] for p in json.loads(capsys.readouterr().out)["providers"]}
    assert "cn-flag" in names


def test_exit_codes_are_documented_in_the_help() -> None:
    epilog = build_parser().format_help()
    for text in ("2 invalid usage", "5 (schedule) no room", "3 (agent) reshape"):
        assert text in " ".join(epilog.split()), text
