"""Use case (extension): a short list of guest moves after which a flavor fits
(``POST /allocation_candidates/defragment``, issue 31). Answered, never applied.

Search (greedy over hosts, exhaustive over small sets of guests, bounded by a time budget):

1. if the flavor fits now (``services.capacity``), the plan is empty;
2. hosts where it does not fit are ordered by how close they are: the summed relative
   shortfall of their ``limited_by`` (``services.capacity_limits``), smallest first;
3. for k = 1, 2, ... ``max_moves`` and each host h in that order, each set S of k guests on h
   (consumers with allocations in h's tree, read from the database in one query per 100
   hosts of that order): the flavor must fit on h
   without S (the claim's search on a one-host copy, ``services.host_fill.host_fleet``); then
   each guest of S, in turn, is placed on another host with the shape it has now (same
   resources per cell and per page size or device provider, its cells on distinct host cells:
   ``_shape_query``), the engine's first candidate among hosts not touched by the plan yet,
   else on a host an earlier move touched, as that move left it;
4. the first S whose guests all find a place is the plan: fewest moves first, because k grows
   in the outer loop.

Every move is a valid placement in the fleet as it stands after the moves before it: a
destination is searched on the snapshot when no earlier move touched it, else on a copy of it
with the earlier moves' usage added, and the flavor's own host only loses usage. Where it is
not optimal: all moved guests come off ONE host (the flavor's), never off the destinations
(no chains: moving a guest to make room for a moved guest), a destination is the first
candidate found, not the one that keeps most room; N instances are planned one after another
(each step: room for one more instance on one host, as above, where the host must then fit
one more than it is credited; hosts that fit the flavor now receive no moved guest, and a
later move lands on a host the plan made room on only if its credited count stays); Nova's
memory rule (no overcommit of a pinned guest's memory) is not re-checked for the moved
guests, whose shape is re-placed as Placement sees it.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from placement_numa.db.database import Database
from placement_numa.db.repositories import allocations as allocation_repo
from placement_numa.domain.numa_tree import HW_NUMA_ROOT
from placement_numa.domain.request_groups import CandidateQuery, RequestGroup
from placement_numa.engine import (
    Candidate,
    CandidateEngine,
    FleetSnapshot,
    SnapshotEngine,
    StaticFleetSource,
)
from placement_numa.numa.engine_rank import CellIndex
from placement_numa.numa.request import NumaOptions
from placement_numa.numa.resolve import numa_request
from placement_numa.numa.translate import SearchPlan, search_plan
from placement_numa.services.capacity import FlavorAsk, fleet_capacity
from placement_numa.services.host_fill import fill_host, host_fleet

__all__ = ["Move", "DefragmentPlan", "defragment", "MAX_MOVES", "MAX_BUDGET_S", "MAX_INSTANCES"]

MAX_MOVES = 4
MAX_INSTANCES = 16
MAX_BUDGET_S = 5.0
MAX_SETS_PER_HOST = 500  # guest sets tried per host and size
GUEST_READ_HOSTS = 100  # hosts whose guests one query reads
ANSWER_RESERVE_S = 0.25  # the budget kept for answering: the search stops this much earlier

# consumer uuid -> {provider index: {resource class: amount}}
Guests = dict[str, dict[int, dict[str, int]]]
# usage added to a host by the plan: (provider database id, resource class) -> amount
Taken = dict[tuple[int, str], int]


@dataclass(frozen=True)
class Move:
    """Move ``consumer`` from the host ``from_host`` (root provider uuid; cells ``from_cells``)
    to ``to_host`` (cells ``to_cells``) with ``allocations`` ``{provider uuid: {class:
    amount}}`` (the body of its ``PUT /allocations``)."""

    consumer: str
    from_host: str
    from_cells: tuple[int, ...]
    to_host: str
    to_cells: tuple[int, ...]
    allocations: Mapping[str, Mapping[str, int]]


@dataclass(frozen=True)
class DefragmentPlan:
    """``fits_now`` (no move needed), ``found`` (a plan, possibly empty), ``moves``, the host
    the flavor fits on afterwards (root uuid), whether the time budget ran out first."""

    fits_now: bool
    found: bool
    moves: tuple[Move, ...] = ()
    host: str | None = None
    timed_out: bool = False


def _cells(fleet: FleetSnapshot, index: CellIndex, providers: Sequence[int]) -> tuple[int, ...]:
    found = set()
    for p in providers:
        for a in fleet.ancestors(p):
            if HW_NUMA_ROOT in fleet.providers[a].traits:
                found.add(index.cell_ids.get(fleet.uuids[a], a))
                break
    return tuple(sorted(found))


def _guests(database: Database, fleet: FleetSnapshot, roots: Sequence[int]) -> dict[int, Guests]:
    """The consumers with allocations in each tree of ``roots`` (root index -> consumer ->
    provider index -> class -> amount), read in one query."""
    owner = {fleet.providers[i].id: (root, i) for root in roots for i in fleet.tree[root]}
    found: dict[int, Guests] = {root: {} for root in roots}
    with database.read() as conn:
        rows = allocation_repo.get_by_providers(conn, sorted(owner))
    for provider_id, consumer, rc, used in rows:
        root, i = owner[provider_id]
        per = found[root].setdefault(consumer, {}).setdefault(i, {})
        per[rc] = per.get(rc, 0) + used
    return found


def _shape_query(
    fleet: FleetSnapshot, allocations: Mapping[int, Mapping[str, int]]
) -> CandidateQuery:
    """A query for a guest shaped as ``allocations`` (see the module docstring)."""
    unsuffixed: dict[str, int] = {}
    cells: dict[int, list[int]] = {}
    for p, resources in allocations.items():
        cell = next(
            (a for a in fleet.ancestors(p) if HW_NUMA_ROOT in fleet.providers[a].traits), None
        )
        if cell is None:
            for rc, amount in resources.items():
                unsuffixed[rc] = unsuffixed.get(rc, 0) + amount
        else:
            cells.setdefault(cell, []).append(p)
    groups = [RequestGroup(suffix=None, resources=unsuffixed)] if unsuffixed else []
    subtrees = []
    for k, (cell, members) in enumerate(sorted(cells.items()), start=1):
        anchor = f"_CELL{k}"
        groups.append(
            RequestGroup(
                suffix=anchor,
                resources=dict(allocations.get(cell, {})),
                required_traits=frozenset({HW_NUMA_ROOT}),
            )
        )
        subtree = [anchor]
        for j, p in enumerate(m for m in members if m != cell):
            suffix = f"_CELL{k}P{j}"
            groups.append(
                RequestGroup(
                    suffix=suffix,
                    resources=dict(allocations[p]),
                    required_traits=fleet.providers[p].traits,
                )
            )
            subtree.append(suffix)
        subtrees.append(frozenset(subtree))
    return CandidateQuery(
        groups=tuple(groups), group_policy="isolate", same_subtree=tuple(subtrees)
    )


@dataclass
class _Search:
    """The search's state: the fleet and flavor, each host's count now (``base``), the usage
    the plan adds so far per host (``touched``: root -> taken), the instances credited to the
    hosts the plan touched (``credit``), the consumers moved, and the time limit."""

    engine: CandidateEngine
    fleet: FleetSnapshot
    index: CellIndex
    plan: SearchPlan
    base: dict[int, int]
    deadline: float
    touched: dict[int, Taken] = field(default_factory=dict)
    credit: dict[int, int] = field(default_factory=dict)
    moved: set[str] = field(default_factory=set)

    def count(self, root: int, taken: Taken, cap: int) -> int:
        """Instances of the flavor that fit on ``root`` with ``taken`` added (at most
        ``cap``), placed as the claims would (``host_fill.fill_host``)."""
        if cap <= 0:
            return 0
        filled = fill_host(self.fleet, root, plan=self.plan, index=self.index, cap=cap,
                           added=taken)  # fmt: skip
        return filled.count

    def credited(self, root: int) -> int:
        """Instances counted on ``root`` as the plan leaves it."""
        return self.credit.get(root, self.base.get(root, 0))

    def total(self) -> int:
        """Instances that fit in the fleet as the plan leaves it."""
        return sum(self.base.values()) + sum(
            n - self.base.get(r, 0) for r, n in self.credit.items()
        )

    def out_of_time(self) -> bool:
        return time.monotonic() > self.deadline


class _OutOfTime(Exception):
    """The time budget ran out."""


def _move(
    fleet: FleetSnapshot,
    index: CellIndex,
    consumer: str,
    source: int,
    allocations: Mapping[int, Mapping[str, int]],
    found: FleetSnapshot,
    candidate: Candidate,
) -> Move:
    """The move of ``consumer`` to ``candidate`` (found on ``found``, a snapshot whose uuids
    are ``fleet``'s)."""
    moved: dict[str, dict[str, int]] = {}
    for p, rc, amount in candidate.allocations:
        per = moved.setdefault(found.uuids[p], {})
        per[rc] = per.get(rc, 0) + amount
    providers = [fleet.index_by_uuid[found.uuids[p]] for p, _, _ in candidate.allocations]
    return Move(
        consumer=consumer,
        from_host=fleet.uuids[source],
        from_cells=_cells(fleet, index, list(allocations)),
        to_host=found.uuids[candidate.anchor],
        to_cells=_cells(fleet, index, providers),
        allocations=moved,
    )


def _place(
    search: _Search,
    consumer: str,
    source: int,
    allocations: Mapping[int, Mapping[str, int]],
    touched: Mapping[int, Taken],
    keeps_room: Callable[[Move], bool],
) -> Move | None:
    """A place for ``consumer``'s shape off its cells: the engine's first candidate among the
    hosts the plan has not touched and where no instance of the flavor fits now (so that no
    count drops), else on a touched host as the earlier moves left it (``touched``: root ->
    usage added, by provider id and class; ``source``, the host room is made on, comes last),
    where the move must ``keeps_room`` for the instances credited there."""
    fleet, index = search.fleet, search.index
    query = _shape_query(fleet, allocations)
    allowed = [
        fleet.uuids[r]
        for r in fleet.roots
        if r not in touched and r != source and not search.base.get(r, 0)
    ]
    result = search.engine.search(query, limit=1, roots=allowed, fleet=fleet)
    if result.candidates:
        candidate = result.candidates[0]
        return _move(fleet, index, consumer, source, allocations, fleet, candidate)
    for root, taken in sorted(touched.items(), key=lambda item: item[0] == source):
        one = host_fleet(fleet, root, taken)
        found = SnapshotEngine(StaticFleetSource(one)).search(query, limit=None, fleet=one)
        for candidate in found.candidates:
            move = _move(fleet, index, consumer, source, allocations, one, candidate)
            if keeps_room(move):
                return move
    return None


def _placed(fleet: FleetSnapshot, move: Move) -> dict[int, dict[str, int]]:
    return {fleet.index_by_uuid[rp]: dict(r) for rp, r in move.allocations.items()}


def _try_set(
    search: _Search, root: int, chosen: Sequence[str], guests: Guests
) -> tuple[tuple[Move, ...], dict[int, Taken]] | None:
    """Take the guests of ``chosen`` off ``root``, place each elsewhere (another cell of
    ``root`` included), one after another, each in the fleet as the moves before it left it;
    (the moves, the plan's usage afterwards) when ``root`` then fits one instance more than it
    is credited and no other host fits fewer."""
    fleet = search.fleet
    target = search.credited(root) + 1
    touched = {r: dict(t) for r, t in search.touched.items()}
    freed = touched.setdefault(root, {})
    for consumer in chosen:
        _add(freed, fleet, guests[consumer], -1)
    if search.count(root, freed, target) < target:
        return None

    def keeps_room(move: Move) -> bool:
        to = fleet.index_by_uuid[move.to_host]
        need = target if to == root else search.credited(to)
        trial = dict(touched.get(to, {}))
        _add(trial, fleet, _placed(fleet, move), 1)
        return search.count(to, trial, need) >= need

    moves = []
    for consumer in chosen:
        move = _place(search, consumer, root, guests[consumer], touched, keeps_room)
        if move is None:
            return None
        to = fleet.index_by_uuid[move.to_host]
        _add(touched.setdefault(to, {}), fleet, _placed(fleet, move), 1)
        moves.append(move)
    return tuple(moves), touched


def _add(
    taken: Taken, fleet: FleetSnapshot, allocations: Mapping[int, Mapping[str, int]], sign: int
) -> None:
    """Add ``sign`` x ``allocations`` (by provider index) to ``taken`` (by provider id)."""
    for p, resources in allocations.items():
        pid = fleet.providers[p].id
        for rc, amount in resources.items():
            taken[(pid, rc)] = taken.get((pid, rc), 0) + sign * amount


def _ordered_hosts(
    fleet: FleetSnapshot, index: CellIndex, ask: FlavorAsk, options: NumaOptions, cap: int
) -> tuple[dict[int, int], list[int]]:
    """(instances that fit per host now, counted up to ``cap``; the hosts, closest to one
    more instance first)."""
    engine = SnapshotEngine(StaticFleetSource(fleet))
    (answer,) = fleet_capacity(
        engine=engine, index=index, flavors=[ask], options=options, fleet=fleet, cap=cap
    )
    scored = []
    for host in answer.hosts:
        deficit = sum(
            (s.requested - s.free) / s.requested
            for s in host.limited_by
            if s.requested and s.free is not None and s.reason == "short"
        )
        scored.append((deficit, host.host, fleet.index_by_uuid[host.uuid]))
    scored.sort()
    counts = {fleet.index_by_uuid[h.uuid]: h.count for h in answer.hosts if h.count}
    return counts, [root for _, _, root in scored]


def _step(
    search: _Search, database: Database, hosts: Sequence[int], known: dict[int, Guests], most: int
) -> tuple[int, tuple[Move, ...]] | None:
    """One more instance: the first set of at most ``most`` guests, fewest first, whose moves
    off one host (in ``hosts`` order) make room for it; the state takes the moves. Raises
    ``_OutOfTime``."""
    for k in range(1, most + 1):
        for at, root in enumerate(hosts):
            if search.out_of_time():
                raise _OutOfTime
            if root not in known:
                known.update(_guests(database, search.fleet, hosts[at : at + GUEST_READ_HOSTS]))
            guests = {c: g for c, g in known[root].items() if c not in search.moved}
            for chosen in itertools.islice(
                itertools.combinations(sorted(guests), k), MAX_SETS_PER_HOST
            ):
                found = _try_set(search, root, chosen, guests)
                if found is not None:
                    moves, search.touched = found
                    search.credit[root] = search.credited(root) + 1
                    search.moved.update(chosen)
                    return root, moves
                if search.out_of_time():
                    raise _OutOfTime
    return None


def defragment(
    *,
    database: Database,
    engine: CandidateEngine,
    index: CellIndex,
    ask: FlavorAsk,
    options: NumaOptions | None = None,
    max_moves: int = 3,
    budget_s: float = 2.0,
    instances: int = 1,
) -> DefragmentPlan:
    """The plan of the module docstring for ``instances`` more instances of ``ask``'s flavor
    (at most ``MAX_INSTANCES``), within ``budget_s`` seconds (wall; at most
    ``MAX_BUDGET_S``; the search stops ``ANSWER_RESERVE_S``, at most a tenth of the budget,
    earlier, to answer within it) and ``max_moves`` moves in all (at most ``MAX_MOVES``).
    Reads only. Raises ``InvalidFlavor`` (400)."""
    options = options or NumaOptions()
    budget_s = min(budget_s, MAX_BUDGET_S)
    deadline = time.monotonic() + budget_s - min(ANSWER_RESERVE_S, budget_s / 10)
    instances = max(1, min(instances, MAX_INSTANCES))
    fleet = engine.snapshot()
    plan = search_plan(numa_request(ask.flavor, ask.image, options, aliases=ask.aliases))
    base, hosts = _ordered_hosts(fleet, index, ask, options, instances)
    search = _Search(engine, fleet, index, plan, base, deadline)
    if search.total() >= instances:
        return DefragmentPlan(fits_now=True, found=True)
    moves: list[Move] = []
    gained: list[int] = []
    known: dict[int, Guests] = {}
    most = min(max_moves, MAX_MOVES)
    while search.total() < instances:
        try:
            step = _step(search, database, hosts, known, most - len(moves))
        except _OutOfTime:
            return DefragmentPlan(fits_now=False, found=False, timed_out=True)
        if step is None:
            return DefragmentPlan(fits_now=False, found=False)
        gained.append(step[0])
        moves.extend(step[1])
    return DefragmentPlan(False, True, tuple(moves), fleet.uuids[gained[0]])
