"""Consumer rows and consumer types: lookup, creation on first use, generation compare-and-swap.

Every function runs inside the caller's transaction. Lock order used by allocation writes:
provider rows first (``providers.lock_providers``), then consumer rows in uuid order, so two
writers never wait on each other in opposite orders.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, bindparam, delete, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from placement_numa.db.repositories.keys import find_or_insert_id
from placement_numa.db.repositories.providers import utcnow
from placement_numa.db.tables import allocations, consumer_types, consumers, projects, users
from placement_numa.errors import ConcurrentUpdate

__all__ = [
    "ConsumerRow",
    "get_by_uuid",
    "get_by_uuids",
    "create",
    "ensure_consumer_type",
    "update_owner",
    "increment_generation",
    "delete_if_no_allocations",
]


@dataclass(frozen=True, slots=True)
class ConsumerRow:
    """One consumer with its project/user external ids and consumer type name (or ``None``)."""

    id: int
    uuid: str
    generation: int
    project_id: int
    user_id: int
    project_external_id: str
    user_external_id: str
    consumer_type_id: int | None
    consumer_type: str | None


# Statements built once: a ``Select`` is immutable, and building one (and computing its cache
# key on every execution) cost about as much CPU as running it (bound values are bind
# parameters; IN lists are expanding parameters).
_CONSUMERS: Select[Any] = (
    select(
        consumers.c.id,
        consumers.c.uuid,
        consumers.c.generation,
        consumers.c.project_id,
        consumers.c.user_id,
        projects.c.external_id.label("project_external_id"),
        users.c.external_id.label("user_external_id"),
        consumers.c.consumer_type_id,
        consumer_types.c.name.label("consumer_type"),
    )
    .select_from(consumers)
    .join(projects, projects.c.id == consumers.c.project_id)
    .join(users, users.c.id == consumers.c.user_id)
    .outerjoin(consumer_types, consumer_types.c.id == consumers.c.consumer_type_id)
)
_BY_UUID = _CONSUMERS.where(consumers.c.uuid == bindparam("uuid"))
_BY_UUIDS = _CONSUMERS.where(consumers.c.uuid.in_(bindparam("uuids", expanding=True)))
_CAS_GENERATION = (
    update(consumers)
    .where(consumers.c.id == bindparam("b_id"), consumers.c.generation == bindparam("b_seen"))
    .values(generation=bindparam("b_new"), updated_at=bindparam("b_now"))
)
_GENERATION = select(consumers.c.generation).where(consumers.c.id == bindparam("b_id"))
_WITH_ALLOCATIONS = (
    select(allocations.c.consumer_id)
    .where(allocations.c.consumer_id.in_(bindparam("uuids", expanding=True)))
    .distinct()
)
_DELETE = delete(consumers).where(consumers.c.uuid.in_(bindparam("uuids", expanding=True)))


def get_by_uuid(conn: Connection, uuid: str) -> ConsumerRow | None:
    """The consumer ``uuid``, or ``None`` when it has no record."""
    row = conn.execute(_BY_UUID, {"uuid": uuid}).first()
    return ConsumerRow(*row) if row else None


def get_by_uuids(conn: Connection, uuids: Iterable[str]) -> dict[str, ConsumerRow]:
    """``{uuid: ConsumerRow}`` of the consumers among ``uuids`` that have a record (one query)."""
    wanted = sorted(set(uuids))
    if not wanted:
        return {}
    rows = conn.execute(_BY_UUIDS, {"uuids": wanted})
    return {row[1]: ConsumerRow(*row) for row in rows}


def create(
    conn: Connection,
    uuid: str,
    *,
    project_id: int,
    user_id: int,
    consumer_type_id: int | None,
    names: tuple[str, str, str | None] | None = None,
    generation: int = 0,
) -> ConsumerRow | None:
    """Insert consumer ``uuid`` at ``generation`` and return it.

    ``names``: the project and user external ids and the consumer type name of the ids given,
    when the caller knows them (the row is then built without reading it back).

    Returns ``None`` when a concurrent writer created the same consumer first (the unique key
    fired); the caller decides whether that is a generation conflict.
    """
    values = {
        "uuid": uuid,
        "project_id": project_id,
        "user_id": user_id,
        "generation": generation,
        "consumer_type_id": consumer_type_id,
        "created_at": utcnow(),
    }
    statement = _INSERT_OR_NOTHING.get(conn.dialect.name)
    if statement is not None and conn.dialect.insert_returning:  # no savepoint
        new_id = conn.execute(statement, values).scalar()
        if new_id is None:
            return None
        if names is not None:
            project, user, type_name = names
            return ConsumerRow(
                int(new_id),
                uuid,
                generation,
                project_id,
                user_id,
                project,
                user,
                consumer_type_id,
                type_name,
            )
        return get_by_uuid(conn, uuid)
    try:
        with conn.begin_nested():
            conn.execute(insert(consumers).values(**values))
    except IntegrityError:
        return None
    return get_by_uuid(conn, uuid)


# INSERT ... ON CONFLICT (uuid) DO NOTHING RETURNING id, by dialect (the values are the
# execution's parameters).
_INSERT_OR_NOTHING: dict[str, Any] = {
    name: make(consumers)
    .on_conflict_do_nothing(index_elements=[consumers.c.uuid])
    .returning(consumers.c.id)
    for name, make in (("postgresql", pg_insert), ("sqlite", sqlite_insert))
}


def ensure_consumer_type(conn: Connection, name: str) -> int:
    """The id of consumer type ``name``, creating it on first use (safe against a racing insert)."""
    return find_or_insert_id(conn, consumer_types, "name", name, created_at=utcnow())


def update_owner(
    conn: Connection,
    consumer: ConsumerRow,
    *,
    project_id: int,
    user_id: int,
    consumer_type_id: int | None,
) -> None:
    """Set the consumer's project, user and (when not ``None``) consumer type, without touching
    its generation (``increment_generation`` does that once per write)."""
    values: dict[str, object] = {}
    if project_id != consumer.project_id or user_id != consumer.user_id:
        values.update(project_id=project_id, user_id=user_id)
    if consumer_type_id is not None and consumer_type_id != consumer.consumer_type_id:
        values["consumer_type_id"] = consumer_type_id
    if values:
        values["updated_at"] = utcnow()
        conn.execute(update(consumers).where(consumers.c.id == consumer.id).values(**values))


def increment_generation(
    conn: Connection, consumer: ConsumerRow, expected: int, *, by: int = 1
) -> int:
    """Compare-and-swap the consumer generation from ``expected`` to ``expected + by``.

    The ``UPDATE`` takes the row lock, so a concurrent writer of the same consumer waits and
    then finds the generation moved. ``by=0`` checks and locks without moving it (a write of no
    allocations leaves the generation alone, as in Placement). Raises ``ConcurrentUpdate`` (409,
    ``placement.concurrent_update``) when it moved. Returns the new generation.
    """
    result = conn.execute(
        _CAS_GENERATION,
        {"b_id": consumer.id, "b_seen": expected, "b_new": expected + by, "b_now": utcnow()},
    )
    if result.rowcount != 1:
        current = conn.execute(_GENERATION, {"b_id": consumer.id}).scalar()
        raise ConcurrentUpdate(
            f"consumer generation conflict - expected {current} but got {expected}"
        )
    return expected + 1


def delete_if_no_allocations(conn: Connection, uuids: Iterable[str]) -> list[str]:
    """Delete the consumers among ``uuids`` that have no allocation left; return their uuids."""
    wanted = sorted(set(uuids))
    if not wanted:
        return []
    with_allocations = set(conn.execute(_WITH_ALLOCATIONS, {"uuids": wanted}).scalars())
    empty = [uuid for uuid in wanted if uuid not in with_allocations]
    if empty:
        conn.execute(_DELETE, {"uuids": empty})
    return empty
