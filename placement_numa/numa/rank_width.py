"""Ranking rule 1: fewer host NUMA cells first (Kubernetes topology manager's "narrowest
NUMA affinity"; ``bitmask.IsNarrowerThan``)."""

from __future__ import annotations

from placement_numa.numa.cellset import CellSet

__all__ = ["width"]


def width(cells: CellSet) -> int:
    """The number of distinct host NUMA cells a candidate uses (smaller is better)."""
    return cells.count()
