"""The NUMA search's engine hooks as one object: ``NumaHooks`` (``rank``, the rank bound,
``accept``), built once per search by ``numa_hooks`` and handed to the candidate engine::

    engine.search(query, rank=hooks.rank, rank_bound=hooks, accept=hooks.accept_or_none)

* ``rank`` and the object itself as the ``rank_bound`` (``engine.ClassedRankBound``:
  ``hooks(view)`` is the best key a root can offer, ``root_classes(fleet)`` which roots look
  alike to it): the NUMA ranking (``numa.engine_rank.NumaRanker``: width, KEP-3545 distance,
  KEP-2902 spread);
* ``accept``: the constraints the query cannot carry, each a check on one candidate: guest
  cells on distinct host cells when the query does not enforce it (``anchors_distinct``),
  Nova's memory rule for pinned and explicit-page-size guests (``numa.memory_rule``; only
  when some ``MEMORY_MB`` inventory of the fleet has a ratio above 1.0,
  ``FleetSnapshot.overcommits``: else it can reject nothing) and the devices' NUMA affinity
  (``numa.device_affinity``). ``checks`` is empty when none applies (then give the engine
  ``accept=None``: nothing to filter).

Every callback the engine makes for a NUMA search is defined here (the accept checks are
closures of ``numa_hooks``; a lone check is handed over as it is, so a lone device-affinity
check is ``numa.device_affinity``'s own), so a reader finds what the search adds to the engine
in one place; ``ranked`` turns the engine's answer into
``RankedCandidate`` values (score, devices, explain) with the same ranker.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from placement_numa.engine.candidates import Candidate
from placement_numa.engine.fleet import FleetSnapshot
from placement_numa.engine.protocol import RootBoundView
from placement_numa.numa.device_affinity import device_accept
from placement_numa.numa.engine_rank import NumaRanker
from placement_numa.numa.memory_rule import memory_check
from placement_numa.numa.ranking import NumaScore
from placement_numa.numa.translate import NumaQuery

__all__ = ["NumaHooks", "RankedCandidate", "anchors_distinct", "numa_hooks"]

Check = Callable[[Candidate], bool]


def anchors_distinct(candidate: Candidate, anchors: tuple[str, ...]) -> bool:
    """Whether the groups ``anchors`` (suffixes) of ``candidate`` sit on distinct providers."""
    chosen = [g.providers for g in candidate.groups if g.suffix in anchors]
    return len({p for p in chosen}) == len(chosen)


class RankedCandidate(NamedTuple):
    """One candidate, best first: the engine's candidate and snapshot, its NUMA score
    (``None`` for fallback candidates), the query string it answers, whether it is a
    fallback (host not reshaped), the host name and the PCI devices it takes:
    ``((resource class, provider uuid, cell id or None), ...)``. A named tuple: one is made
    per returned candidate (a ``limit=1000`` answer makes 1,000), and a tuple is built in a
    third of a frozen dataclass's time."""

    candidate: Candidate
    fleet: FleetSnapshot
    score: NumaScore | None
    explain: str
    fallback: bool = False
    host: str | None = None
    devices: tuple[tuple[str, str, int | None], ...] = ()


class NumaHooks:
    """The engine hooks of one NUMA search: ``ranker`` (its ``rank`` and ``bound``) and the
    ``accept`` checks (a candidate passes when every check does)."""

    def __init__(self, ranker: NumaRanker, checks: tuple[Check, ...] = ()) -> None:
        self.ranker = ranker
        self.checks = checks
        # the ranker's (key, score) of a candidate: ``rank`` calls it directly, so the hook
        # costs the engine no more calls than the ranker's own ``rank`` would
        self._scored = ranker.scored

    @property
    def accept_or_none(self) -> Check | None:
        """``accept``, or ``None`` when there is nothing to check (the engine skips it). Not
        kept on the object: a bound method of itself would be a reference cycle, keeping the
        hooks and the snapshot their checks hold until the cyclic collector runs, so the next
        refresh could not patch the snapshot in place (``engine.handover``; issue 30). A
        single check is handed over as it is (a closure over values, no loop around it)."""
        checks = self.checks
        if len(checks) == 1:
            return checks[0]
        return self.accept if checks else None

    def rank(self, candidate: Candidate, fleet: FleetSnapshot) -> Any:
        """The engine's ``rank`` hook: the candidate's sort key (smaller is better;
        ``NumaRanker.rank``)."""
        return self._scored(candidate, fleet)[0]

    def __call__(self, view: RootBoundView) -> tuple[object, ...] | None:
        """The engine's ``rank_bound`` hook: a lower bound of the keys of the candidates of
        ``view.root`` (``None``: the root has none; ``NumaRanker.bound_of``)."""
        return self.ranker.bound_of(view)

    def root_classes(self, fleet: FleetSnapshot) -> Any:
        """The rank bound's look-alike classes: per provider index of ``fleet``, the root's
        bound class (-1: not a root; ``engine.ClassedRankBound``)."""
        return self.ranker.view(fleet).bound_classes

    def ranked(
        self, candidates: Iterable[Candidate], fleet: FleetSnapshot, explain: str
    ) -> list[RankedCandidate]:
        """``candidates`` of a search on ``fleet`` as ``RankedCandidate``, each with its NUMA
        score, host name (the ranker's ``index``) and PCI devices, and ``explain`` (the query
        string they answer: ``NumaQuery.explain``)."""
        ranker = self.ranker
        listed = candidates if isinstance(candidates, list) else list(candidates)
        names, uuids = ranker.index.host_names.get, fleet.uuids
        scores = ranker.scores(listed, fleet)
        if not ranker.device_classes:  # positional: a named tuple's keywords cost a lookup
            return [
                RankedCandidate(c, fleet, numa, explain, False, names(uuids[c.anchor]))
                for c, numa in zip(listed, scores, strict=True)
            ]
        devices = ranker.devices
        return [
            RankedCandidate(
                c, fleet, numa, explain, False, names(uuids[c.anchor]), devices(c, fleet)
            )
            for c, numa in zip(listed, scores, strict=True)
        ]

    def accept(self, candidate: Candidate) -> bool:
        """The engine's ``accept`` hook: whether ``candidate`` passes every check."""
        for check in self.checks:
            if not check(candidate):
                return False
        return True


def numa_hooks(numa: NumaQuery, fleet: FleetSnapshot, ranker: NumaRanker) -> NumaHooks:
    """The hooks of a search of ``numa`` on ``fleet`` ranked by ``ranker`` (its ``index``
    gives the cells and sockets the device checks read)."""
    checks: list[Check] = []  # closures over values only: none holds the hooks (no cycle)
    if numa.filter_anchors:
        anchors = numa.anchors
        checks.append(lambda candidate: anchors_distinct(candidate, anchors))
    topology = numa.topology
    if topology is not None and topology.memory_not_overcommitted:
        # the rule only rejects memory taken at a ratio above 1.0: none in the fleet, no check
        if fleet.overcommits("MEMORY_MB"):
            checks.append(memory_check(fleet))
    devices = device_accept(numa, fleet, ranker.index) if numa.devices else None
    if devices is not None:
        checks.append(devices)
    return NumaHooks(ranker, tuple(checks))
