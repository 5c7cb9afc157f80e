"""Writes made around placement-numa reach the candidate engine within a bounded time.

The engine's snapshot follows ``placement_revision``, which only our own ``Database.write()``
bumps. During a switch-over upstream Placement serves the same database, and an operator's SQL
or ``nova-manage placement heal_allocations`` may write too: none of them bump it.
``ForeignWriteWatcher`` closes that gap with a cheap periodic fingerprint, in a daemon thread
per worker process:

* every ``interval`` seconds it reads, in one short read, the revision counter, each resource
  provider's ``(id, generation)`` and the size of the name tables (resource classes, traits);
  every write to a provider's inventories, allocations, traits, aggregates or parent bumps
  that provider's generation, in upstream Placement as in ours;
* a difference our own writes do not explain (a provider whose generation moved, appeared or
  vanished that no change-log row since the last check names; name tables that changed with
  no ``names`` row) is a foreign write: the watcher then writes one change-log row ``all``
  through ``Database.write()`` (bumping the revision), which is the engine's public refresh
  hook: every worker's next candidate query reloads the fleet.

So a foreign write shows in candidate answers within ``interval`` plus one fleet load
(``[placement] foreign_write_staleness`` sets ``interval`` to half of it). Over-commit never
depended on the snapshot: claims and allocation writes lock the provider rows
(``SELECT ... FOR UPDATE``) and re-check capacity against the rows in SQL, and upstream's
writes compare-and-swap the same providers' generations, so each waits for the other.

Limit: a foreign write to a provider that our own writes also touched between two checks is
seen only if it committed before our refresh of that provider read it.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from sqlalchemy import func, select, update
from sqlalchemy.engine import Connection

from placement_numa.db import tables as t
from placement_numa.db.database import Database
from placement_numa.db.repositories import changes
from placement_numa.db.repositories.fleet import current_revision

__all__ = ["Fingerprint", "ForeignWriteWatcher", "fingerprint"]

LOG = logging.getLogger("placement_numa.db")


@dataclass(frozen=True)
class Fingerprint:
    """What the watcher compares: the revision, ``{provider id: generation}`` and
    ``(resource class count, max id, trait count, max id)``."""

    revision: int
    generations: dict[int, int]
    names: tuple[int, ...]


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
    before = current_revision(conn)
    generations = {int(i): int(g or 0) for i, g in conn.execute(_GENERATIONS)}
    names = tuple(int(v) for v in conn.execute(_NAMES).one())
    if current_revision(conn) != before:
        return None
    return Fingerprint(before, generations, names)


def _unexplained(conn: Connection, old: Fingerprint, new: Fingerprint) -> str | None:
    """Why ``old`` -> ``new`` is not the work of our own writes (``None`` when it is)."""
    moved = {p for p, g in new.generations.items() if old.generations.get(p) != g}
    moved |= set(old.generations) - set(new.generations)
    if new.revision == old.revision:
        if moved:
            return f"{len(moved)} resource provider(s) changed"
        return "resource class or trait names changed" if new.names != old.names else None
    rows = [r for r in changes.changes_since(conn, old.revision) if r[0] <= new.revision]
    if {r for r, _, _ in rows} != set(range(old.revision + 1, new.revision + 1)):
        return None  # log pruned: every worker reloads everything anyway
    kinds = {kind for _, kind, _ in rows}
    if changes.ALL in kinds:
        return None
    ours = {p for _, kind, p in rows if kind == changes.PROVIDER and p is not None}
    if moved - ours:
        return f"{len(moved - ours)} resource provider(s) changed by another writer"
    if new.names != old.names and changes.NAMES not in kinds:
        return "resource class or trait names changed by another writer"
    return None


class ForeignWriteWatcher:
    """Checks for foreign writes every ``interval`` seconds in a daemon thread (``start``,
    ``stop``); ``check()`` runs one check in the caller's thread."""

    def __init__(self, database: Database, interval: float) -> None:
        self.database = database
        self.interval = interval
        self.found = 0  # foreign writes recorded (tests, diagnostics)
        self._last: Fingerprint | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def check(self) -> bool:
        """One check; True when a foreign write was found and recorded (``all``). Database
        errors propagate (the thread logs them and tries again next time)."""
        with self.database.read() as conn:
            now = fingerprint(conn)
            if now is None:
                return False
            last, self._last = self._last, now
            reason = None if last is None else _unexplained(conn, last, now)
        if reason is None:
            return False
        LOG.info("foreign write: %s; candidate engines reload the fleet", reason)
        self._record()
        self.found += 1
        with self.database.read() as conn:
            self._last = fingerprint(conn)
        return True

    def _record(self) -> None:
        """A write transaction whose change-log row is ``all``: a fleet-table statement with no
        provider touched (``changes``' rule), changing no row."""
        with self.database.write() as conn:
            rp = t.resource_providers
            conn.execute(update(rp).where(rp.c.id < 0).values(generation=rp.c.generation))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.check()
            except Exception as exc:  # database away: try again next time
                LOG.debug("foreign write check failed: %s", exc)

    def start(self) -> None:
        """Start the daemon thread (once)."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="foreign-write-watcher", daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        """Stop the thread (waits for a running check to end)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
