"""Create many resource providers, with their inventories and traits, in ONE transaction
(``POST /resource_providers/batch``, extension): all or nothing, a fixed handful of statements.

Each provider is checked as ``POST /resource_providers``, ``PUT .../inventories`` and ``PUT
.../traits`` check theirs (same messages and codes), in this order, the first failure winning:

1. per provider, in request order, without the database: an empty name (400), a parent equal to
   the provider (400), a uuid or name already used earlier in the batch (409
   ``placement.duplicate_name``), an unusable inventory capacity (400);
2. with the database: uuids or names that existing providers hold (409
   ``placement.duplicate_name``, every one named), a parent that neither exists nor comes earlier
   in the batch (400), an unknown resource class (400), unknown traits (400, every one named).

Created providers are at generation 0 (their inventories and traits are part of the creation).
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy.exc import IntegrityError

from placement_numa.db.database import Database
from placement_numa.db.repositories import names
from placement_numa.db.repositories import provider_batch as repo
from placement_numa.db.repositories import providers as provider_repo
from placement_numa.db.repositories.inventories import unknown_class
from placement_numa.db.repositories.providers import ProviderRow, utcnow
from placement_numa.domain.inventory import InventoryFields
from placement_numa.services.inventories import check_inventory_capacity
from placement_numa.services.providers import (
    NAME_REQUIRED,
    NO_PARENT,
    PARENT_IS_SELF,
    create_refused,
    duplicate,
)
from placement_numa.services.traits import no_such_traits

__all__ = ["ProviderSpec", "create_providers"]

_PARENT_LATER = (
    "parent provider UUID does not exist. A parent created in the same batch must come before"
    " its children."
)


@dataclass(frozen=True)
class ProviderSpec:
    """One provider to create: ``uuid`` generated when ``None``; ``parent_uuid`` an existing
    provider or one earlier in the batch; ``inventories`` by resource class name (units of the
    class); ``traits`` by name."""

    name: str
    uuid: str | None = None
    parent_uuid: str | None = None
    inventories: dict[str, InventoryFields] = field(default_factory=dict)
    traits: frozenset[str] = frozenset()


def _canonical(uuid: str) -> str:
    return str(uuidlib.UUID(uuid))


def _plan(
    specs: Sequence[ProviderSpec], reserved_may_equal_total: bool
) -> list[tuple[repo.ProviderInsert, ProviderSpec]]:
    """Step 1 (no database): canonical uuids and the checks that need no rows."""
    planned: list[tuple[repo.ProviderInsert, ProviderSpec]] = []
    uuids: set[str] = set()
    used_names: set[str] = set()
    for spec in specs:
        uuid = _canonical(spec.uuid) if spec.uuid else str(uuidlib.uuid4())
        parent = _canonical(spec.parent_uuid) if spec.parent_uuid else None
        if not spec.name:
            raise create_refused(spec.name, uuid, NAME_REQUIRED)
        if parent == uuid:
            raise create_refused(spec.name, uuid, PARENT_IS_SELF)
        again = ([f"uuid: {uuid}"] if uuid in uuids else []) + (
            [f"name: {spec.name}"] if spec.name in used_names else []
        )
        if again:
            raise duplicate(again)
        for class_name, fields in spec.inventories.items():
            check_inventory_capacity("create", class_name, uuid, fields, reserved_may_equal_total)
        uuids.add(uuid)
        used_names.add(spec.name)
        planned.append((repo.ProviderInsert(uuid, spec.name, parent), spec))
    return planned


def create_providers(
    database: Database, specs: Sequence[ProviderSpec], *, reserved_may_equal_total: bool
) -> list[ProviderRow]:
    """Create ``specs`` with their inventories and traits in one transaction; returns the new
    providers in request order (generation 0).

    Raises (nothing written): ``BadRequest`` (400: empty name, parent equal to the provider,
    parent neither existing nor earlier in the batch, unusable capacity, unknown resource class or
    trait), ``DuplicateName`` (409 ``placement.duplicate_name``: uuid or name taken, in the
    database or earlier in the batch). ``reserved_may_equal_total``: microversion 1.26+.
    """
    planned = _plan(specs, reserved_may_equal_total)
    if not planned:
        return []
    try:
        return _write(database, planned)
    except IntegrityError:
        # A concurrent writer took a uuid or name, or deleted a parent, after our checks: the
        # checks, run again on the committed state, name it.
        return _write(database, planned)


def _write(
    database: Database, planned: list[tuple[repo.ProviderInsert, ProviderSpec]]
) -> list[ProviderRow]:
    new = [provider for provider, _ in planned]
    with database.write() as conn:
        uuids_taken, names_taken = repo.taken(conn, [p.uuid for p in new], [p.name for p in new])
        if uuids_taken or names_taken:
            raise duplicate(
                [f"uuid: {p.uuid}" for p in new if p.uuid in uuids_taken]
                + [f"name: {p.name}" for p in new if p.name in names_taken]
            )
        in_batch = {p.uuid for p in new}
        outside = {p.parent_uuid for p in new if p.parent_uuid and p.parent_uuid not in in_batch}
        parents = provider_repo.get_by_uuids(conn, outside)
        earlier: set[str] = set()
        for provider in new:
            parent = provider.parent_uuid
            if parent is not None and parent not in parents and parent not in earlier:
                reason = _PARENT_LATER if parent in in_batch else NO_PARENT
                raise create_refused(provider.name, provider.uuid, reason)
            earlier.add(provider.uuid)
        class_ids = names.resource_class_ids(
            conn, {rc for _, spec in planned for rc in spec.inventories}
        )
        for provider, spec in planned:
            for class_name in spec.inventories:
                if class_name not in class_ids:
                    raise unknown_class(provider.uuid, class_name)
        wanted_traits = {t for _, spec in planned for t in spec.traits}
        trait_ids = names.trait_ids(conn, wanted_traits)
        if len(trait_ids) != len(wanted_traits):
            raise no_such_traits(wanted_traits - set(trait_ids))
        now = utcnow()
        rows = repo.insert_providers(conn, new, parents, now)
        repo.insert_inventories(
            conn,
            (
                (row.id, class_ids[class_name], fields)
                for row, (_, spec) in zip(rows, planned, strict=True)
                for class_name, fields in spec.inventories.items()
            ),
            now,
        )
        repo.insert_traits(
            conn,
            (
                (row.id, trait_ids[name])
                for row, (_, spec) in zip(rows, planned, strict=True)
                for name in sorted(spec.traits)
            ),
            now,
        )
        return rows
