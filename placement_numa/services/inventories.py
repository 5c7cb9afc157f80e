"""Inventory use cases: read, replace, add, update and delete a provider's inventories.

Each write is one transaction that checks the provider generation the client saw, bumps it by
compare-and-swap *before* touching inventory rows (so two concurrent writers on one provider
serialise on its row and the loser gets 409 ``placement.concurrent_update``), then changes the
rows through ``db.repositories.inventories``. Errors follow Placement (see each function).
"""

from __future__ import annotations

import logging

from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from placement_numa.db.database import Database
from placement_numa.db.repositories import inventories as repo
from placement_numa.db.repositories import names, providers
from placement_numa.db.repositories.inventories import InventoryRecord
from placement_numa.db.repositories.providers import ProviderRow
from placement_numa.domain.inventory import InventoryFields, check_capacity
from placement_numa.errors import BadRequest, ConcurrentUpdate, InventoryInUse, NotFound

__all__ = [
    "list_inventories",
    "show_inventory",
    "set_inventories",
    "create_inventory",
    "update_inventory",
    "delete_inventory",
    "delete_inventories",
    "check_inventory_capacity",
]

LOG = logging.getLogger(__name__)


def _check_generation(provider: ProviderRow, generation: int) -> None:
    if generation != provider.generation:
        raise ConcurrentUpdate("resource provider generation conflict")


def _warn_exceeded(provider: ProviderRow, classes: list[str]) -> None:
    for name in classes:
        LOG.warning("Resource provider %s is now over-capacity for %s", provider.uuid, name)


def list_inventories(
    *, database: Database, provider_uuid: str
) -> tuple[ProviderRow, dict[str, InventoryRecord]]:
    """The provider and its inventories by resource class name. Raises ``NotFound`` (404,
    Placement's "No resource provider with uuid U found : No resource provider ...")."""
    with database.read() as conn:
        provider = _require_provider(conn, provider_uuid)
        return provider, repo.get_inventories(conn, provider.id)


def _require_provider(conn: Connection, provider_uuid: str) -> ProviderRow:
    """The provider for the inventory reads; its 404 says the message twice, as Placement's
    ``GET .../inventories[/{class}]`` do (with a blank before the colon)."""
    try:
        return providers.require_by_uuid(conn, provider_uuid)
    except NotFound as exc:
        raise exc.repeated(" : ") from None


def show_inventory(
    *, database: Database, provider_uuid: str, resource_class: str
) -> tuple[ProviderRow, InventoryRecord]:
    """The provider and its inventory of one class. Raises ``NotFound`` (404) for an unknown
    provider or a class the provider has no inventory of (unknown classes included)."""
    with database.read() as conn:
        provider = _require_provider(conn, provider_uuid)
        record = repo.get_inventory(conn, provider.id, resource_class)
    if record is None:
        raise NotFound(f"No inventory of class {resource_class} for {provider_uuid}")
    return provider, record


def set_inventories(
    *,
    database: Database,
    provider_uuid: str,
    generation: int,
    inventories: dict[str, InventoryFields],
    reserved_may_equal_total: bool,
) -> int:
    """Replace the provider's whole inventory; returns the new provider generation.

    Raises ``NotFound`` (404), ``ConcurrentUpdate`` (409) when ``generation`` is stale,
    ``BadRequest`` (400) for an unusable capacity or unknown resource class, and
    ``InventoryInUse`` (409) when a removed class has allocations. Capacity may fall below usage
    of a kept class (allowed, logged).
    """
    with database.write() as conn:
        provider = providers.require_by_uuid(conn, provider_uuid)
        _check_generation(provider, generation)
        for name, fields in inventories.items():
            check_inventory_capacity(
                "update", name, provider.uuid, fields, reserved_may_equal_total
            )
        new_generation = providers.increment_generation(conn, provider)
        try:
            exceeded = repo.replace_inventories(conn, provider, inventories)
        except InventoryInUse as exc:
            raise InventoryInUse(f"update conflict: {exc.detail}") from None
    _warn_exceeded(provider, exceeded)
    return new_generation


def check_inventory_capacity(
    action: str,
    resource_class: str,
    provider_uuid: str,
    fields: InventoryFields,
    reserved_may_equal_total: bool,
) -> None:
    """``check_capacity`` with Placement's handler prefix ("Unable to <action> inventory for
    resource provider <uuid>: ..."). Raises ``BadRequest`` (400)."""
    try:
        check_capacity(
            resource_class, provider_uuid, fields, reserved_may_equal_total=reserved_may_equal_total
        )
    except BadRequest as exc:
        raise BadRequest(
            f"Unable to {action} inventory for resource provider {provider_uuid}: {exc.detail}",
            code=exc.code,
        ) from None


def create_inventory(
    *,
    database: Database,
    provider_uuid: str,
    resource_class: str,
    fields: InventoryFields,
    reserved_may_equal_total: bool,
) -> int:
    """Add one inventory (``POST``); returns the new provider generation.

    Placement takes no generation from the client here: the write is checked against the
    generation just read. Raises ``NotFound`` (404), ``BadRequest`` (400) for an unusable
    capacity or unknown class, ``ConcurrentUpdate`` (409) when the class already has an inventory
    or the provider changed meanwhile.
    """
    with database.write() as conn:
        provider = providers.require_by_uuid(conn, provider_uuid)
        prefix = f"Unable to create inventory for resource provider {provider.uuid}"
        check_inventory_capacity(
            "create", resource_class, provider.uuid, fields, reserved_may_equal_total
        )
        class_id = names.resource_class_ids(conn, [resource_class]).get(resource_class)
        if class_id is None:
            raise BadRequest(f"{prefix}: No such resource class {resource_class}.")
        new_generation = providers.increment_generation(conn, provider)
        if repo.get_inventory(conn, provider.id, resource_class) is not None:
            raise ConcurrentUpdate(
                f"Update conflict: an inventory of {resource_class} already exists on resource"
                f" provider {provider.uuid}"
            )
        try:
            repo.add_inventory(conn, provider.id, class_id, fields)
        except IntegrityError:
            raise ConcurrentUpdate(
                f"Update conflict: an inventory of {resource_class} already exists on resource"
                f" provider {provider.uuid}"
            ) from None
    return new_generation


def update_inventory(
    *,
    database: Database,
    provider_uuid: str,
    resource_class: str,
    generation: int,
    fields: InventoryFields,
    reserved_may_equal_total: bool,
) -> int:
    """Overwrite the provider's inventory of one class; returns the new provider generation.

    Raises ``NotFound`` (404) for an unknown provider or resource class, ``ConcurrentUpdate``
    (409) for a stale ``generation``, ``BadRequest`` (400) for an unusable capacity or when the
    provider has no inventory of the class. Capacity may fall below usage (allowed, logged).
    """
    with database.write() as conn:
        provider = providers.require_by_uuid(conn, provider_uuid)
        _check_generation(provider, generation)
        check_inventory_capacity(
            "update", resource_class, provider.uuid, fields, reserved_may_equal_total
        )
        class_id = names.resource_class_ids(conn, [resource_class]).get(resource_class)
        if class_id is None:
            raise NotFound(f"No such resource class {resource_class}.")
        new_generation = providers.increment_generation(conn, provider)
        if not repo.update_inventory(conn, provider.id, class_id, fields):
            raise BadRequest(
                f"No inventory record with resource class for resource provider {provider.uuid}:"
                f" No inventory of class {resource_class} found."
            )
        used = repo.usage_by_class(conn, provider.id).get(resource_class, 0)
    if used > fields.capacity:
        _warn_exceeded(provider, [resource_class])
    return new_generation


def delete_inventory(*, database: Database, provider_uuid: str, resource_class: str) -> None:
    """Delete the provider's inventory of one class.

    Raises ``NotFound`` (404) for an unknown provider, unknown class or absent inventory, and
    ``ConcurrentUpdate`` (409) when the class has allocations there. (Placement reports the
    in-use case with the code ``placement.concurrent_update`` on this route, not
    ``placement.inventory.inuse``; we keep its code.)
    """
    with database.write() as conn:
        provider = providers.require_by_uuid(conn, provider_uuid)
        class_id = names.resource_class_ids(conn, [resource_class]).get(resource_class)
        if class_id is None:
            raise NotFound(
                f"No inventory of class {resource_class} found for delete:"
                f" No such resource class {resource_class}."
            )
        providers.increment_generation(conn, provider)
        try:
            deleted = repo.delete_inventory(conn, provider, class_id, resource_class)
        except InventoryInUse as exc:
            raise ConcurrentUpdate(
                f"Unable to delete inventory of class {resource_class}: {exc.detail}"
            ) from None
        if not deleted:
            # Placement's wording: its message, then the wrapped exception's (the same words).
            raise NotFound(f"No inventory of class {resource_class} found for delete").repeated()


def delete_inventories(*, database: Database, provider_uuid: str) -> None:
    """Delete all the provider's inventories (1.5+); bumps the generation even when it had none.

    Raises ``NotFound`` (404) and ``InventoryInUse`` (409) when any class has allocations.
    """
    with database.write() as conn:
        provider = providers.require_by_uuid(conn, provider_uuid)
        providers.increment_generation(conn, provider)
        repo.replace_inventories(conn, provider, {})
