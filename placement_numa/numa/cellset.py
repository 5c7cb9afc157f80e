"""``CellSet``: an immutable set of host NUMA cell ids, the analogue of Kubernetes'
``topologymanager/bitmask``.

Ordering helpers are written out so the ranking can cite them:

1. ``is_narrower_than``: fewer cells first;
2. equal width: the lexicographically lower sorted tuple of ids first (``tie_break_key``), as
   Kubernetes breaks ties between equally wide masks by preferring lower-numbered NUMA nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = ["CellSet"]


@dataclass(frozen=True, slots=True)
class CellSet:
    """A set of NUMA cell ids (non-negative ints). ``ids`` is kept sorted and unique."""

    ids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        ordered = tuple(sorted(set(self.ids)))
        if any(i < 0 for i in ordered):
            raise ValueError(f"NUMA cell ids must be >= 0, got {self.ids}")
        object.__setattr__(self, "ids", ordered)

    @classmethod
    def of(cls, *ids: int) -> CellSet:
        """``CellSet.of(0, 1)``."""
        return cls(tuple(ids))

    @classmethod
    def from_iterable(cls, ids: Iterable[int]) -> CellSet:
        """``CellSet.from_iterable([1, 0])`` -> ``{0,1}``."""
        return cls(tuple(ids))

    @classmethod
    def from_mask(cls, mask: str) -> CellSet:
        """Parse KEP-3545's bitmask notation, leftmost character = cell 0: ``"1100"`` -> {0, 1}."""
        if not mask or set(mask) - {"0", "1"}:
            raise ValueError(f"not a cell mask: {mask!r}")
        return cls(tuple(i for i, bit in enumerate(mask) if bit == "1"))

    def count(self) -> int:
        """Number of cells (the width of the set)."""
        return len(self.ids)

    def is_narrower_than(self, other: CellSet) -> bool:
        """Rule 1 of the tie-break: fewer cells is narrower."""
        return self.count() < other.count()

    def tie_break_key(self) -> tuple[int, ...]:
        """Rule 2: among equal widths, lower-numbered cells first (compare sorted ids)."""
        return self.ids

    def union(self, other: CellSet) -> CellSet:
        """Cells in either set."""
        return CellSet(self.ids + other.ids)

    def __contains__(self, cell: object) -> bool:
        return cell in self.ids

    def __iter__(self) -> Iterator[int]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def __str__(self) -> str:
        return "{" + ",".join(str(i) for i in self.ids) + "}"
