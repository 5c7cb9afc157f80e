"""The engine's contract: what routers and the NUMA layer call (see the package docstring)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, Literal, Protocol, TypedDict, Unpack

from placement_numa.domain.request_groups import CandidateQuery
from placement_numa.engine.candidates import Candidate, CandidateResult
from placement_numa.engine.fleet import FleetSnapshot
from placement_numa.engine.replay import RankBoundFn

__all__ = [
    "SearchOptions",
    "CandidateEngine",
    "FleetSource",
    "StaticFleetSource",
    "RankFn",
    "GenerationStrategy",
]

RankFn = Callable[[Candidate, FleetSnapshot], Any]
# Placement's ``[placement] allocation_candidates_generation_strategy``
GenerationStrategy = Literal["depth-first", "breadth-first"]


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

    ``caches``: per-engine (so per-process) memos of the layers above, each under its own key
    and keyed inside by ``FleetSnapshot.revision`` (e.g. the NUMA cell index).
    """

    caches: dict[str, object]

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
