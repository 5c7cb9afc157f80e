"""The candidate engine: answers ``CandidateQuery`` objects with allocation candidates.

Interface (what routers and the NUMA layer use; nothing about SQL or caching leaks through)::

    class CandidateEngine(Protocol):
        def search(self, query: CandidateQuery, *, limit: int | None = None,
                   rank: RankFn | None = None, nested_aware: bool = True,
                   rank_bound: RankBoundFn | None = None, roots: Collection[str] | None = None,
                   accept: Callable[[Candidate], bool] | None = None,
                   fleet: FleetSnapshot | None = None) -> CandidateResult
        def snapshot(self) -> FleetSnapshot

* ``query``: a ``placement_numa.domain.request_groups.CandidateQuery``;
* ``limit``: at most this many candidates (``None``: ``query.limit``; both ``None``: all);
* ``nested_aware``: ``False`` below microversion 1.29 (candidates taking resources from two
  providers of one tree are dropped before ``limit``, as Placement does);
* ``rank``: the RANKING HOOK. ``rank(candidate, fleet) -> sort key`` (any comparable value,
  smaller is better). Without it the order is deterministic: anchor roots in provider creation
  order, then a depth-first order of the groups' providers (or shuffled roots when the engine was
  built with ``randomize=True``, Placement's ``randomize_allocation_candidates``). With it, each
  root's candidates are generated and sorted by key (ties keep the deterministic order), and the
  roots are merged with a heap, stopping at ``limit``; every candidate of every admissible root
  is ranked, so the cost is the candidates that exist, not the combinations tried;
* ``rank_bound`` (with ``rank``): ``bound(view) -> key``, a lower bound of the rank key of
  every candidate of one root, computed before searching it (``protocol.RootBoundView``: the
  root, its look-alike profile, the plan's shape, lazily the slot options; ``None`` = no
  candidate; the snapshot engine's view is ``replay.RootView``). Roots are
  then searched in ascending ``(bound, root order)``, candidates merged with a heap and yielded
  once no unsearched root can precede them, so a ranked query with ``limit`` searches only the
  roots it needs; the answer is identical to the exhaustive merge (``merge.merge_ranked``);
* ``roots``: restrict anchors to these root uuids; ``accept(candidate) -> bool``: a filter
  applied before ``limit``;
* ``fleet``: a snapshot from ``snapshot()`` to search instead of a fresh one (one state for the
  several searches of one request). The engine holds no state of the layers above: they key
  their own caches by what it publishes (``FleetSnapshot.revision``, ``replaced_roots``).

What a rank function can read (``Candidate`` in ``engine/candidates.py``, ``FleetSnapshot`` in
``engine/fleet.py``; providers are dense indices):

* ``candidate.anchor``: the root's index; ``candidate.groups[i]`` follows ``query.groups``:
  ``.suffix``, ``.providers`` (indices), ``.resources`` = ``((provider, rc, amount), ...)``;
  ``candidate.allocations``: summed ``(provider, rc, amount)``;
* ``fleet.providers[i]``: ``.uuid``, ``.parent`` (-1 for a root), ``.root``, ``.depth``,
  ``.traits``, ``.aggregates``, ``.inventories[rc]`` (``total``, ``reserved``, ``min_unit``,
  ``max_unit``, ``step_size``, ``allocation_ratio``, ``used``, ``capacity``, ``free``) and
  ``.free(rc)``; ``fleet.tree[root]`` lists a tree's providers; ``fleet.ancestors(i)``.

Example (NUMA width first, then the anchor's uuid)::

    def narrow_first(c: Candidate, fleet: FleetSnapshot) -> tuple[int, str]:
        cells = {p for g in c.groups for p in g.providers
                 if os_traits.HW_NUMA_ROOT in fleet.providers[p].traits}
        return (len(cells), fleet.providers[c.anchor].uuid)

Implementations: ``SnapshotEngine`` (``engine/snapshot_engine.py``) searches an in-memory
``FleetSnapshot`` obtained from a ``FleetSource`` (per root, lazily; look-alike trees replay the
first one's answer). The modules, in the order a query meets them:

* ``protocol``: ``CandidateEngine``, ``FleetSource``, ``RankFn``, ``GenerationStrategy``;
* ``providers``, ``fleet``, ``fleet_rows``: the snapshot model (``ProviderInfo``,
  ``InventoryUsage``, ``FleetSnapshot``), built
  from rows; ``fleet_patch`` (with ``sharing_patch``): a snapshot with whole trees replaced
  (what a refresh does);
* ``names``: unknown resource classes and traits refused; ``plan``: the query as search slots;
* ``options``: the roots that may anchor a candidate, each slot's providers under one root;
* ``search``: the depth-first search of one root; ``orderings``: reorderings of
  interchangeable groups; ``replay``: roots one at a time, look-alike roots replayed;
* ``merge``: breadth-first round robin and the ranked heap merge across roots;
* ``candidates``: what comes out (``Candidate``, ``CandidateResult``).

The SQL source
(``placement_numa.db.repositories.fleet.SqlFleetSource``) refreshes it whenever the
``placement_revision`` counter moved (reloading only the trees the change log names), so every
query sees every write committed before it started.
"""

from __future__ import annotations

from placement_numa.engine.candidates import Candidate, CandidateResult, GroupChoice, SearchStats
from placement_numa.engine.fleet import FleetSnapshot, InventoryUsage, ProviderInfo
from placement_numa.engine.protocol import (
    CandidateEngine,
    FleetSource,
    GenerationStrategy,
    PlanShape,
    RankBoundFn,
    RankFn,
    RootBoundView,
    SearchOptions,
    SlotShape,
    StaticFleetSource,
)
from placement_numa.engine.replay import RootView
from placement_numa.engine.snapshot_engine import SnapshotEngine

__all__ = [
    "CandidateEngine",
    "RankFn",
    "RankBoundFn",
    "RootBoundView",
    "PlanShape",
    "SlotShape",
    "RootView",
    "FleetSource",
    "StaticFleetSource",
    "SnapshotEngine",
    "Candidate",
    "CandidateResult",
    "SearchStats",
    "GenerationStrategy",
    "SearchOptions",
    "GroupChoice",
    "FleetSnapshot",
    "ProviderInfo",
    "InventoryUsage",
]
