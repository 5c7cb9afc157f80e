"""Resource class rows: list, look up, create custom ones, rename, delete.

Standard classes (from os-resource-classes) have ids below ``CUSTOM_RESOURCE_CLASS_START_ID``;
custom ones get ``max(id) + 1`` from there on (as Placement). All functions run in the caller's
transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, delete, func, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from placement_numa.db.repositories.providers import utcnow
from placement_numa.db.tables import CUSTOM_RESOURCE_CLASS_START_ID, inventories, resource_classes

__all__ = [
    "ResourceClassRow",
    "list_all",
    "get_by_name",
    "create",
    "rename",
    "delete_by_id",
    "in_use",
    "is_standard",
]

_CREATE_ATTEMPTS = 20


@dataclass(frozen=True, slots=True)
class ResourceClassRow:
    """One resource class."""

    id: int
    name: str
    created_at: datetime | None
    updated_at: datetime | None

    @property
    def last_modified(self) -> datetime | None:
        """When the class last changed: ``updated_at``, else ``created_at`` (naive UTC)."""
        return self.updated_at or self.created_at


def is_standard(row: ResourceClassRow) -> bool:
    """True for a class synced from os-resource-classes (never changed or deleted)."""
    return row.id < CUSTOM_RESOURCE_CLASS_START_ID


def _select() -> Select[Any]:
    rc = resource_classes
    return select(rc.c.id, rc.c.name, rc.c.created_at, rc.c.updated_at)


def list_all(conn: Connection) -> list[ResourceClassRow]:
    """Every resource class, standard ones first (id order)."""
    rows = conn.execute(_select().order_by(resource_classes.c.id)).mappings()
    return [ResourceClassRow(**row) for row in rows]


def get_by_name(conn: Connection, name: str) -> ResourceClassRow | None:
    """The class named ``name``, or ``None``."""
    row = conn.execute(_select().where(resource_classes.c.name == name)).mappings().first()
    return ResourceClassRow(**row) if row else None


def create(conn: Connection, name: str) -> ResourceClassRow | None:
    """Create custom class ``name`` with the next custom id; ``None`` when the name exists.

    A concurrent create may take the same id first: the insert is retried (in a savepoint) with
    a fresh id, up to 20 times.
    """
    for _ in range(_CREATE_ATTEMPTS):
        if get_by_name(conn, name) is not None:
            return None
        top = conn.execute(select(func.max(resource_classes.c.id))).scalar()
        new_id = max(int(top or 0) + 1, CUSTOM_RESOURCE_CLASS_START_ID)
        now = utcnow()
        try:
            with conn.begin_nested():
                conn.execute(insert(resource_classes).values(id=new_id, name=name, created_at=now))
        except IntegrityError:
            continue
        return ResourceClassRow(id=new_id, name=name, created_at=now, updated_at=None)
    raise RuntimeError(f"could not allocate an id for resource class {name}")


def rename(conn: Connection, class_id: int, new_name: str) -> bool:
    """Rename a class; False when another class already has ``new_name``."""
    try:
        with conn.begin_nested():
            conn.execute(
                update(resource_classes)
                .where(resource_classes.c.id == class_id)
                .values(name=new_name, updated_at=utcnow())
            )
    except IntegrityError:
        return False
    return True


def in_use(conn: Connection, class_id: int) -> bool:
    """True when any inventory is of this class."""
    found = conn.execute(
        select(inventories.c.id).where(inventories.c.resource_class_id == class_id).limit(1)
    ).first()
    return found is not None


def delete_by_id(conn: Connection, class_id: int) -> bool:
    """Delete the class; False when it did not exist."""
    return (
        conn.execute(delete(resource_classes).where(resource_classes.c.id == class_id)).rowcount > 0
    )
