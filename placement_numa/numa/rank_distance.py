"""Ranking rule 2: lower average NUMA distance among the chosen cells (KEP-3545,
``prefer-closest-numa-nodes``).

As Kubernetes implements it (``NUMADistances.CalculateAverageFor``): the average of
``distance[i][j]`` over all ordered pairs ``(i, j)`` of chosen cells, self-pairs included, i.e.
``n**2`` terms for ``n`` cells. KEP-3545's 4-cell example: ``{0, 1}`` ->
``(10 + 11 + 11 + 10) / 4 = 10.5``. Its 8-cell example ``{0, 1, 2}`` sums nine terms to 100; the
KEP text divides by 6 (16.7), Kubernetes divides by 9 (11.11), which is what we do.

A matrix may be missing (no SLIT uploaded) or lack a pair: then the kernel's defaults apply,
``LOCAL_DISTANCE = 10`` on the diagonal and ``REMOTE_DISTANCE = 20`` elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping

from placement_numa.numa.cellset import CellSet

__all__ = ["LOCAL_DISTANCE", "REMOTE_DISTANCE", "Distances", "distance", "average_distance"]

LOCAL_DISTANCE = 10
REMOTE_DISTANCE = 20

# cell id -> cell id -> SLIT distance (10..254)
Distances = Mapping[int, Mapping[int, int]]


def distance(distances: Distances | None, a: int, b: int) -> int:
    """``distances[a][b]``, or the kernel default when unknown."""
    if distances is not None:
        row = distances.get(a)
        if row is not None and b in row:
            return row[b]
    return LOCAL_DISTANCE if a == b else REMOTE_DISTANCE


def average_distance(cells: CellSet, distances: Distances | None) -> float:
    """Average distance over all ordered pairs of ``cells``, self-pairs included (KEP-3545 as
    implemented in Kubernetes). An empty set scores ``LOCAL_DISTANCE``."""
    ids = cells.ids
    if not ids:
        return float(LOCAL_DISTANCE)
    total = sum(distance(distances, a, b) for a in ids for b in ids)
    return total / (len(ids) * len(ids))
