"""The fleet change log: what each write transaction touched, so readers can refresh exactly.

Every write transaction (``Database.write()``) collects the internal ids of the resource
providers whose candidate-relevant state it changed (parent/root, inventories, usage, traits,
aggregates, existence): repositories call ``touch(conn, provider_ids)`` next to their
statements. At the end ``Database.write()`` bumps ``placement_revision`` and calls ``record``,
which writes one ``placement_changes`` row per touched provider with the new revision, in the
same transaction (so the rows commit, or vanish, with the writes they describe).

**Counter rows.** ``placement_revision`` holds one counter row per *stripe*: stripe 0 (row
id 1) everywhere, except on a MariaDB Galera cluster, where each node's writers bump the row of
their node (``stripe``: the node's ``wsrep_local_index``, row id ``1 + index``). Writes through
different nodes then update different rows and never fail certification against each other
for the counter's sake (one shared row made every pair of concurrent writes through two nodes
conflict); writes through one node queue on its row, as all writes do on one server. Each
stripe counts its own commits, one by one (its row is updated by one transaction at a time, on
any node: Galera certifies the row like any other), and the change rows of stripe ``s`` at
stripe revision ``r`` carry ``revision = s * STRIPE_SPAN + r`` (stripe 0: the stripe revision
itself, as with one counter). The fleet revision readers compare is the sum of the counter rows
(``fleet.current_revision``): it grows by one with every committed write, through any node, so a
reader that finds it unchanged missed nothing, and a reader holding the stripe revisions
(``fleet.held_revisions``) finds every change row since, stripe by stripe.

Rows (``kind``): ``"provider"`` (``provider_id`` touched), ``"usage"`` (beside the
``"provider"`` row of the same provider and generation: the transaction changed nothing of that
provider but its usage, its allocations; written by ``touch_usage``, so a reader may read the
usage of its tree alone; readers that do not know the kind skip it and reload the tree, as
for any ``"provider"`` row), ``"names"`` (no provider touched;
resource class or trait names may have changed), ``"all"`` (the transaction changed fleet tables
without describing which providers: a reader reloads everything). Every revision gets at least
one row, so a reader at revision ``r`` that finds rows for every revision in ``(r, now]`` knows
the log is complete for it (nothing pruned, nothing written around ``Database.write()``).
Each ``provider`` row carries the generation the transaction left the provider at (NULL: gone),
which tells the foreign-write watcher our generation moves from another writer's
(``db.foreign_writes``); the watcher's own records, which change no table row, add one row
``"watcher"`` (readers ignore it).

A safety net catches writes that forgot to ``touch``: an ``INSERT``/``UPDATE``/``DELETE`` on a
fleet table in a transaction that touched no provider records ``"all"``; on the name tables it
records ``"names"`` (an ``UPDATE`` there, a rename, records ``"all"``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import and_, bindparam, delete, event, insert, or_, select, update
from sqlalchemy.dialects.mysql import insert as mysql_insert
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql.dml import Delete, Insert, Update

from placement_numa.db import tables as t

__all__ = [
    "touch",
    "touch_usage",
    "note_generations",
    "by_watcher",
    "begin",
    "stripe",
    "bump_and_record",
    "changes_since_revisions",
    "log_between",
    "STRIPE_SPAN",
    "MAX_STRIPES",
    "end",
    "record",
    "bump_record_and_commit",
    "install",
    "PROVIDER",
    "USAGE",
    "NAMES",
    "ALL",
    "WATCHER",
    "KEEP_REVISIONS",
    "PRUNE_EVERY",
]

PROVIDER, USAGE, NAMES, ALL, WATCHER = "provider", "usage", "names", "all", "watcher"
# Rows of the last KEEP_REVISIONS revisions are kept; every PRUNE_EVERY revisions, older rows go.
KEEP_REVISIONS = 2000
PRUNE_EVERY = 100
# Change-log revisions of stripe s: s * STRIPE_SPAN + its own revision; at most MAX_STRIPES.
STRIPE_SPAN = 2**40
MAX_STRIPES = 64
_STRIPE_KEY = "placement_numa.revision_stripe"

_KEY = "placement_numa.pending_changes"
_FLEET_TABLES = frozenset(
    table.name
    for table in (
        t.resource_providers,
        t.inventories,
        t.allocations,
        t.resource_provider_traits,
        t.resource_provider_aggregates,
    )
)
_NAME_TABLES = frozenset((t.traits.name, t.resource_classes.name))


@dataclass
class _Pending:
    providers: set[int] = field(default_factory=set)
    usage: set[int] = field(default_factory=set)  # providers whose allocations changed
    generations: dict[int, int] = field(default_factory=dict)  # set here (``note_generations``)
    fleet_dml: bool = False
    rolled_back: bool = False  # a savepoint was rolled back: ``generations`` may be ahead
    names: bool = False
    everything: bool = False
    watcher: bool = False


def begin(conn: Connection) -> None:
    """Start collecting changes on ``conn`` (called by ``Database.write()``)."""
    conn.info[_KEY] = _Pending()


def end(conn: Connection) -> None:
    """Stop collecting on ``conn`` (its DBAPI connection may be pooled and reused)."""
    try:
        conn.info.pop(_KEY, None)
    except Exception:  # an invalidated connection: ``begin`` resets the state anyway
        pass


def touch(conn: Connection, provider_ids: Iterable[int]) -> None:
    """Note that this transaction changed what the candidate engine knows of ``provider_ids``
    (internal ids; deleted or new providers too). A no-op outside ``Database.write()``."""
    pending: _Pending | None = conn.info.get(_KEY)
    if pending is not None:
        pending.providers.update(int(p) for p in provider_ids)


def touch_usage(conn: Connection, provider_ids: Iterable[int]) -> None:
    """Note that this transaction changed the allocations of ``provider_ids`` (internal ids):
    their usage. A provider also ``touch``-ed by the transaction counts as touched (any
    change); one only ``touch_usage``-d gets a ``"usage"`` row beside its ``"provider"`` row.
    A no-op outside ``Database.write()``."""
    pending: _Pending | None = conn.info.get(_KEY)
    if pending is not None:
        pending.usage.update(int(p) for p in provider_ids)


def note_generations(conn: Connection, generations: dict[int, int]) -> None:
    """Note the generations this transaction set on providers (internal id -> generation,
    under the row locks it holds until commit), so the change rows of a transaction that
    changed allocations alone (``touch_usage``, no ``touch``) need not read them again. Once a
    savepoint of the transaction is rolled back, the notes are not used (the generations are
    read): a row naming a generation ahead of the provider's would break the foreign-write
    watcher's ``A >= E`` (``db.foreign_writes``). A no-op outside ``Database.write()``."""
    pending: _Pending | None = conn.info.get(_KEY)
    if pending is not None:
        pending.generations.update(generations)


def by_watcher(conn: Connection, *, everything: bool) -> None:
    """Mark this transaction as the foreign-write watcher's record, which changes no table
    row: one more row ``watcher``; with ``everything``, its change row is ``all`` (every reader
    reloads the whole fleet). A no-op outside ``Database.write()``."""
    pending: _Pending | None = conn.info.get(_KEY)
    if pending is not None:
        pending.watcher = True
        pending.everything = pending.everything or everything


def _before_execute(
    conn: Connection, clauseelement: Any, multiparams: Any, params: Any, execution_options: Any
) -> None:
    if not isinstance(clauseelement, (Insert, Update, Delete)):
        return
    pending: _Pending | None = conn.info.get(_KEY)
    if pending is None:
        return
    name = getattr(clauseelement.table, "name", None)
    if name in _FLEET_TABLES:
        pending.fleet_dml = True
    elif name in _NAME_TABLES:
        if isinstance(clauseelement, Update):
            pending.everything = True  # a renamed class renames inventories
        pending.names = True


def _savepoint_rolled_back(conn: Connection, _name: Any, _context: Any) -> None:
    if conn.invalidated:  # the server or the link died: the whole transaction is gone with it,
        return  # and ``conn.info`` would raise instead of the disconnect (a 503)
    pending: _Pending | None = conn.info.get(_KEY)
    if pending is not None:
        pending.rolled_back = True


def install(engine: Engine) -> None:
    """Hook the safety net into ``engine`` (once per engine), and the savepoint rollbacks that
    void ``note_generations``."""
    if not event.contains(engine, "before_execute", _before_execute):
        event.listen(engine, "before_execute", _before_execute)
    if not event.contains(engine, "rollback_savepoint", _savepoint_rolled_back):
        event.listen(engine, "rollback_savepoint", _savepoint_rolled_back)


def _rows(conn: Connection) -> list[tuple[str, int | None]]:
    """``(kind, provider_id)`` of the change rows of the transaction on ``conn`` (at least
    one)."""
    pending: _Pending | None = conn.info.get(_KEY)
    touched = set() if pending is None else pending.providers | pending.usage
    if pending is None or pending.everything or (pending.fleet_dml and not touched):
        rows: list[tuple[str, int | None]] = [(ALL, None)]
    else:
        rows = [(PROVIDER, p) for p in sorted(touched)]
        rows += [(USAGE, p) for p in sorted(pending.usage - pending.providers)]
        if pending.names or not rows:
            rows.append((NAMES, None))
    if pending is not None and pending.watcher:
        rows.append((WATCHER, None))
    return rows


def _generations(conn: Connection, rows: list[tuple[str, int | None]]) -> dict[int, int]:
    """``{provider id: generation}`` of the providers ``rows`` name, as this transaction sees
    them (gone providers are absent)."""
    ids = [p for kind, p in rows if kind == PROVIDER and p is not None]
    if not ids:
        return {}
    pending: _Pending | None = conn.info.get(_KEY)
    if (
        pending is not None
        and not pending.providers  # allocations alone: no provider created, deleted or moved
        and not pending.rolled_back  # a bump noted inside it may have been undone
        and all(p in pending.generations for p in ids)
    ):
        return {p: pending.generations[p] for p in ids}  # set by this transaction
    rp = t.resource_providers
    found = conn.execute(select(rp.c.id, rp.c.generation).where(rp.c.id.in_(ids)))
    return {int(i): int(g or 0) for i, g in found}


def record(
    conn: Connection, revision: int, stripe: int = 0, generations: dict[int, int] | None = None
) -> None:
    """Write the change rows of the ending transaction at ``revision`` (the new revision of
    ``stripe``), each ``provider`` row with the generation the transaction leaves its provider
    at (``generations``, read here when not given; NULL for a provider gone), and prune that
    stripe's rows older than ``KEEP_REVISIONS`` every ``PRUNE_EVERY`` revisions."""
    base = stripe * STRIPE_SPAN
    rows = _rows(conn)
    if generations is None:
        generations = _generations(conn, rows)
    conn.execute(
        _INSERT,
        [
            {
                "revision": base + revision,
                "kind": kind,
                "provider_id": p,
                "generation": None if p is None else generations.get(p),
            }
            for kind, p in rows
        ],
    )
    if revision % PRUNE_EVERY == 0:
        conn.execute(_PRUNE, {"lowest": base, "oldest_kept": base + revision - KEEP_REVISIONS + 1})


def stripe(conn: Connection) -> int:
    """The counter stripe this connection's write transactions bump (module docstring): the
    Galera node's ``wsrep_local_index`` (distinct among the members of a cluster), else 0.
    Read once per database connection (a reconnect reads it again; should two nodes share a
    stripe meanwhile, their writes conflict on its row and are re-run, as with one counter)."""
    if conn.dialect.name != "mysql":
        return 0
    info = conn.connection.info
    cached = info.get(_STRIPE_KEY)
    if cached is None:
        row = conn.exec_driver_sql("SHOW STATUS LIKE 'wsrep_local_index'").first()
        value = str(row[1]) if row is not None else ""
        cached = int(value) if value.isdigit() and int(value) < MAX_STRIPES else 0
        info[_STRIPE_KEY] = cached
    return int(cached)


def bump_and_record(conn: Connection) -> None:
    """SQLite and MariaDB: bump this transaction's counter stripe (``stripe``; its row is
    created on a stripe's first write) and write the change rows at its new revision
    (``record``). PostgreSQL uses ``bump_record_and_commit``."""
    index = stripe(conn)
    row_id = 1 + index
    rt = t.placement_revision
    # Read before the counter's row is locked (every writer queues on it). A provider this
    # transaction did not lock may move on before the commit: its row then names an older
    # generation than the provider has, which the watcher counts as foreign (one reload).
    generations = _generations(conn, _rows(conn))
    if index == 0:
        if conn.dialect.update_returning:  # SQLite: one round trip
            revision = int(conn.execute(_BUMP_FIRST_RETURNING).scalar_one())
            record(conn, revision, generations=generations)
            return
        conn.execute(_BUMP_FIRST)
    else:
        upsert = mysql_insert(rt).values(id=row_id, revision=1)
        conn.execute(upsert.on_duplicate_key_update(revision=rt.c.revision + 1))
    value = conn.execute(_STRIPE_REVISION, {"row": row_id}).scalar()
    record(conn, int(value or 0), index, generations)


# every write bumps the counter (built once: ~0.1 ms of SQLAlchemy per statement built)
_BUMP_FIRST = (
    update(t.placement_revision)
    .where(t.placement_revision.c.id == 1)
    .values(revision=t.placement_revision.c.revision + 1)
)
_BUMP_FIRST_RETURNING = _BUMP_FIRST.returning(t.placement_revision.c.revision)
_STRIPE_REVISION = select(t.placement_revision.c.revision).where(
    t.placement_revision.c.id == bindparam("row")
)


def bump_record_and_commit(conn: Connection) -> None:
    """PostgreSQL: bump ``placement_revision``, write the change rows at the new revision (with
    their providers' generations, as ``record``), prune as ``record`` does, and ``COMMIT``, all
    in one message (the simple query protocol runs
    several statements): one round trip.

    The counter row stays locked from its ``UPDATE`` until the commit, and every writer needs
    it, so whatever happens in between is paid by every writer queued behind. Sent as separate
    statements, that was three round trips, each waiting for the client process to be scheduled
    and to get its GIL back; sent at once, the lock is held only while the server runs them
    (the commit's WAL flush included). The caller's SQLAlchemy transaction then finds nothing
    left to commit (psycopg's ``commit()`` of an idle connection does nothing); on an error
    nothing was committed and it rolls back as usual.

    The values are integers (provider ids) and this module's kind constants, written into the
    statement (a multi-statement message cannot carry bind parameters).
    """
    values = ", ".join(
        f"('{kind}', {'NULL' if p is None else int(p)}::integer)" for kind, p in _rows(conn)
    )
    revision, log = t.placement_revision.name, t.placement_changes.name
    conn.exec_driver_sql(
        f"WITH bumped AS (UPDATE {revision} SET revision = revision + 1 WHERE id = 1"
        " RETURNING revision),"
        f" logged AS (INSERT INTO {log} (revision, kind, provider_id, generation)"
        " SELECT bumped.revision, c.kind, c.provider_id, rp.generation"
        f" FROM bumped CROSS JOIN (VALUES {values}) AS c (kind, provider_id)"
        f" LEFT JOIN {t.resource_providers.name} rp ON rp.id = c.provider_id)"
        f" DELETE FROM {log} USING bumped WHERE mod(bumped.revision, {PRUNE_EVERY}) = 0"
        f" AND {log}.revision <= bumped.revision - {KEEP_REVISIONS};"
        " COMMIT",
        execution_options={"no_parameters": True},  # psycopg: simple query protocol
    )


_INSERT = insert(t.placement_changes)
_PRUNE = delete(t.placement_changes).where(
    t.placement_changes.c.revision >= bindparam("lowest"),
    t.placement_changes.c.revision < bindparam("oldest_kept"),
)


# what a reader of the change log takes of each row, oldest first
_CHANGE_ROWS = select(
    t.placement_changes.c.revision,
    t.placement_changes.c.kind,
    t.placement_changes.c.provider_id,
    t.placement_changes.c.generation,
).order_by(t.placement_changes.c.revision, t.placement_changes.c.id)
_ONE_RANGE = _CHANGE_ROWS.where(
    t.placement_changes.c.revision > bindparam("after"),
    t.placement_changes.c.revision <= bindparam("upto"),
)


def changes_since_revisions(
    conn: Connection, held: dict[int, int], now: dict[int, int]
) -> dict[int, list[tuple[int, str, int | None, int | None]]]:
    """Per stripe ``s`` of ``now``, ``(stripe revision, kind, provider_id, generation)`` of its
    change rows after ``held[s]`` (0 when absent) up to ``now[s]``, oldest first (one query)."""
    pc = t.placement_changes
    bounds = [
        (s * STRIPE_SPAN + held.get(s, 0), s * STRIPE_SPAN + revision)
        for s, revision in sorted(now.items())
        if revision > held.get(s, 0)
    ]
    found: dict[int, list[tuple[int, str, int | None, int | None]]] = {s: [] for s in now}
    if not bounds:
        return found
    if len(bounds) == 1:  # one stripe moved (nearly always): the statement built once
        result = conn.execute(_ONE_RANGE, {"after": bounds[0][0], "upto": bounds[0][1]})
    else:
        ranges = [and_(pc.c.revision > low, pc.c.revision <= high) for low, high in bounds]
        result = conn.execute(_CHANGE_ROWS.where(or_(*ranges)))
    for encoded, kind, p, g in result:
        s, revision = divmod(int(encoded), STRIPE_SPAN)
        found.setdefault(s, []).append(
            (revision, str(kind), None if p is None else int(p), None if g is None else int(g))
        )
    return found


def log_between(
    conn: Connection, held: dict[int, int] | None, now: dict[int, int]
) -> list[tuple[int, str, int | None, int | None]] | None:
    """``(stripe revision, kind, provider_id, generation)`` of every change after the stripe
    revisions ``held`` up to ``now`` (``{stripe: revision}``), or ``None`` when the log cannot
    tell: ``held`` unknown or ahead of ``now``, rows pruned or missing (writes made around
    ``Database.write()``)."""
    if held is None or any(now.get(s, -1) < revision for s, revision in held.items()):
        return None
    found = changes_since_revisions(conn, held, now)
    rows: list[tuple[int, str, int | None, int | None]] = []
    for s, revision in now.items():
        stripe_rows = found.get(s, [])
        if {r[0] for r in stripe_rows} != set(range(held.get(s, 0) + 1, revision + 1)):
            return None
        rows += stripe_rows
    return rows
