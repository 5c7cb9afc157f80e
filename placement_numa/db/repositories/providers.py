"""Resource provider rows: lookup by uuid, generation compare-and-swap, row locks."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from sqlalchemy import select, update
from sqlalchemy.engine import Connection
from sqlalchemy.orm import aliased

from placement_numa.db.tables import resource_providers as rp
from placement_numa.errors import ConcurrentUpdate, ResourceProviderNotFound

__all__ = [
    "ProviderRow",
    "utcnow",
    "get_by_uuid",
    "require_by_uuid",
    "get_by_id",
    "increment_generation",
    "lock_providers",
]


def utcnow() -> datetime:
    """Naive UTC now, as stored in ``created_at``/``updated_at``."""
    return datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0)


@dataclass(frozen=True, slots=True)
class ProviderRow:
    """One resource provider with its parent and root uuids (``None`` for a root's parent)."""

    id: int
    uuid: str
    name: str
    generation: int
    parent_provider_uuid: str | None
    root_provider_uuid: str
    parent_provider_id: int | None
    root_provider_id: int
    created_at: datetime | None
    updated_at: datetime | None


def _select_providers():  # type: ignore[no-untyped-def]
    parent = aliased(rp, name="parent")
    root = aliased(rp, name="root")
    return (
        select(
            rp.c.id,
            rp.c.uuid,
            rp.c.name,
            rp.c.generation,
            parent.c.uuid.label("parent_provider_uuid"),
            root.c.uuid.label("root_provider_uuid"),
            rp.c.parent_provider_id,
            rp.c.root_provider_id,
            rp.c.created_at,
            rp.c.updated_at,
        )
        .select_from(rp)
        .outerjoin(parent, parent.c.id == rp.c.parent_provider_id)
        .outerjoin(root, root.c.id == rp.c.root_provider_id)
    )


def get_by_uuid(conn: Connection, uuid: str) -> ProviderRow | None:
    """The provider with ``uuid``, or ``None``."""
    row = conn.execute(_select_providers().where(rp.c.uuid == uuid)).mappings().first()
    return ProviderRow(**row) if row else None


def require_by_uuid(conn: Connection, uuid: str) -> ProviderRow:
    """The provider with ``uuid``; raises ``ResourceProviderNotFound`` (404) when absent."""
    provider = get_by_uuid(conn, uuid)
    if provider is None:
        raise ResourceProviderNotFound(f"No resource provider with uuid {uuid} found")
    return provider


def get_by_id(conn: Connection, provider_id: int) -> ProviderRow | None:
    """The provider with internal id ``provider_id``, or ``None``."""
    row = conn.execute(_select_providers().where(rp.c.id == provider_id)).mappings().first()
    return ProviderRow(**row) if row else None


def increment_generation(conn: Connection, provider: ProviderRow, expected: int | None = None) -> int:
    """Compare-and-swap the provider's generation: ``expected`` (default: the generation read)
    must still be current. Returns the new generation; raises ``ConcurrentUpdate`` (409,
    ``placement.concurrent_update``) when another writer moved it."""
    seen = provider.generation if expected is None else expected
    result = conn.execute(
        update(rp)
        .where(rp.c.id == provider.id, rp.c.generation == seen)
        .values(generation=seen + 1, updated_at=utcnow())
    )
    if result.rowcount != 1:
        raise ConcurrentUpdate(
            f"resource provider generation conflict: {provider.uuid} is no longer at generation"
            f" {seen}. Please update the generation and try again."
        )
    return seen + 1


def lock_providers(conn: Connection, provider_ids: list[int]) -> None:
    """``SELECT ... FOR UPDATE`` the provider rows (sorted, to avoid deadlocks).

    PostgreSQL and MariaDB hold the locks until commit, which serialises concurrent capacity
    checks on the same providers; SQLite's ``BEGIN IMMEDIATE`` already serialises writers.
    """
    if not provider_ids or conn.dialect.name == "sqlite":
        return
    conn.execute(
        select(rp.c.id).where(rp.c.id.in_(sorted(set(provider_ids)))).order_by(rp.c.id).with_for_update()
    ).all()
