"""Flavor translation: every example of the Nova spec "NUMA Topology with Resource Providers",
plus CPU policies, thread and emulator policies, granular extra specs (pure, no database)."""

from __future__ import annotations

import pytest

from placement_numa.numa.flavor import Flavor, ImageProperties
from placement_numa.numa.numa_query import to_query_string
from placement_numa.numa.translate import translate
from tests.numa_helpers import canon

SPEC_8_CPU_2_NODES = """
    resources_MEM1=MEMORY_MB:4096 &required_MEM1=MEMORY_PAGE_SIZE_SMALL &resources_PROC1=VCPU:4
    &required_NUMA1=HW_NUMA_ROOT &same_subtree=_MEM1,_PROC1,_NUMA1
    &resources_MEM2=MEMORY_MB:4096 &required_MEM2=MEMORY_PAGE_SIZE_SMALL &resources_PROC2=VCPU:4
    &required_NUMA2=HW_NUMA_ROOT &same_subtree=_MEM2,_PROC2,_NUMA2 &group_policy=none"""
# The spec leaves group_policy out of its one-cell example; Placement requires it with more than
# one suffixed group, so the translation says none.
SPEC_8_CPU_1_NODE = """
    resources_MEM1=MEMORY_MB:8192 &required_MEM1=MEMORY_PAGE_SIZE_SMALL &resources_PROC1=VCPU:8
    &required_NUMA1=HW_NUMA_ROOT &same_subtree=_MEM1,_PROC1,_NUMA1 &group_policy=none"""
SPEC_UNEVEN_CPUS = """
    resources_MEM1=MEMORY_MB:4096 &required_MEM1=MEMORY_PAGE_SIZE_SMALL &resources_PROC1=VCPU:2
    &required_NUMA1=HW_NUMA_ROOT &same_subtree=_MEM1,_PROC1,_NUMA1
    &resources_MEM2=MEMORY_MB:4096 &required_MEM2=MEMORY_PAGE_SIZE_SMALL &resources_PROC2=VCPU:6
    &required_NUMA2=HW_NUMA_ROOT &same_subtree=_MEM2,_PROC2,_NUMA2 &group_policy=none"""
SPEC_UNEVEN_CPUS_AND_MEM = """
    resources_MEM1=MEMORY_MB:1024 &required_MEM1=MEMORY_PAGE_SIZE_SMALL &resources_PROC1=VCPU:2
    &required_NUMA1=HW_NUMA_ROOT &same_subtree=_MEM1,_PROC1,_NUMA1
    &resources_MEM2=MEMORY_MB:7168 &required_MEM2=MEMORY_PAGE_SIZE_SMALL &resources_PROC2=VCPU:6
    &required_NUMA2=HW_NUMA_ROOT &same_subtree=_MEM2,_PROC2,_NUMA2 &group_policy=none"""


def _pages(trait: str | None) -> str:
    req1 = f"&required_MEM1={trait}" if trait else ""
    req2 = f"&required_MEM2={trait}" if trait else ""
    return f"""
    resources_PROC1=VCPU:1 &resources_MEM1=MEMORY_MB:2048 {req1} &required_NUMA1=HW_NUMA_ROOT
    &same_subtree=_PROC1,_MEM1,_NUMA1
    &resources_PROC2=VCPU:1 &resources_MEM2=MEMORY_MB:2048 {req2} &required_NUMA2=HW_NUMA_ROOT
    &same_subtree=_PROC2,_MEM2,_NUMA2 &group_policy=none"""


SPEC_EXAMPLES = [
    pytest.param(8, 8192, {"hw:numa_nodes": "2"}, SPEC_8_CPU_2_NODES, id="numa_nodes=2"),
    pytest.param(8, 8192, {"hw:numa_nodes": "1"}, SPEC_8_CPU_1_NODE, id="numa_nodes=1"),
    pytest.param(
        8,
        8192,
        {"hw:numa_nodes": "2", "hw:numa_cpus.0": "0,1", "hw:numa_cpus.1": "2,3,4,5,6,7"},
        SPEC_UNEVEN_CPUS,
        id="numa_cpus",
    ),
    pytest.param(
        8,
        8192,
        {
            "hw:numa_nodes": "2",
            "hw:numa_cpus.0": "0,1",
            "hw:numa_mem.0": "1024",
            "hw:numa_cpus.1": "2,3,4,5,6,7",
            "hw:numa_mem.1": "7168",
        },
        SPEC_UNEVEN_CPUS_AND_MEM,
        id="numa_cpus+numa_mem",
    ),
    pytest.param(
        2,
        4096,
        {"hw:mem_page_size": "2MB", "hw:numa_nodes": "2"},
        _pages("CUSTOM_MEMORY_PAGE_SIZE_2048"),
        id="page_size=2MB",
    ),
    pytest.param(
        2,
        4096,
        {"hw:mem_page_size": "large", "hw:numa_nodes": "2"},
        _pages("MEMORY_PAGE_SIZE_LARGE"),
        id="page_size=large",
    ),
    pytest.param(
        2,
        4096,
        {"hw:mem_page_size": "small", "hw:numa_nodes": "2"},
        _pages("MEMORY_PAGE_SIZE_SMALL"),
        id="page_size=small",
    ),
    pytest.param(
        2, 4096, {"hw:mem_page_size": "any", "hw:numa_nodes": "2"}, _pages(None), id="page_size=any"
    ),
]


@pytest.mark.parametrize(("vcpus", "memory_mb", "specs", "expected"), SPEC_EXAMPLES)
def test_spec_examples(vcpus: int, memory_mb: int, specs: dict[str, str], expected: str) -> None:
    numa = translate(Flavor(vcpus=vcpus, memory_mb=memory_mb, extra_specs=specs))
    assert canon(to_query_string(numa.query)) == canon(expected)


def test_spec_non_numa_flavor_never_lands_on_numa_hosts() -> None:
    numa = translate(Flavor(vcpus=4, memory_mb=2048))
    assert canon(numa.explain) == canon("resources=VCPU:4,MEMORY_MB:2048&required=!HW_NUMA_ROOT")
    assert numa.fallback is None and numa.cells == ()


def test_spec_fallback_for_hosts_not_reshaped() -> None:
    numa = translate(Flavor(vcpus=8, memory_mb=8192, extra_specs={"hw:numa_nodes": "2"}))
    assert numa.fallback is not None
    assert canon(to_query_string(numa.fallback)) == canon(
        "resources=VCPU:8,MEMORY_MB:8192&required=!HW_NON_NUMA,!HW_NUMA_ROOT"
    )


def test_search_query_folds_anchors_under_isolate() -> None:
    """Guest cells on distinct host cells: the query run is the isolate form."""
    numa = translate(Flavor(vcpus=8, memory_mb=8192, extra_specs={"hw:numa_nodes": "2"}))
    assert canon(numa.explain) == canon(
        "resources_MEM1=MEMORY_MB:4096&required_MEM1=MEMORY_PAGE_SIZE_SMALL"
        "&resources_PROC1=VCPU:4&required_PROC1=HW_NUMA_ROOT"
        "&resources_MEM2=MEMORY_MB:4096&required_MEM2=MEMORY_PAGE_SIZE_SMALL"
        "&resources_PROC2=VCPU:4&required_PROC2=HW_NUMA_ROOT"
        "&same_subtree=_MEM1,_PROC1&same_subtree=_MEM2,_PROC2&group_policy=isolate"
    )
    assert numa.anchors == ("_NUMA1", "_NUMA2") and not numa.filter_anchors


CPU_CASES = [
    pytest.param({"hw:cpu_policy": "dedicated"}, "resources_PROC1=PCPU:4", None, id="dedicated"),
    pytest.param(
        {"hw:cpu_policy": "shared", "hw:numa_nodes": "1"},
        "resources_PROC1=VCPU:4",
        None,
        id="shared",
    ),
    pytest.param(
        {"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "^0"},
        "resources_PROC1=VCPU:1,PCPU:3",
        None,
        id="mixed-mask-exclusion",
    ),
    pytest.param(
        {"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "2-3"},
        "resources_PROC1=VCPU:2,PCPU:2",
        None,
        id="mixed-mask-range",
    ),
    pytest.param(
        {"hw:cpu_policy": "dedicated", "hw:emulator_threads_policy": "isolate"},
        "resources_PROC1=PCPU:5",
        None,
        id="emulator-isolate",
    ),
    pytest.param(
        {"hw:cpu_policy": "dedicated", "hw:cpu_thread_policy": "isolate"},
        "resources_PROC1=PCPU:4",
        "root_required=!HW_CPU_HYPERTHREADING",
        id="threads-isolate",
    ),
    pytest.param(
        {"hw:cpu_policy": "dedicated", "hw:cpu_thread_policy": "require"},
        "resources_PROC1=PCPU:4",
        "root_required=HW_CPU_HYPERTHREADING",
        id="threads-require",
    ),
]


@pytest.mark.parametrize(("specs", "proc", "root"), CPU_CASES)
def test_cpu_policies(specs: dict[str, str], proc: str, root: str | None) -> None:
    numa = translate(Flavor(vcpus=4, memory_mb=4096, extra_specs=specs))
    got = canon(to_query_string(numa.query))
    key, value = next(iter(canon(proc).items()))
    assert got[key] == value
    if root:
        assert got["root_required"] == canon(root)["root_required"]
    else:
        assert "root_required" not in got


def test_mixed_policy_splits_per_cell() -> None:
    numa = translate(
        Flavor(
            vcpus=4,
            memory_mb=4096,
            extra_specs={
                "hw:numa_nodes": "2",
                "hw:cpu_policy": "mixed",
                "hw:cpu_dedicated_mask": "1,3",
            },
        )
    )
    got = canon(to_query_string(numa.query))
    assert got["resources_PROC1"] == {"VCPU": 1, "PCPU": 1}
    assert got["resources_PROC2"] == {"VCPU": 1, "PCPU": 1}


def test_disk_and_granular_extra_specs() -> None:
    numa = translate(
        Flavor(
            vcpus=2,
            memory_mb=2048,
            root_gb=20,
            ephemeral_gb=5,
            swap=1536,
            extra_specs={
                "hw:numa_nodes": "1",
                "resources:CUSTOM_LICENSE": "1",
                "trait:HW_CPU_X86_AVX2": "required",
                "trait:CUSTOM_SLOW": "forbidden",
                "resources1:SRIOV_NET_VF": "1",
                "trait1:CUSTOM_PHYSNET_A": "required",
            },
        )
    )
    got = canon(to_query_string(numa.query))
    assert got["resources"] == {"DISK_GB": 27, "CUSTOM_LICENSE": 1}
    assert got["required"] == {"HW_CPU_X86_AVX2", "!CUSTOM_SLOW"}
    assert got["resources1"] == {"SRIOV_NET_VF": 1}
    assert got["required1"] == {"CUSTOM_PHYSNET_A"}
    # a numbered group of the flavor's own under group_policy=none: anchors are checked after
    assert numa.search_query == numa.query and not numa.filter_anchors  # one cell: nothing to check


def test_flavor_group_policy_isolate_folds_the_anchor() -> None:
    numa = translate(
        Flavor(
            vcpus=4,
            memory_mb=4096,
            extra_specs={
                "hw:numa_nodes": "2",
                "group_policy": "isolate",
                "resources1:SRIOV_NET_VF": "1",
            },
        )
    )
    got = canon(to_query_string(numa.query))
    assert got["group_policy"] == "isolate" and "required_NUMA1" not in got
    assert got["required_PROC1"] == {"HW_NUMA_ROOT"}


def test_non_numa_resource_overrides() -> None:
    numa = translate(Flavor(vcpus=4, memory_mb=4096, extra_specs={"resources:VCPU": "2"}))
    assert canon(numa.explain)["resources"] == {"VCPU": 2, "MEMORY_MB": 4096}


def test_image_properties() -> None:
    image = ImageProperties({"hw_numa_nodes": "2", "hw_mem_page_size": "1GB"})
    numa = translate(
        Flavor(vcpus=4, memory_mb=4096, extra_specs={"hw:mem_page_size": "large"}), image
    )
    got = canon(to_query_string(numa.query))
    assert got["required_MEM1"] == {"CUSTOM_MEMORY_PAGE_SIZE_1048576"}
    assert got["resources_MEM2"] == {"MEMORY_MB": 2048}


def test_distribution_widens_a_flavor_without_fixed_cell_count() -> None:
    numa = translate(
        Flavor(vcpus=7, memory_mb=3072, extra_specs={"hw:cpu_policy": "dedicated"}), cell_count=2
    )
    got = canon(to_query_string(numa.query))
    assert got["resources_PROC1"] == {"PCPU": 4} and got["resources_PROC2"] == {"PCPU": 3}
    assert got["resources_MEM1"] == {"MEMORY_MB": 1536} and got["resources_MEM2"] == {
        "MEMORY_MB": 1536
    }


@pytest.mark.parametrize(("total", "parts"), [(n, w) for n in range(1, 13) for w in range(1, 6)])
def test_cpu_splits_are_every_split_the_most_even_first(total: int, parts: int) -> None:
    from itertools import product

    from placement_numa.numa.distribute import cpu_splits, split_evenly

    brute = {
        tuple(sorted(c, reverse=True))
        for c in product(range(1, total + 1), repeat=parts)
        if sum(c) == total
    }
    found = cpu_splits(total, parts, limit=10**6)
    assert set(found) == brute and len(found) == len(brute)
    if found:
        assert found[0] == tuple(sorted(split_evenly(total, parts), reverse=True))
        assert [max(s) for s in found] == sorted(max(s) for s in found)
    assert len(cpu_splits(total, parts, limit=2)) == min(2, len(brute))
