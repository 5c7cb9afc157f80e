"""The foreign-write watcher's steady state (``db.foreign_writes``): the last ``{provider id:
generation}`` kept in memory, moved by our own change rows, and compared with the database
through a one-row aggregate (``PROVIDERS``) instead of reading every provider's generation.
Each step costs the providers our rows name, not the fleet (the highest id aside, recomputed
when our write deleted the provider that held it)."""

from __future__ import annotations

from sqlalchemy import func, select

from placement_numa.db import tables as t
from placement_numa.db.repositories import changes

__all__ = ["PROVIDERS", "Rows", "aggregate", "apply", "expected", "moved_aggregate"]

# Change-log rows: (stripe revision, kind, provider id, generation), as changes.log_between.
Rows = list[tuple[int, str, int | None, int | None]]

_rp = t.resource_providers
# One row: (count, sum of ids, max id, sum of generations) of the resource providers.
PROVIDERS = select(
    func.count(),
    func.coalesce(func.sum(_rp.c.id), 0),
    func.coalesce(func.max(_rp.c.id), 0),
    func.coalesce(func.sum(_rp.c.generation), 0),
).select_from(_rp)


def aggregate(generations: dict[int, int]) -> tuple[int, int, int, int]:
    """``PROVIDERS`` computed over ``{provider id: generation}`` (one pass over it)."""
    ids = generations.keys()
    return (len(ids), sum(ids), max(ids, default=0), sum(generations.values()))


def expected(rows: Rows) -> dict[int, int | None]:
    """``{provider id: generation}`` our change ``rows`` leave the providers they name at: the
    highest generation named, ``None`` when a row names the provider gone (NULL)."""
    named: dict[int, set[int | None]] = {}
    for _, kind, p, generation in rows:
        if kind == changes.PROVIDER and p is not None:
            named.setdefault(p, set()).add(generation)
    left: dict[int, int | None] = {}
    for p, generations in named.items():
        known = [g for g in generations if g is not None]
        if None in generations:
            left[p] = None
        elif known:
            left[p] = max(known)
    return left


def moved_aggregate(
    before: tuple[int, int, int, int], generations: dict[int, int], left: dict[int, int | None]
) -> tuple[int, int, int, int]:
    """``aggregate`` of ``generations`` (whose aggregate is ``before``) once ``apply``-ed with
    ``left``, without changing ``generations``."""
    count, ids, highest, total = before
    dropped = False
    for p, g in left.items():
        old = generations.get(p)
        if old is not None:
            count, ids, total = count - 1, ids - p, total - old
            dropped = dropped or p == highest
        if g is not None:
            count, ids, total = count + 1, ids + p, total + g
    added = [p for p, g in left.items() if g is not None]
    if dropped:  # the highest id went: the next one (a pass over the fleet, rare)
        rest = (p for p in generations if left.get(p, 0) is not None)
        highest = max(rest, default=0)
    return count, ids, max([highest, *added]), total


def apply(generations: dict[int, int], left: dict[int, int | None]) -> set[int]:
    """Move ``generations`` in place by ``left`` (``expected``); the providers that moved."""
    moved = {p for p, g in left.items() if generations.get(p) != g}
    for p in moved:
        g = left[p]
        if g is None:
            generations.pop(p, None)
        else:
            generations[p] = g
    return moved
