"""Fill every host of the fleet with copies of a flavor at once: the fast path of
``services.host_fill`` (same answer, checked by ``tests/test_capacity_fill.py``).

``host_fill`` runs the claim's whole search once per placement on a one-host copy. Here the
search runs ONCE for the fleet, with no limit, and the placements are then replayed per host
in Python, because a fleet that only fills up only loses candidates:

1. every candidate of every host at the current state (``numa_search.search_bounded``, the
   claim's search with its ``accept`` rules; for a flavor without NUMA topology the engine's
   order; the fallback query for hosts not reshaped), with each candidate's cells, CPUs per
   cell (classes ``cpu_classes``) and device cells as the ranker scores them;
2. per host, repeatedly: the candidates whose every ``(provider, class, amount)`` still fits
   the usage grown by the placements so far (``used + amount <= capacity``, and for the memory
   of a guest Nova never overcommits ``used + amount <= total - reserved``: the memory rule,
   ``numa.memory_rule``); among them the best rank key recomputed on the grown usage
   (``numa.ranking.score`` and ``rank_key`` over the host's free CPUs now: only the KEP-2902
   spread moves; ties keep the search's order); place it; until none fits or ``cap``.

Why it is the claim's answer: a placement only adds usage, so a candidate that fits later
fitted before (min/max unit and step size do not move) and the candidates at any later state
are those of step 1 that still fit; the rank key is the ranker's own on the grown usage.
Widening plans (``distribute_cpus_across_numa``, the Topology Manager's ``restricted`` and
``best-effort``: each host's narrowest fit) are not replayed here: ``fill_fleet`` answers
``None`` and the caller fills host by host.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from placement_numa.domain.numa_tree import HW_NUMA_ROOT as NUMA_ROOT
from placement_numa.engine import Candidate, FleetSnapshot, SnapshotEngine, StaticFleetSource
from placement_numa.numa.engine_rank import CellIndex, NumaRanker
from placement_numa.numa.ranking import HostCells, rank_key, score
from placement_numa.numa.translate import SearchPlan
from placement_numa.services.numa_search import ranker_for, runnable, search_bounded

__all__ = ["Filled", "fill_fleet", "usable_cells"]

# (provider index, resource class) -> usage the placements added
Taken = dict[tuple[int, str], int]


@dataclass(frozen=True)
class Filled:
    """One host filled: ``count`` placed, ``capped`` (stopped at the cap), ``taken``: the
    usage the placements added, by ``(provider index, resource class)``."""

    count: int
    capped: bool
    taken: Mapping[tuple[int, str], int]


@dataclass(frozen=True)
class _Option:
    """One candidate of one host: its allocations, CPUs taken per cell id, device cells,
    position in the search's order (``None`` cells: unranked, engine order only)."""

    allocations: tuple[tuple[int, str, int], ...]
    cpus: dict[int, int] | None
    devices: tuple[int | None, ...]
    order: int

    @property
    def look(self) -> tuple[object, ...]:
        """What its rank key reads besides the host's cells (equal looks score alike)."""
        return (tuple(sorted((self.cpus or {}).items())), self.devices)


class _Scorer:
    """Rank keys of ``_Option`` s on a grown usage (the ranker's rules, ``numa.ranking``)."""

    def __init__(self, ranker: NumaRanker | None, fleet: FleetSnapshot) -> None:
        self.ranker = ranker
        self.fleet = fleet
        # (option look, free CPUs per cell, distances) -> rank key: hosts of a fleet repeat
        # the same few cell states, so most keys are looked up, not scored
        self._keys: dict[tuple[object, ...], tuple[object, ...]] = {}

    def option(self, candidate: Candidate, order: int) -> _Option:
        if self.ranker is None:
            return _Option(candidate.allocations, None, (), order)
        ranker, fleet = self.ranker, self.fleet
        ids, _, _ = ranker.view(fleet).host(fleet, candidate.anchor)
        numa = ranker.score(candidate, fleet)
        cpus = dict.fromkeys(numa.cells, 0)
        for p, rc, amount in candidate.allocations:
            if rc in ranker.cpu_classes and p in ids:
                cpus[ids[p]] = cpus.get(ids[p], 0) + amount
        return _Option(candidate.allocations, cpus, numa.device_cells, order)

    def host_cells(self, root: int) -> tuple[dict[int, int], HostCells] | None:
        """(cell provider index -> cell id, the host's cells now) or ``None`` unranked."""
        if self.ranker is None:
            return None
        ids, cells, _ = self.ranker.view(self.fleet).host(self.fleet, root)
        return ids, cells

    def key(
        self, option: _Option, cells: HostCells | None, state: tuple[object, ...]
    ) -> tuple[object, ...]:
        """``option``'s rank key on ``cells`` (``state``: a hashable form of them), then its
        order."""
        if option.cpus is None or cells is None or self.ranker is None:
            return (option.order,)
        memo = (option.look, state)
        found = self._keys.get(memo)
        if found is None:
            ranker = self.ranker
            numa = score(cells, option.cpus, option.devices, align_devices=ranker.align_devices)
            found = self._keys[memo] = rank_key(numa, prefer_closest=ranker.prefer_closest)
        return (*found, option.order)


def _fits(option: _Option, fleet: FleetSnapshot, taken: Taken, no_overcommit: bool) -> int:
    """How many more times ``option`` fits on the usage grown by ``taken`` (0: none)."""
    most: int | None = None
    providers = fleet.providers
    for p, rc, amount in option.allocations:
        if amount <= 0:
            continue
        inv = providers[p].inventories[rc]
        used = inv.used + taken.get((p, rc), 0)
        room = inv.capacity - used
        if no_overcommit and rc == "MEMORY_MB" and inv.allocation_ratio > 1.0:
            room = min(room, inv.total - inv.reserved - used)
        times = max(0, room // amount)
        most = times if most is None else min(most, times)
    return 1 if most is None else most


def _matrix(cells: HostCells | None) -> tuple[object, ...]:
    """The host's distances as a hashable value."""
    if cells is None or cells.distances is None:
        return ()
    return tuple((a, tuple(sorted(row.items()))) for a, row in sorted(cells.distances.items()))


def _fill_one(
    options: Sequence[_Option],
    scorer: _Scorer,
    root: int,
    no_overcommit: bool,
    cap: int,
) -> Filled:
    """Replay the claims on one host (module docstring, step 2)."""
    fleet = scorer.fleet
    taken: Taken = {}
    found = scorer.host_cells(root)
    ids, cells = found if found is not None else ({}, None)
    cpu_classes = scorer.ranker.cpu_classes if scorer.ranker is not None else ()
    # free CPUs per cell provider, and per cell id as the host view has them (tree order; a
    # later cell of a duplicate id wins, as there)
    cell_free = {c: sum(fleet.providers[c].free(rc) for rc in cpu_classes) for c in ids}
    matrix = _matrix(cells)
    live = list(options)
    count = 0
    while count < cap and live:
        live = [o for o in live if _fits(o, fleet, taken, no_overcommit) > 0]
        if not live:
            break
        free = {ids[c]: f for c, f in cell_free.items()}
        now = HostCells(free, cells.distances) if cells is not None else None
        state = (tuple(free.items()), matrix)
        best = min(live, key=lambda o: scorer.key(o, now, state))
        if len(live) == 1:  # the only one left: place it as often as it fits
            times = min(_fits(best, fleet, taken, no_overcommit), cap - count)
        else:
            times = 1
        for p, rc, amount in best.allocations:
            taken[(p, rc)] = taken.get((p, rc), 0) + amount * times
            if p in ids and rc in cpu_classes:
                cell_free[p] -= amount * times
        count += times
    return Filled(count, count >= cap and bool(live), taken)


def _candidates(
    plan: SearchPlan, fleet: FleetSnapshot, index: CellIndex
) -> tuple[_Scorer, list[Candidate], list[Candidate]]:
    """The scorer, every NUMA (or non-NUMA) candidate and every fallback candidate of the
    fleet for ``plan``, each in the search's order."""
    engine = SnapshotEngine(StaticFleetSource(fleet))
    numa = runnable(plan.main, fleet)
    if numa is None:
        return _Scorer(None, fleet), [], []
    options = replace(plan.request.options, limit=None, diversify=False)
    if numa.topology is None:
        found = engine.search(numa.search_query, limit=None, fleet=fleet).candidates
        return _Scorer(None, fleet), list(found), []
    ranker = ranker_for(index, numa, options)
    ranked: list[Candidate] = []
    if numa.search is not None:
        hits, _ = search_bounded(engine, numa, ranker, None, fleet=fleet, options=options)
        ranked = [r.candidate for r in hits]
    fallback: list[Candidate] = []
    if numa.fallback is not None:
        fallback = list(engine.search(numa.fallback, limit=None, fleet=fleet).candidates)
    return _Scorer(ranker, fleet), ranked, fallback


def usable_cells(fleet: FleetSnapshot, candidates: Sequence[Candidate]) -> frozenset[int]:
    """Indices of the NUMA cells (``HW_NUMA_ROOT`` providers) at or above a provider some
    candidate of ``candidates`` takes from, and of the candidates' roots."""
    found: set[int] = set()
    for candidate in candidates:
        found.add(candidate.anchor)
        for p, _, _ in candidate.allocations:
            for a in fleet.ancestors(p):
                if NUMA_ROOT in fleet.providers[a].traits:
                    found.add(a)
                    break
    return frozenset(found)


def fill_fleet(
    plan: SearchPlan,
    fleet: FleetSnapshot,
    index: CellIndex,
    roots: Sequence[int],
    cap: int,
) -> tuple[dict[int, Filled], frozenset[int]] | None:
    """Each root of ``roots`` (indices of ``fleet``) filled with copies of ``plan``'s flavor as
    the claims would (module docstring; roots without a candidate are left out), and the
    ``usable_cells`` of its candidates now. ``None`` for a plan this path does not replay
    (widening: the caller fills host by host)."""
    if plan.widen:
        return None
    if not plan.admitted:
        return {}, frozenset()
    scorer, ranked, fallback = _candidates(plan, fleet, index)
    topology = plan.main.topology
    no_overcommit = topology is not None and topology.memory_not_overcommitted
    wanted = set(roots)
    per_host: dict[int, list[_Option]] = {}
    for order, candidate in enumerate(ranked):
        if candidate.anchor in wanted:
            per_host.setdefault(candidate.anchor, []).append(scorer.option(candidate, order))
    filled = {root: _fill_one(o, scorer, root, no_overcommit, cap) for root, o in per_host.items()}
    flat = _Scorer(None, fleet)
    fallbacks: dict[int, list[_Option]] = {}
    for order, candidate in enumerate(fallback):
        if candidate.anchor in wanted and candidate.anchor not in filled:
            fallbacks.setdefault(candidate.anchor, []).append(flat.option(candidate, order))
    for root, found in fallbacks.items():
        filled[root] = _fill_one(found, flat, root, no_overcommit, cap)
    return filled, usable_cells(fleet, [*ranked, *fallback])
