"""The capacity check of an allocation write (``allocations.replace_allocations``): the
inventories and their usage in one query, then every amount checked in request order.

Follows Placement's ``_check_capacity_exceeded`` (``objects/allocation.py``): the inventory must
exist, the amount respect ``min_unit``/``max_unit``/``step_size``
(``domain.allocation.violates_constraints``) and the running sum per (provider, class) fit
``(total - reserved) * allocation_ratio`` (``domain.allocation.exceeds_capacity``), unless the
result is no worse than the usage before the write. Runs inside the caller's transaction.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, bindparam, func, select
from sqlalchemy.engine import Connection

from placement_numa.db.repositories.providers import ProviderRow
from placement_numa.db.tables import allocations, inventories
from placement_numa.domain.allocation import (
    ConsumerAllocation,
    InventoryLimits,
    exceeds_capacity,
    violates_constraints,
)
from placement_numa.errors import Conflict

__all__ = ["Single", "check_fits", "limits_and_usage"]


@dataclass(frozen=True)
class Single:
    """One amount of a write, in request order: the consumer's ``item``, the provider by uuid,
    the class by name, the amount (the class's unit) and ``key``, (provider id, class id)."""

    item: ConsumerAllocation
    provider_uuid: str
    rc: str
    amount: int
    key: tuple[int, int]


def check_fits(
    by_uuid: dict[str, ProviderRow],
    singles: Sequence[Single],
    limits: dict[tuple[int, int], InventoryLimits],
    used: dict[tuple[int, int], int] | None,
    previous: dict[tuple[int, int], int],
) -> None:
    """Placement's ``_check_capacity_exceeded``, allocation by allocation in request order: the
    inventory must exist, the amount respect min/max/step, and the running sum per (provider,
    class) fit, unless the result is no worse than the usage before the write (``previous``).
    ``used``: usage left after the delete, by (provider id, class id); ``None`` checks only that
    the inventories exist.

    Raises ``Conflict`` (409) naming the class and provider that lack inventory or room.
    """
    with_inventory = {p for p, _ in limits}
    for provider_uuid, provider in by_uuid.items():
        if provider.id not in with_inventory:
            classes = ", ".join(sorted({s.rc for s in singles if s.provider_uuid == provider_uuid}))
            raise Conflict(
                f"Unable to allocate inventory: Inventory for '{classes}' on resource provider"
                f" '{provider_uuid}' invalid."
            )
    running: dict[tuple[int, int], int] = defaultdict(int)
    for single in singles:
        key, rc, provider_uuid, amount = single.key, single.rc, single.provider_uuid, single.amount
        if key not in limits:
            raise Conflict(
                f"Unable to allocate inventory: Inventory for '{rc}' on resource provider"
                f" '{provider_uuid}' invalid."
            )
        if used is None:
            continue
        running[key] += amount
        if violates_constraints(limits[key], amount):
            raise Conflict(
                f"Unable to allocate inventory: Unable to create allocation for '{rc}' on"
                f" resource provider '{provider_uuid}'. The requested amount would violate"
                " inventory constraints."
            )
        if exceeds_capacity(
            limits[key], used.get(key, 0), amount, running[key], previous_used=previous.get(key)
        ):
            raise Conflict(
                f"Unable to allocate inventory: Unable to create allocation for '{rc}' on"
                f" resource provider '{provider_uuid}'. The requested amount would exceed"
                " the capacity."
            )


def _build_limits_and_usage() -> Select[Any]:
    inv = inventories.c
    usage = (
        select(func.sum(allocations.c.used))
        .where(
            allocations.c.resource_provider_id == inv.resource_provider_id,
            allocations.c.resource_class_id == inv.resource_class_id,
        )
        .scalar_subquery()
    )
    return select(
        inv.resource_provider_id,
        inv.resource_class_id,
        inv.total,
        inv.reserved,
        inv.min_unit,
        inv.max_unit,
        inv.step_size,
        inv.allocation_ratio,
        usage,
    ).where(
        inv.resource_provider_id.in_(bindparam("pids", expanding=True)),
        inv.resource_class_id.in_(bindparam("cids", expanding=True)),
    )


_LIMITS_AND_USAGE = _build_limits_and_usage()


def limits_and_usage(
    conn: Connection, provider_ids: Iterable[int], class_ids: Iterable[int]
) -> tuple[dict[tuple[int, int], InventoryLimits], dict[tuple[int, int], int]]:
    """``({(provider_id, class_id): InventoryLimits}, {(provider_id, class_id): sum(used)})``
    for the inventories that exist among the given providers and classes, in one query (a key
    without allocations is absent from the second map)."""
    pids, cids = sorted(set(provider_ids)), sorted(set(class_ids))
    if not pids or not cids:
        return {}, {}
    rows = conn.execute(_LIMITS_AND_USAGE, {"pids": pids, "cids": cids})
    limits: dict[tuple[int, int], InventoryLimits] = {}
    used: dict[tuple[int, int], int] = {}
    for p, c, t, r, mn, mx, s, ratio, amount in rows:
        limits[(p, c)] = InventoryLimits(int(t), int(r), int(mn), int(mx), int(s), float(ratio))
        if amount is not None:
            used[(p, c)] = int(amount)
    return limits, used
