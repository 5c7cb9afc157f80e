"""Progress lines of ``db adopt`` and ``db release``: each long step table by table, with counts.

A step that works through tables (column types, keys and indexes) prints one line per table
when the table is done, with the tables and rows done so far of the step's total, what changed
and how long the table took::

    [3/4] keys and indexes
      [ 5/12 tables,  310,000/   592,000 rows] inventories: 2 key/index change(s) (0.8 s)

A single ``ALTER TABLE`` reports nothing while it runs (neither server tells), so the counts
move a table at a time; the largest tables (inventories, allocations) are the slow ones. The
checks before ``adopt`` print one line each, as ``[i/n]`` with the rows they found.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from sqlalchemy import text
from sqlalchemy.engine import Connection

__all__ = ["TableProgress", "row_counts"]

Log = Callable[[str], None]


def row_counts(conn: Connection, tables: Iterable[str]) -> dict[str, int]:
    """``{table: rows}`` for ``tables`` (one ``COUNT(*)`` each)."""
    return {
        name: int(conn.execute(text(f"SELECT COUNT(*) FROM {name}")).scalar() or 0)
        for name in tables
    }


class TableProgress:
    """One step over ``rows`` (``{table: rows}``, in the step's order): ``table(name)`` times
    the work on one table and prints its line."""

    def __init__(self, log: Log, rows: dict[str, int]) -> None:
        self.log = log
        self.rows = rows
        self.total = sum(rows.values())
        self.tables_done = 0
        self.rows_done = 0
        self._width = len(f"{self.total:,}")

    @contextmanager
    def table(self, name: str) -> Iterator[list[str]]:
        """Yield a list for what was done to ``name`` (notes); print its line at the end (a
        table with no notes prints ``nothing to change``)."""
        started = time.monotonic()
        notes: list[str] = []
        yield notes
        self.tables_done += 1
        self.rows_done += self.rows.get(name, 0)
        self.log(
            f"  [{self.tables_done:>{len(str(len(self.rows)))}}/{len(self.rows)} tables, "
            f"{self.rows_done:>{self._width},}/{self.total:,} rows] {name}: "
            f"{'; '.join(notes) or 'nothing to change'} ({time.monotonic() - started:.1f} s)"
        )
