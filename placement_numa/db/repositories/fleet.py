"""Load the whole fleet for the candidate engine, and keep it fresh by ``placement_revision``.

``load_fleet(conn)`` reads providers, inventories, summed usages, traits and aggregates in one
transaction and builds a ``FleetSnapshot`` tagged with the revision read in that same
transaction (REPEATABLE READ on PostgreSQL and MariaDB, a deferred read transaction on SQLite in
WAL mode: all statements see one consistent state).

``SqlFleetSource(database)`` is the engine's ``FleetSource``: each ``snapshot()`` reads the
revision (the sum of the counter rows: one row, or one per writing Galera node, see
``repositories.changes``; one tiny statement) and refreshes only if it moved. Every write
transaction bumps a counter row before committing (``Database.write``), so a query started after
a commit, in any worker process, sees that commit. The refresh (``refresh_fleet``) reads the
change log rows written by those transactions (``repositories.changes``) and reloads only the
trees they touched (only the usage of a tree whose allocations alone changed), patching the
previous snapshot; it falls back to a whole load when the log
does not cover the gap (pruned rows, writes outside ``Database.write``) or touched many trees.
"""

from __future__ import annotations

import threading
from typing import Any

from sqlalchemy import Select, bindparam, func, select
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import BindParameter

from placement_numa.db import tables as t
from placement_numa.db.database import Database
from placement_numa.db.repositories import changes
from placement_numa.engine.fleet import FleetSnapshot, InventoryTuple, ProviderTuple
from placement_numa.engine.fleet_patch import replace_trees
from placement_numa.engine.handover import SnapshotHolder
from placement_numa.engine.patch_log import record_patch

__all__ = [
    "current_revision",
    "current_revisions",
    "held_revisions",
    "load_fleet",
    "refresh_fleet",
    "SqlFleetSource",
]


# Read before every answer (built once: a statement built per call costs ~0.1 ms of
# SQLAlchemy, more than SQLite's read)
_REVISION = select(func.coalesce(func.sum(t.placement_revision.c.revision), 0))
_REVISIONS = select(t.placement_revision.c.id, t.placement_revision.c.revision)


def current_revision(conn: Connection) -> int:
    """The fleet revision: the sum of the ``placement_revision`` counter rows (one row, except
    one per writing node on a Galera cluster: ``changes``' module docstring); it grows by one
    with every committed write transaction. 0 when there is no row."""
    value = conn.execute(_REVISION).scalar()
    return int(value or 0)


def current_revisions(conn: Connection) -> dict[int, int]:
    """``{stripe: revision}`` of every counter row (stripe = row id - 1)."""
    return {int(i) - 1: int(r) for i, r in conn.execute(_REVISIONS)}


# The stripe revisions a snapshot reflects, kept on the snapshot itself (the engine does not
# read them; ``refresh_fleet`` needs them to find the change rows since).
_HELD = "_placement_numa_stripe_revisions"


def held_revisions(fleet: FleetSnapshot) -> dict[int, int] | None:
    """The ``{stripe: revision}`` ``fleet`` was read or patched at (``None``: unknown)."""
    held: dict[int, int] | None = getattr(fleet, _HELD, None)
    return held


def _hold(fleet: FleetSnapshot, revisions: dict[int, int]) -> FleetSnapshot:
    setattr(fleet, _HELD, dict(revisions))
    return fleet


def _names(conn: Connection) -> tuple[dict[int, str], dict[int, str]]:
    rc_names = dict(conn.execute(select(t.resource_classes.c.id, t.resource_classes.c.name)).all())
    trait_names = dict(conn.execute(select(t.traits.c.id, t.traits.c.name)).all())
    return rc_names, trait_names


Rows = tuple[
    list[ProviderTuple],
    list[InventoryTuple],
    list[tuple[int, str, int]],
    list[tuple[int, str]],
    list[tuple[int, str]],
]


def _fetch(conn: Connection, statement: Select[Any]) -> list[Any]:
    """Every row of a parameterless ``statement`` as plain tuples, read from the DB-API cursor
    (same transaction; no SQLAlchemy ``Row`` per row: a fleet load reads hundreds of thousands
    of rows). The statement runs through SQLAlchemy, so a lost connection is translated
    (``db.resilience``: 503 ``placement.db.unavailable``) and the connection invalidated."""
    sql = str(statement.compile(dialect=conn.dialect))
    result = conn.exec_driver_sql(sql, execution_options={"no_parameters": True})
    try:
        return list(result.cursor.fetchall())
    finally:
        result.close()


def _rows(conn: Connection, rc_names: dict[int, str], trait_names: dict[int, str]) -> Rows:
    """Snapshot rows of every provider."""
    rp = t.resource_providers
    providers: list[ProviderTuple] = _fetch(
        conn, select(rp.c.id, rp.c.uuid, rp.c.parent_provider_id, rp.c.root_provider_id)
    )
    inv = t.inventories
    inventories: list[InventoryTuple] = [
        (r[0], rc_names[r[1]], r[2], r[3], r[4], r[5], r[6], r[7])
        for r in _fetch(
            conn,
            select(
                inv.c.resource_provider_id,
                inv.c.resource_class_id,
                inv.c.total,
                inv.c.reserved,
                inv.c.min_unit,
                inv.c.max_unit,
                inv.c.step_size,
                inv.c.allocation_ratio,
            ),
        )
    ]
    alloc = t.allocations
    usages = [
        (r[0], rc_names[r[1]], int(r[2] or 0))
        for r in _fetch(
            conn,
            select(
                alloc.c.resource_provider_id, alloc.c.resource_class_id, func.sum(alloc.c.used)
            ).group_by(alloc.c.resource_provider_id, alloc.c.resource_class_id),
        )
    ]
    rpt = t.resource_provider_traits
    traits = [
        (r[0], trait_names[r[1]])
        for r in _fetch(conn, select(rpt.c.resource_provider_id, rpt.c.trait_id))
    ]
    rpa = t.resource_provider_aggregates
    agg = t.placement_aggregates
    aggregates = [
        (r[0], str(r[1]))
        for r in _fetch(
            conn,
            select(rpa.c.resource_provider_id, agg.c.uuid).join(
                agg, agg.c.id == rpa.c.aggregate_id
            ),
        )
    ]
    return providers, inventories, usages, traits, aggregates


def _tree_statements() -> tuple[Select[Any], ...]:
    """The statements reading whole trees (``:roots``, an expanding list of root ids), names
    joined in; built once."""
    rp = t.resource_providers
    roots: BindParameter[Any] = bindparam("roots", expanding=True)
    inv, alloc, rc = t.inventories, t.allocations, t.resource_classes
    rpt, rpa, agg = (
        t.resource_provider_traits,
        t.resource_provider_aggregates,
        t.placement_aggregates,
    )
    return (
        select(rp.c.id, rp.c.uuid, rp.c.parent_provider_id, rp.c.root_provider_id).where(
            rp.c.root_provider_id.in_(roots)
        ),
        select(
            inv.c.resource_provider_id,
            rc.c.name,
            inv.c.total,
            inv.c.reserved,
            inv.c.min_unit,
            inv.c.max_unit,
            inv.c.step_size,
            inv.c.allocation_ratio,
        )
        .join(rp, rp.c.id == inv.c.resource_provider_id)
        .join(rc, rc.c.id == inv.c.resource_class_id)
        .where(rp.c.root_provider_id.in_(roots)),
        select(alloc.c.resource_provider_id, rc.c.name, func.sum(alloc.c.used))
        .join(rp, rp.c.id == alloc.c.resource_provider_id)
        .join(rc, rc.c.id == alloc.c.resource_class_id)
        .where(rp.c.root_provider_id.in_(roots))
        .group_by(alloc.c.resource_provider_id, rc.c.name),
        select(rpt.c.resource_provider_id, t.traits.c.name)
        .join(rp, rp.c.id == rpt.c.resource_provider_id)
        .join(t.traits, t.traits.c.id == rpt.c.trait_id)
        .where(rp.c.root_provider_id.in_(roots)),
        select(rpa.c.resource_provider_id, agg.c.uuid)
        .join(rp, rp.c.id == rpa.c.resource_provider_id)
        .join(agg, agg.c.id == rpa.c.aggregate_id)
        .where(rp.c.root_provider_id.in_(roots)),
    )


_TREE_STATEMENTS: tuple[Select[Any], ...] = ()


def _statements() -> tuple[Select[Any], ...]:
    """``_tree_statements()``, built on first use: providers, inventories, usages, traits,
    aggregates of the trees of ``:roots``."""
    global _TREE_STATEMENTS
    if not _TREE_STATEMENTS:
        _TREE_STATEMENTS = _tree_statements()
    return _TREE_STATEMENTS


def _tree_rows(conn: Connection, roots: list[int]) -> Rows:
    """Snapshot rows of the trees rooted at ``roots`` (database ids)."""
    params = {"roots": roots}
    q_providers, q_inventories, q_usages, q_traits, q_aggregates = (
        conn.execute(statement, params).all() for statement in _statements()
    )
    return (
        [(r[0], r[1], r[2], r[3]) for r in q_providers],
        [(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]) for r in q_inventories],
        [(r[0], r[1], int(r[2] or 0)) for r in q_usages],
        [(r[0], r[1]) for r in q_traits],
        [(r[0], r[1]) for r in q_aggregates],
    )


def _usage_tree_rows(conn: Connection, fleet: FleetSnapshot, roots: list[int]) -> Rows:
    """Snapshot rows of the trees rooted at ``roots`` (database ids, trees of ``fleet``) whose
    providers changed nothing but their usage since ``fleet`` was read (``changes.USAGE``):
    the usage read (one statement), everything else as ``fleet`` holds it."""
    providers = fleet.providers
    rows: Rows = ([], [], [], [], [])
    provider_rows, inventory_rows, _, trait_rows, aggregate_rows = rows
    for root_id in roots:
        for index in fleet.tree[fleet.index_by_id[root_id]]:
            info = providers[index]
            parent = providers[info.parent].id if info.parent >= 0 else None
            provider_rows.append((info.id, info.uuid, parent, providers[info.root].id))
            for rc, inv in info.inventories.items():
                inventory_rows.append(
                    (info.id, rc, inv.total, inv.reserved, inv.min_unit, inv.max_unit)
                    + (inv.step_size, inv.allocation_ratio)
                )
            trait_rows.extend((info.id, name) for name in info.traits)
            aggregate_rows.extend((info.id, name) for name in info.aggregates)
    usages = conn.execute(_statements()[2], {"roots": roots})
    rows[2].extend((r[0], r[1], int(r[2] or 0)) for r in usages)
    return rows


def _usage_only(rows: list[tuple[int, str, int | None, int | None]]) -> tuple[set[int], set[int]]:
    """``(touched, usage_only)``: the providers the change ``rows`` name, those with a
    ``"usage"`` row beside every ``"provider"`` row of theirs (same revision and generation:
    only their allocations changed) apart."""
    marked = {(r, p, g) for r, kind, p, g in rows if kind == changes.USAGE}
    touched: set[int] = set()
    usage_only: set[int] = set()
    for r, kind, p, g in rows:
        if kind == changes.PROVIDER and p is not None:
            (usage_only if (r, p, g) in marked else touched).add(p)
    return touched, usage_only - touched


def load_fleet(conn: Connection) -> FleetSnapshot:
    """Read everything the candidate search needs and build a ``FleetSnapshot``."""
    revisions = current_revisions(conn)
    rc_names, trait_names = _names(conn)
    fleet = FleetSnapshot.build(sum(revisions.values()), *_rows(conn, rc_names, trait_names))
    fleet.resource_class_names = frozenset(rc_names.values())
    fleet.trait_names = frozenset(trait_names.values())
    fleet.trait_order = {name: id_ for id_, name in trait_names.items()}
    return _hold(fleet, revisions)


def refresh_fleet(conn: Connection, fleet: FleetSnapshot, *, owned: bool = False) -> FleetSnapshot:
    """``fleet`` brought up to the current revision, in one read transaction: patched from the
    change log (``placement_changes``) when it covers every revision of every counter stripe
    since the ones ``fleet`` was read at and names few trees, else loaded whole
    (``load_fleet``).

    The trees replaced are those that held, in ``fleet``, a provider the writes touched, and
    those that hold one now (a re-parent touches the whole moved subtree, so both its old and
    new trees are reloaded); aggregate and sharing indexes are patched by
    ``engine.fleet_patch.replace_trees``. A tree whose touched providers all changed nothing
    but their allocations (``changes.USAGE`` rows: a claim, ``PUT /allocations``) is not read
    whole: its usage is (one statement, ``_usage_tree_rows``), the rest comes from ``fleet``.
    ``owned``: the caller hands ``fleet`` over (``engine.handover``), so the patch may reuse
    its indexes in place.
    """
    now = current_revisions(conn)
    revision = sum(now.values())
    if revision == fleet.revision:
        return fleet
    if revision < fleet.revision:
        return load_fleet(conn)
    rows = changes.log_between(conn, held_revisions(fleet), now)
    if rows is None or any(kind == changes.ALL for _, kind, _, _ in rows):
        return load_fleet(conn)
    changed, usage_only = _usage_only(rows)
    unknown = {p for p in usage_only if p not in fleet.index_by_id}  # read as touched
    usage_only -= unknown
    touched = sorted(changed | unknown)
    if len(touched) + len(usage_only) > MAX_TOUCHED:
        return load_fleet(conn)
    root_ids = _known_roots(fleet, touched)
    if touched:
        rp = t.resource_providers
        root_ids.update(
            int(r)
            for r in conn.execute(
                select(rp.c.root_provider_id).where(rp.c.id.in_(touched))
            ).scalars()
            if r is not None
        )
    usage_roots = _known_roots(fleet, sorted(usage_only)) - root_ids
    if len(root_ids) + len(usage_roots) > max(MAX_TREES, len(fleet.roots) // 10):
        return load_fleet(conn)
    roots = sorted(root_ids)
    tree_rows = _tree_rows(conn, roots) if roots else ([], [], [], [], [])
    if usage_roots:  # trees only allocations changed: their usage read, the rest as held
        extra = _usage_tree_rows(conn, fleet, sorted(usage_roots))
        tree_rows = (
            tree_rows[0] + extra[0],
            tree_rows[1] + extra[1],
            tree_rows[2] + extra[2],
            tree_rows[3] + extra[3],
            tree_rows[4] + extra[4],
        )
        roots = sorted(root_ids | usage_roots)
    patched = replace_trees(fleet, revision, roots, *tree_rows, owned=owned)
    if patched is None:
        return load_fleet(conn)
    patched.usage_roots = frozenset(patched.index_by_id[r] for r in usage_roots)
    if any(kind == changes.NAMES for _, kind, _, _ in rows):
        patched.changed_beyond_trees = True
        rc_names, trait_names = _names(conn)
        patched.resource_class_names = frozenset(rc_names.values())
        patched.trait_names = frozenset(trait_names.values())
        patched.trait_order = {name: id_ for id_, name in trait_names.items()}
    record_patch(patched)
    return _hold(patched, now)


def _known_roots(fleet: FleetSnapshot, provider_ids: list[int]) -> set[int]:
    """Database ids of the roots of the trees holding ``provider_ids`` in ``fleet`` (no
    reference to its indexes outlives the call: see ``replace_trees(owned=True)``)."""
    providers = fleet.providers
    roots: set[int] = set()
    for provider_id in provider_ids:
        index = fleet.index_by_id.get(provider_id)
        if index is not None:
            roots.add(providers[providers[index].root].id)
    return roots


_REPEATABLE_READ = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"

# Beyond these, a whole reload is cheaper (or the IN lists too long).
MAX_TOUCHED = 2000
MAX_TREES = 500


class SqlFleetSource:
    """``FleetSource`` over a ``Database``: cached snapshot, refreshed when the revision moved
    (patched from the change log, see ``refresh_fleet``; loaded whole the first time)."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self._holder = SnapshotHolder()
        self._local = threading.local()

    def _sqlite_conn(self) -> Connection:
        """This thread's connection for fleet reads on SQLite (no connection pool there), which
        saves a connect per query."""
        conn: Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self.database.engine.connect()
        return conn

    def release_connection(self) -> None:
        """Close this thread's SQLite connection (reopened on the next read), e.g. before the
        process forks: a connection must not be used by two processes."""
        conn: Connection | None = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            conn.close()

    def _revision(self) -> int:
        """Read the revision counter in a fresh transaction."""
        if self.database.dialect != "sqlite":
            with self.database.read() as conn:
                return current_revision(conn)
        conn = self._sqlite_conn()
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
        """The fleet as of now: the held snapshot if no write committed since it was loaded,
        else that snapshot refreshed (``refresh_fleet``), handed over to the refresh as
        ``engine.handover`` describes (patched in place when no caller still holds it)."""
        revision = self._revision()
        current = self._holder.current()
        if current is not None and current.revision == revision:
            return current
        del current  # no reference of ours may keep the held snapshot from being handed over
        return self._holder.refresh(revision, self._load)

    def lag(self) -> int | None:
        """How many revisions the held snapshot is behind the database (``None``: none held
        yet), from one read of the revision counter; nothing is refreshed. Raises what the
        database raises (``OperationalError`` when it is down)."""
        current = self._holder.current()
        if current is None:
            return None
        held = current.revision
        del current  # no reference of ours may keep the snapshot from being handed over
        return self._revision() - held

    @property
    def full_loads(self) -> int:
        """Snapshots loaded whole (counter)."""
        return self._holder.full_loads

    @property
    def patches(self) -> int:
        """Snapshots refreshed from the change log (counter)."""
        return self._holder.patches

    @property
    def patches_in_place(self) -> int:
        """Patches of a snapshot no caller held any more, so patched in place (counter)."""
        return self._holder.patches_in_place

    def _load(self, previous: FleetSnapshot | None, owned: bool = False) -> FleetSnapshot:
        """Load (``previous`` None) or refresh in one consistent read transaction: SQLite's
        deferred read transaction, REPEATABLE READ on PostgreSQL and MariaDB (an
        ``engine.handover.Load``; ``owned``: see ``refresh_fleet``)."""
        engine = self.database.engine
        if self.database.dialect == "sqlite":
            conn = self._sqlite_conn()
            try:
                with conn.begin():
                    return (
                        load_fleet(conn)
                        if previous is None
                        else refresh_fleet(conn, previous, owned=owned)
                    )
            except Exception:
                self._local.conn = None
                conn.close()
                raise
        with engine.connect() as conn, conn.begin():
            # The isolation level of this one transaction, as its first statement: a pooled
            # connection keeps its own (READ COMMITTED), and a dead one fails here through
            # SQLAlchemy, as a 503 (``db.resilience``), where setting the connection's level
            # (``execution_options(isolation_level=...)``) called the driver directly: a 500.
            conn.exec_driver_sql(_REPEATABLE_READ, execution_options={"no_parameters": True})
            if previous is None:
                return load_fleet(conn)
            return refresh_fleet(conn, previous, owned=owned)
