"""Candidate ranking: the rules composed, with the tie-breaks written out.

A candidate is scored from what it uses of one host (``HostCells``) and sorted by, in order:

0. NUMA fits before fallback candidates on hosts not reshaped (done by the caller, which asks
   the fallback query only after the NUMA query);
1. fewer host NUMA cells (``rank_width``);
2. lower average distance among them, KEP-3545 (``rank_distance``; skipped when
   ``prefer_closest_numa_nodes`` is off);
3. lower spread score, KEP-2902 balance (``rank_spread``);
4. lower-numbered cells (``CellSet.tie_break_key``, as Kubernetes' bitmask tie-break);
5. the engine's deterministic order (root creation order, then depth-first provider order),
   which the engine keeps for equal keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from placement_numa.numa.cellset import CellSet
from placement_numa.numa.rank_distance import Distances, average_distance
from placement_numa.numa.rank_spread import spread
from placement_numa.numa.rank_width import width

__all__ = ["HostCells", "NumaScore", "score", "rank_key"]


@dataclass(frozen=True)
class HostCells:
    """One host's NUMA cells as ranking sees them.

    ``free_cpus``: cell id -> free CPUs of the classes asked (before the candidate);
    ``distances``: the SLIT matrix by cell id (``None``: kernel defaults).
    """

    free_cpus: Mapping[int, int]
    distances: Distances | None = None


@dataclass(frozen=True, slots=True)
class NumaScore:
    """A candidate's NUMA score: the cells used, width, average distance, spread."""

    cells: CellSet
    width: int
    average_distance: float
    spread: float


def score(host: HostCells, used_cpus: Mapping[int, int]) -> NumaScore:
    """Score a candidate using ``used_cpus`` (cell id -> CPUs taken there; cells with 0 CPUs
    but other resources count too, so list every cell used)."""
    cells = CellSet.from_iterable(used_cpus)
    free_after: Sequence[int] = [
        free - used_cpus.get(cell, 0) for cell, free in sorted(host.free_cpus.items())
    ]
    return NumaScore(
        cells, width(cells), average_distance(cells, host.distances), spread(free_after)
    )


def rank_key(numa: NumaScore, *, prefer_closest: bool = True) -> tuple[object, ...]:
    """The sort key of rules 1-4 (smaller is better)."""
    return (
        numa.width,
        round(numa.average_distance, 9) if prefer_closest else 0.0,
        round(numa.spread, 9),
        numa.cells.tie_break_key(),
    )
