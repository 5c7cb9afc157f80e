"""Name <-> id lookups for resource classes and traits; projects and users created on first use."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Select, bindparam, select
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from placement_numa.db.repositories.keys import find_or_insert_id, insert_or_find_id
from placement_numa.db.repositories.providers import utcnow
from placement_numa.db.tables import projects, resource_classes, traits, users

__all__ = [
    "resource_class_ids",
    "resource_class_names",
    "trait_ids",
    "ensure_external_id",
    "ensure_owner_ids",
]


def _lookup_statement(key: ColumnElement[Any], value: ColumnElement[Any]) -> Select[Any]:
    """``SELECT key, value WHERE key IN :wanted`` (built once per pair: building a statement
    and its cache key on every execution cost about as much CPU as running it)."""
    return select(key, value).where(key.in_(bindparam("wanted", expanding=True)))


_CLASS_IDS = _lookup_statement(resource_classes.c.name, resource_classes.c.id)
_CLASS_NAMES = _lookup_statement(resource_classes.c.id, resource_classes.c.name)
_TRAIT_IDS = _lookup_statement(traits.c.name, traits.c.id)
_OWNER_IDS = select(
    select(projects.c.id).where(projects.c.external_id == bindparam("project")).scalar_subquery(),
    select(users.c.id).where(users.c.external_id == bindparam("user")).scalar_subquery(),
)


def _lookup(conn: Connection, statement: Select[Any], wanted: Iterable[Any]) -> dict[Any, Any]:
    """``{key: value}`` for the rows whose ``key`` is in ``wanted`` (one query; none if empty)."""
    wanted = set(wanted)
    if not wanted:
        return {}
    return {k: v for k, v in conn.execute(statement, {"wanted": sorted(wanted)})}


def resource_class_ids(conn: Connection, names: Iterable[str]) -> dict[str, int]:
    """``{name: id}`` for the resource classes among ``names`` that exist (unknown ones absent)."""
    return _lookup(conn, _CLASS_IDS, names)


def resource_class_names(conn: Connection, ids: Iterable[int]) -> dict[int, str]:
    """``{id: name}`` for the given resource class ids."""
    return _lookup(conn, _CLASS_NAMES, ids)


def trait_ids(conn: Connection, names: Iterable[str]) -> dict[str, int]:
    """``{name: id}`` for the traits among ``names`` that exist (unknown ones absent)."""
    return _lookup(conn, _TRAIT_IDS, names)


def ensure_external_id(conn: Connection, table_name: str, external_id: str) -> int:
    """The internal id of project or user ``external_id`` (``table_name`` "projects"|"users"),
    creating the row on first use. Safe against a concurrent insert of the same id."""
    table = {"projects": projects, "users": users}[table_name]
    return find_or_insert_id(conn, table, "external_id", external_id, created_at=utcnow())


def ensure_owner_ids(conn: Connection, project: str, user: str) -> tuple[int, int]:
    """The internal ids of project ``project`` and user ``user`` (external ids), looked up in
    one query and created on first use (safe against a concurrent insert of the same id)."""
    found = conn.execute(_OWNER_IDS, {"project": project, "user": user}).one()
    project_id, user_id = found
    if project_id is None:
        project_id = insert_or_find_id(conn, projects, "external_id", project, created_at=utcnow())
    if user_id is None:
        user_id = insert_or_find_id(conn, users, "external_id", user, created_at=utcnow())
    return int(project_id), int(user_id)
