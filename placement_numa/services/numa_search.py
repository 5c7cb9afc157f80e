"""The searches under ``services.numa_candidates``: one NUMA query through the candidate
engine with the NUMA search's hooks as one object (``numa.search_hooks.NumaHooks``: the rank,
its bound and the ``accept`` filter: guest cells on distinct host cells, Nova's memory rule,
the devices' NUMA affinity), bounded (roots searched best bound
first) or exhaustive (the reference the tests compare against); the options and the ranked
candidate both share.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

from placement_numa.domain.numa_tree import HW_NUMA_ROOT
from placement_numa.domain.request_groups import CandidateQuery
from placement_numa.engine import CandidateEngine, FleetSnapshot
from placement_numa.numa.engine_rank import CellIndex, NumaRanker
from placement_numa.numa.request import NumaOptions
from placement_numa.numa.search_hooks import RankedCandidate, anchors_distinct, numa_hooks
from placement_numa.numa.translate import NumaQuery
from placement_numa.numa.unknown_traits import known_traits_only

__all__ = [
    "NumaOptions",
    "RankedCandidate",
    "rounds",
    "runnable",
    "anchors_distinct",
    "ranker_for",
    "search_bounded",
    "search_exhaustive",
    "in_tree",
    "numa_cells",
]


DEFAULT_OPTIONS = NumaOptions()


def rounds(found: list[RankedCandidate]) -> list[RankedCandidate]:
    """``found`` (ranked) reordered by rounds: each host's best, then each host's second
    best, ...; rank order kept within a round (the engine's ``diversify`` order)."""
    seen: dict[int, int] = {}
    keyed = []
    for n, ranked in enumerate(found):
        anchor = ranked.candidate.anchor
        keyed.append((seen.get(anchor, 0), n, ranked))
        seen[anchor] = seen.get(anchor, 0) + 1
    keyed.sort(key=lambda item: (item[0], item[1]))
    return [ranked for _, _, ranked in keyed]


def _known_classes(query: CandidateQuery | None, fleet: FleetSnapshot) -> CandidateQuery | None:
    """``query``, or ``None`` when it asks a resource class the service does not know (a
    device alias whose class no provider was given yet: a valid flavor, no candidates)."""
    known = fleet.resource_class_names
    if query is None or known is None:
        return query
    if any(rc not in known for g in query.groups for rc in g.resources):
        return None
    return query


def runnable(numa: NumaQuery, fleet: FleetSnapshot) -> NumaQuery | None:
    """``numa`` with its search and fallback queries checked against the traits the service
    knows (``numa.unknown_traits``): ``None`` when the search requires an unknown trait (no
    candidates, never a 400: the flavor is valid), else unknown forbidden traits dropped; a
    fallback that requires an unknown trait is dropped; a query asking a resource class the
    service does not know (``_known_classes``) is treated as one requiring an unknown trait."""
    fallback = _known_classes(numa.fallback, fleet)
    if fallback is not None:
        fallback = known_traits_only(fallback, fleet.trait_names)
    search = _known_classes(numa.search_query, fleet)
    if search is not None:
        search = known_traits_only(search, fleet.trait_names)
    if search is None:
        return replace(numa, fallback=fallback, search=None) if fallback is not None else None
    return replace(numa, search=search, fallback=fallback)


def ranker_for(index: CellIndex, numa: NumaQuery, options: NumaOptions) -> NumaRanker:
    """The ``NumaRanker`` of ``numa``'s candidates (its CPU and device classes, its distinct
    anchors, devices aligned unless ``topology_policy=none``)."""
    return NumaRanker(
        index,
        numa.cpu_classes,
        prefer_closest=options.prefer_closest,
        distinct=numa.anchors if numa.filter_anchors else (),
        device_classes=frozenset(d.resource_class for d in numa.devices),
        align_devices=any(d.policy != "none" for d in numa.devices),
    )


def search_bounded(
    engine: CandidateEngine,
    numa: NumaQuery,
    ranker: NumaRanker,
    limit: int | None,
    roots: Collection[str] | None = None,
    fleet: FleetSnapshot | None = None,
    options: NumaOptions = DEFAULT_OPTIONS,
) -> tuple[list[RankedCandidate], FleetSnapshot]:
    """The first ``limit`` ranked candidates (all with ``None``) of ``numa``'s search query,
    anchored at ``roots`` (uuids; ``None``: any), guest cells on distinct host cells; roots
    searched best bound first; on ``fleet`` (``None``: a fresh snapshot). Same answer as
    ``search_exhaustive``."""
    query = numa.search_query
    if fleet is None:
        fleet = engine.snapshot()
    hooks = numa_hooks(numa, fleet, ranker)
    # the rank bound's contract reads key[0] as the width; device keys lead with alignment
    result = engine.search(
        query,
        limit=limit,
        rank=hooks.rank,
        rank_bound=None if numa.devices else hooks,
        roots=roots,
        accept=hooks.accept_or_none,
        fleet=fleet,
        orderings=options.every_ordering,
        diversify=options.diversify,
    )
    return hooks.ranked(result.candidates, result.fleet, numa.explain), result.fleet


def search_exhaustive(
    engine: CandidateEngine,
    numa: NumaQuery,
    ranker: NumaRanker,
    limit: int | None,
    fleet: FleetSnapshot | None = None,
    options: NumaOptions = DEFAULT_OPTIONS,
) -> list[RankedCandidate]:
    """The exhaustive reference of ``search_bounded`` (every candidate ranked)."""
    query = numa.search_query
    if fleet is None:
        fleet = engine.snapshot()
    hooks = numa_hooks(numa, fleet, ranker)
    accept = hooks.accept_or_none
    result = engine.search(
        query,
        limit=None if accept is not None or options.diversify else limit,
        rank=ranker.rank,
        fleet=fleet,
        orderings=options.every_ordering,
    )
    accepted = [c for c in result.candidates if accept is None or accept(c)]
    found = hooks.ranked(accepted, result.fleet, numa.explain)
    if options.diversify:
        found = rounds(found)
    return found if limit is None else found[:limit]


def in_tree(query: CandidateQuery, root_uuid: str) -> CandidateQuery:
    """``query`` restricted to one tree (``in_tree`` on every group)."""
    return replace(query, groups=tuple(replace(g, in_tree=root_uuid) for g in query.groups))


def numa_cells(fleet: FleetSnapshot, root: int) -> list[int]:
    """Provider indices of the ``HW_NUMA_ROOT`` providers of the tree of ``root``."""
    return [i for i in fleet.tree[root] if HW_NUMA_ROOT in fleet.providers[i].traits]
