"""Surrogate keys: the id an INSERT created, and "find or create" of rows named by a unique key
(projects, users, consumer types, aggregates), safe against a concurrent insert of the same key.

Every function runs inside the caller's transaction; inserts run in a savepoint so that losing
a race on the unique key rolls back only the insert.
"""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import Select, Table, bindparam, insert, select
from sqlalchemy.engine import Connection, CursorResult
from sqlalchemy.exc import IntegrityError

__all__ = ["inserted_id", "find_id", "insert_or_find_id", "find_or_insert_id"]


def inserted_id(result: CursorResult[Any]) -> int:
    """The integer primary key of the row a single-row ``INSERT`` created.

    Raises ``RuntimeError`` when the statement reported no key (not a single-row insert)."""
    key = result.inserted_primary_key
    if key is None:
        raise RuntimeError("the statement inserted no row with a primary key")
    return int(key[0])


def find_id(conn: Connection, table: Table, key: str, value: str) -> int | None:
    """The ``id`` of the row of ``table`` whose unique column ``key`` equals ``value``, or
    ``None``."""
    found = conn.execute(_finder(table, key), {"value": value}).scalar()
    return None if found is None else int(found)


@functools.cache
def _finder(table: Table, key: str) -> Select[Any]:
    """``SELECT id FROM table WHERE key = :value``, built once per table and column (a write
    looks up a consumer type, a project and a user: built per call, each cost ~0.1 ms of
    SQLAlchemy)."""
    return select(table.c.id).where(table.c[key] == bindparam("value"))


def insert_or_find_id(conn: Connection, table: Table, key: str, value: str, **values: Any) -> int:
    """Insert a row with ``key = value`` (plus the other column ``values``) in a savepoint and
    return its ``id``; when a concurrent writer inserted the same key first (the unique
    constraint fires), return the id of that row instead."""
    try:
        with conn.begin_nested():
            return inserted_id(conn.execute(insert(table).values({key: value, **values})))
    except IntegrityError:
        return int(conn.execute(_finder(table, key), {"value": value}).scalar_one())


def find_or_insert_id(conn: Connection, table: Table, key: str, value: str, **values: Any) -> int:
    """The ``id`` of the row with ``key = value``, inserting it (with the other column
    ``values``) when absent; see ``insert_or_find_id`` for the race."""
    found = find_id(conn, table, key, value)
    if found is not None:
        return found
    return insert_or_find_id(conn, table, key, value, **values)
