"""Inventory rows of resource providers, and the usage (sum of allocations) they carry.

Every function runs in the caller's transaction (``Database.write()`` or ``read()``) and never
touches the provider generation: the service that composes them does the generation check and
``providers.increment_generation`` (so the reshaper can replace the inventories of many providers
and move allocations in one transaction).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, delete, func, insert, select, update
from sqlalchemy.engine import Connection, Row

from placement_numa.db.repositories import changes, names
from placement_numa.db.repositories.providers import ProviderRow, utcnow
from placement_numa.db.tables import allocations, inventories, resource_classes
from placement_numa.domain.inventory import InventoryFields
from placement_numa.errors import BadRequest, InventoryInUse

__all__ = [
    "InventoryRecord",
    "get_inventories",
    "get_inventory",
    "usage_by_class",
    "resolve_classes",
    "unknown_class",
    "inventory_values",
    "replace_inventories",
    "add_inventory",
    "update_inventory",
    "delete_inventory",
    "classes_in_use",
]


@dataclass(frozen=True, slots=True)
class InventoryRecord:
    """One stored inventory: its resource class (name and id), its fields and timestamps."""

    resource_class: str
    resource_class_id: int
    fields: InventoryFields
    created_at: datetime | None
    updated_at: datetime | None

    @property
    def capacity(self) -> int:
        """``int((total - reserved) * allocation_ratio)`` in the class's units."""
        return self.fields.capacity

    @property
    def last_modified(self) -> datetime | None:
        """When the inventory last changed: ``updated_at``, else ``created_at`` (naive UTC)."""
        return self.updated_at or self.created_at


def _ratio(conn: Connection, value: float) -> float:
    """``allocation_ratio`` as read back: MariaDB's FLOAT is single precision, so round to the
    7 significant digits it holds (1.1 stays 1.1 rather than 1.100000023841858)."""
    if conn.dialect.name == "mysql":
        return float(f"{value:.7g}")
    return float(value)


def _select_inventories() -> Select[Any]:
    return (
        select(
            resource_classes.c.name,
            inventories.c.resource_class_id,
            inventories.c.total,
            inventories.c.reserved,
            inventories.c.min_unit,
            inventories.c.max_unit,
            inventories.c.step_size,
            inventories.c.allocation_ratio,
            inventories.c.created_at,
            inventories.c.updated_at,
        )
        .select_from(inventories)
        .join(resource_classes, resource_classes.c.id == inventories.c.resource_class_id)
    )


def _record(conn: Connection, row: Row[Any]) -> InventoryRecord:
    return InventoryRecord(
        resource_class=row.name,
        resource_class_id=row.resource_class_id,
        fields=InventoryFields(
            total=int(row.total),
            reserved=int(row.reserved),
            min_unit=int(row.min_unit),
            max_unit=int(row.max_unit),
            step_size=int(row.step_size),
            allocation_ratio=_ratio(conn, row.allocation_ratio),
        ),
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def get_inventories(conn: Connection, provider_id: int) -> dict[str, InventoryRecord]:
    """``{resource class name: InventoryRecord}`` of one provider, in resource class id order."""
    rows = conn.execute(
        _select_inventories()
        .where(inventories.c.resource_provider_id == provider_id)
        .order_by(inventories.c.resource_class_id)
    )
    return {row.name: _record(conn, row) for row in rows}


def get_inventory(
    conn: Connection, provider_id: int, resource_class: str
) -> InventoryRecord | None:
    """The provider's inventory of ``resource_class`` (a name), or ``None``."""
    row = conn.execute(
        _select_inventories().where(
            inventories.c.resource_provider_id == provider_id,
            resource_classes.c.name == resource_class,
        )
    ).first()
    return _record(conn, row) if row is not None else None


def usage_by_class(conn: Connection, provider_id: int) -> dict[str, int]:
    """``{resource class name: units used}``: the sum of the provider's allocations per class
    (classes without allocations are absent)."""
    rows = conn.execute(
        select(resource_classes.c.name, func.sum(allocations.c.used))
        .select_from(allocations)
        .join(resource_classes, resource_classes.c.id == allocations.c.resource_class_id)
        .where(allocations.c.resource_provider_id == provider_id)
        .group_by(resource_classes.c.name, allocations.c.resource_class_id)
        .order_by(allocations.c.resource_class_id)
    )
    return {name: int(used) for name, used in rows}


def resolve_classes(conn: Connection, classes: Iterable[str], provider_uuid: str) -> dict[str, int]:
    """``{name: id}`` for ``classes``; raises ``BadRequest`` (400, as Placement) naming the first
    unknown resource class."""
    wanted = list(classes)
    found = names.resource_class_ids(conn, wanted)
    for name in wanted:
        if name not in found:
            raise unknown_class(provider_uuid, name)
    return found


def unknown_class(provider_uuid: str, name: str) -> BadRequest:
    """The 400 for an inventory of resource class ``name``, unknown, on ``provider_uuid``."""
    return BadRequest(
        f"Unknown resource class in inventory for resource provider {provider_uuid}:"
        f" No such resource class {name}."
    )


def classes_in_use(conn: Connection, provider_id: int, class_ids: Iterable[int]) -> list[str]:
    """Names of those of ``class_ids`` that have allocations on the provider (class id order)."""
    ids = sorted(set(class_ids))
    if not ids:
        return []
    rows = conn.execute(
        select(resource_classes.c.name)
        .where(
            resource_classes.c.id.in_(
                select(allocations.c.resource_class_id)
                .where(
                    allocations.c.resource_provider_id == provider_id,
                    allocations.c.resource_class_id.in_(ids),
                )
                .distinct()
            )
        )
        .order_by(resource_classes.c.id)
    )
    return [name for (name,) in rows]


def _in_use_error(provider_uuid: str, classes: list[str]) -> InventoryInUse:
    return InventoryInUse(
        f"Inventory for '{', '.join(classes)}' on resource provider '{provider_uuid}' in use."
    )


def inventory_values(fields: InventoryFields) -> dict[str, int | float]:
    """The six inventory columns of ``fields`` (``allocation_ratio`` as a float)."""
    return {
        "total": fields.total,
        "reserved": fields.reserved,
        "min_unit": fields.min_unit,
        "max_unit": fields.max_unit,
        "step_size": fields.step_size,
        "allocation_ratio": float(fields.allocation_ratio),
    }


def add_inventory(
    conn: Connection, provider_id: int, class_id: int, fields: InventoryFields
) -> None:
    """Insert one inventory row (an existing row of the class raises ``IntegrityError``)."""
    changes.touch(conn, [provider_id])
    conn.execute(
        insert(inventories).values(
            resource_provider_id=provider_id,
            resource_class_id=class_id,
            created_at=utcnow(),
            **inventory_values(fields),
        )
    )


def update_inventory(
    conn: Connection, provider_id: int, class_id: int, fields: InventoryFields
) -> bool:
    """Overwrite the provider's inventory of ``class_id``; False when there is none.

    Capacity may drop below current usage (Placement allows it and only logs a warning); see
    ``usage_by_class`` to detect it.
    """
    changes.touch(conn, [provider_id])
    result = conn.execute(
        update(inventories)
        .where(
            inventories.c.resource_provider_id == provider_id,
            inventories.c.resource_class_id == class_id,
        )
        .values(updated_at=utcnow(), **inventory_values(fields))
    )
    return result.rowcount == 1


def delete_inventory(
    conn: Connection,
    provider: ProviderRow,
    class_id: int,
    class_name: str,
    *,
    check_in_use: bool = True,
) -> bool:
    """Delete the provider's inventory of one class; False when there was none.

    Raises ``InventoryInUse`` (409) when ``check_in_use`` and the class has allocations there.
    """
    if check_in_use:
        used = classes_in_use(conn, provider.id, [class_id])
        if used:
            raise _in_use_error(provider.uuid, used)
    changes.touch(conn, [provider.id])
    result = conn.execute(
        delete(inventories).where(
            inventories.c.resource_provider_id == provider.id,
            inventories.c.resource_class_id == class_id,
        )
    )
    return result.rowcount > 0


def replace_inventories(
    conn: Connection,
    provider: ProviderRow,
    new: dict[str, InventoryFields],
    *,
    check_in_use: bool = True,
) -> list[str]:
    """Make ``new`` (``{resource class name: fields}``) the provider's whole inventory: delete the
    classes not named, update those kept, insert the new ones.

    Returns the kept classes whose capacity is now below their usage (allowed, as in Placement).
    Raises ``BadRequest`` (400) for an unknown resource class and, when ``check_in_use``,
    ``InventoryInUse`` (409, all such classes named) when a class to delete has allocations.
    Does not touch the provider generation.
    """
    class_ids = resolve_classes(conn, new.keys(), provider.uuid)
    existing = {
        row.resource_class_id: row.resource_class
        for row in get_inventories(conn, provider.id).values()
    }
    wanted = {class_ids[name]: name for name in new}
    changes.touch(conn, [provider.id])
    to_delete = sorted(set(existing) - set(wanted))
    if to_delete:
        if check_in_use:
            used = classes_in_use(conn, provider.id, to_delete)
            if used:
                raise _in_use_error(provider.uuid, used)
        conn.execute(
            delete(inventories).where(
                and_(
                    inventories.c.resource_provider_id == provider.id,
                    inventories.c.resource_class_id.in_(to_delete),
                )
            )
        )
    for class_id in sorted(set(wanted) - set(existing)):
        add_inventory(conn, provider.id, class_id, new[wanted[class_id]])
    kept = sorted(set(wanted) & set(existing))
    for class_id in kept:
        update_inventory(conn, provider.id, class_id, new[wanted[class_id]])
    if not kept:
        return []
    usage = usage_by_class(conn, provider.id)
    return [wanted[cid] for cid in kept if usage.get(wanted[cid], 0) > new[wanted[cid]].capacity]
