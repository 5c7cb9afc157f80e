"""Take over an OpenStack Placement 16 database in place (``adopt``) and hand it back
(``release``).

Both projects keep their schema version in ``alembic_version``, with different chains. A
database is recognised by the revision found there (``state``):

* ``upstream``: Placement 16's head ``a082b8bb98d0`` (``placement-manage db sync``);
* ``upstream-old``: an older upstream revision (refused: upgrade it with upstream first);
* ``ours``: one of our revisions (adopt is a no-op);
* ``empty``: no ``alembic_version`` (nothing to adopt: ``db upgrade`` creates a new one).

``adopt``: the checks (``problems``) run first and read only; a problem refuses the whole
command with a one-line ``AdoptRefused`` that names it, and nothing has changed. Then, in one
transaction on PostgreSQL (MariaDB commits each DDL statement; every step is idempotent, so a
run cut short is finished by running it again): column types widened (amounts to BIGINT,
MariaDB's FLOAT ``allocation_ratio`` to DOUBLE keeping the values upstream served), nullable
columns upstream never leaves NULL made NOT NULL, keys and indexes renamed or made ours
(``adopt_schema``), our extension tables created and seeded (``seed_extension_tables``), and
our head revision written to ``alembic_version``: every later ``db upgrade`` applies our newer
migrations as on any database of ours.

``release``: our extension tables dropped, keys and indexes renamed back to upstream's, and
``a082b8bb98d0`` written to ``alembic_version``. Widened column types and NOT NULL stay: both
are compatible with upstream's code, which only writes values that fit.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import BigInteger, Double, Float, Integer, String, inspect, text
from sqlalchemy.engine import Connection, Engine

from placement_numa.db import adopt_schema, tables
from placement_numa.db.adopt_progress import TableProgress, row_counts
from placement_numa.db.migrate import alembic_config
from placement_numa.db.upstream_revisions import UPSTREAM_HEAD, UPSTREAM_REVISIONS

__all__ = [
    "UPSTREAM_HEAD",
    "UPSTREAM_REVISIONS",
    "AdoptRefused",
    "Counts",
    "state",
    "problems",
    "counts",
    "adopt",
    "release",
    "seed_extension_tables",
    "extension_tables",
    "our_head",
]

State = Literal["empty", "upstream", "upstream-old", "ours", "unknown"]
Log = Callable[[str], None]


class AdoptRefused(RuntimeError):
    """The database cannot be adopted or released as it is; the message is one line naming
    the problem. Nothing was changed."""


@dataclass(frozen=True)
class Counts:
    """Rows of a Placement database: resource providers, consumers, allocations."""

    providers: int
    consumers: int
    allocations: int

    def __str__(self) -> str:
        return (
            f"{self.providers} resource providers, {self.consumers} consumers, "
            f"{self.allocations} allocations"
        )


def our_head() -> str:
    """Our migrations' head revision (``0003_placement_changes`` or later)."""
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    head = script.get_current_head()
    assert head is not None
    return head


def _our_revisions() -> set[str]:
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    return {rev.revision for rev in script.walk_revisions()}


def _version(conn: Connection) -> str | None:
    if not inspect(conn).has_table("alembic_version"):
        return None
    return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def state(conn: Connection) -> tuple[State, str | None]:
    """``(state, revision)`` of the database on ``conn`` (see the module docstring)."""
    revision = _version(conn)
    if revision is None:
        if inspect(conn).has_table("resource_providers"):
            return "unknown", None
        return "empty", None
    if revision == UPSTREAM_HEAD:
        return "upstream", revision
    if revision in UPSTREAM_REVISIONS:
        return "upstream-old", revision
    if revision in _our_revisions():
        return "ours", revision
    return "unknown", revision


# Each check: (SQL counting offending rows, what the refusal says).
_CHECKS: tuple[tuple[str, str], ...] = (
    (
        "SELECT COUNT(*) FROM resource_providers WHERE name IS NULL",
        "resource provider(s) without a name",
    ),
    (
        "SELECT COUNT(*) FROM resource_providers WHERE generation IS NULL",
        "resource provider(s) without a generation",
    ),
    (
        "SELECT COUNT(*) FROM placement_aggregates WHERE uuid IS NULL",
        "aggregate(s) without a uuid",
    ),
    (
        "SELECT COUNT(*) FROM resource_providers WHERE root_provider_id IS NULL",
        "resource provider(s) without a root provider: unfinished upstream online data "
        "migration (run 'placement-manage db online_data_migrations' first)",
    ),
    (
        "SELECT COUNT(*) FROM allocations a LEFT JOIN consumers c ON c.uuid = a.consumer_id "
        "WHERE c.id IS NULL",
        "allocation(s) without a consumer record: unfinished upstream online data migration "
        "(run 'placement-manage db online_data_migrations' first)",
    ),
)

# Orphans: (child table, column, parent table) for every foreign key we add.
_ORPHANS = (
    ("inventories", "resource_provider_id", "resource_providers"),
    ("inventories", "resource_class_id", "resource_classes"),
    ("allocations", "resource_provider_id", "resource_providers"),
    ("allocations", "resource_class_id", "resource_classes"),
    ("consumers", "project_id", "projects"),
    ("consumers", "user_id", "users"),
    ("resource_provider_aggregates", "resource_provider_id", "resource_providers"),
    ("resource_provider_aggregates", "aggregate_id", "placement_aggregates"),
)


def _all_checks() -> list[tuple[str, str]]:
    """``(SQL counting offending rows, what the refusal says)`` of every check, in order."""
    orphans = [
        (
            f"SELECT COUNT(*) FROM {child} c LEFT JOIN {parent} p ON p.id = c.{column} "
            "WHERE p.id IS NULL",
            f"orphan row(s) in {child}: {column} names no row of {parent}",
        )
        for child, column, parent in _ORPHANS
    ]
    return list(_CHECKS) + orphans


def problems(conn: Connection, log: Log | None = None) -> list[str]:
    """What stops an upstream database at ``UPSTREAM_HEAD`` from being adopted, one line each
    (empty when it can be). Reads only. ``log``: one line per check as it ends (``[i/n]``,
    the offending rows found, seconds)."""
    found: list[str] = []
    checks = _all_checks()
    for i, (sql, what) in enumerate(checks, 1):
        started = time.monotonic()
        n = int(conn.execute(text(sql)).scalar() or 0)
        if n:
            found.append(f"{n} {what}")
        if log is not None:
            took = time.monotonic() - started
            log(f"  [{i:>2}/{len(checks)}] {n} {what} ({took:.1f} s)")
    return found


def counts(conn: Connection) -> Counts:
    """Resource providers, consumers and allocations on ``conn``."""

    def n(table: str) -> int:
        return int(conn.execute(text(f"SELECT COUNT(*) FROM {table}")).scalar() or 0)

    return Counts(n("resource_providers"), n("consumers"), n("allocations"))


def extension_tables() -> list[str]:
    """Our tables upstream Placement does not have, in creation order (``tables.metadata``)."""
    shared = set(adopt_schema.SHARED_TABLES)
    return [t.name for t in tables.metadata.sorted_tables if t.name not in shared]


def seed_extension_tables(conn: Connection) -> None:
    """Create our extension tables that are missing and give them the rows a fresh database of
    ours starts with: ``placement_revision`` (id 1, revision 0); ``placement_changes`` and
    ``numa_distances`` start empty (an empty change log at revision 0 means "load everything",
    which is what a starting worker does). Idempotent.

    The one place to update when the revision counter or the change log change shape.
    """
    for name in extension_tables():
        tables.metadata.tables[name].create(conn, checkfirst=True)
    revision = tables.placement_revision
    if conn.execute(revision.select().where(revision.c.id == 1)).first() is None:
        conn.execute(revision.insert().values(id=1, revision=0))


# Amount columns upstream declares INTEGER; ours are BIGINT.
_WIDEN = (
    ("inventories", ("total", "reserved", "min_unit", "max_unit", "step_size")),
    ("allocations", ("used",)),
)
# Columns upstream leaves nullable but never writes NULL to; ours are NOT NULL.
_NOT_NULL = (
    ("resource_providers", "name", String(200)),
    ("resource_providers", "generation", Integer()),
    ("placement_aggregates", "uuid", String(36)),
)


def _columns(conn: Connection, table: str) -> dict[str, dict[str, object]]:
    return {str(c["name"]): dict(c) for c in inspect(conn).get_columns(table)}


def _widen(conn: Connection, ops: Operations, progress: TableProgress) -> None:
    for table, names in _WIDEN:
        with progress.table(table) as notes:
            columns = _columns(conn, table)
            narrow = [n for n in names if not isinstance(columns[n]["type"], BigInteger)]
            for name in narrow:
                ops.alter_column(
                    table,
                    name,
                    type_=BigInteger(),
                    existing_type=Integer(),
                    existing_nullable=False,
                )
            if narrow:
                notes.append(f"{', '.join(narrow)} INTEGER -> BIGINT")
            ratio = columns.get("allocation_ratio", {}).get("type")
            if isinstance(ratio, Float) and not isinstance(ratio, Double):
                if conn.dialect.name == "mysql":
                    _widen_ratio(conn, ops)
                    notes.append("allocation_ratio FLOAT -> DOUBLE")


def _widen_ratio(conn: Connection, ops: Operations) -> None:
    """MariaDB FLOAT -> DOUBLE keeping the values upstream served: the server sends a FLOAT as
    its shortest decimal text (1.1), but DOUBLE keeps the single-precision value exactly
    (1.100000023841858); each such value is rewritten to the decimal upstream showed."""
    shown = [
        float(row[0])
        for row in conn.execute(text("SELECT DISTINCT allocation_ratio FROM inventories"))
    ]
    ops.alter_column(
        "inventories",
        "allocation_ratio",
        type_=Double(),
        existing_type=Float(),
        existing_nullable=False,
    )
    for value in shown:
        single = struct.unpack("f", struct.pack("f", value))[0]
        if single != value:
            conn.execute(
                text(
                    "UPDATE inventories SET allocation_ratio = :shown WHERE allocation_ratio = :s"
                ),
                {"shown": value, "s": single},
            )


def _not_null(conn: Connection, ops: Operations, progress: TableProgress) -> None:
    for table in dict.fromkeys(table for table, _, _ in _NOT_NULL):
        with progress.table(table) as notes:
            for name, type_ in ((n, ty) for t, n, ty in _NOT_NULL if t == table):
                if _columns(conn, table)[name]["nullable"]:
                    ops.alter_column(table, name, nullable=False, existing_type=type_)
                    notes.append(f"{name} NOT NULL")


def _stamp(conn: Connection, revision: str) -> None:
    conn.execute(text("UPDATE alembic_version SET version_num = :r"), {"r": revision})


@contextmanager
def _transaction(engine: Engine) -> Iterator[Connection]:
    """One transaction (PostgreSQL: DDL included; MariaDB commits at each DDL statement)."""
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql("SET LOCAL lock_timeout = '60s'")
        yield conn


def _refuse_unsupported(conn: Connection) -> None:
    if conn.dialect.name not in ("postgresql", "mysql"):
        raise AdoptRefused(
            f"adopt and release support PostgreSQL and MariaDB/MySQL, not {conn.dialect.name}"
        )


def adopt(engine: Engine, log: Log = print) -> tuple[bool, Counts]:
    """Adopt the upstream Placement 16 database behind ``engine``; returns ``(changed,
    counts)`` (``changed`` is False when it was already ours: a second run is a no-op).

    Raises ``AdoptRefused`` (nothing changed) for an empty, unknown or older upstream
    database, or when ``problems`` finds any; the driver's errors when a statement fails
    (PostgreSQL then rolls everything back).
    """
    with engine.connect() as conn:
        found, revision = state(conn)
        if found == "ours":
            log(f"already adopted: schema at our revision {revision}; nothing to do")
            return False, counts(conn)
        _refuse_unless_upstream(conn, found, revision)
        log(f"checking the upstream database ({len(_all_checks())} checks) ...")
        trouble = problems(conn, log)
        if trouble:
            more = f" (and {len(trouble) - 1} more problem(s))" if len(trouble) > 1 else ""
            raise AdoptRefused(f"cannot adopt: {trouble[0]}{more}; nothing was changed")
        found_counts = counts(conn)
        rows = row_counts(conn, adopt_schema.SHARED_TABLES)
        log(f"found {found_counts} ({sum(rows.values()):,} rows in {len(rows)} tables)")
    head = our_head()
    with _transaction(engine) as conn:
        ops = Operations(MigrationContext.configure(conn))
        log("[1/4] widening column types")
        _widen(conn, ops, TableProgress(log, {t: rows[t] for t, _ in _WIDEN}))
        log("[2/4] NOT NULL where upstream never writes NULL")
        _not_null(conn, ops, TableProgress(log, {t: rows[t] for t, _, _ in _NOT_NULL}))
        log("[3/4] keys and indexes")
        adopt_schema.reconcile(conn, adopt_schema.ours(), log, TableProgress(log, rows))
        log(f"[4/4] extension tables ({', '.join(extension_tables())})")
        seed_extension_tables(conn)
        _stamp(conn, head)
        log(f"recording our revision {head}")
    return True, found_counts


def _refuse_unless_upstream(conn: Connection, found: State, revision: str | None) -> None:
    if found == "empty":
        raise AdoptRefused(
            "no Placement database here (no alembic_version): 'placement-numa db upgrade' "
            "creates a new one"
        )
    if found == "upstream-old":
        raise AdoptRefused(
            f"upstream Placement schema at older revision {revision}: run Placement 16's "
            f"'placement-manage db sync' (head {UPSTREAM_HEAD}) first; nothing was changed"
        )
    if found != "upstream":
        raise AdoptRefused(
            f"unknown schema (alembic revision {revision}): neither OpenStack Placement 16 "
            "nor placement-numa; nothing was changed"
        )
    _refuse_unsupported(conn)


def release(engine: Engine, log: Log = print) -> tuple[bool, Counts]:
    """Hand the database behind ``engine`` back to upstream Placement 16; returns ``(changed,
    counts)`` (``changed`` False when it is already upstream's).

    Drops our extension tables (NUMA distances are lost), renames keys and indexes back and
    writes ``UPSTREAM_HEAD`` to ``alembic_version``. Raises ``AdoptRefused`` (nothing changed)
    when the database is not ours at our head, or not PostgreSQL/MariaDB.
    """
    head = our_head()
    with engine.connect() as conn:
        found, revision = state(conn)
        if found == "upstream":
            log(f"already upstream Placement's (revision {revision}); nothing to do")
            return False, counts(conn)
        if found != "ours":
            raise AdoptRefused(
                f"not a placement-numa database (alembic revision {revision}); nothing was changed"
            )
        if revision != head:
            raise AdoptRefused(
                f"schema at {revision}, not our head {head}: run 'placement-numa db upgrade' "
                "first; nothing was changed"
            )
        _refuse_unsupported(conn)
        found_counts = counts(conn)
        rows = row_counts(conn, adopt_schema.SHARED_TABLES)
        log(f"found {found_counts} ({sum(rows.values()):,} rows in {len(rows)} tables)")
    with _transaction(engine) as conn:
        log(f"[1/2] dropping extension tables ({', '.join(extension_tables())})")
        for name in reversed(extension_tables()):
            tables.metadata.tables[name].drop(conn, checkfirst=True)
        log("[2/2] keys and indexes back to upstream's")
        adopt_schema.reconcile(conn, adopt_schema.upstream(), log, TableProgress(log, rows))
        _stamp(conn, UPSTREAM_HEAD)
        log(f"recording upstream Placement's revision {UPSTREAM_HEAD}")
    return True, found_counts
