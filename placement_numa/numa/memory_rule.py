"""Nova's memory rule for pinned and explicit-page-size guests, as a constraint of the search.

Nova (``nova.virt.hardware._numa_fit_instance_cell``) never overcommits the memory of a guest
with dedicated CPUs (``hw:cpu_policy=dedicated|mixed``) or with an explicit
``hw:mem_page_size``: it checks the FREE pages of the chosen page size (``total - used -
reserved``), whatever ``ram_allocation_ratio`` says. A Placement inventory knows only one
capacity, ``(total - reserved) * allocation_ratio``, and the agent reports the host's
``ram_allocation_ratio`` on the small-page provider (shared guests may overcommit there, as in
Nova), so the rule cannot live in the tree nor in the query: it is a constraint the NUMA search
applies to each candidate through the engine's public ``accept`` hook (issue 11, defect 3;
``numa.search_hooks`` adds it for guests whose ``memory_not_overcommitted``).

Rule: for every ``MEMORY_MB`` the candidate takes from a provider,
``used + amount <= total - reserved`` (ratio 1.0). Huge-page providers have ratio 1.0 already,
so only small pages at a ratio above 1 are affected. The ``explain`` query (the GET equivalent)
does not carry this rule; its answer may hold candidates the POST leaves out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from placement_numa.engine.candidates import Candidate, TemplateEntry
from placement_numa.engine.fleet import FleetSnapshot

__all__ = ["fits_without_overcommit", "memory_check"]


def fits_without_overcommit(candidate: Candidate, fleet: FleetSnapshot) -> bool:
    """Whether every ``MEMORY_MB`` amount of ``candidate`` fits its provider at ratio 1.0
    (``used + amount <= total - reserved``; amounts summed per provider)."""
    taken = _memory_taken(candidate.allocations)
    return _fits(fleet, taken)


def memory_check(fleet: FleetSnapshot) -> Callable[[Candidate], bool]:
    """``fits_without_overcommit`` on ``fleet`` as one search's ``accept`` check: for a
    candidate replayed from a look-alike tree's answer (``Candidate.entry`` over
    ``Candidate.members``), the ``MEMORY_MB`` amounts of its template entry are summed per
    position once per search, and only those providers are looked at (no allocation tuples
    built); other candidates are checked by ``fits_without_overcommit``."""
    summed: dict[int, tuple[TemplateEntry, tuple[tuple[int, int], ...]]] = {}

    def check(candidate: Candidate) -> bool:
        entry, members = candidate.entry, candidate.members
        if entry is None or members is None:
            return fits_without_overcommit(candidate, fleet)
        found = summed.get(id(entry))
        if found is None or found[0] is not entry:
            found = summed[id(entry)] = (entry, _memory_taken(entry.allocations))
        return _fits(fleet, found[1], members)

    return check


def _memory_taken(allocations: Iterable[tuple[int, str, int]]) -> tuple[tuple[int, int], ...]:
    """``((provider or position, MiB), ...)``: the ``MEMORY_MB`` amounts of ``allocations``
    summed per provider (or template position)."""
    taken: dict[int, int] = {}
    for provider, resource_class, amount in allocations:
        if resource_class == "MEMORY_MB":
            taken[provider] = taken.get(provider, 0) + amount
    return tuple(taken.items())


def _fits(
    fleet: FleetSnapshot, taken: Iterable[tuple[int, int]], members: Sequence[int] | None = None
) -> bool:
    """Whether each ``(provider index, MiB)`` fits at ratio 1.0 (providers whose ratio is 1.0
    or less are not looked at: their capacity already says so); with ``members``, ``taken``
    holds positions into it (a template entry's)."""
    providers = fleet.providers
    for provider, amount in taken:
        if members is not None:
            provider = members[provider]
        inventory = providers[provider].inventories.get("MEMORY_MB")
        if inventory is None or inventory.allocation_ratio <= 1.0:
            continue
        if inventory.used + amount > inventory.total - inventory.reserved:
            return False
    return True
