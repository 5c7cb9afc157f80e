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
from collections.abc import Callable, Collection, Iterator
from typing import Any, Protocol

from placement_numa.domain.request_groups import CandidateQuery
from placement_numa.engine.candidates import Candidate, CandidateResult
from placement_numa.engine.fleet import FleetSnapshot
from placement_numa.engine.search import (
    RankBoundFn,
    RootSearch,
    bounded_merge,
    candidate_roots,
    plan_query,
)
from placement_numa.errors import BadRequest

__all__ = ["CandidateEngine", "RankFn", "FleetSource", "StaticFleetSource", "SnapshotEngine"]

RankFn = Callable[[Candidate, FleetSnapshot], Any]


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


class SnapshotEngine:
    """``CandidateEngine`` over snapshots from ``source``; ``randomize`` shuffles root order."""

    def __init__(self, source: FleetSource, *, randomize: bool = False) -> None:
        self.source = source
        self.randomize = randomize
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
    ) -> CandidateResult:
        """Candidates for ``query``: at most ``limit`` (default ``query.limit``), best first.

        ``rank_bound`` (with ``rank``): search roots lazily in ascending bound order
        (``search.bounded_merge``; same result as without it). ``roots``: only anchor roots with
        these uuids. ``accept``: keep only candidates it accepts (applied before ``limit``).
        ``fleet``: search this snapshot instead of asking the source (several searches of one
        request see one state and read the revision counter once).
        """
        if fleet is None:
            fleet = self.source.snapshot()
        check_names(query, fleet)
        if limit is None:
            limit = query.limit
        stream = self._stream(
            fleet,
            query,
            rank,
            exclude_nested=not nested_aware and fleet.has_trees,
            rank_bound=rank_bound,
            only_roots=roots,
            accept=accept,
        )
        found: list[Candidate] = []
        if limit is None or limit > 0:
            for candidate in stream:
                found.append(candidate)
                if limit is not None and len(found) >= limit:
                    break
        return CandidateResult(found, fleet)

    def _stream(
        self,
        fleet: FleetSnapshot,
        query: CandidateQuery,
        rank: RankFn | None,
        *,
        exclude_nested: bool,
        rank_bound: RankBoundFn | None = None,
        only_roots: Collection[str] | None = None,
        accept: Callable[[Candidate], bool] | None = None,
    ) -> Iterator[Candidate]:
        plan = plan_query(fleet, query)
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

        def per_root(root: int) -> Iterator[Candidate]:
            # a candidate can be found from two anchors only through sharing providers
            maybe_twice = root in roots_with_sharing
            for candidate in searcher.candidates(root):
                if exclude_nested:
                    owners = [providers[p].root for p, _, _ in candidate.allocations]
                    if len(set(owners)) != len({p for p, _, _ in candidate.allocations}):
                        continue
                if maybe_twice and any(
                    providers[p].root != root or providers[p].sharing for p in candidate.providers()
                ):
                    # may also be found from another anchor: report it once
                    key = candidate.key()
                    if key in seen:
                        continue
                    seen.add(key)
                if accept is not None and not accept(candidate):
                    continue
                yield candidate

        if rank is None:
            for root in roots:
                yield from per_root(root)
            return
        if rank_bound is not None and not self.randomize:
            yield from bounded_merge(searcher, roots, per_root, rank, rank_bound)
            return
        heap: list[tuple[Any, int, int, Candidate]] = []
        queues: dict[int, Iterator[tuple[Any, int, Candidate]]] = {}
        for order, root in enumerate(roots):
            ranked = sorted(
                ((rank(c, fleet), n, c) for n, c in enumerate(per_root(root))),
                key=lambda item: (item[0], item[1]),
            )
            if self.randomize:
                random.shuffle(ranked)
                ranked.sort(key=lambda item: item[0])
            if ranked:
                queue = iter(ranked)
                key, n, candidate = next(queue)
                queues[order] = queue
                heap.append((key, order, n, candidate))
        heapq.heapify(heap)
        while heap:
            key, order, n, candidate = heapq.heappop(heap)
            yield candidate
            following = next(queues[order], None)
            if following is not None:
                heapq.heappush(heap, (following[0], order, following[1], following[2]))


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
