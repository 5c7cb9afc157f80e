"""The filtered list of ``GET /resource_providers``: name, uuid, tree, required and forbidden
traits, ``member_of`` aggregates and ``resources`` capacity, each a condition on one statement."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import BigInteger, and_, case, func, literal, select
from sqlalchemy.engine import Connection

from placement_numa.db.repositories.providers import PROVIDERS_SELECT, ProviderRow
from placement_numa.db.tables import (
    allocations,
    inventories,
    resource_provider_aggregates,
    resource_provider_traits,
)
from placement_numa.db.tables import resource_providers as rp

__all__ = ["list_providers"]


def list_providers(
    conn: Connection,
    *,
    name: str | None = None,
    uuid: str | None = None,
    root_id: int | None = None,
    required_trait_sets: Sequence[Iterable[int]] = (),
    forbidden_trait_ids: Iterable[int] = (),
    member_of_sets: Sequence[Iterable[int]] = (),
    forbidden_aggregate_ids: Iterable[int] = (),
    resources: Sequence[tuple[int, int]] = (),
) -> list[ProviderRow]:
    """Providers matching every given filter, in creation (id) order.

    * ``required_trait_sets``: per set, the provider has at least one of these trait ids;
    * ``member_of_sets``: per set, the provider is in at least one of these aggregate ids
      (an empty set matches nothing);
    * ``resources``: ``(resource class id, amount)``; the provider has inventory of the class
      with ``used + amount <= (total - reserved) * allocation_ratio``,
      ``min_unit <= amount <= max_unit`` and ``amount % step_size == 0`` (Placement's rule).
    """
    query = PROVIDERS_SELECT
    if name is not None:
        query = query.where(rp.c.name == name)
    if uuid is not None:
        query = query.where(rp.c.uuid == uuid)
    if root_id is not None:
        query = query.where(rp.c.root_provider_id == root_id)
    rpt = resource_provider_traits
    for trait_ids in required_trait_sets:
        query = query.where(
            rp.c.id.in_(
                select(rpt.c.resource_provider_id).where(rpt.c.trait_id.in_(sorted(trait_ids)))
            )
        )
    forbidden_traits = sorted(set(forbidden_trait_ids))
    if forbidden_traits:
        query = query.where(
            rp.c.id.not_in(
                select(rpt.c.resource_provider_id).where(rpt.c.trait_id.in_(forbidden_traits))
            )
        )
    rpa = resource_provider_aggregates
    for aggregate_ids in member_of_sets:
        wanted = sorted(set(aggregate_ids))
        if not wanted:
            return []
        query = query.where(
            rp.c.id.in_(select(rpa.c.resource_provider_id).where(rpa.c.aggregate_id.in_(wanted)))
        )
    forbidden_aggregates = sorted(set(forbidden_aggregate_ids))
    if forbidden_aggregates:
        query = query.where(
            rp.c.id.not_in(
                select(rpa.c.resource_provider_id).where(
                    rpa.c.aggregate_id.in_(forbidden_aggregates)
                )
            )
        )
    if resources:
        query = query.where(rp.c.id.in_(_providers_with_capacity(resources)))
    # Columns come in ProviderRow's field order: build positionally (cheaper per row).
    return [ProviderRow(*row) for row in conn.execute(query.order_by(rp.c.id))]


def _providers_with_capacity(resources: Sequence[tuple[int, int]]):  # type: ignore[no-untyped-def]
    """``SELECT resource_provider_id`` of providers with room for every ``(class id, amount)``.

    One pass over the inventories of the requested classes (amounts picked per class with a
    ``CASE``), grouped by provider and kept when all classes fit: linear in the number of
    classes, where one ``IN (subquery)`` per class made PostgreSQL's planner grow
    super-linearly (160 classes: 11 s; issue 10, item 6).
    """
    class_ids = [class_id for class_id, _ in resources]
    usage = (
        select(
            allocations.c.resource_provider_id,
            allocations.c.resource_class_id,
            func.sum(allocations.c.used).label("used"),
        )
        .where(allocations.c.resource_class_id.in_(class_ids))
        .group_by(allocations.c.resource_provider_id, allocations.c.resource_class_id)
        .subquery("usage")
    )
    inv = inventories
    wanted = case(
        {class_id: literal(amount, BigInteger) for class_id, amount in resources},
        value=inv.c.resource_class_id,
    )
    return (
        select(inv.c.resource_provider_id)
        .select_from(
            inv.outerjoin(
                usage,
                and_(
                    usage.c.resource_provider_id == inv.c.resource_provider_id,
                    usage.c.resource_class_id == inv.c.resource_class_id,
                ),
            )
        )
        .where(
            and_(
                inv.c.resource_class_id.in_(class_ids),
                func.coalesce(usage.c.used, 0) + wanted
                <= (inv.c.total - inv.c.reserved) * inv.c.allocation_ratio,
                inv.c.min_unit <= wanted,
                inv.c.max_unit >= wanted,
                wanted % inv.c.step_size == 0,
            )
        )
        .group_by(inv.c.resource_provider_id)
        .having(func.count() == len(class_ids))
    )
