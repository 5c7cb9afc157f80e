"""Nova's flavor rules: every check rejects with a 400 naming the offending keys (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from placement_numa.errors import BadRequest
from placement_numa.numa.flavor import Flavor, ImageProperties
from placement_numa.numa.resolve import validate
from placement_numa.numa.translate import guest_topology
from placement_numa.numa.validation import CHECKS

# (vcpus, memory_mb, extra specs, image properties, keys named, words in the detail)
CASES: list[Any] = [
    pytest.param(0, 1024, {}, {}, ["vcpus"], ">= 1", id="no-cpus"),
    pytest.param(
        4, 4096, {"hw:numa_nodes": "0"}, {}, ["hw:numa_nodes"], "integer >= 1", id="numa-nodes-zero"
    ),
    pytest.param(
        4,
        4096,
        {"hw:numa_nodes": "two"},
        {},
        ["hw:numa_nodes"],
        "integer >= 1",
        id="numa-nodes-text",
    ),
    pytest.param(
        4,
        4096,
        {"hw:numa_nodes": "2"},
        {"hw_numa_nodes": "1"},
        ["hw:numa_nodes", "hw_numa_nodes"],
        "may not override",
        id="image-overrides-nodes",
    ),
    pytest.param(
        4,
        4096,
        {"hw:numa_nodes": "3"},
        {},
        ["hw:numa_nodes", "vcpus"],
        "evenly distributed",
        id="uneven-cpus",
    ),
    pytest.param(
        4,
        4097,
        {"hw:numa_nodes": "2"},
        {},
        ["hw:numa_nodes", "memory_mb"],
        "evenly distributed",
        id="uneven-memory",
    ),
    pytest.param(
        4,
        4096,
        {"hw:numa_cpus.0": "0-3"},
        {},
        ["hw:numa_cpus.0"],
        "hw:numa_nodes must be set",
        id="cells-without-numa-nodes",
    ),
    pytest.param(
        4,
        4096,
        {"hw:numa_nodes": "2", "hw:numa_cpus.0": "0,1", "hw:numa_cpus.2": "2,3"},
        {},
        ["hw:numa_cpus.2", "hw:numa_nodes"],
        "numbered 0..1",
        id="cell-beyond-count",
    ),
    pytest.param(
        4,
        4096,
        {"hw:numa_nodes": "2", "hw:numa_cpus.0": "0-3"},
        {},
        ["hw:numa_cpus.1"],
        "all 2 NUMA cells",
        id="incomplete-cpus",
    ),
    pytest.param(
        4,
        4096,
        {"hw:numa_nodes": "2", "hw:numa_mem.1": "4096"},
        {},
        ["hw:numa_mem.0"],
        "all 2 NUMA cells",
        id="incomplete-mem",
    ),
    pytest.param(
        4,
        4096,
        {"hw:numa_nodes": "2", "hw:numa_cpus.0": "0,x", "hw:numa_cpus.1": "2,3"},
        {},
        ["hw:numa_cpus.0"],
        "invalid inclusion expression",
        id="cpu-list-syntax",
    ),
    pytest.param(
        4,
        4096,
        {"hw:numa_nodes": "2", "hw:numa_cpus.0": "0,1", "hw:numa_cpus.1": "2-4"},
        {},
        ["hw:numa_cpus.1"],
        "CPU number 4 is larger than max 3",
        id="cpu-out-of-range",
    ),
    pytest.param(
        4,
        4096,
        {"hw:numa_nodes": "2", "hw:numa_cpus.0": "0-2", "hw:numa_cpus.1": "2,3"},
        {},
        ["hw:numa_cpus.0", "hw:numa_cpus.1"],
        "assigned to two cells",
        id="cpu-duplicated",
    ),
    pytest.param(
        4,
        4096,
        {"hw:numa_nodes": "2", "hw:numa_cpus.0": "0", "hw:numa_cpus.1": "1"},
        {},
        ["hw:numa_cpus.0", "hw:numa_cpus.1"],
        "2-3 are not assigned",
        id="cpu-unassigned",
    ),
    pytest.param(
        4,
        4096,
        {"hw:numa_nodes": "2", "hw:numa_mem.0": "1024", "hw:numa_mem.1": "1024"},
        {},
        ["hw:numa_mem.0", "hw:numa_mem.1"],
        "2048 MB of memory assigned, but expected 4096",
        id="mem-sum",
    ),
    pytest.param(
        4,
        4096,
        {"hw:numa_nodes": "2", "hw:numa_mem.0": "0", "hw:numa_mem.1": "4096"},
        {},
        ["hw:numa_mem.0"],
        "integer >= 1",
        id="mem-zero",
    ),
    pytest.param(
        4,
        4096,
        {"hw:mem_page_size": "3 pages"},
        {},
        ["hw:mem_page_size"],
        "Invalid memory page size",
        id="page-size-invalid",
    ),
    pytest.param(
        4,
        4096,
        {},
        {"hw_mem_page_size": "2MB"},
        ["hw_mem_page_size"],
        "forbidden",
        id="image-page-size-without-flavor",
    ),
    pytest.param(
        4,
        4096,
        {"hw:mem_page_size": "small"},
        {"hw_mem_page_size": "2MB"},
        ["hw:mem_page_size", "hw_mem_page_size"],
        "forbidden against 'small'",
        id="image-page-size-forbidden",
    ),
    pytest.param(
        4,
        4096,
        {"hw:cpu_policy": "pinned"},
        {},
        ["hw:cpu_policy"],
        "not one of",
        id="cpu-policy-unknown",
    ),
    pytest.param(
        4,
        4096,
        {"hw:cpu_policy": "shared"},
        {"hw_cpu_policy": "dedicated"},
        ["hw:cpu_policy", "hw_cpu_policy"],
        "forbidden",
        id="image-pinning-forbidden",
    ),
    pytest.param(
        4,
        4096,
        {"hw:cpu_thread_policy": "isolate"},
        {},
        ["hw:cpu_thread_policy"],
        "needs hw:cpu_policy=dedicated",
        id="thread-policy-without-dedicated",
    ),
    pytest.param(
        4,
        4096,
        {"hw:cpu_policy": "dedicated", "hw:cpu_thread_policy": "always"},
        {},
        ["hw:cpu_thread_policy"],
        "not one of",
        id="thread-policy-unknown",
    ),
    pytest.param(
        4,
        4096,
        {"hw:emulator_threads_policy": "isolate"},
        {},
        ["hw:emulator_threads_policy"],
        "need hw:cpu_policy=dedicated",
        id="emulator-isolate-without-dedicated",
    ),
    pytest.param(
        4,
        4096,
        {"hw:cpu_policy": "mixed"},
        {},
        ["hw:cpu_policy", "hw:cpu_dedicated_mask"],
        "needs hw:cpu_dedicated_mask",
        id="mixed-without-mask",
    ),
    pytest.param(
        4,
        4096,
        {"hw:cpu_policy": "dedicated", "hw:cpu_dedicated_mask": "0"},
        {},
        ["hw:cpu_dedicated_mask", "hw:cpu_policy"],
        "needs hw:cpu_policy=mixed",
        id="mask-without-mixed",
    ),
    pytest.param(
        4,
        4096,
        {"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "0-3"},
        {},
        ["hw:cpu_dedicated_mask"],
        "no shared CPU",
        id="mask-all-dedicated",
    ),
    pytest.param(
        4,
        4096,
        {"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "3-5"},
        {},
        ["hw:cpu_dedicated_mask"],
        "larger than max 3",
        id="mask-out-of-range",
    ),
    pytest.param(
        4,
        4096,
        {"hw:cpu_policy": "shared", "resources:PCPU": "4"},
        {},
        ["resources:PCPU", "hw:cpu_policy"],
        "conflicts",
        id="pcpu-with-shared",
    ),
    pytest.param(
        4,
        4096,
        {"hw:cpu_policy": "dedicated", "resources:VCPU": "4"},
        {},
        ["resources:VCPU", "hw:cpu_policy"],
        "conflicts",
        id="vcpu-with-dedicated",
    ),
    pytest.param(
        4,
        4096,
        {"hw:numa_nodes": "2", "resources1:VCPU": "2"},
        {},
        ["resources1:VCPU"],
        "placed per NUMA cell",
        id="explicit-cpu-on-numa-flavor",
    ),
    pytest.param(
        4,
        4096,
        {"resources:VCPU": "two"},
        {},
        ["resources:VCPU"],
        "integer >= 0",
        id="resource-amount",
    ),
    pytest.param(
        4,
        4096,
        {"resources:vcpu": "1"},
        {},
        ["resources:vcpu"],
        "not a resource class",
        id="resource-class-name",
    ),
    pytest.param(
        4,
        4096,
        {"trait:HW_CPU_X86_AVX2": "yes"},
        {},
        ["trait:HW_CPU_X86_AVX2"],
        "'required' or 'forbidden'",
        id="trait-value",
    ),
    pytest.param(
        4,
        4096,
        {"hw:numa_node": "2"},
        {},
        ["hw:numa_node"],
        "did you mean 'hw:numa_nodes'?",
        id="mistyped-numa-nodes",
    ),
    pytest.param(
        4,
        4096,
        {"hw:numa_nodes": "2", "hw:numa_cpu.0": "0-1"},
        {},
        ["hw:numa_cpu.0"],
        "did you mean 'hw:numa_cpus.0'?",
        id="mistyped-cell-key",
    ),
    pytest.param(
        4,
        4096,
        {"hw:cpu_polcy": "dedicated"},
        {},
        ["hw:cpu_polcy"],
        "did you mean 'hw:cpu_policy'?",
        id="mistyped-cpu-policy",
    ),
    pytest.param(
        4,
        4096,
        {"hw_rng:speed": "1"},
        {},
        ["hw_rng:speed"],
        "not an extra spec Nova knows",
        id="unknown-hw-rng-key",
    ),
    pytest.param(8193, 4096, {}, {}, ["vcpus"], "must be <= 8192", id="vcpus-bound"),
    pytest.param(
        4,
        4096,
        {"hw:numa_nodes": "129"},
        {},
        ["hw:numa_nodes"],
        "must be <= 128",
        id="numa-nodes-bound",
    ),
    pytest.param(
        4,
        4096,
        {"hw:numa_nodes": "9" * 5000},
        {},
        ["hw:numa_nodes"],
        "integer >= 1",
        id="numa-nodes-5000-digits",
    ),
    pytest.param(
        4,
        4096,
        {"hw:numa_nodes": "02"},
        {},
        ["hw:numa_nodes"],
        "integer >= 1",
        id="numa-nodes-not-int-like",
    ),
    pytest.param(
        4,
        4096,
        {"hw:numa_nodes": "1", "hw:numa_cpus.0": "0-99999999", "hw:numa_mem.0": "4096"},
        {},
        ["hw:numa_cpus.0"],
        "CPU number 4 is larger than max 3",
        id="cell-cpus-hundred-million",
    ),
    pytest.param(
        4,
        4096,
        {"hw:numa_nodes": "1", "hw:numa_cpus.0": "0-4000000000", "hw:numa_mem.0": "4096"},
        {},
        ["hw:numa_cpus.0"],
        "CPU number 4 is larger than max 3",
        id="cell-cpus-four-billion",
    ),
    pytest.param(
        4,
        4096,
        {"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "0-4000000000"},
        {},
        ["hw:cpu_dedicated_mask"],
        "larger than max 3",
        id="mask-four-billion",
    ),
    pytest.param(
        4,
        4096,
        {"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "^0-3"},
        {},
        ["hw:cpu_dedicated_mask"],
        "no dedicated CPU",
        id="caret-mask-excludes-all",
    ),
    pytest.param(
        4,
        4096,
        {"hw:cpu_policy": "dedicated", "hw:cpu_thread_policy": "isolate"},
        {"hw_cpu_thread_policy": "require"},
        ["hw:cpu_thread_policy", "hw_cpu_thread_policy"],
        "forbidden by the flavor's 'isolate'",
        id="image-thread-policy-against-flavor",
    ),
    pytest.param(
        4,
        4096,
        {"group_policy": "spread"},
        {},
        ["group_policy"],
        "'none' or 'isolate'",
        id="group-policy",
    ),
]


@pytest.mark.parametrize(("vcpus", "memory_mb", "specs", "props", "keys", "words"), CASES)
def test_invalid_flavors(
    vcpus: int,
    memory_mb: int,
    specs: dict[str, str],
    props: dict[str, str],
    keys: list[str],
    words: str,
) -> None:
    with pytest.raises(BadRequest) as caught:
        validate(
            Flavor(vcpus=vcpus, memory_mb=memory_mb, extra_specs=specs),
            ImageProperties(props) if props else None,
        )
    error = caught.value
    assert error.code == "placement_numa.flavor.invalid"
    assert error.status == 400
    assert list(error.keys) == keys  # type: ignore[attr-defined]
    assert error.detail.startswith(f"Invalid flavor ({', '.join(keys)}):")
    assert words in error.detail


def test_every_check_is_exercised() -> None:
    names = {check.__name__ for check in CHECKS}
    assert len(names) == len(CHECKS) >= 15


VALID: list[Any] = [
    pytest.param({}, id="plain"),
    pytest.param({"hw:numa_nodes": "4"}, id="four-cells"),
    pytest.param({"hw:cpu_policy": "dedicated", "hw:cpu_thread_policy": "prefer"}, id="prefer"),
    pytest.param({"hw:mem_page_size": "1048576"}, id="page-size-kib"),
    pytest.param({"hw:mem_page_size": "2MiB"}, id="page-size-mib"),
    pytest.param(
        {"hw:numa_nodes": "2", "hw:numa_cpus.0": "0-2,^1", "hw:numa_cpus.1": "1,3"}, id="exclusion"
    ),
    pytest.param(
        {"hw:numa_nodes": "1", "hw:numa_cpus.0": "0-5,^4-5", "hw:numa_mem.0": "4096"},
        id="inclusion-beyond-vcpus-excluded-again",
    ),
    pytest.param({"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "^0,1"}, id="caret-mask"),
    pytest.param({"hw:watchdog_action": "reset", "hw:boot_menu": "true"}, id="other-hw-keys"),
    pytest.param({"os:secure_boot": "required", "custom:anything": "1"}, id="other-namespaces"),
]


@pytest.mark.parametrize(
    ("mask", "dedicated"),
    [("^0,1", {1, 2, 3}), ("^0", {1, 2, 3}), (" ^3", {0, 1, 2}), ("1,3", {1, 3}), ("2-3,^3", {2})],
    ids=["caret-then-cpu", "caret", "blank-caret", "list", "list-with-exclusion"],
)
def test_dedicated_mask_reads_as_nova(mask: str, dedicated: set[int]) -> None:
    """Defect 2: a mask starting with ``^`` means "every guest CPU but these" (Nova prefixes
    ``0-(vcpus-1),``), so ``^0,1`` is {1, 2, 3}, not {1}."""
    flavor = Flavor(
        vcpus=4,
        memory_mb=4096,
        extra_specs={"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": mask},
    )
    topology = guest_topology(flavor)
    assert topology is not None
    (cell,) = topology.cells
    assert (cell.pcpu, cell.vcpu) == (len(dedicated), 4 - len(dedicated))


@pytest.mark.parametrize(
    ("flavor_policy", "image_policy", "effective"),
    [
        (None, "isolate", "isolate"),
        ("prefer", "require", "prefer"),
        ("require", "require", "require"),
    ],
    ids=["image-only", "flavor-prefer-wins", "same"],
)
def test_thread_policy_precedence_as_nova(
    flavor_policy: str | None, image_policy: str, effective: str
) -> None:
    specs = {"hw:cpu_policy": "dedicated"}
    if flavor_policy:
        specs["hw:cpu_thread_policy"] = flavor_policy
    flavor = Flavor(vcpus=2, memory_mb=1024, extra_specs=specs)
    topology = guest_topology(flavor, ImageProperties({"hw_cpu_thread_policy": image_policy}))
    assert topology is not None and topology.thread_policy == effective


@pytest.mark.parametrize("specs", VALID)
def test_valid_flavors(specs: dict[str, str]) -> None:
    validate(Flavor(vcpus=4, memory_mb=4096, extra_specs=specs))
