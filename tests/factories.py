"""Factories for tests: build providers, inventories and allocations.

Helpers here are additive; each says whether it goes through the API or writes rows directly.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import insert

from placement_numa.db import tables
from placement_numa.db.repositories import names
from placement_numa.db.repositories.providers import utcnow
from tests.conftest import PlacementAPI

INVENTORY_DEFAULTS: dict[str, Any] = {
    "reserved": 0,
    "min_unit": 1,
    "max_unit": 2**31 - 1,
    "step_size": 1,
    "allocation_ratio": 1.0,
}


# --- Providers and aggregates through the API; traits, inventories, allocations as rows (H1a) ---


def create_provider(
    api: PlacementAPI,
    name: str | None = None,
    parent: str | None = None,
    uuid: str | None = None,
) -> dict[str, Any]:
    """Create a provider through ``POST /resource_providers`` (latest microversion) and return
    its representation; ``parent`` is the parent's uuid. Fails the test on a non-200."""
    body: dict[str, Any] = {"name": name or f"rp-{_new_uuid()}"}
    if uuid is not None:
        body["uuid"] = uuid
    if parent is not None:
        body["parent_provider_uuid"] = parent
    response = api.post("/resource_providers", json=body, version="latest")
    assert response.status_code == 200, response.text
    created: dict[str, Any] = response.json()
    return created


def set_aggregates(api: PlacementAPI, provider_uuid: str, aggregates: list[str]) -> dict[str, Any]:
    """Replace the provider's aggregates through the API (1.19 body, current generation)."""
    generation = api.get(f"/resource_providers/{provider_uuid}").json()["generation"]
    response = api.put(
        f"/resource_providers/{provider_uuid}/aggregates",
        json={"aggregates": aggregates, "resource_provider_generation": generation},
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def _new_uuid() -> str:
    return str(uuid.uuid4())


def _provider_id(conn: Any, provider_uuid: str) -> int:
    rp = tables.resource_providers
    return int(
        conn.execute(
            rp.select().with_only_columns(rp.c.id).where(rp.c.uuid == provider_uuid)
        ).scalar_one()
    )


def seed_inventory(
    api: PlacementAPI, provider_uuid: str, inventories: dict[str, dict[str, Any]]
) -> None:
    """Add inventory rows to an existing provider (defaults as ``seed_provider``; generation
    untouched). Writes rows directly."""
    database = api.client.app.state.database  # type: ignore[attr-defined]
    with database.write() as conn:
        provider_id = _provider_id(conn, provider_uuid)
        class_ids = names.resource_class_ids(conn, inventories)
        for rc, fields in inventories.items():
            values = {**INVENTORY_DEFAULTS, "max_unit": fields["total"], **fields}
            conn.execute(
                insert(tables.inventories).values(
                    resource_provider_id=provider_id,
                    resource_class_id=class_ids[rc],
                    created_at=utcnow(),
                    **values,
                )
            )


def seed_traits(api: PlacementAPI, provider_uuid: str, traits: list[str]) -> None:
    """Give a provider traits (custom ones are created). Writes rows directly."""
    database = api.client.app.state.database  # type: ignore[attr-defined]
    with database.write() as conn:
        provider_id = _provider_id(conn, provider_uuid)
        known = names.trait_ids(conn, traits)
        for trait in traits:
            if trait not in known:
                result = conn.execute(insert(tables.traits).values(name=trait, created_at=utcnow()))
                known[trait] = int(result.inserted_primary_key[0])
            conn.execute(
                insert(tables.resource_provider_traits).values(
                    trait_id=known[trait], resource_provider_id=provider_id, created_at=utcnow()
                )
            )


def seed_allocation(
    api: PlacementAPI,
    provider_uuid: str,
    resource_class: str,
    used: int,
    consumer: str | None = None,
) -> str:
    """Record ``used`` units of ``resource_class`` against a provider for ``consumer`` (a new
    uuid by default; no consumer row). Writes the allocation row directly; returns the consumer."""
    consumer = consumer or _new_uuid()
    database = api.client.app.state.database  # type: ignore[attr-defined]
    with database.write() as conn:
        provider_id = _provider_id(conn, provider_uuid)
        class_id = names.resource_class_ids(conn, [resource_class])[resource_class]
        conn.execute(
            insert(tables.allocations).values(
                resource_provider_id=provider_id,
                consumer_id=consumer,
                resource_class_id=class_id,
                used=used,
                created_at=utcnow(),
            )
        )
    return consumer


# --- Inventories and traits through the API (H1b) ---


def set_inventories(
    api: PlacementAPI, provider_uuid: str, inventories: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """Replace the provider's inventories through ``PUT .../inventories`` at its current
    generation (``{resource_class: {"total": n, ...}}``, Placement's defaults for the rest);
    returns the response body. Fails the test on a non-200."""
    url = f"/resource_providers/{provider_uuid}/inventories"
    generation = api.get(url).json()["resource_provider_generation"]
    response = api.put(
        url, json={"resource_provider_generation": generation, "inventories": inventories}
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def set_traits(api: PlacementAPI, provider_uuid: str, traits: list[str]) -> dict[str, Any]:
    """Replace the provider's traits through ``PUT .../traits`` at its current generation,
    creating custom traits first (``PUT /traits/{name}``); returns the response body."""
    for trait in traits:
        if trait.startswith("CUSTOM_"):
            assert api.put(f"/traits/{trait}").status_code in (201, 204)
    url = f"/resource_providers/{provider_uuid}/traits"
    generation = api.get(url).json()["resource_provider_generation"]
    response = api.put(url, json={"traits": traits, "resource_provider_generation": generation})
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


# --- A provider with inventory through the API (H2) ---


def provider_with_inventory(api: PlacementAPI, inventories: dict[str, dict[str, Any]]) -> str:
    """Create a root provider and set its inventories, both through the API; return its uuid.

    ``inventories`` is ``{resource_class: {"total": n, ...}}`` (Placement's defaults for the
    rest). The provider is then at generation 1.
    """
    provider = create_provider(api)
    set_inventories(api, provider["uuid"], inventories)
    return str(provider["uuid"])
