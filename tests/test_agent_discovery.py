"""Host discovery, settings validation and the desired tree, on sysfs trees of real shapes
(pure)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from placement_numa.agent.config import AgentConfigError, AgentSettings
from placement_numa.agent.desired_tree import DesiredTree, build
from placement_numa.agent.sysfs import SysfsError, discover
from tests.sysfs_fixtures import (
    HUGE_1G,
    HUGE_2M,
    amd_epyc_nps4,
    one_cell_vm,
    two_socket_intel,
    uneven_hugepages,
)

GiB_MB = 1024


def tree_for(sys: Path, **settings: object) -> DesiredTree:
    host = discover(sys, small_page_kb=4)
    options: dict[str, object] = {"hostname": "cn1", "disk_gb": 100, **settings}
    return build(host, AgentSettings(**options).policy_for(host))  # type: ignore[arg-type]


def test_two_socket_intel_discovery(tmp_path: Path) -> None:
    host = discover(two_socket_intel(tmp_path), small_page_kb=4)
    assert [c.id for c in host.cells] == [0, 1]
    assert host.cells[0].cpus == frozenset([*range(0, 20), *range(40, 60)])
    assert host.cells[1].memory_kb == 192 * 1024 * 1024
    assert host.distances == ((10, 21), (21, 10))
    assert host.thread_siblings[3] == frozenset({3, 43})
    assert [p.size_kb for p in host.cells[0].hugepages] == [HUGE_2M, HUGE_1G]
    assert host.cell_of(61) == 1


def test_amd_epyc_nps4_discovery(tmp_path: Path) -> None:
    host = discover(amd_epyc_nps4(tmp_path), small_page_kb=4)
    assert len(host.cells) == 8
    assert host.cells[5].cpus == frozenset([*range(40, 48), *range(104, 112)])
    assert host.distance(0, 1) == 11
    assert host.distance(0, 3) == 12
    assert host.distance(2, 6) == 32
    assert host.has_smt(frozenset({40}))


def test_uneven_hugepages_discovery(tmp_path: Path) -> None:
    host = discover(uneven_hugepages(tmp_path), small_page_kb=4)
    pools = {(c.id, p.size_kb): (p.total, p.free) for c in host.cells for p in c.hugepages}
    assert pools == {
        (0, HUGE_2M): (1024, 1000),
        (0, HUGE_1G): (4, 2),
        (1, HUGE_2M): (512, 512),
        (1, HUGE_1G): (0, 0),
    }
    assert not host.has_smt(host.cpus)


def test_host_without_numa_dirs_is_one_cell(tmp_path: Path) -> None:
    host = discover(one_cell_vm(tmp_path), small_page_kb=4)
    assert len(host.cells) == 1
    cell = host.cells[0]
    assert (cell.id, cell.cpus, cell.memory_kb) == (0, frozenset(range(4)), 8 * 1024 * 1024)
    assert host.distances == ((10,),)
    assert [p.size_kb for p in cell.hugepages] == [HUGE_2M]


def test_malformed_sysfs_names_the_file(tmp_path: Path) -> None:
    sys = two_socket_intel(tmp_path)
    (sys / "devices/system/node/node1/distance").write_text("21\n")
    with pytest.raises(SysfsError, match="node1/distance lists 1 distances for 2 cells"):
        discover(sys)
    (sys / "devices/system/node/node1/cpulist").write_text("20-x\n")
    with pytest.raises(SysfsError, match="node1/cpulist"):
        discover(sys)


def test_intel_default_everything_vcpu(tmp_path: Path) -> None:
    tree = tree_for(two_socket_intel(tmp_path), reserved_host_memory_mb=4096, reserved_host_cpus=2)
    paths = [p.path for p in tree.providers]
    assert paths == [
        "",
        "NUMA0", "NUMA0/PAGE_4KB", "NUMA0/PAGE_2048KB", "NUMA0/PAGE_1048576KB",
        "NUMA1", "NUMA1/PAGE_4KB", "NUMA1/PAGE_2048KB", "NUMA1/PAGE_1048576KB",
    ]  # fmt: skip
    by_path = tree.by_path()
    assert by_path[""].inventories["DISK_GB"].total == 100
    cell0, cell1 = by_path["NUMA0"], by_path["NUMA1"]
    assert cell0.name == "cn1_NUMA0"
    assert set(cell0.inventories) == {"VCPU"}
    assert (cell0.inventories["VCPU"].total, cell0.inventories["VCPU"].reserved) == (40, 2)
    assert cell1.inventories["VCPU"].reserved == 0
    assert cell0.inventories["VCPU"].allocation_ratio == 4.0
    assert cell0.traits == {"HW_NUMA_ROOT"}
    assert by_path[""].traits == {"HW_CPU_HYPERTHREADING"}  # on the compute node, as Nova
    small = by_path["NUMA1/PAGE_4KB"]
    assert small.name == "cn1_NUMA1_PAGE_4KB"
    assert small.traits == {"MEMORY_PAGE_SIZE_SMALL", "CUSTOM_MEMORY_PAGE_SIZE_4"}
    assert small.inventories["MEMORY_MB"].as_dict() == {
        "total": 192 * GiB_MB, "reserved": 2048, "min_unit": 1, "max_unit": 192 * GiB_MB,
        "step_size": 1, "allocation_ratio": 1.0,
    }  # fmt: skip
    # Offered page sizes without pages: provider with traits, no inventory.
    assert by_path["NUMA0/PAGE_1048576KB"].inventories == {}
    assert by_path["NUMA0/PAGE_1048576KB"].traits == {
        "MEMORY_PAGE_SIZE_LARGE",
        "CUSTOM_MEMORY_PAGE_SIZE_1048576",
    }
    assert tree.distances == ((10, 21), (21, 10))


def test_intel_dedicated_and_shared_sets(tmp_path: Path) -> None:
    # Dedicated: socket 0 cores 4-19 and their siblings, but not CPU 8 nor 48; shared: 0-3,40-43.
    tree = tree_for(
        two_socket_intel(tmp_path),
        cpu_dedicated_set="4-19,44-59,^8,^48,20-39,60-79",
        cpu_shared_set="0-3,40-43",
    )
    by_path = tree.by_path()
    assert by_path["NUMA0"].inventories["PCPU"].total == 30
    assert by_path["NUMA0"].inventories["VCPU"].total == 8
    assert by_path["NUMA1"].inventories["PCPU"].total == 40
    assert "VCPU" not in by_path["NUMA1"].inventories


def test_only_dedicated_set_reports_no_vcpu(tmp_path: Path) -> None:
    tree = tree_for(two_socket_intel(tmp_path), cpu_dedicated_set="0-79")
    assert all("VCPU" not in p.inventories for p in tree.providers)


def test_epyc_eight_cells(tmp_path: Path) -> None:
    tree = tree_for(amd_epyc_nps4(tmp_path), reserved_host_memory_mb=801)
    cells = tree.cells()
    assert [c.cell_id for c in cells] == list(range(8))
    assert all(c.inventories["VCPU"].total == 16 for c in cells)
    reserved = [
        tree.by_path()[f"NUMA{i}/PAGE_4KB"].inventories["MEMORY_MB"].reserved for i in range(8)
    ]
    assert reserved == [101] + [100] * 7
    assert tree.distances[0] == (10, 11, 12, 12, 32, 32, 32, 32)
    assert len({p.uuid for p in tree.providers}) == len(tree.providers) == 1 + 8 * 4


def test_uneven_hugepages_tree(tmp_path: Path) -> None:
    tree = tree_for(uneven_hugepages(tmp_path), reserved_host_memory_mb=0)
    inv = {p.path: p.inventories.get("MEMORY_MB") for p in tree.providers if "PAGE" in p.path}
    assert (
        inv["NUMA0/PAGE_4KB"] is not None
        and inv["NUMA0/PAGE_4KB"].total == 64 * GiB_MB - 2048 - 4096
    )
    assert inv["NUMA1/PAGE_4KB"] is not None and inv["NUMA1/PAGE_4KB"].total == 64 * GiB_MB - 1024
    two_m = inv["NUMA0/PAGE_2048KB"]
    assert two_m is not None and two_m.as_dict() == {
        "total": 2048,
        "reserved": 0,
        "min_unit": 2,
        "max_unit": 2048,
        "step_size": 2,
        "allocation_ratio": 1.0,
    }
    one_g = inv["NUMA0/PAGE_1048576KB"]
    assert one_g is not None and (one_g.total, one_g.step_size, one_g.min_unit) == (
        4096,
        1024,
        1024,
    )
    assert inv["NUMA1/PAGE_1048576KB"] is None
    assert "HW_CPU_HYPERTHREADING" not in tree.by_path()[""].traits


def test_one_cell_vm_tree(tmp_path: Path) -> None:
    tree = tree_for(one_cell_vm(tmp_path), reserved_host_memory_mb=512, cpu_allocation_ratio=16.0)
    assert [p.path for p in tree.providers] == ["", "NUMA0", "NUMA0/PAGE_4KB", "NUMA0/PAGE_2048KB"]
    assert tree.by_path()["NUMA0"].inventories["VCPU"].allocation_ratio == 16.0
    assert tree.by_path()["NUMA0/PAGE_4KB"].inventories["MEMORY_MB"].total == 8192


def test_uuids_are_deterministic(tmp_path: Path) -> None:
    sys = two_socket_intel(tmp_path)
    assert [p.uuid for p in tree_for(sys).providers] == [p.uuid for p in tree_for(sys).providers]
    assert tree_for(sys).root.uuid != tree_for(sys, hostname="cn2").root.uuid


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"cpu_dedicated_set": "70-90"}, "cpu_dedicated_set names CPUs 80-90 that this host lacks"),
        ({"cpu_shared_set": "0,200"}, "cpu_shared_set names CPUs 200 that this host lacks"),
        (
            {"reserved_host_cpus": 100},
            "reserved_host_cpus=100 exceeds the 80 CPUs reported as VCPU",
        ),
        ({"reserved_host_memory_mb": 10**7}, "reserved_host_memory_mb=10000000 exceeds"),
    ],
    ids=[
        "dedicated-unknown-cpus",
        "shared-unknown-cpus",
        "too-many-reserved-cpus",
        "too-much-reserved-memory",
    ],
)
def test_settings_checked_against_the_host(
    tmp_path: Path, settings: dict[str, object], message: str
) -> None:
    with pytest.raises(AgentConfigError, match=message):
        tree_for(two_socket_intel(tmp_path), **settings)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"cpu_dedicated_set": "0-7", "cpu_shared_set": "6-9"}, "overlap on CPUs 6-7"),
        ({"cpu_dedicated_set": "4-x"}, "invalid range expression '4-x'"),
        ({"cpu_shared_set": "3,^3"}, "names no CPUs"),
        (
            {"cpu_dedicated_set": "0-3", "reserved_host_cpus": 1},
            "reserved_host_cpus cannot be used",
        ),
        ({"cpu_allocation_ratio": 0}, "greater than 0"),
    ],
    ids=["overlap", "bad-spec", "empty-set", "reserved-with-dedicated", "zero-ratio"],
)
def test_settings_rules(settings: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        AgentSettings(**settings)  # type: ignore[arg-type]


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLACEMENT_NUMA_AGENT_CPU_DEDICATED_SET", "4-15,^8")
    monkeypatch.setenv("PLACEMENT_NUMA_AGENT_RESERVED_HOST_MEMORY_MB", "1024")
    settings = AgentSettings()
    assert settings.cpu_dedicated_set == "4-15,^8"
    assert settings.reserved_host_memory_mb == 1024
