"""Guests whose cell count the flavor does not fix, searched at 1, 2, ... cells:
KEP-2902's ``distribute_cpus_across_numa`` (CPUs and memory split evenly over the cells, each
host kept at its narrowest fit) and the Topology Manager's ``restricted`` (each host at its
narrowest width) and ``best-effort`` (every width, narrowest first) policies. Without
``distribute_cpus_across_numa`` those two policies do not split the CPUs evenly: every split of
the CPUs over the width's cells (``numa.distribute.cpu_splits``) is searched, as the Topology
Manager's narrowest mask asks only that the CPUs fit on its cells.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from placement_numa.engine import CandidateEngine, FleetSnapshot
from placement_numa.numa.engine_rank import CellIndex
from placement_numa.numa.ranking import rank_key
from placement_numa.numa.request import NumaOptions
from placement_numa.numa.translate import MAX_DISTRIBUTE_CELLS, NumaQuery, SearchPlan
from placement_numa.services.numa_search import (
    RankedCandidate,
    in_tree,
    numa_cells,
    ranker_for,
    rounds,
    runnable,
    search_bounded,
    search_exhaustive,
)

__all__ = ["MAX_DISTRIBUTE_CELLS", "distributed", "distributed_bounded"]


def _runnable_attempts(plan: SearchPlan, width: int, fleet: FleetSnapshot) -> list[NumaQuery]:
    """The runnable queries of ``plan`` at ``width`` cells, one per CPU split that can run on
    ``fleet`` (``plan.attempts``, each checked by ``runnable``)."""
    ready = (runnable(attempt, fleet) for attempt in plan.attempts(width))
    return [r for r in ready if r is not None and r.search is not None]


def _by_rank(found: list[RankedCandidate], options: NumaOptions) -> list[RankedCandidate]:
    """``found`` sorted by rank key, then by rounds when ``options.diversify``."""
    found = sorted(
        found,
        key=lambda r: rank_key(r.score, prefer_closest=options.prefer_closest) if r.score else (),
    )
    return rounds(found) if options.diversify else found


def _eligible(
    fleet: FleetSnapshot,
    attempt: NumaQuery,
    width: int,
    skip: set[str],
    cells_of: dict[int, list[int]],
) -> list[str]:
    """Roots (uuids) not in ``skip`` with at least ``width`` NUMA cells and enough free CPUs
    of ``attempt``'s classes in total."""
    needed = sum(c.cpu_count for c in attempt.topology.cells) if attempt.topology else 0
    providers = fleet.providers
    eligible = []
    for root in fleet.roots:
        uuid = providers[root].uuid
        if uuid in skip:
            continue
        cells = cells_of.get(root)
        if cells is None:
            cells = cells_of[root] = numa_cells(fleet, root)
        if len(cells) < width:
            continue
        if sum(providers[i].free(rc) for i in cells for rc in attempt.cpu_classes) >= needed:
            eligible.append(uuid)
    return eligible


def _hosts(found: list[RankedCandidate], *, aligned: bool = False) -> set[str]:
    """Root uuids of ``found`` (``aligned``: of its candidates whose devices are aligned)."""
    return {
        r.fleet.providers[r.candidate.anchor].uuid
        for r in found
        if not aligned or r.score is None or r.score.aligned
    }


def _aligned(r: RankedCandidate) -> bool:
    return r.score is None or r.score.aligned or not r.score.rank_alignment


def _all_aligned(found: list[RankedCandidate]) -> bool:
    return all(_aligned(r) for r in found)


def _aligned_count(found: list[RankedCandidate]) -> int:
    """Candidates no wider one can displace (an unaligned one ranks after any aligned)."""
    return sum(1 for r in found if _aligned(r))


def _ranked_widths(
    found: list[RankedCandidate], options: NumaOptions, every: bool
) -> list[RankedCandidate]:
    """The widths' candidates as answered: width by width (each host at its narrowest aligned
    width) unless ``every`` or a candidate's devices are unaligned: then all of them ranked
    together, so no unaligned candidate precedes an aligned one (issue 22); then ``limit``."""
    if every or not _all_aligned(found):
        return _by_rank(found, options)[: options.limit]
    return found[: options.limit]


# the candidates of one width: (width, hosts already placed at a narrower width, candidates
# still missing or None) -> that width's candidates, in answer order
WidthSearch = Callable[[int, set[str], int | None], list[RankedCandidate]]


def _walk_widths(
    plan: SearchPlan, options: NumaOptions, at_width: WidthSearch
) -> list[RankedCandidate]:
    """The widths of ``plan``, narrowest first, each searched by ``at_width`` on the hosts not
    placed yet (all hosts when ``plan.every``) until ``limit`` aligned candidates are found;
    then ``_ranked_widths``."""
    every = plan.every
    limit = None if every else options.limit
    found: list[RankedCandidate] = []
    placed: set[str] = set()
    for width in plan.widths():
        remaining = None if limit is None else limit - _aligned_count(found)
        batch = at_width(width, set() if every else placed, remaining)
        placed |= _hosts(batch, aligned=True)
        found.extend(batch)
        if limit is not None and _aligned_count(found) >= limit:
            break
    return _ranked_widths(found, options, every)


def distributed_bounded(
    engine: CandidateEngine,
    plan: SearchPlan,
    index: CellIndex,
    options: NumaOptions,
    fleet: FleetSnapshot,
) -> list[RankedCandidate]:
    """KEP-2902 over the fleet, with the answer of ``distributed``: width 1 over every host;
    then, for each wider width, the hosts not placed yet that have that many NUMA cells and
    enough free CPUs in total. Each width (each CPU split of it, ``SearchPlan.splits``: a split
    is searched only on the hosts the more even ones did not place with aligned devices) is one
    bounded ranked search (``search_bounded``) asked only for the candidates still missing,
    so a wider width is searched only when the narrower ones gave fewer than ``limit`` aligned
    candidates (and then they gave all theirs, so the placed hosts are known).

    ``plan.every`` (``topology_policy=best-effort``): every width of every host, placed or not,
    all ranked together (aligned, then narrowest first), then ``limit``. A host placed only with
    unaligned devices is searched at wider widths too, and the widths are then ranked together
    (``_ranked_widths``)."""
    cells_of: dict[int, list[int]] = {}

    def at_width(width: int, placed: set[str], remaining: int | None) -> list[RankedCandidate]:
        batch: list[RankedCandidate] = []
        for attempt in _runnable_attempts(plan, width, fleet):
            ranker = ranker_for(index, attempt, options)
            roots = None
            if width > 1:
                skip = _hosts(batch, aligned=True) | placed
                roots = _eligible(fleet, attempt, width, skip, cells_of)
                if not roots:
                    continue
            more, _ = search_bounded(
                engine, attempt, ranker, remaining, roots=roots, fleet=fleet, options=options
            )
            batch.extend(more)
        if len(plan.splits(width)) > 1:
            batch = _by_rank(batch, options)[:remaining]
        return batch

    return _walk_widths(plan, options, at_width)


def distributed(
    engine: CandidateEngine,
    plan: SearchPlan,
    index: CellIndex,
    options: NumaOptions,
    fleet: FleetSnapshot,
) -> list[RankedCandidate]:
    """KEP-2902 over the fleet: width 1 over every host; then, for each wider width, only the
    hosts not placed yet that have that many NUMA cells and enough free CPUs in total (each
    searched with ``in_tree``, at each CPU split of ``SearchPlan.splits`` until one places
    it), so a host is reported at its narrowest width only and the search never enumerates
    wide splits of hosts that already fit narrower. Stops at ``limit``. The exhaustive
    reference of ``distributed_bounded`` (``plan.every``: as there)."""
    cells_of: dict[int, list[int]] = {}

    def at_width(width: int, placed: set[str], _remaining: int | None) -> list[RankedCandidate]:
        batch: list[RankedCandidate] = []
        for attempt in _runnable_attempts(plan, width, fleet):
            ranker = ranker_for(index, attempt, replace(options, limit=None))
            if width == 1:
                batch = search_exhaustive(engine, attempt, ranker, None, fleet, options)
                continue
            skip = _hosts(batch, aligned=True) | placed
            for uuid in _eligible(fleet, attempt, width, skip, cells_of):
                one = replace(attempt, search=in_tree(attempt.search_query, uuid))
                batch.extend(search_exhaustive(engine, one, ranker, None, fleet, options))
        return _by_rank(batch, options) if width > 1 else batch

    return _walk_widths(plan, options, at_width)
