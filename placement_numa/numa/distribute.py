"""KEP-2902 (Kubernetes CPU manager option ``distribute-cpus-across-numa``): split a request
evenly over 1, 2, ... NUMA cells, striping the remainder.

The KEP's algorithm, applied by the candidate search: try one cell; then every pair of cells
with the CPUs split evenly (modulo 2) and the remainder striped one by one over the first cells;
then every 3-tuple; ... up to all cells. The first width that fits on a host wins for that host
(``services.numa_candidates`` asks width 1 first, then 2, ..., and keeps a host's narrowest fit).
Memory is split the same way in units of the page size.
"""

from __future__ import annotations

__all__ = ["split_evenly", "widths_to_try"]


def split_evenly(total: int, parts: int, unit: int = 1) -> list[int]:
    """Split ``total`` into ``parts`` amounts as even as possible, in multiples of ``unit``.

    The quotient goes to every part; the remainder (``total // unit % parts`` units) is striped
    one unit at a time over the first parts (KEP-2902's striping, which keeps the split as
    balanced as possible). Any sub-unit rest goes to the first part.
    ``split_evenly(7, 2)`` -> ``[4, 3]``; ``split_evenly(4096, 3, 2)`` -> ``[1366, 1366, 1364]``.
    Raises ``ValueError`` when ``parts < 1`` or ``unit < 1``.
    """
    if parts < 1 or unit < 1:
        raise ValueError("parts and unit must be >= 1")
    units, rest = divmod(total, unit)
    base, remainder = divmod(units, parts)
    amounts = [(base + (1 if i < remainder else 0)) * unit for i in range(parts)]
    amounts[0] += rest
    return amounts


def widths_to_try(vcpus: int, max_cells: int) -> list[int]:
    """Cell counts in KEP-2902 order: 1, 2, ..., never more cells than CPUs or ``max_cells``."""
    return list(range(1, max(1, min(vcpus, max_cells)) + 1))
