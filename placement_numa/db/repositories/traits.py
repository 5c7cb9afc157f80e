"""Trait rows and the traits of resource providers.

Functions run in the caller's transaction; ``set_provider_traits`` does not touch the provider
generation (the service bumps it when the set changed, as Placement).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, delete, exists, insert, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from placement_numa.db.repositories import changes
from placement_numa.db.repositories.keys import inserted_id
from placement_numa.db.repositories.providers import utcnow
from placement_numa.db.tables import resource_provider_traits as rpt
from placement_numa.db.tables import traits

__all__ = [
    "TraitRow",
    "list_traits",
    "get_by_name",
    "ensure",
    "in_use",
    "delete_by_id",
    "provider_traits",
    "set_provider_traits",
]


@dataclass(frozen=True, slots=True)
class TraitRow:
    """One trait."""

    id: int
    name: str
    created_at: datetime | None
    updated_at: datetime | None

    @property
    def last_modified(self) -> datetime | None:
        """When the trait last changed: ``updated_at``, else ``created_at`` (naive UTC)."""
        return self.updated_at or self.created_at


def _select() -> Select[Any]:
    return select(traits.c.id, traits.c.name, traits.c.created_at, traits.c.updated_at)


def list_traits(
    conn: Connection,
    *,
    name_in: Iterable[str] | None = None,
    prefix: str | None = None,
    associated: bool | None = None,
) -> list[TraitRow]:
    """Traits sorted by name, filtered by: names among ``name_in``; names starting with
    ``prefix`` (literally, no wildcards); ``associated`` True (held by some provider) or False
    (held by none)."""
    query = _select()
    if name_in is not None:
        query = query.where(traits.c.name.in_(list(name_in)))
    if prefix:
        query = query.where(traits.c.name.startswith(prefix, autoescape=True))
    if associated is not None:
        held = exists().where(rpt.c.trait_id == traits.c.id)
        query = query.where(held if associated else ~held)
    rows = conn.execute(query.order_by(traits.c.name)).mappings()
    return [TraitRow(**row) for row in rows]


def get_by_name(conn: Connection, name: str) -> TraitRow | None:
    """The trait ``name``, or ``None``."""
    row = conn.execute(_select().where(traits.c.name == name)).mappings().first()
    return TraitRow(**row) if row else None


def ensure(conn: Connection, name: str) -> tuple[TraitRow, bool]:
    """The trait ``name``, created if missing; returns it and whether this call created it
    (a concurrent creator wins quietly)."""
    found = get_by_name(conn, name)
    if found is not None:
        return found, False
    now = utcnow()
    try:
        with conn.begin_nested():
            result = conn.execute(insert(traits).values(name=name, created_at=now))
    except IntegrityError:
        found = get_by_name(conn, name)
        assert found is not None
        return found, False
    return TraitRow(inserted_id(result), name, now, None), True


def in_use(conn: Connection, trait_id: int) -> bool:
    """True when any provider has the trait."""
    return (
        conn.execute(select(rpt.c.trait_id).where(rpt.c.trait_id == trait_id).limit(1)).first()
        is not None
    )


def delete_by_id(conn: Connection, trait_id: int) -> bool:
    """Delete the trait; False when it did not exist."""
    return conn.execute(delete(traits).where(traits.c.id == trait_id)).rowcount > 0


def provider_traits(conn: Connection, provider_id: int) -> list[TraitRow]:
    """The provider's traits, sorted by name."""
    rows = conn.execute(
        _select()
        .join(rpt, rpt.c.trait_id == traits.c.id)
        .where(rpt.c.resource_provider_id == provider_id)
        .order_by(traits.c.name)
    ).mappings()
    return [TraitRow(**row) for row in rows]


def set_provider_traits(conn: Connection, provider_id: int, trait_ids: Iterable[int]) -> bool:
    """Make ``trait_ids`` the provider's whole trait set; returns whether anything changed."""
    changes.touch(conn, [provider_id])
    wanted = set(trait_ids)
    have = set(
        conn.scalars(select(rpt.c.trait_id).where(rpt.c.resource_provider_id == provider_id))
    )
    to_delete = have - wanted
    to_add = wanted - have
    if to_delete:
        conn.execute(
            delete(rpt).where(
                rpt.c.resource_provider_id == provider_id, rpt.c.trait_id.in_(sorted(to_delete))
            )
        )
    if to_add:
        now = utcnow()
        conn.execute(
            insert(rpt),
            [
                {"resource_provider_id": provider_id, "trait_id": tid, "created_at": now}
                for tid in sorted(to_add)
            ],
        )
    return bool(to_delete or to_add)
