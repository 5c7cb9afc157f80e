"""``SnapshotEngine``: the candidate engine over an in-memory ``FleetSnapshot``.

The snapshot comes from a ``FleetSource`` asked once per query (the SQL source returns the cached
snapshot unless ``placement_revision`` moved). The query is planned (``engine/plan.py``), the
anchor roots found (``engine/options.py``), and roots searched one at a time, lazily
(``engine/replay.py``); without a rank function the first ``limit`` candidates in root order are
returned and no further root is looked at (or Placement's breadth-first round robin); with one,
each root's candidates are sorted and roots merged with a heap (``engine/merge.py``).
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Collection, Iterable, Iterator
from itertools import chain, islice
from typing import Any, Unpack, cast

from placement_numa.domain.request_groups import CandidateQuery
from placement_numa.engine.candidates import (
    Candidate,
    CandidateResult,
    ReplayedRun,
    ResultPart,
    SearchStats,
)
from placement_numa.engine.fleet import FleetSnapshot
from placement_numa.engine.merge import Counter, RankedRoot, merge_ranked, round_robin
from placement_numa.engine.names import check_names
from placement_numa.engine.options import candidate_roots
from placement_numa.engine.plan import QueryPlan, plan_query
from placement_numa.engine.protocol import FleetSource, GenerationStrategy, RankFn, SearchOptions
from placement_numa.engine.replay import RankBoundFn, RootSearch

__all__ = ["SnapshotEngine", "PLACEMENT_BUDGET", "CLASSIFY_SHARE"]

# At most this many group placements (candidates x search slots) are generated per search,
# whatever max_allocation_candidates says: a candidate of 500 groups weighs 500 of 1-group ones.
PLACEMENT_BUDGET = 2_000_000

# An unranked search that may read 1/CLASSIFY_SHARE of the fleet's roots or more (every
# candidate root without a limit, about ``limit`` roots with one) classes every root at once
# (``RootSearch.classify_roots``: O(providers) in numpy, about 6 ns a provider at 100,000
# hosts) instead of gathering each read root's member codes (``RoomCodes.of``, about 2 us a
# root): that pays once a fiftieth of the roots are read; 16 leaves a margin for searches that
# stop before their limit's worth of roots.
CLASSIFY_SHARE = 16


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
        strategy: GenerationStrategy = "depth-first",
    ) -> None:
        self.source = source
        self.randomize = randomize
        self.max_candidates = (
            max_candidates if max_candidates is not None and max_candidates >= 0 else None
        )
        if strategy not in ("depth-first", "breadth-first"):
            raise ValueError(f"unknown generation strategy {strategy!r}")
        self.strategy: GenerationStrategy = strategy

    def snapshot(self) -> FleetSnapshot:
        """The source's snapshot as of this call (fresh: reflects every committed write)."""
        return self.source.snapshot()

    def search(self, query: CandidateQuery, **options: Unpack[SearchOptions]) -> CandidateResult:
        """Candidates for ``query``: at most ``limit`` (default ``query.limit``), best first
        (options: ``SearchOptions``).

        A ranked search ranks one candidate per ordering class (``rank`` and ``accept`` must
        not depend on how interchangeable groups are ordered among themselves: the NUMA ranks
        do not) and keeps at most ``limit`` per root, so ``limit`` bounds its memory and the
        cap bounds its work. ``result.stats`` tells what the search did.

        Raises ``BadRequest`` for unknown resource classes or traits (``check_names``).
        """
        fleet = options.get("fleet")
        limit = options.get("limit")
        if fleet is None:
            fleet = self.source.snapshot()
        check_names(query, fleet)
        if limit is None:
            limit = query.limit
        plan = plan_query(fleet, query)
        budget = PLACEMENT_BUDGET // max(1, len(plan.slots))
        cap = budget if self.max_candidates is None else min(self.max_candidates, budget)
        counter = Counter(cap)
        found: list[ResultPart] = []  # candidates and runs of replayed ones, in order
        count = 0  # candidates in ``found``
        runs = False  # whether ``found`` holds a run (else it is the list of candidates)
        if limit is None or limit > 0:
            stream = _Stream(
                self,
                plan,
                counter,
                nested_aware=options.get("nested_aware", True),
                accept=options.get("accept"),
                orderings=options.get("orderings", True),
            )
            candidates = stream.run(
                options.get("rank"),
                options.get("rank_bound"),
                options.get("roots"),
                diversify=options.get("diversify", False),
                strategy=options.get("strategy") or self.strategy,
                need=limit,
            )
            for batch in candidates:
                size = len(batch)
                if limit is not None and count + size >= limit:
                    size = limit - count
                    batch = batch.head(size) if isinstance(batch, ReplayedRun) else batch[:size]
                if isinstance(batch, ReplayedRun):
                    if size:  # a replayed root without candidates adds nothing
                        found.append(batch)
                        runs = True
                else:
                    found.extend(batch)
                count += size
                if limit is not None and count >= limit:
                    break
                stream.wanted = None if limit is None else limit - count
        stats = SearchStats(
            returned=count,
            generated=counter.generated,
            roots_visited=counter.roots,
            cap_hit=counter.cap_hit,
        )
        # without runs ``found`` is the candidates themselves: nothing to make on a read
        listed = None if runs else cast("list[Candidate]", found)
        return CandidateResult(listed, fleet, stats, parts=found)


class _Stream:
    """One search's candidates, root by root: filtered (pre-1.29 nesting, ``accept``), counted
    against the cap, deduplicated across anchors (sharing providers), in engine order."""

    def __init__(
        self,
        engine: SnapshotEngine,
        plan: QueryPlan,
        counter: Counter,
        *,
        nested_aware: bool,
        accept: Callable[[Candidate], bool] | None,
        orderings: bool,
    ) -> None:
        self.engine = engine
        self.plan = plan
        self.fleet = plan.fleet
        self.counter = counter
        self.exclude_nested = not nested_aware and plan.fleet.has_trees
        self.accept = accept
        self.orderings = orderings
        self.searcher = RootSearch(plan)
        # a ranked root may be answered by replay (``ranked_root``): no nested exclusion, one
        # candidate per ordering class, no random order
        self.replay_ranked = not (self.exclude_nested or orderings or engine.randomize)
        self.rank: RankFn | None = None  # the ranked search's, set by ``run``
        self.need: int | None = None
        self.seen: set[tuple[object, ...]] = set()
        # candidates still wanted by the caller (``None``: all), updated between batches
        self.wanted: int | None = None

    def run(
        self,
        rank: RankFn | None,
        rank_bound: RankBoundFn | None,
        only_roots: Collection[str] | None,
        *,
        diversify: bool,
        strategy: GenerationStrategy,
        need: int | None,
    ) -> Iterator[list[Candidate] | ReplayedRun]:
        """The candidates in engine order (see ``SnapshotEngine.search``), in batches (a
        replayed root's candidates at once, as one ``ReplayedRun``)."""
        fleet = self.fleet
        self.wanted = need
        roots: Iterable[int] = candidate_roots(self.plan)
        if only_roots is not None:
            allowed = {fleet.index_by_uuid.get(u, -1) for u in only_roots}
            roots = (r for r in roots if r in allowed)
        if rank is None and only_roots is None:
            if need is None:
                listed = list(roots)  # every one is read
                roots, reads = listed, len(listed)
            else:
                reads = need  # about as many roots as candidates (plus roots with none)
            if reads * CLASSIFY_SHARE >= len(fleet.roots):
                self.searcher.classify_roots()
        if self.engine.randomize:
            roots = list(roots)
            random.shuffle(roots)
        if rank is None and strategy != "breadth-first":
            yield from self.depth_first(roots)
            return
        if rank is None:
            for candidate in round_robin(self.per_root(root) for root in roots):
                yield [candidate]
            return
        self.rank, self.need = rank, need
        ranked = merge_ranked(
            self.searcher,
            roots,
            self.ranked_root,
            rank_bound if not self.engine.randomize else None,
            diversify=diversify,
            counter=self.counter,
        )
        while True:  # as many as still wanted at once (the merge is lazy: it stops there)
            batch = list(ranked if self.wanted is None else islice(ranked, self.wanted))
            if not batch:
                return
            yield batch

    def depth_first(self, roots: Iterable[int]) -> Iterator[list[Candidate] | ReplayedRun]:
        """Unranked candidates root by root (``per_root``), in batches: a replayed root's at
        once as its ``ReplayedRun``, read in this loop (one look-up per root, no generator, no
        ``Candidate`` made), a searched one's one by one; stops when the cap is hit."""
        replayed, orderings = self.searcher.replayed_run, self.orderings
        counter, with_sharing = self.counter, self.fleet.roots_with_sharing
        filtered = self.exclude_nested or self.accept is not None
        for root in roots:
            known = None
            if not filtered and root not in with_sharing:
                known = replayed(root, orderings=orderings)
            if known is None:
                for candidate in self.per_root(root):
                    yield [candidate]
            else:
                counter.roots += 1
                size = len(known.entries)
                wanted = size if self.wanted is None else min(size, self.wanted)
                taken = counter.take_many(wanted)
                yield known if taken == size else known.head(taken)
            if counter.cap_hit:
                return

    def bases(self, root: int, every_ordering: bool = False) -> Iterator[Candidate]:
        """The root's candidates, one per ordering class (all with ``every_ordering``),
        filtered (nested, accept)."""
        counter, accept, providers = self.counter, self.accept, self.fleet.providers
        counter.roots += 1
        for candidate in self.searcher.candidates(root, orderings=every_ordering):
            if not counter.take():
                return
            if self.exclude_nested:
                owners = [providers[p].root for p, _, _ in candidate.allocations]
                if len(set(owners)) != len({p for p, _, _ in candidate.allocations}):
                    continue
            if accept is not None and not accept(candidate):
                continue
            yield candidate

    def unique(self, root: int, candidates: Iterable[Candidate]) -> Iterator[Candidate]:
        """Drop candidates already found from another anchor (sharing providers only)."""
        if root not in self.fleet.roots_with_sharing:
            yield from candidates
            return
        providers, seen = self.fleet.providers, self.seen
        for candidate in candidates:
            if any(
                providers[p].root != root or providers[p].sharing for p in candidate.providers()
            ):
                key = candidate.key()
                if key in seen:
                    continue
                seen.add(key)
            yield candidate

    def every(self, base: Candidate) -> Iterator[Candidate]:
        """``base`` and (with ``orderings``) its reorderings, each counted."""
        if not self.orderings:
            yield base
            return
        first = True
        for candidate in self.searcher.orderings(base):
            if not first and not self.counter.take():
                return
            first = False
            yield candidate

    def per_root(self, root: int) -> Iterator[Candidate]:
        """An unranked root's candidates (every ordering with ``orderings``)."""
        return self.unique(root, self.bases(root, self.orderings))

    def ranked_root(self, root: int) -> RankedRoot:
        """``(key, candidate)`` of one root in rank order (ties: search order) by ``self.rank``;
        at most ``self.need`` ranked classes kept (all when the root may share candidates). A
        root answered by replay (``RootSearch.replayed``) is ranked at once and given as a list
        (no generator: a first-time query over 1,000 roots resumes none per root)."""
        rank = self.rank
        assert rank is not None  # set by ``run`` before the merge asks
        if self.replay_ranked and root not in self.fleet.roots_with_sharing:
            known = self.searcher.replayed(root, orderings=False)
            if known is not None:  # a look-alike tree's answer: ranked in one pass
                return self.ranked_known(self.counted(known), rank)
        return self.searched_root(root, rank, self.need)

    def searched_root(
        self, root: int, rank: RankFn, need: int | None
    ) -> Iterator[tuple[Any, Candidate]]:
        """``ranked_root`` of a root that is searched (not replayed), lazily."""
        fleet = self.fleet
        keyed: Iterator[tuple[Any, float, Candidate]] = (
            (rank(c, fleet), n, c) for n, c in enumerate(self.bases(root))
        )
        if self.engine.randomize:
            keyed = ((key, random.random(), c) for key, _, c in keyed)
        if need is not None and root not in fleet.roots_with_sharing:
            first = list(islice(keyed, need + 1))  # most roots have a few: sorted at once
            if len(first) <= need:
                ranked = sorted(first, key=_first_two)
            else:
                ranked = heapq.nsmallest(need, chain(first, keyed), key=_first_two)
        else:
            ranked = sorted(keyed, key=_first_two)
        for key, _, base in ranked:
            for candidate in self.unique(root, self.every(base)):
                yield key, candidate

    def counted(self, known: list[Candidate]) -> list[Candidate]:
        """A replayed root's bases (``RootSearch.replayed``, one per ordering class) counted
        and filtered as ``bases`` does: what the cap allows, then ``accept``."""
        counter = self.counter
        counter.roots += 1
        size = len(known)
        taken = counter.take_many(size)
        if taken < size:
            known = known[:taken]
        accept = self.accept
        return known if accept is None else [c for c in known if accept(c)]

    def ranked_known(self, known: list[Candidate], rank: RankFn) -> list[tuple[Any, Candidate]]:
        """``ranked_root`` of a root whose bases are ``known`` (``counted``): ``(key,
        candidate)`` by ``rank`` in rank order, ties in search order, at most ``self.need``, as
        a list."""
        fleet, need = self.fleet, self.need
        if not known or need == 0:
            return []
        if len(known) == 1:
            return [(rank(known[0], fleet), known[0])]
        keyed = [(rank(c, fleet), n, c) for n, c in enumerate(known)]
        if need is not None and len(keyed) > need:
            keyed = heapq.nsmallest(need, keyed, key=_first_two)
        else:
            keyed.sort(key=_first_two)
        return [(key, candidate) for key, _, candidate in keyed]


def _first_two(item: tuple[Any, float, Candidate]) -> tuple[Any, float]:
    return item[0], item[1]
