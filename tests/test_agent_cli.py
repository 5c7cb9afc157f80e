"""``placement-numa agent``: --show on real machine shapes, exit codes (no service needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placement_numa.cli import main
from tests.sysfs_fixtures import amd_epyc_nps4, one_cell_vm


def test_show_prints_the_desired_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sys = amd_epyc_nps4(tmp_path)
    code = main(
        [
            "agent",
            "--show",
            "--sysfs-root",
            str(sys),
            "--hostname",
            "epyc1",
            "--disk-gb",
            "900",
            "--cpu-dedicated-set",
            "8-63,72-127",
            "--cpu-shared-set",
            "0-7,64-71",
        ]
    )
    assert code == 0
    document = json.loads(capsys.readouterr().out)
    providers = {p["name"]: p for p in document["providers"]}
    assert providers["epyc1"]["inventories"]["DISK_GB"]["total"] == 900
    assert providers["epyc1_NUMA0"]["inventories"]["VCPU"]["total"] == 16
    assert "PCPU" not in providers["epyc1_NUMA0"]["inventories"]
    assert providers["epyc1_NUMA7"]["inventories"]["PCPU"]["total"] == 16
    assert providers["epyc1_NUMA7_PAGE_4KB"]["parent"] == "epyc1_NUMA7"
    assert document["cells"] == list(range(8))
    assert document["distances"][0] == [10, 11, 12, 12, 32, 32, 32, 32]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--cpu-dedicated-set", "0-9"], "cpu_dedicated_set names CPUs 4-9 that this host lacks"),
        (["--cpu-shared-set", "1-x"], "invalid range expression"),
    ],
    ids=["unknown-cpus", "bad-spec"],
)
def test_invalid_configuration_exits_2(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, options: list[str], message: str
) -> None:
    sys = one_cell_vm(tmp_path)
    code = main(["agent", "--show", "--sysfs-root", str(sys), "--disk-gb", "1", *options])
    assert code == 2
    assert message in caplog.text


def test_unreachable_service_exits_1(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    sys = one_cell_vm(tmp_path)
    code = main(["agent", "--once", "--sysfs-root", str(sys), "--disk-gb", "1",
                 "--placement-url", "http://127.0.0.1:9"])  # fmt: skip
    assert code == 1
    assert "sync failed" in caplog.text


def test_keystone_auth_without_password_exits_2(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PLACEMENT_NUMA_AGENT_PASSWORD", raising=False)
    sys = one_cell_vm(tmp_path)
    code = main(["agent", "--once", "--sysfs-root", str(sys), "--disk-gb", "1",
                 "--auth-url", "http://127.0.0.1:9/v3", "--username", "nova"])  # fmt: skip
    assert code == 2
    assert "auth_url needs username and password" in caplog.text


def test_unreachable_keystone_exits_1(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLACEMENT_NUMA_AGENT_PASSWORD", "secret")
    sys = one_cell_vm(tmp_path)
    code = main(["agent", "--once", "--sysfs-root", str(sys), "--disk-gb", "1",
                 "--placement-url", "http://127.0.0.1:9",
                 "--auth-url", "http://127.0.0.1:9/v3", "--username", "nova"])  # fmt: skip
    assert code == 1
    assert "sync failed: Keystone at http://127.0.0.1:9/v3" in caplog.text
