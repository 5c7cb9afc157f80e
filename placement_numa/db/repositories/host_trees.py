"""Reads of one compute node's provider tree for the reshape planner: the root by name or uuid,
every provider of the tree, their traits. Run in the caller's transaction."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.engine import Connection

from placement_numa.db.repositories import providers
from placement_numa.db.repositories.providers import ProviderRow
from placement_numa.db.tables import resource_provider_traits, resource_providers, traits

__all__ = ["find_provider", "tree_providers", "traits_by_provider"]


def find_provider(
    conn: Connection, *, name: str | None = None, uuid: str | None = None
) -> ProviderRow | None:
    """The provider named ``name`` (or with ``uuid``), or ``None``."""
    if uuid is not None:
        return providers.get_by_uuid(conn, uuid)
    found = conn.execute(
        select(resource_providers.c.id).where(resource_providers.c.name == name)
    ).scalar()
    return providers.get_by_id(conn, int(found)) if found is not None else None


def tree_providers(conn: Connection, root_id: int) -> list[ProviderRow]:
    """Every provider whose root is ``root_id`` (the root included), in id order."""
    ids = conn.execute(
        select(resource_providers.c.id)
        .where(resource_providers.c.root_provider_id == root_id)
        .order_by(resource_providers.c.id)
    ).scalars()
    return [p for p in (providers.get_by_id(conn, int(i)) for i in list(ids)) if p is not None]


def traits_by_provider(conn: Connection, provider_ids: Iterable[int]) -> dict[int, frozenset[str]]:
    """``{provider id: trait names}`` (providers without traits map to an empty set)."""
    ids = sorted(set(provider_ids))
    found: dict[int, set[str]] = {i: set() for i in ids}
    if ids:
        rows = conn.execute(
            select(resource_provider_traits.c.resource_provider_id, traits.c.name)
            .join(traits, traits.c.id == resource_provider_traits.c.trait_id)
            .where(resource_provider_traits.c.resource_provider_id.in_(ids))
        )
        for provider_id, name in rows:
            found[int(provider_id)].add(name)
    return {i: frozenset(names) for i, names in found.items()}
