"""Name <-> id lookups for resource classes and traits; projects and users created on first use."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.engine import Connection

from placement_numa.db.repositories.keys import find_or_insert_id
from placement_numa.db.repositories.providers import utcnow
from placement_numa.db.tables import projects, resource_classes, traits, users

__all__ = ["resource_class_ids", "resource_class_names", "trait_ids", "ensure_external_id"]


def resource_class_ids(conn: Connection, names: Iterable[str]) -> dict[str, int]:
    """``{name: id}`` for the resource classes among ``names`` that exist (unknown ones absent)."""
    wanted = set(names)
    if not wanted:
        return {}
    rows = conn.execute(
        select(resource_classes.c.name, resource_classes.c.id).where(
            resource_classes.c.name.in_(wanted)
        )
    )
    return {name: id_ for name, id_ in rows}


def resource_class_names(conn: Connection, ids: Iterable[int]) -> dict[int, str]:
    """``{id: name}`` for the given resource class ids."""
    wanted = set(ids)
    if not wanted:
        return {}
    rows = conn.execute(
        select(resource_classes.c.id, resource_classes.c.name).where(
            resource_classes.c.id.in_(wanted)
        )
    )
    return {id_: name for id_, name in rows}


def trait_ids(conn: Connection, names: Iterable[str]) -> dict[str, int]:
    """``{name: id}`` for the traits among ``names`` that exist (unknown ones absent)."""
    wanted = set(names)
    if not wanted:
        return {}
    rows = conn.execute(select(traits.c.name, traits.c.id).where(traits.c.name.in_(wanted)))
    return {name: id_ for name, id_ in rows}


def ensure_external_id(conn: Connection, table_name: str, external_id: str) -> int:
    """The internal id of project or user ``external_id`` (``table_name`` "projects"|"users"),
    creating the row on first use. Safe against a concurrent insert of the same id."""
    table = {"projects": projects, "users": users}[table_name]
    return find_or_insert_id(conn, table, "external_id", external_id, created_at=utcnow())
