"""KEP-2902 (Kubernetes CPU manager option ``distribute-cpus-across-numa``): split a request
evenly over 1, 2, ... NUMA cells, striping the remainder.

The KEP's algorithm, applied by the candidate search: try one cell; then every pair of cells
with the CPUs split evenly (modulo 2) and the remainder striped one by one over the first cells;
then every 3-tuple; ... up to all cells. The first width that fits on a host wins for that host
(``services.numa_candidates`` asks width 1 first, then 2, ..., and keeps a host's narrowest fit).
Memory is split the same way in units of the page size.
"""

from __future__ import annotations

__all__ = ["MAX_SPLITS", "cpu_splits", "split_evenly", "widths_to_try"]

# splits of one width tried at most (the most even first)
MAX_SPLITS = 32


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


def cpu_splits(total: int, parts: int, limit: int = MAX_SPLITS) -> list[tuple[int, ...]]:
    """The ways to split ``total`` CPUs over ``parts`` cells, each cell at least one, as
    non-increasing tuples, the most even first (ascending largest part, then each next part
    as small as it can be), at most ``limit`` of them. The first is ``split_evenly(total, parts)``.
    ``cpu_splits(6, 2)`` -> ``[(3, 3), (4, 2), (5, 1)]``, ``cpu_splits(7, 3)`` -> ``[(3, 2, 2),
    (3, 3, 1), (4, 2, 1), (5, 1, 1)]``; ``[]`` when ``total < parts``.

    Used for the Topology Manager's ``restricted``/``best-effort`` without KEP-2902's even
    distribution: the narrowest mask only asks that the CPUs fit on its cells. Work is
    O(``limit`` * ``parts``): every branch followed yields at least one split.
    """
    found: list[tuple[int, ...]] = []

    def fill(rest: int, count: int, cap: int, head: tuple[int, ...]) -> None:
        if len(found) >= limit:
            return
        if count == 0:
            found.append(head)
            return
        # the evenest part first: at least the mean of the rest, at most the cap
        for part in range(-(-rest // count), min(cap, rest - (count - 1)) + 1):
            fill(rest - part, count - 1, part, (*head, part))
            if len(found) >= limit:
                return

    if parts < 1 or total < parts:
        return found
    smallest_max = -(-total // parts)
    for largest in range(smallest_max, total - parts + 2):
        fill(total - largest, parts - 1, largest, (largest,))
        if len(found) >= limit:
            break
    return found
