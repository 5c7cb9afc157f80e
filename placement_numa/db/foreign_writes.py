"""Writes made around placement-numa reach the candidate engine within a bounded time.

The engine's snapshot follows ``placement_revision``, which only our own ``Database.write()``
bumps. During a switch-over upstream Placement serves the same database, and an operator's SQL
or ``nova-manage placement heal_allocations`` may write too: none of them bump it.
``ForeignWriteWatcher`` closes that gap with a cheap periodic fingerprint, in a daemon thread
per worker process. Every ``interval`` seconds it reads, in one short read:

* the revision counter rows and each resource provider's ``(id, generation)``: every write to
  a provider's inventories, allocations, traits, aggregates or parent bumps that provider's
  generation, in upstream Placement as in ours. In the steady state it reads only a one-row
  aggregate of them (``PROVIDERS``: count, sum of ids, max id, sum of generations; below);
* the size of the name tables (resource classes, traits: count and highest id);
* table totals (``TOTALS``): counts and sums of the amounts and ids of inventories,
  allocations, provider traits and aggregates, and parents, which move with hand-written SQL
  that bumps no generation.

**Telling our writes from others'.** Each change-log row our writes leave carries the
generation the write left its provider at (``placement_changes.generation``, read in the
write's own transaction; NULL for a provider it deleted). A provider whose generation moved
between two checks is ours when one of our rows since names it with exactly the generation it
has now (gone: a row of ours names it with NULL). Anything else is foreign, whatever the order
of the writes: a foreign write before one of ours is inside our row's generation (and every
worker's refresh after our commit reads it), one after ours leaves a generation no row of ours
names. Counting our rows per provider instead would be wrong in both directions: some of our
writes touch a provider without bumping it (the re-parented subtree's roots, an allocation
deletion, as in Placement). A row of ours can name an older generation than the provider had
at our commit only for a provider we did not lock (a touched, unbumped one): then it counts
as foreign, which costs one refresh, never a miss.

**Steady state** (``db.kept_generations``). The watcher keeps the last ``{provider id:
generation}`` and its aggregate, and moves both by our change rows since (``expected``; the
cost is the rows', not the fleet's). When that gives the aggregate read, every provider is
where our rows (or, unnamed, the last check) left it, and the check goes on as if it had read
them all; else it reads every generation (``fingerprint``) and compares as above. Proof, with
``E`` the expected and ``A`` the actual generations: generations only grow, and each row's is
read after its provider's last bump by that write, so ``A[p] >= E[p]`` for every ``p`` in
both; with the same providers, equal sums mean equal generations. Providers differ only by
foreign deletions and creations; equal counts need as many of each, equal id sums rule out one
of each (ids are never reused on PostgreSQL and MariaDB). Missed, then: SQL that lowers a
generation while raising another's by as much, or that in one interval deletes two or more
providers and creates as many whose ids add up the same (new ids exceed every id at their
creation, so only providers created in that interval qualify). Measured at 70,000 providers
(``benchmarks/adopt.py``): 31 ms per check on PostgreSQL, 79 ms on MariaDB; a full read 177
and 300 ms.

**What a finding does.** Foreign generation moves: the watcher writes, through
``Database.write()``, change rows naming those providers (``touch``, which also records their
generations, so other workers' watchers find them explained) and a row ``watcher`` (a record
that changed no table row, so the totals still compare across it): every worker's engine then
reloads those providers' trees, as after a write of ours. Names or totals moved with no
revision change, or a change log that cannot tell (pruned, rewound): one row ``all``, and
every engine reloads the whole fleet. A foreign write shows in candidate answers within
``interval`` plus one refresh (``[placement] foreign_write_staleness`` sets ``interval`` to
half of it). Over-commit through us never depended on the snapshot: claims and allocation
writes lock the provider rows (``SELECT ... FOR UPDATE``) and re-check capacity in SQL, and
upstream's writes compare-and-swap the same providers' generations. (Upstream Placement 16's
own retry after a failed compare-and-swap can over-commit by one allocation:
doc/source/admin/moving-from-placement.rst, Limits.)

**Not seen.** SQL that bumps no generation (say ``UPDATE inventories`` alone) is seen through
the totals only in an interval with no write of ours (the watchers' own records aside) and no
generation moved, and not when it keeps every count and sum (two amounts swapped). That
includes upstream's ``DELETE /allocations/{consumer}``, which bumps no generation either: until
the totals or a later write to the provider show it, our candidates leave out capacity that is
free (they never offer capacity that is not). A foreign
resource class or trait created in an interval in which we created one too waits for the next
name change to show.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from sqlalchemy import BigInteger, Select, Table, cast, func, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.sql import FromClause
from sqlalchemy.sql.elements import ColumnElement

from placement_numa.db import tables as t
from placement_numa.db.database import Database
from placement_numa.db.kept_generations import (
    PROVIDERS,
    Rows,
    aggregate,
    apply,
    expected,
    moved_aggregate,
)
from placement_numa.db.repositories import changes
from placement_numa.db.repositories.fleet import current_revisions
from placement_numa.errors import ServiceUnavailable

__all__ = ["Fingerprint", "ForeignWriteWatcher", "PROVIDERS", "Summary", "TOTALS"]
__all__ += ["fingerprint", "summary"]

LOG = logging.getLogger("placement_numa.db")


@dataclass(frozen=True)
class Fingerprint:
    """What the watcher compares: ``{stripe: revision}`` of the counter rows, ``{provider id:
    generation}``, ``(resource class count, max id, trait count, max id)`` and the ``TOTALS``
    values."""

    revisions: dict[int, int]
    generations: dict[int, int]
    names: tuple[int, ...]
    totals: tuple[int, ...]


@dataclass(frozen=True)
class Summary:
    """The steady-state read (``summary``): ``{stripe: revision}``, the ``PROVIDERS``
    aggregate ``(count, sum of ids, max id, sum of generations)``, names and totals as in
    ``Fingerprint``."""

    revisions: dict[int, int]
    providers: tuple[int, ...]
    names: tuple[int, ...]
    totals: tuple[int, ...]


def _sum(column: ColumnElement[int]) -> ColumnElement[int]:
    return func.coalesce(func.sum(column), 0)


def _table_totals() -> Select[Any]:
    """One row: per fleet table, its count and the sums of its amounts and ids (one scan of
    each table, the single-row aggregates joined)."""
    inv, alloc = t.inventories, t.allocations
    traits, aggs = t.resource_provider_traits, t.resource_provider_aggregates
    rp = t.resource_providers
    ratio = cast(func.round(inv.c.allocation_ratio * 10000), BigInteger)
    per_table: tuple[tuple[Table, list[ColumnElement[int]]], ...] = (
        (
            inv,
            [inv.c.resource_provider_id, inv.c.resource_class_id, inv.c.total, inv.c.reserved]
            + [inv.c.min_unit, inv.c.max_unit, inv.c.step_size, ratio],
        ),
        (alloc, [alloc.c.resource_provider_id, alloc.c.resource_class_id, alloc.c.used]),
        (traits, [traits.c.resource_provider_id, traits.c.trait_id]),
        (aggs, [aggs.c.resource_provider_id, aggs.c.aggregate_id]),
        (rp, [func.coalesce(rp.c.parent_provider_id, 0), rp.c.root_provider_id]),
    )
    rows = [
        select(func.count(), *[_sum(c) for c in columns]).select_from(table).subquery()
        for table, columns in per_table
    ]
    last_id = select(func.coalesce(func.max(alloc.c.id), 0)).scalar_subquery()
    joined: FromClause = rows[0]
    for row in rows[1:]:  # always true (counts are >= 0), naming both sides for the linter
        joined = joined.join(row, rows[0].c[0] <= rows[0].c[0] + row.c[0])
    return select(*[c for row in rows for c in row.c], last_id).select_from(joined)


# Counts and sums over the fleet tables, compared when no write of ours happened in between.
TOTALS = _table_totals()
_GENERATIONS = select(t.resource_providers.c.id, t.resource_providers.c.generation)
_NAMES = select(
    select(func.count()).select_from(t.resource_classes).scalar_subquery(),
    select(func.coalesce(func.max(t.resource_classes.c.id), 0)).scalar_subquery(),
    select(func.count()).select_from(t.traits).scalar_subquery(),
    select(func.coalesce(func.max(t.traits.c.id), 0)).scalar_subquery(),
)


def fingerprint(conn: Connection) -> Fingerprint | None:
    """The fingerprint read on ``conn``; ``None`` when a write of ours committed while it was
    read (the revision moved: try again later)."""
    before = current_revisions(conn)
    generations = {int(i): int(g or 0) for i, g in conn.execute(_GENERATIONS)}
    names = tuple(int(v or 0) for v in conn.execute(_NAMES).one())
    totals = tuple(int(v or 0) for v in conn.execute(TOTALS).one())
    if current_revisions(conn) != before:
        return None
    return Fingerprint(before, generations, names, totals)


def summary(conn: Connection) -> Summary | None:
    """The steady-state read on ``conn``: as ``fingerprint`` with the one-row ``PROVIDERS``
    aggregate in place of every provider's generation; ``None`` as there."""
    before = current_revisions(conn)
    providers = tuple(int(v or 0) for v in conn.execute(PROVIDERS).one())
    names = tuple(int(v or 0) for v in conn.execute(_NAMES).one())
    totals = tuple(int(v or 0) for v in conn.execute(TOTALS).one())
    if current_revisions(conn) != before:
        return None
    return Summary(before, providers, names, totals)


@dataclass(frozen=True)
class Finding:
    """What a check found: the providers another writer changed (their trees are reloaded),
    and whether everything must be reloaded (``everything``), with the reason logged."""

    reason: str
    providers: frozenset[int] = frozenset()
    everything: bool = False


def _moved(old: Fingerprint, new: Fingerprint) -> set[int]:
    """Providers whose generation moved, or that appeared or vanished."""
    moved = {p for p, g in new.generations.items() if old.generations.get(p) != g}
    return moved | (set(old.generations) - set(new.generations))


def _ours(rows: Rows, new: Fingerprint, moved: set[int]) -> set[int]:
    """The providers of ``moved`` whose state now is the one a change row of ours left."""
    left: dict[int, set[int | None]] = {}
    for _, kind, p, generation in rows:
        if kind == changes.PROVIDER and p in moved:
            left.setdefault(p, set()).add(generation)
    explained = set()
    for p, generations in left.items():
        now = new.generations.get(p)
        known = {g for g in generations if g is not None}
        if (now is None and None in generations) or (known and max(known) == now):
            explained.add(p)
    return explained


def _log(conn: Connection, old: dict[int, int], new: dict[int, int]) -> Rows | None:
    """Our change rows from the revisions ``old`` to ``new`` (``changes.log_between``)."""
    return [] if new == old else changes.log_between(conn, old, new)


def _unexplained(
    conn: Connection, old: Fingerprint, new: Fingerprint, rows: Rows | None = None
) -> Finding | None:
    """Why ``old`` -> ``new`` is not the work of our own writes (``None`` when it is);
    ``rows``: our change rows between them, read here when not given."""
    moved = _moved(old, new)
    if rows is None:
        rows = _log(conn, old.revisions, new.revisions)
    if rows is None:
        return Finding("the change log cannot tell (pruned or rewound)", everything=True)
    foreign = moved - _ours(rows, new, moved)
    if foreign:
        reason = f"{len(foreign)} resource provider(s) changed by another writer"
        return Finding(reason, frozenset(foreign))
    return _names_or_totals(old, new, rows, moved)


def _names_or_totals(
    old: Fingerprint, new: Fingerprint, rows: Rows, moved: set[int]
) -> Finding | None:
    """With every moved provider explained by our ``rows``: names and totals must not have
    moved but for our writes (only watchers' records since: they change no row)."""
    records = sum(kind == changes.WATCHER for _, kind, _, _ in rows)
    quiet = records == sum(new.revisions.values()) - sum(old.revisions.values())
    if new.names != old.names and (quiet or all(kind != changes.NAMES for _, kind, _, _ in rows)):
        return Finding("resource class or trait names changed by another writer", everything=True)
    if quiet and not moved and new.totals != old.totals:
        return Finding("fleet table totals changed, no generation moved", everything=True)
    return None


class ForeignWriteWatcher:
    """Checks for foreign writes every ``interval`` seconds in a daemon thread (``start``,
    ``stop``); ``check()`` runs one check in the caller's thread."""

    def __init__(self, database: Database, interval: float) -> None:
        self.database = database
        self.interval = interval
        self.found = 0  # foreign writes recorded (tests, diagnostics)
        self.full_reads = 0  # checks that read every provider's generation (tests, diagnostics)
        self._last: Fingerprint | None = None
        self._aggregate = (0, 0, 0, 0)  # PROVIDERS of self._last.generations
        self._late = False  # no baseline before the engine's first load: reload once
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def baseline(self) -> None:
        """Read the first fingerprint now. It must precede the engine's first fleet load (a
        foreign write between that load and a later baseline would be in the baseline, never
        seen): the service calls this, through ``start``, before it loads the snapshot. When
        the database cannot be read yet, the first fingerprint read later reloads the whole
        fleet once, to be sure."""
        for _ in range(3):
            try:
                with self.database.read() as conn:
                    self._last = fingerprint(conn)
            except Exception as exc:  # database away: the thread tries again
                LOG.warning("foreign write watcher: no baseline yet (%s)", exc)
                break
            if self._last is not None:
                self._aggregate = aggregate(self._last.generations)
                return
        self._late = True

    def check(self) -> bool:
        """One check; True when a foreign write was found and recorded. The first check
        without a baseline takes it (``baseline``; True, recording a whole reload, when the
        baseline came late). Database errors propagate (the thread logs them and tries
        again next time)."""
        with self.database.read() as conn:
            last = self._last
            steady = None if last is None else self._steady(conn, last)
            if steady is not None:
                self._last, finding = steady
            else:  # no baseline, or something moved that our rows do not explain: read all
                self.full_reads += 1
                now = fingerprint(conn)
                if now is None:
                    return False
                self._last, self._aggregate = now, aggregate(now.generations)
                if last is None and self._late:
                    finding = Finding("baseline taken late", everything=True)
                else:
                    finding = None if last is None else _unexplained(conn, last, now)
        if finding is None:
            return False
        self._late = False
        LOG.info("foreign write: %s; candidate engines reload it", finding.reason)
        # The baseline stays ``now``: the rows written here name the providers with the
        # generations they have at this commit, so the next check explains them, and a
        # foreign write committed after this one is not hidden in a fresh baseline.
        self._record(finding)
        self.found += 1
        return True

    def _steady(
        self, conn: Connection, last: Fingerprint
    ) -> tuple[Fingerprint, Finding | None] | None:
        """The cheap check: the ``summary`` read and our change rows since ``last``. When
        ``last``'s generations moved by our rows (``expected``) give the ``PROVIDERS``
        aggregate read, they are moved in place and the new fingerprint and finding returned
        (every moved provider is ours: only names or totals can be foreign); ``None`` when
        they do not (or the read raced a write of ours, or the log cannot tell): then a full
        read tells which providers moved (``last`` is left as it was)."""
        now = summary(conn)
        rows = None if now is None else _log(conn, last.revisions, now.revisions)
        if now is None or rows is None:
            return None
        left = expected(rows)
        after = moved_aggregate(self._aggregate, last.generations, left)
        if after != now.providers:
            return None
        moved = apply(last.generations, left)
        self._aggregate = after
        new = Fingerprint(now.revisions, last.generations, now.names, now.totals)
        return new, _names_or_totals(last, new, rows, moved)

    def _record(self, finding: Finding) -> None:
        """One write transaction whose change rows name the providers of ``finding`` (with
        their generations), or one ``all`` row."""
        with self.database.write() as conn:
            changes.by_watcher(conn, everything=finding.everything)
            changes.touch(conn, finding.providers)

    def _run(self) -> None:
        failing = False
        while not self._stop.wait(self.interval):
            try:
                self.check()
                failing = False
            except Exception as exc:  # database away: try again next time
                # The first failure of a streak is a warning (the staleness bound is off while
                # checks fail), the rest are debug lines.
                # A database away or failing over is one line; anything else keeps its traceback.
                level = logging.DEBUG if failing else logging.WARNING
                trace = not failing and not isinstance(exc, (SQLAlchemyError, ServiceUnavailable))
                LOG.log(level, "foreign write check failed: %s", exc, exc_info=trace)
                failing = True

    def start(self) -> None:
        """Take the baseline (``baseline``: before the engine's first fleet load), then start
        the daemon thread (once)."""
        if self._thread is None:
            self.baseline()
            self._thread = threading.Thread(
                target=self._run, name="foreign-write-watcher", daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        """Stop the thread (waits for a running check to end)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
