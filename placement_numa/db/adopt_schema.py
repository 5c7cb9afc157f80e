"""Keys and indexes of the tables that OpenStack Placement and placement-numa share, as data,
and ``reconcile``, which brings a live database to one of the two sets.

``db adopt`` reconciles an upstream Placement 16 database to ``ours()`` (the names and indexes
our migrations create, read from ``tables.metadata``); ``db release`` reconciles it back to
``upstream()`` (what ``placement-manage db sync`` creates at ``a082b8bb98d0``: facts read by
reflecting a freshly synced PostgreSQL 15 and MariaDB 10.11 database).

Keys and indexes are matched by their columns, not by name: a matching one with another name is
renamed (PostgreSQL ``ALTER INDEX/ALTER TABLE ... RENAME``, MariaDB ``RENAME INDEX``; MariaDB
cannot rename a foreign key, so it is dropped and added), a missing one is created, one the
target lacks is dropped. Running ``reconcile`` twice changes nothing the second time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field

from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext
from sqlalchemy import ForeignKeyConstraint, Index, UniqueConstraint, inspect
from sqlalchemy.engine import Connection

from placement_numa.db import tables
from placement_numa.db.adopt_progress import TableProgress

__all__ = ["KeySet", "ForeignKey", "ours", "upstream", "reconcile", "SHARED_TABLES"]

# The tables both services use (upstream Placement 16's whole schema but alembic_version).
SHARED_TABLES = (
    "resource_providers",
    "resource_classes",
    "inventories",
    "projects",
    "users",
    "consumer_types",
    "consumers",
    "allocations",
    "traits",
    "resource_provider_traits",
    "placement_aggregates",
    "resource_provider_aggregates",
)

Columns = tuple[str, ...]


@dataclass(frozen=True)
class ForeignKey:
    """A foreign key: ``table(columns) -> referred(referred_columns)``; ``names`` by dialect
    (``"*"`` for every dialect; a missing name lets the server choose)."""

    table: str
    columns: Columns
    referred: str
    names: dict[str, str] = field(default_factory=dict, hash=False, compare=False)

    def name(self, dialect: str) -> str | None:
        """The constraint name on ``dialect`` (``None``: the server picks one)."""
        return self.names.get(dialect) or self.names.get("*")


@dataclass(frozen=True)
class KeySet:
    """Per table: primary key name (PostgreSQL only; MariaDB's is always ``PRIMARY``), unique
    constraints and plain indexes as ``{name: columns}``, and the foreign keys."""

    primary_keys: dict[str, str]
    uniques: dict[str, dict[str, Columns]]
    indexes: dict[str, dict[str, Columns]]
    foreign_keys: list[ForeignKey]


def ours() -> KeySet:
    """The keys and indexes our migrations create on the shared tables (``tables.metadata``)."""
    uniques: dict[str, dict[str, Columns]] = {}
    indexes: dict[str, dict[str, Columns]] = {}
    pks: dict[str, str] = {}
    fks: list[ForeignKey] = []
    for name in SHARED_TABLES:
        table = tables.metadata.tables[name]
        pks[name] = str(table.primary_key.name)
        uniques[name] = {
            str(c.name): tuple(col.name for col in c.columns)
            for c in table.constraints
            if isinstance(c, UniqueConstraint)
        }
        indexes[name] = {
            str(i.name): tuple(col.name for col in i.columns)
            for i in table.indexes
            if isinstance(i, Index) and not i.unique
        }
        for c in table.constraints:
            if isinstance(c, ForeignKeyConstraint):
                fks.append(
                    ForeignKey(
                        name,
                        tuple(col.name for col in c.columns),
                        c.referred_table.name,
                        {"*": str(c.name)},
                    )
                )
    return KeySet(pks, uniques, indexes, fks)


def upstream() -> KeySet:
    """The keys and indexes of upstream Placement 16 at its head ``a082b8bb98d0``."""
    pks = {name: f"{name}_pkey" for name in SHARED_TABLES}
    return KeySet(pks, _upstream_uniques(), _upstream_indexes(), _upstream_foreign_keys())


def _upstream_uniques() -> dict[str, dict[str, Columns]]:
    """Upstream's unique constraints, ``{table: {name: columns}}`` (every shared table)."""
    return {
        "resource_providers": {
            "uniq_resource_providers0uuid": ("uuid",),
            "uniq_resource_providers0name": ("name",),
        },
        "resource_classes": {"uniq_resource_classes0name": ("name",)},
        "inventories": {
            "uniq_inventories0resource_provider_resource_class": (
                "resource_provider_id",
                "resource_class_id",
            )
        },
        "projects": {"uniq_projects0external_id": ("external_id",)},
        "users": {"uniq_users0external_id": ("external_id",)},
        "consumer_types": {"uniq_consumer_types0name": ("name",)},
        "consumers": {"uniq_consumers0uuid": ("uuid",)},
        "allocations": {},
        "traits": {"uniq_traits0name": ("name",)},
        "resource_provider_traits": {},
        "placement_aggregates": {"uniq_placement_aggregates0uuid": ("uuid",)},
        "resource_provider_aggregates": {},
    }


def _upstream_indexes() -> dict[str, dict[str, Columns]]:
    """Upstream's plain (non-unique) indexes, ``{table: {name: columns}}`` (every shared table)."""
    no_indexes: dict[str, dict[str, Columns]] = {name: {} for name in SHARED_TABLES}
    return no_indexes | {
        "resource_providers": {
            "resource_providers_root_provider_id_idx": ("root_provider_id",),
            "resource_providers_parent_provider_id_idx": ("parent_provider_id",),
        },
        "inventories": {"inventories_resource_class_id_idx": ("resource_class_id",)},
        "consumers": {
            "consumers_project_id_uuid_idx": ("project_id", "uuid"),
            "consumers_project_id_user_id_uuid_idx": ("project_id", "user_id", "uuid"),
            "consumers_consumer_type_id_idx": ("consumer_type_id",),
        },
        "allocations": {
            "allocations_resource_provider_class_used_idx": (
                "resource_provider_id",
                "resource_class_id",
                "used",
            ),
            "allocations_resource_class_id_idx": ("resource_class_id",),
            "allocations_consumer_id_idx": ("consumer_id",),
        },
        "resource_provider_traits": {
            "resource_provider_traits_resource_provider_trait_idx": (
                "resource_provider_id",
                "trait_id",
            )
        },
        "resource_provider_aggregates": {
            "resource_provider_aggregates_aggregate_id_idx": ("aggregate_id",)
        },
    }


def _upstream_fk(table: str, column: str, referred: str, postgresql: str, mysql: str) -> ForeignKey:
    """An upstream single-column foreign key, named ``postgresql`` there and ``mysql`` on
    MariaDB (``<table>_ibfk_<n>``)."""
    return ForeignKey(table, (column,), referred, {"postgresql": postgresql, "mysql": mysql})


def _upstream_foreign_keys() -> list[ForeignKey]:
    """Upstream's foreign keys on the shared tables, with their names by dialect."""
    return [
        _upstream_fk(
            "resource_providers",
            "parent_provider_id",
            "resource_providers",
            "resource_providers_parent_provider_id_fkey",
            "resource_providers_ibfk_1",
        ),
        _upstream_fk(
            "resource_providers",
            "root_provider_id",
            "resource_providers",
            "resource_providers_root_provider_id_fkey",
            "resource_providers_ibfk_2",
        ),
        _upstream_fk(
            "resource_provider_traits",
            "resource_provider_id",
            "resource_providers",
            "resource_provider_traits_resource_provider_id_fkey",
            "resource_provider_traits_ibfk_1",
        ),
        _upstream_fk(
            "resource_provider_traits",
            "trait_id",
            "traits",
            "resource_provider_traits_trait_id_fkey",
            "resource_provider_traits_ibfk_2",
        ),
        ForeignKey(
            "consumers",
            ("consumer_type_id",),
            "consumer_types",
            {"*": "consumers_consumer_type_id_fkey"},
        ),
    ]


def reconcile(
    conn: Connection,
    target: KeySet,
    log: Callable[[str], None],
    progress: TableProgress | None = None,
) -> int:
    """Bring the keys and indexes of ``SHARED_TABLES`` on ``conn`` to ``target``; returns the
    number of DDL statements run. ``log`` receives one line per table changed, or, with
    ``progress``, every table gets its progress line (``adopt_progress``).

    Order matters on MariaDB (an index a foreign key uses cannot be dropped): foreign keys the
    target lacks go first, then primary keys, unique constraints and indexes, then the target's
    missing foreign keys. Raises the driver's errors (e.g. a duplicate violates a new key).
    """
    dialect = conn.dialect.name
    ops = Operations(MigrationContext.configure(conn))
    done = 0
    for table in SHARED_TABLES:
        notes_cm: AbstractContextManager[list[str]] = (
            progress.table(table) if progress else nullcontext([])
        )
        with notes_cm as notes:
            before = done
            done += _foreign_keys(conn, ops, table, target, dialect, drop_only=True)
            done += _primary_key(conn, table, target, dialect)
            done += _uniques(conn, ops, table, target.uniques.get(table, {}), dialect)
            done += _indexes(conn, ops, table, target.indexes.get(table, {}), dialect)
            if done != before:
                notes.append(f"{done - before} key/index change(s)")
                if progress is None:
                    log(f"  {table}: {done - before} key/index change(s)")
    for table in SHARED_TABLES:  # after every table's keys: referred unique keys exist
        started, before = time.monotonic(), done
        done += _foreign_keys(conn, ops, table, target, dialect, drop_only=False)
        if done != before:
            took = time.monotonic() - started
            log(f"  {table}: {done - before} foreign key(s) added ({took:.1f} s)")
    return done


def _foreign_keys(
    conn: Connection, ops: Operations, table: str, target: KeySet, dialect: str, *, drop_only: bool
) -> int:
    wanted = [fk for fk in target.foreign_keys if fk.table == table]
    existing = inspect(conn).get_foreign_keys(table)
    done = 0
    for found in existing:
        key = (tuple(found["constrained_columns"]), found["referred_table"])
        match = next((fk for fk in wanted if (fk.columns, fk.referred) == key), None)
        keep = match is not None and match.name(dialect) in (None, found["name"])
        if drop_only and not keep and found["name"]:
            ops.drop_constraint(found["name"], table, type_="foreignkey")
            done += 1
    if drop_only:
        return done
    present = {
        (tuple(f["constrained_columns"]), f["referred_table"])
        for f in inspect(conn).get_foreign_keys(table)
    }
    for fk in wanted:
        if (fk.columns, fk.referred) not in present:
            ops.create_foreign_key(
                fk.name(dialect), table, fk.referred, list(fk.columns), ["id"] * len(fk.columns)
            )
            done += 1
    return done


def _primary_key(conn: Connection, table: str, target: KeySet, dialect: str) -> int:
    if dialect != "postgresql":
        return 0
    current = inspect(conn).get_pk_constraint(table).get("name")
    wanted = target.primary_keys[table]
    if not current or current == wanted:
        return 0
    conn.exec_driver_sql(f'ALTER TABLE {table} RENAME CONSTRAINT "{current}" TO "{wanted}"')
    return 1


def _uniques(
    conn: Connection, ops: Operations, table: str, wanted: dict[str, Columns], dialect: str
) -> int:
    existing = {
        str(u["name"]): tuple(u["column_names"])
        for u in inspect(conn).get_unique_constraints(table)
    }
    return _converge(conn, ops, table, existing, wanted, dialect, unique=True)


def _indexes(
    conn: Connection, ops: Operations, table: str, wanted: dict[str, Columns], dialect: str
) -> int:
    inspector = inspect(conn)
    unique_names = {str(u["name"]) for u in inspector.get_unique_constraints(table)}
    fk_names = {str(f["name"]) for f in inspector.get_foreign_keys(table)}
    existing = {
        str(i["name"]): tuple(str(c) for c in i["column_names"])
        for i in inspector.get_indexes(table)
        if not i["unique"] and str(i["name"]) not in unique_names | fk_names
    }
    return _converge(conn, ops, table, existing, wanted, dialect, unique=False)


def _converge(
    conn: Connection,
    ops: Operations,
    table: str,
    existing: dict[str, Columns],
    wanted: dict[str, Columns],
    dialect: str,
    *,
    unique: bool,
) -> int:
    """Rename, create and drop unique constraints (``unique``) or indexes so that ``existing``
    becomes ``wanted`` (both ``{name: columns}``)."""
    done = 0
    left = dict(existing)
    for name, columns in wanted.items():
        if name in left and left[name] == columns:
            del left[name]
            continue
        same = next((old for old, cols in left.items() if cols == columns), None)
        if same is not None:
            del left[same]
            _rename(conn, table, same, name, dialect, constraint=unique)
        elif unique:
            ops.create_unique_constraint(name, table, list(columns))
        else:
            ops.create_index(name, table, list(columns))
        done += 1
    for name in left:
        if unique:
            ops.drop_constraint(name, table, type_="unique")
        else:
            ops.drop_index(name, table_name=table)
        done += 1
    return done


def _rename(
    conn: Connection, table: str, old: str, new: str, dialect: str, *, constraint: bool
) -> None:
    if dialect == "postgresql":
        if constraint:
            conn.exec_driver_sql(f'ALTER TABLE {table} RENAME CONSTRAINT "{old}" TO "{new}"')
        else:
            conn.exec_driver_sql(f'ALTER INDEX "{old}" RENAME TO "{new}"')
    elif dialect == "mysql":
        conn.exec_driver_sql(f"ALTER TABLE `{table}` RENAME INDEX `{old}` TO `{new}`")
    else:
        raise NotImplementedError(f"renaming keys on {dialect}")
