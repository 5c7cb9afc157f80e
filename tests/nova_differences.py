"""The documented differences from Nova: the single source of README's "Differences from Nova"
table (``tests/test_nova_differential.py`` checks that README shows every row, word for word).

Each row: ``id``, the ``rule`` it concerns, ``nova`` (what Nova does), ``ours`` (what this
service does), ``why``, and ``explains(case)``: whether a disagreement seen by the differential
test is this row's. A disagreement no row explains fails the test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from placement_numa.numa.cpu_spec import CpuSpecError, parse_cpu_spec

__all__ = ["Case", "Difference", "DIFFERENCES", "classify", "readme_table"]


@dataclass(frozen=True)
class Case:
    """One disagreeing pair: the host (``tests.nova_pairs.HostSpec``), the flavor, Nova's
    answer (``nova``: oracle dict) and ours (``ours_fits``: bool, ``ours_error``: 400 code or
    ``None``)."""

    host: Any
    flavor: dict[str, Any]
    nova: dict[str, Any]
    ours_fits: bool
    ours_error: str | None

    @property
    def specs(self) -> dict[str, str]:
        return dict(self.flavor.get("extra_specs", {}))

    @property
    def nova_fits(self) -> bool:
        return bool(self.nova.get("fits"))

    @property
    def pinned(self) -> bool:
        return self.specs.get("hw:cpu_policy") in ("dedicated", "mixed")

    @property
    def thread_policy(self) -> str | None:
        return self.specs.get("hw:cpu_thread_policy")

    @property
    def page_size(self) -> str | None:
        return self.specs.get("hw:mem_page_size")


@dataclass(frozen=True)
class Difference:
    id: str
    rule: str
    nova: str
    ours: str
    why: str
    explains: Callable[[Case], bool]


def _has(case: Case, prefix: str) -> bool:
    return any(key.startswith(prefix) for key in case.specs)


def _huge_pages(case: Case) -> bool:
    return any(cell.huge_pages for cell in case.host.cells)


def _shared_only_guest_cell(case: Case) -> bool:
    """Whether a guest cell of this ``mixed`` flavor holds no dedicated CPU (Nova's even split
    of the vCPUs over ``hw:numa_nodes`` cells, or ``hw:numa_cpus.N``)."""
    specs, vcpus = case.specs, int(case.flavor["vcpus"])
    nodes = int(specs.get("hw:numa_nodes", "1"))
    try:
        mask = specs["hw:cpu_dedicated_mask"]
        if mask.startswith("^"):
            dedicated = set(range(vcpus)) - parse_cpu_spec(mask[1:], max_cpu=vcpus - 1)
        else:
            dedicated = set(parse_cpu_spec(mask, max_cpu=vcpus - 1))
        if "hw:numa_cpus.0" in specs:
            cells = [parse_cpu_spec(specs[f"hw:numa_cpus.{n}"]) for n in range(nodes)]
        else:
            size = vcpus // nodes
            cells = [frozenset(range(n * size, (n + 1) * size)) for n in range(nodes)]
    except (KeyError, ValueError, CpuSpecError):
        return False
    return any(cell and not cell & dedicated for cell in cells)


DIFFERENCES: tuple[Difference, ...] = (
    Difference(
        "non-numa-flavor",
        "A flavor without NUMA request (no `hw:numa_nodes`, page size or pinned CPUs)",
        "NUMATopologyFilter passes every host",
        "only hosts that are not NUMA-modelled (`required=!HW_NUMA_ROOT`)",
        "the Nova spec's translation: NUMA and non-NUMA workloads are sharded between hosts",
        lambda c: c.nova.get("error") is None and not c.nova.get("numa") and not c.ours_fits,
    ),
    Difference(
        "cpus-without-mem",
        "`hw:numa_cpus.N` without `hw:numa_mem.N`",
        "refused (`ImageNUMATopologyIncomplete`)",
        "accepted; memory split evenly over the guest cells",
        "the Nova spec's third example translates exactly this flavor",
        lambda c: (
            c.nova.get("error") == "ImageNUMATopologyIncomplete"
            and _has(c, "hw:numa_cpus.")
            and not _has(c, "hw:numa_mem.")
        ),
    ),
    Difference(
        "mem-without-cpus",
        "`hw:numa_mem.N` without `hw:numa_cpus.N`",
        "refused (`ImageNUMATopologyIncomplete`)",
        "accepted; CPUs split evenly (vcpus must divide by `hw:numa_nodes`)",
        "symmetric with `cpus-without-mem`: one list is enough to say how the other splits",
        lambda c: (
            c.nova.get("error") == "ImageNUMATopologyIncomplete"
            and _has(c, "hw:numa_mem.")
            and not _has(c, "hw:numa_cpus.")
        ),
    ),
    Difference(
        "smt-sibling-packing",
        "Pinned guests on a host with SMT (`require`, `prefer` or no thread policy)",
        "packs guest CPUs onto thread siblings of the free cores; `require` fails when the free "
        "CPUs do not form enough sibling groups",
        "checks the number of free `PCPU` in the cell, not which cores they are on",
        'a Placement inventory cannot express "a whole free core"; the compute node\'s claim '
        "does the pinning",
        lambda c: c.pinned and c.host.smt and not c.nova_fits and c.ours_fits,
    ),
    Difference(
        "reserved-memory-spread",
        "Reserved host memory (`reserved_host_memory_mb`)",
        "not part of the NUMA fit",
        "spread over the cells' small pages as `reserved`",
        "stricter than Nova, which is safe: the host keeps its memory",
        lambda c: c.host.reserved_mb > 0 and c.nova_fits and not c.ours_fits,
    ),
    Difference(
        "shared-guest-memory",
        "Memory of a guest with shared CPUs (no dedicated CPU)",
        "checks the TOTAL (not free) pages of the smallest size, then the whole cell's memory "
        "(every page size) times `ram_allocation_ratio` against the whole cell's usage",
        "checks the small-page provider: `(total - reserved) * ram_allocation_ratio - used`",
        "Nova quirk not copied: huge pages and their guests do not make room for, nor take "
        "room from, small-page guests",
        lambda c: not c.pinned and (_huge_pages(c) or c.host.reserved_mb > 0),
    ),
    Difference(
        "fit-cache-ids",
        "Guest cells tried over permutations of host cells",
        "caches each (host cell, guest cell) fit under the guest cell's id AFTER rewriting it to "
        "the host cell's, so an answer can pair cells it never checked (a 4352 MiB guest cell on "
        "a cell with 4096 MiB of pages)",
        "every guest cell is checked against the host cell it lands on",
        "Nova bug not copied; the differential test re-checks each pair of Nova's answer",
        lambda c: c.nova_fits and not c.nova.get("verified", True) and not c.ours_fits,
    ),
    Difference(
        "sticky-page-size",
        "`hw:mem_page_size=large` or `any`",
        "a failed attempt on one host cell leaves the page size it picked set for the next cells",
        "every host cell is tried with every page size the request allows",
        "Nova quirk not copied",
        lambda c: c.page_size in ("large", "any") and not c.nova_fits and c.ours_fits,
    ),
    Difference(
        "isolate-shared-only-cell",
        "`mixed` with `hw:cpu_thread_policy=isolate` and a guest cell holding only shared CPUs",
        "refuses every host: the cell has no CPU to pin, and Nova takes the empty pinning for a "
        "failed one",
        "the cell's shared CPUs take `VCPU` from its host cell; the thread policy applies to the "
        "dedicated CPUs of the other cells",
        "Nova bug not copied: there is nothing to isolate in that cell, and the flavor is valid",
        lambda c: (
            c.specs.get("hw:cpu_policy") == "mixed"
            and c.thread_policy == "isolate"
            and not c.nova_fits
            and c.ours_fits
            and _shared_only_guest_cell(c)
        ),
    ),
)


def classify(case: Case) -> str | None:
    """The id of the first row that explains ``case``, or ``None``."""
    for difference in DIFFERENCES:
        if difference.explains(case):
            return difference.id
    return None


def readme_table() -> str:
    """The Markdown table README shows (one line per row)."""
    lines = [
        "| id | rule | Nova | ours | why |",
        "| --- | --- | --- | --- | --- |",
    ]
    for d in DIFFERENCES:
        lines.append(f"| `{d.id}` | {d.rule} | {d.nova} | {d.ours} | {d.why} |")
    return "\n".join(lines)
