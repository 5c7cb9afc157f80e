"""``SnapshotEngine``: the candidate engine over an in-memory ``FleetSnapshot``.

The snapshot comes from a ``FleetSource`` asked once per query (the SQL source returns the cached
snapshot unless ``placement_revision`` moved). Roots are searched one at a time, lazily
(``engine.search.search_root``); without a rank function the first ``limit`` candidates in
root order are returned and no further root is looked at; with one, each root's candidates are
sorted and roots merged with a heap (see the package docstring).
"""

from __future__ import annotations

import heapq
import random
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any, Literal, Protocol

from placement_numa.domain.request_groups import CandidateQuery
from placement_numa.engine.candidates import Candidate, CandidateResult, SearchStats
from placement_numa.engine.fleet import FleetSnapshot
from placement_numa.engine.search import (
    QueryPlan,
    RankBoundFn,
    RootSearch,
    RootView,
    candidate_roots,
    plan_query,
)
from placement_numa.errors import BadRequest

__all__ = [
    "CandidateEngine",
    "RankFn",
    "FleetSource",
    "StaticFleetSource",
    "SnapshotEngine",
    "Strategy",
    "PLACEMENT_BUDGET",
]

RankFn = Callable[[Candidate, FleetSnapshot], Any]
# Placement's ``[placement] allocation_candidates_generation_strategy``
Strategy = Literal["depth-first", "breadth-first"]


class CandidateEngine(Protocol):
    """Answers candidate queries (see the package docstring for the contract).

    ``caches``: per-engine (so per-process) memos of the layers above, each under its own key
    and keyed inside by ``FleetSnapshot.revision`` (e.g. the NUMA cell index).
    """

    caches: dict[str, object]

    def snapshot(self) -> FleetSnapshot:
        """The fleet as of this call (what ``search`` without ``fleet`` would search)."""
        ...

    def search(
        self,
        query: CandidateQuery,
        *,
        limit: int | None = None,
        rank: RankFn | None = None,
        nested_aware: bool = True,
        rank_bound: RankBoundFn | None = None,
        roots: Collection[str] | None = None,
        accept: Callable[[Candidate], bool] | None = None,
        fleet: FleetSnapshot | None = None,
        orderings: bool = True,
        diversify: bool = False,
        strategy: Strategy | None = None,
    ) -> CandidateResult:
        """Candidates for ``query``, best first (arguments: see the package docstring);
        ``fleet``: search this snapshot (from ``snapshot()``) instead of a fresh one.

        Raises ``BadRequest`` for unknown resource classes or traits (``check_names``).
        """
        ...


class FleetSource(Protocol):
    """Hands out the current fleet snapshot (fresh as of the call)."""

    def snapshot(self) -> FleetSnapshot:
        """The fleet as of this call: reflects every write committed before it."""
        ...


class StaticFleetSource:
    """A fixed snapshot (tests, benchmarks of the pure search)."""

    def __init__(self, fleet: FleetSnapshot) -> None:
        self.fleet = fleet

    def snapshot(self) -> FleetSnapshot:
        """The fixed snapshot given at construction (never refreshed)."""
        return self.fleet


# At most this many group placements (candidates x search slots) are generated per search,
# whatever max_allocation_candidates says: a candidate of 500 groups weighs 500 of 1-group ones.
PLACEMENT_BUDGET = 2_000_000


class _Counter:
    """Work done by one search (see ``SearchStats``) and the cap it runs under."""

    __slots__ = ("generated", "roots", "cap", "cap_hit")

    def __init__(self, cap: int | None) -> None:
        self.generated = 0
        self.roots = 0
        self.cap = cap
        self.cap_hit = False

    def take(self) -> bool:
        """Count one generated candidate; ``False`` (and ``cap_hit``) once the cap is spent."""
        if self.cap is not None and self.generated >= self.cap:
            self.cap_hit = True
            return False
        self.generated += 1
        return True


class SnapshotEngine:
    """``CandidateEngine`` over snapshots from ``source``.

    * ``randomize``: shuffle root order (Placement's ``randomize_allocation_candidates``);
    * ``max_candidates``: Placement's ``[placement] max_allocation_candidates``: at most this
      many candidates are generated per search (``None`` or negative: no cap but
      ``PLACEMENT_BUDGET``); past it the answer is truncated, as Placement truncates, and
      ``result.stats.cap_hit`` is set;
    * ``strategy``: Placement's ``allocation_candidates_generation_strategy``: ``depth-first``
      (every candidate of a root before the next root) or ``breadth-first`` (round robin over
      roots: one candidate of each viable root before a second of any), for unranked searches.
    """

    def __init__(
        self,
        source: FleetSource,
        *,
        randomize: bool = False,
        max_candidates: int | None = None,
        strategy: Strategy = "depth-first",
    ) -> None:
        self.source = source
        self.randomize = randomize
        self.max_candidates = (
            max_candidates if max_candidates is not None and max_candidates >= 0 else None
        )
        if strategy not in ("depth-first", "breadth-first"):
            raise ValueError(f"unknown generation strategy {strategy!r}")
        self.strategy: Strategy = strategy
        self.caches: dict[str, object] = {}

    def snapshot(self) -> FleetSnapshot:
        """The source's snapshot as of this call (fresh: reflects every committed write)."""
        return self.source.snapshot()

    def search(
        self,
        query: CandidateQuery,
        *,
        limit: int | None = None,
        rank: RankFn | None = None,
        nested_aware: bool = True,
        rank_bound: RankBoundFn | None = None,
        roots: Collection[str] | None = None,
        accept: Callable[[Candidate], bool] | None = None,
        fleet: FleetSnapshot | None = None,
        orderings: bool = True,
        diversify: bool = False,
        strategy: Strategy | None = None,
    ) -> CandidateResult:
        """Candidates for ``query``: at most ``limit`` (default ``query.limit``), best first.

        ``rank_bound`` (with ``rank``): search roots lazily in ascending bound order
        (``search.bounded_merge``' order; same result as without it). ``roots``: only anchor
        roots with these uuids. ``accept``: keep only candidates it accepts (applied before
        ``limit``). ``fleet``: search this snapshot instead of asking the source (several
        searches of one request see one state and read the revision counter once).
        ``orderings=False``: one candidate per ordering class of interchangeable groups
        (identical suffixed groups; alike ``same_subtree`` sets such as a NUMA guest's identical
        cells): each distinct set of providers once. ``diversify`` (with ``rank``): the best
        candidate of every root, in rank order, before the second best of any root, and so on.
        ``strategy``: this search's generation strategy (default: the engine's).

        A ranked search ranks one candidate per ordering class (``rank`` and ``accept`` must
        not depend on how interchangeable groups are ordered among themselves: the NUMA ranks
        do not) and keeps at most ``limit`` per root, so ``limit`` bounds its memory and the
        cap bounds its work. ``result.stats`` tells what the search did.

        Raises ``BadRequest`` for unknown resource classes or traits (``check_names``).
        """
        if fleet is None:
            fleet = self.source.snapshot()
        check_names(query, fleet)
        if limit is None:
            limit = query.limit
        plan = plan_query(fleet, query)
        cap = self.max_candidates
        budget = PLACEMENT_BUDGET // max(1, len(plan.slots))
        cap = budget if cap is None else min(cap, budget)
        counter = _Counter(cap)
        found: list[Candidate] = []
        if limit is None or limit > 0:
            stream = self._stream(
                plan,
                rank,
                counter,
                exclude_nested=not nested_aware and fleet.has_trees,
                rank_bound=rank_bound,
                only_roots=roots,
                accept=accept,
                orderings=orderings,
                diversify=diversify,
                strategy=strategy or self.strategy,
                need=limit,
            )
            for candidate in stream:
                found.append(candidate)
                if limit is not None and len(found) >= limit:
                    break
        stats = SearchStats(
            returned=len(found),
            generated=counter.generated,
            roots_visited=counter.roots,
            cap_hit=counter.cap_hit,
        )
        return CandidateResult(found, fleet, stats)

    def _stream(
        self,
        plan: QueryPlan,
        rank: RankFn | None,
        counter: _Counter,
        *,
        exclude_nested: bool,
        rank_bound: RankBoundFn | None,
        only_roots: Collection[str] | None,
        accept: Callable[[Candidate], bool] | None,
        orderings: bool,
        diversify: bool,
        strategy: Strategy,
        need: int | None,
    ) -> Iterator[Candidate]:
        fleet = plan.fleet
        roots: Any = candidate_roots(plan)
        if only_roots is not None:
            allowed = {fleet.index_by_uuid.get(u, -1) for u in only_roots}
            roots = (r for r in roots if r in allowed)
        if self.randomize:
            roots = list(roots)
            random.shuffle(roots)
        providers = fleet.providers
        seen: set[tuple[object, ...]] = set()
        searcher = RootSearch(plan)
        roots_with_sharing = fleet.roots_with_sharing

        def bases(root: int, every_ordering: bool = False) -> Iterator[Candidate]:
            """The root's candidates, one per ordering class (all with ``every_ordering``),
            filtered (nested, accept)."""
            counter.roots += 1
            for candidate in searcher.candidates(root, orderings=every_ordering):
                if not counter.take():
                    return
                if exclude_nested:
                    owners = [providers[p].root for p, _, _ in candidate.allocations]
                    if len(set(owners)) != len({p for p, _, _ in candidate.allocations}):
                        continue
                if accept is not None and not accept(candidate):
                    continue
                yield candidate

        def unique(root: int, candidates: Iterable[Candidate]) -> Iterator[Candidate]:
            """Drop candidates already found from another anchor (sharing providers only)."""
            if root not in roots_with_sharing:
                yield from candidates
                return
            for candidate in candidates:
                if any(
                    providers[p].root != root or providers[p].sharing for p in candidate.providers()
                ):
                    key = candidate.key()
                    if key in seen:
                        continue
                    seen.add(key)
                yield candidate

        def every(base: Candidate) -> Iterator[Candidate]:
            """``base`` and (with ``orderings``) its reorderings, each counted."""
            if not orderings:
                yield base
                return
            first = True
            for candidate in searcher.orderings(base):
                if not first and not counter.take():
                    return
                first = False
                yield candidate

        def per_root(root: int) -> Iterator[Candidate]:
            return unique(root, bases(root, orderings))

        if rank is None:
            if strategy == "breadth-first":
                yield from _round_robin(per_root(root) for root in roots)
                return
            for root in roots:
                yield from per_root(root)
                if counter.cap_hit:
                    return
            return

        def ranked_root(root: int) -> Iterator[tuple[Any, Candidate]]:
            """``(key, candidate)`` of one root in rank order (ties: search order); at most
            ``need`` ranked classes kept (all when the root may share candidates)."""
            keyed: Iterator[tuple[Any, float, Candidate]] = (
                (rank(c, fleet), n, c) for n, c in enumerate(bases(root))
            )
            if self.randomize:
                keyed = ((key, random.random(), c) for key, _, c in keyed)
            if need is not None and root not in roots_with_sharing:
                ranked = heapq.nsmallest(need, keyed, key=_first_two)
            else:
                ranked = sorted(keyed, key=_first_two)
            for key, _, base in ranked:
                for candidate in unique(root, every(base)):
                    yield key, candidate

        yield from _merge(
            searcher,
            roots,
            ranked_root,
            rank_bound if not self.randomize else None,
            diversify=diversify,
            counter=counter,
        )


def _first_two(item: tuple[Any, float, Candidate]) -> tuple[Any, float]:
    return item[0], item[1]


def _round_robin(streams: Iterable[Iterator[Candidate]]) -> Iterator[Candidate]:
    """Placement's breadth-first order (``util.roundrobin``): the first candidate of every
    stream in stream order, then the second of each, and so on; streams are opened lazily, one
    per first round step."""
    active: deque[Iterator[Candidate]] = deque()
    for stream in streams:
        first = next(stream, None)
        if first is not None:
            yield first
            active.append(stream)
    while active:
        stream = active.popleft()
        following = next(stream, None)
        if following is not None:
            yield following
            active.append(stream)


def _merge(
    searcher: RootSearch,
    roots: Iterable[int],
    ranked_root: Callable[[int], Iterator[tuple[Any, Candidate]]],
    bound: RankBoundFn | None,
    *,
    diversify: bool,
    counter: _Counter,
) -> Iterator[Candidate]:
    """Ranked candidates of ``roots`` in order ``(rank key, root order, root's own order)``.

    With ``bound``, every root gets a bound first (``RankBoundFn``); roots are searched in
    ``(bound, root order)`` order and a candidate is yielded once it precedes ``(bound,
    order)`` of every root not searched yet, so the work follows the roots whose best
    candidates are returned (design notes, "search per root, best first"). Roots whose
    candidates may also be found from another anchor (sharing providers) are searched first,
    in root order, so the dedup keeps the copy the exhaustive merge would keep. With
    ``diversify``, rounds: each root's best candidate in rank order, then each root's second
    best, and so on. Stops searching new roots once the cap is spent.
    """
    fleet = searcher.plan.fleet
    sharing_roots = fleet.roots_with_sharing
    pending: list[tuple[Any, int, int]] = []  # (bound, order, root)
    first: list[tuple[int, int]] = []  # (order, root): searched before any bound applies
    for order, root in enumerate(roots):
        if bound is None or root in sharing_roots:
            first.append((order, root))
            continue
        key = bound(RootView(searcher, root))
        if key is not None:
            pending.append((key, order, root))
    pending.sort(key=lambda item: (item[0], item[1]))
    heap: list[tuple[Any, int, int, Candidate]] = []  # (key, order, seq, candidate)
    streams: dict[int, Iterator[tuple[Any, Candidate]]] = {}
    later: list[int] = []  # diversify: roots whose next candidate waits for the next round
    seq = 0

    def push(order: int) -> None:
        nonlocal seq
        following = next(streams[order], None)
        if following is None:
            del streams[order]
            return
        seq += 1
        heapq.heappush(heap, (following[0], order, seq, following[1]))

    def pop() -> Candidate:
        _, order, _, candidate = heapq.heappop(heap)
        if diversify:
            later.append(order)
        else:
            push(order)
        return candidate

    def start(order: int, root: int) -> None:
        streams[order] = ranked_root(root)
        push(order)

    for order, root in first:
        if counter.cap_hit:
            break
        start(order, root)
    for key, order, root in pending:
        while heap and (heap[0][0], heap[0][1]) < (key, order):
            yield pop()
        if counter.cap_hit:
            break
        start(order, root)
    while True:
        while heap:
            yield pop()
        if not later:
            return
        for order in sorted(later):
            push(order)
        later.clear()


def check_names(query: CandidateQuery, fleet: FleetSnapshot) -> None:
    """Refuse unknown resource classes and traits as Placement does (400, undefined code).

    Order: ``root_required`` traits, then per group its classes, then its traits. (Placement
    stops at the first group that matches nothing and never looks at later groups' names; we
    check them all.) Unknown aggregates and ``in_tree`` uuids are not errors: they match nothing.
    """
    classes, traits = fleet.resource_class_names, fleet.trait_names
    if traits is not None:
        for name in sorted(query.root_required | query.root_forbidden):
            if name not in traits:
                raise BadRequest(f"No such trait(s): {name}.")
    for group in query.groups:
        if classes is not None:
            for rc in group.resources:
                if rc not in classes:
                    raise BadRequest(
                        "Invalid resource class in resources parameter: "
                        f"No such resource class {rc}."
                    )
        if traits is not None:
            names = set(group.required_traits) | set(group.forbidden_traits)
            for any_of in group.any_traits:
                names |= any_of
            for name in sorted(names):
                if name not in traits:
                    raise BadRequest(f"No such trait(s): {name}.")
