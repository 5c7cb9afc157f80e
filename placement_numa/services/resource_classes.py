"""Resource class use cases (Placement 1.2+): list, show, create, ensure (1.7 PUT), rename
(PUT before 1.7), delete. Standard classes are never changed or deleted."""

from __future__ import annotations

from placement_numa.db.database import Database
from placement_numa.db.repositories import resource_classes as repo
from placement_numa.db.repositories.resource_classes import ResourceClassRow
from placement_numa.errors import BadRequest, Conflict, NotFound

__all__ = [
    "list_resource_classes",
    "show_resource_class",
    "create_resource_class",
    "ensure_resource_class",
    "rename_resource_class",
    "delete_resource_class",
]


def _not_found(name: str) -> NotFound:
    return NotFound(f"No such resource class {name}.")


def list_resource_classes(*, database: Database) -> list[ResourceClassRow]:
    """All resource classes, standard first (id order)."""
    with database.read() as conn:
        return repo.list_all(conn)


def show_resource_class(*, database: Database, name: str) -> ResourceClassRow:
    """The class ``name``; raises ``NotFound`` (404)."""
    with database.read() as conn:
        row = repo.get_by_name(conn, name)
    if row is None:
        raise _not_found(name)
    return row


def create_resource_class(*, database: Database, name: str) -> ResourceClassRow:
    """Create custom class ``name`` (already validated as ``CUSTOM_...``); raises ``Conflict``
    (409) when it exists."""
    with database.write() as conn:
        row = repo.create(conn, name)
    if row is None:
        raise Conflict(f"Conflicting resource class already exists: {name}")
    return row


def ensure_resource_class(*, database: Database, name: str) -> tuple[ResourceClassRow, bool]:
    """Create custom class ``name`` unless it exists; returns the class and whether it was
    created (``PUT /resource_classes/{name}`` from 1.7: 201 or 204)."""
    with database.write() as conn:
        existing = repo.get_by_name(conn, name)
        if existing is not None:
            return existing, False
        row = repo.create(conn, name)
        if row is None:  # created concurrently
            found = repo.get_by_name(conn, name)
            assert found is not None
            return found, False
        return row, True


def rename_resource_class(*, database: Database, name: str, new_name: str) -> ResourceClassRow:
    """Rename custom class ``name`` to ``new_name`` (``PUT`` before 1.7).

    Raises ``NotFound`` (404), ``BadRequest`` (400) for a standard class, ``Conflict`` (409) when
    ``new_name`` is taken.
    """
    with database.write() as conn:
        row = repo.get_by_name(conn, name)
        if row is None:
            raise _not_found(name)
        if repo.is_standard(row):
            raise BadRequest(f"Cannot update standard resource class {name}")
        if new_name == name:
            return row
        if not repo.rename(conn, row.id, new_name):
            raise Conflict(f"Resource class already exists: {new_name}")
        renamed = repo.get_by_name(conn, new_name)
    assert renamed is not None
    return renamed


def delete_resource_class(*, database: Database, name: str) -> None:
    """Delete custom class ``name``.

    Raises ``NotFound`` (404), ``BadRequest`` (400) for a standard class, ``Conflict`` (409) when
    an inventory uses it.
    """
    with database.write() as conn:
        row = repo.get_by_name(conn, name)
        if row is None:
            raise _not_found(name)
        if repo.is_standard(row):
            raise BadRequest(
                f"Error in delete resource class: Cannot delete standard resource class {name}."
            )
        if repo.in_use(conn, row.id):
            raise Conflict(
                f"Error in delete resource class: Cannot delete resource class {name}."
                " Class is in use in inventory."
            )
        repo.delete_by_id(conn, row.id)
