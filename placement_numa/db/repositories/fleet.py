"""Load the whole fleet for the candidate engine, and keep it fresh by ``placement_revision``.

``load_fleet(conn)`` reads providers, inventories, summed usages, traits and aggregates in one
transaction and builds a ``FleetSnapshot`` tagged with the revision read in that same
transaction (REPEATABLE READ on PostgreSQL and MariaDB, a deferred read transaction on SQLite in
WAL mode: all statements see one consistent state).

``SqlFleetSource(database)`` is the engine's ``FleetSource``: each ``snapshot()`` reads the
revision counter (one tiny statement) and reloads only if it moved. Every write transaction bumps
the counter before committing (``Database.write``), so a query started after a commit, in any
worker process, sees that commit.
"""

from __future__ import annotations

import gc
import threading

from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from placement_numa.db import tables as t
from placement_numa.db.database import Database
from placement_numa.engine.fleet import FleetSnapshot

__all__ = ["current_revision", "load_fleet", "SqlFleetSource"]


def current_revision(conn: Connection) -> int:
    """The fleet revision counter (0 if the row is missing)."""
    value = conn.execute(
        select(t.placement_revision.c.revision).where(t.placement_revision.c.id == 1)
    ).scalar()
    return int(value or 0)


def load_fleet(conn: Connection) -> FleetSnapshot:
    """Read everything the candidate search needs and build a ``FleetSnapshot``."""
    revision = current_revision(conn)
    rc_names = dict(conn.execute(select(t.resource_classes.c.id, t.resource_classes.c.name)).all())
    trait_names = dict(conn.execute(select(t.traits.c.id, t.traits.c.name)).all())
    rp = t.resource_providers
    providers = [
        (row[0], row[1], row[2], row[3])
        for row in conn.execute(
            select(rp.c.id, rp.c.uuid, rp.c.parent_provider_id, rp.c.root_provider_id)
        )
    ]
    inv = t.inventories
    inventories = [
        (r[0], rc_names[r[1]], r[2], r[3], r[4], r[5], r[6], r[7])
        for r in conn.execute(
            select(
                inv.c.resource_provider_id,
                inv.c.resource_class_id,
                inv.c.total,
                inv.c.reserved,
                inv.c.min_unit,
                inv.c.max_unit,
                inv.c.step_size,
                inv.c.allocation_ratio,
            )
        )
    ]
    alloc = t.allocations
    usages = [
        (r[0], rc_names[r[1]], int(r[2] or 0))
        for r in conn.execute(
            select(
                alloc.c.resource_provider_id, alloc.c.resource_class_id, func.sum(alloc.c.used)
            ).group_by(alloc.c.resource_provider_id, alloc.c.resource_class_id)
        )
    ]
    rpt = t.resource_provider_traits
    traits = [
        (r[0], trait_names[r[1]])
        for r in conn.execute(select(rpt.c.resource_provider_id, rpt.c.trait_id))
    ]
    rpa = t.resource_provider_aggregates
    agg = t.placement_aggregates
    aggregates = [
        (r[0], r[1])
        for r in conn.execute(
            select(rpa.c.resource_provider_id, agg.c.uuid).join(
                agg, agg.c.id == rpa.c.aggregate_id
            )
        )
    ]
    fleet = FleetSnapshot.build(revision, providers, inventories, usages, traits, aggregates)
    fleet.resource_class_names = frozenset(rc_names.values())
    fleet.trait_names = frozenset(trait_names.values())
    return fleet


class SqlFleetSource:
    """``FleetSource`` over a ``Database``: cached snapshot, reloaded when the revision moved."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self._fleet: FleetSnapshot | None = None
        self._lock = threading.Lock()
        self._local = threading.local()

    def _revision(self) -> int:
        """Read the revision counter in a fresh transaction. On SQLite (no connection pool)
        each thread keeps one connection for this, which saves a connect per query."""
        if self.database.dialect != "sqlite":
            with self.database.read() as conn:
                return current_revision(conn)
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self.database.engine.connect()
        try:
            return current_revision(conn)
        except Exception:
            self._local.conn = None
            conn.close()
            raise
        finally:
            if self._local.conn is not None:
                conn.rollback()  # end the read transaction: the next read sees new commits

    def snapshot(self) -> FleetSnapshot:
        """The fleet as of now: the cached snapshot if no write committed since it was loaded."""
        revision = self._revision()
        fleet = self._fleet
        if fleet is not None and fleet.revision == revision:
            return fleet
        with self._lock:
            fleet = self._fleet
            if fleet is not None and fleet.revision >= revision:
                return fleet
            fleet = self._load()
            self._fleet = fleet
            # The snapshot is long-lived and acyclic: keep the cyclic garbage collector from
            # rescanning its ~10 objects per provider on every full collection during searches.
            gc.unfreeze()
            gc.freeze()
            return fleet

    def _load(self) -> FleetSnapshot:
        engine = self.database.engine
        if self.database.dialect == "sqlite":
            with engine.connect() as conn:
                with conn.begin():
                    return load_fleet(conn)
        with engine.connect() as conn:
            conn = conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                return load_fleet(conn)
