"""The engine's contract: what routers and the NUMA layer call (see the package docstring).

Besides ``CandidateEngine`` and its ``SearchOptions``, the contract of a rank bound: a bound
(``RankBoundFn``) reads one root through a ``RootBoundView``, the search plan through
``PlanShape`` and ``SlotShape``. These are structural (``Protocol``): any engine whose views
carry these members can run the NUMA layer's bound (``numa.rank_bound``); the snapshot engine's
are ``replay.RootView`` and ``plan.QueryPlan``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any, Literal, Protocol, TypedDict, Unpack

from placement_numa.domain.request_groups import CandidateQuery, RequestGroup
from placement_numa.engine.candidates import Candidate, CandidateResult
from placement_numa.engine.fleet import FleetSnapshot

__all__ = [
    "SearchOptions",
    "CandidateEngine",
    "FleetSource",
    "StaticFleetSource",
    "RankFn",
    "RankBoundFn",
    "ClassedRankBound",
    "RootBoundView",
    "PlanShape",
    "SlotShape",
    "GenerationStrategy",
]

RankFn = Callable[[Candidate, FleetSnapshot], Any]
# Placement's ``[placement] allocation_candidates_generation_strategy``
GenerationStrategy = Literal["depth-first", "breadth-first"]


class SlotShape(Protocol):
    """One search slot: one provider answers it. ``group``: index into ``PlanShape.groups``;
    ``resources``: ``((resource class, amount), ...)`` asked of that provider; ``suffixed``: the
    group is suffixed (else the slot is one resource class of the unsuffixed group)."""

    @property
    def group(self) -> int: ...  # noqa: D102 - described in the class docstring

    @property
    def resources(self) -> tuple[tuple[str, int], ...]: ...  # noqa: D102

    @property
    def suffixed(self) -> bool: ...  # noqa: D102


class PlanShape(Protocol):
    """A query as the search sees it: ``groups`` (the query's request groups, in order),
    ``slots`` (``SlotShape``, in search order; every slot of a candidate takes one provider),
    ``subtree_sets`` (group indices per ``same_subtree`` parameter) and ``isolate``
    (``group_policy=isolate``: suffixed groups take distinct providers)."""

    @property
    def groups(self) -> tuple[RequestGroup, ...]: ...  # noqa: D102

    @property
    def slots(self) -> Sequence[SlotShape]: ...  # noqa: D102

    @property
    def subtree_sets(self) -> Sequence[frozenset[int]]: ...  # noqa: D102

    @property
    def isolate(self) -> bool: ...  # noqa: D102


class RootBoundView(Protocol):
    """What a rank bound may read about one anchor root before it is searched.

    * ``root``: the root's provider index in ``fleet``; ``plan``: the query (``PlanShape``);
    * ``profile``: an id equal for two roots whose options and candidates are the same position
      by position (look-alike trees), or ``None`` when the root's answer depends on more than its
      tree (``in_tree``, sharing providers): a bound may memoise per profile;
    * ``amount_profile`` (optional: a view may lack it, so read it with ``getattr``): a
      hashable value, equal for two roots (of this search, or of another on the same snapshot
      lineage whose query differs only in its amounts: a flavor catalogue's sizes,
      ``engine/amount_patterns.py``) only when their candidates are the same assignments of
      slots to member positions, amounts aside; ``None`` when there is none. A bound whose key
      reads the amounts only through some of them (the NUMA rank: the CPUs) may memoise across
      searches by it and those amounts;
    * ``cache``: a dict shared by every view of one search (for such memos);
    * ``options()``: provider indices per slot of ``plan`` for this root (every provider the
      engine would try there), or ``None`` when some slot has none (no candidate).
    """

    @property
    def root(self) -> int: ...  # noqa: D102

    @property
    def profile(self) -> int | None: ...  # noqa: D102

    @property
    def fleet(self) -> FleetSnapshot: ...  # noqa: D102

    @property
    def plan(self) -> PlanShape: ...  # noqa: D102

    @property
    def cache(self) -> dict[object, object]: ...  # noqa: D102

    def options(self) -> Sequence[Sequence[int]] | None:
        """Provider indices per slot for this root; ``None`` when some slot has none."""
        ...


# ``bound(view) -> key``: a lower bound of the rank key (``RankFn``) of every candidate anchored
# at ``view.root`` (``None`` only when the root provably has no candidate).
RankBoundFn = Callable[[RootBoundView], Any]


class ClassedRankBound(Protocol):
    """A ``RankBoundFn`` that also says which roots look alike to it (optional; the engine
    reads ``root_classes`` when the bound has it): ``root_classes(fleet)`` is an int64 numpy
    array over ``fleet``'s provider indices, equal for two roots whose bounds are equal
    whenever the engine finds their trees alike (``RootBoundView.profile``-alike: same options
    position by position), -1 for a root it cannot class, or ``None`` (bound every root).
    The engine then calls the bound once per class (``engine.bounded_roots``)."""

    def __call__(self, view: RootBoundView) -> Any:
        """The bound of ``view.root`` (``RankBoundFn``)."""
        ...

    def root_classes(self, fleet: FleetSnapshot) -> Any:
        """Per provider index of ``fleet``: the bound's class of each root (see above)."""
        ...


class SearchOptions(TypedDict, total=False):
    """The options of ``CandidateEngine.search`` (all optional; keyword arguments).

    * ``limit``: at most this many candidates (default ``query.limit``; both ``None``: all);
    * ``rank``: ``rank(candidate, fleet) -> sort key`` (smaller first; see the package
      docstring); ``rank_bound`` (with ``rank``): a lower bound of a root's keys, so roots are
      searched lazily in ascending bound order (same result as without it);
    * ``nested_aware`` (default ``True``): ``False`` below microversion 1.29;
    * ``roots``: only anchor roots with these uuids; ``accept``: keep only candidates it
      accepts (applied before ``limit``);
    * ``fleet``: search this snapshot (from ``snapshot()``) instead of a fresh one (several
      searches of one request see one state and read the revision counter once);
    * ``orderings`` (default ``True``): ``False`` gives one candidate per ordering class of
      interchangeable groups (identical suffixed groups; alike ``same_subtree`` sets such as a
      NUMA guest's identical cells): each distinct set of providers once;
    * ``diversify`` (with ``rank``): the best candidate of every root, in rank order, before
      the second best of any root, and so on;
    * ``strategy``: this search's generation strategy (default: the engine's).
    """

    limit: int | None
    rank: RankFn | None
    nested_aware: bool
    rank_bound: RankBoundFn | None
    roots: Collection[str] | None
    accept: Callable[[Candidate], bool] | None
    fleet: FleetSnapshot | None
    orderings: bool
    diversify: bool
    strategy: GenerationStrategy | None


class CandidateEngine(Protocol):
    """Answers candidate queries (see the package docstring for the contract).

    It carries no state of the layers above: they keep their own caches, keyed by what the
    engine publishes (``FleetSnapshot.revision``, ``replaced_roots``; ``engine.fleet_patch``).
    """

    def snapshot(self) -> FleetSnapshot:
        """The fleet as of this call (what ``search`` without ``fleet`` would search)."""
        ...

    def search(self, query: CandidateQuery, **options: Unpack[SearchOptions]) -> CandidateResult:
        """Candidates for ``query``, best first (``SearchOptions``; the package docstring).

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
