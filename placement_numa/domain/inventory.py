"""Inventory values and the capacity rule, shared by inventories, allocations, candidates, reshaper.

An inventory is what one resource provider offers of one resource class::

    capacity = int((total - reserved) * allocation_ratio)

An allocation of ``n`` units fits when ``min_unit <= n <= max_unit``, ``n % step_size == 0`` and
``used + n <= capacity`` (``used``: the sum of all allocations of that class on that provider).
This is OpenStack Placement's rule (``Inventory.capacity`` there); the truncation towards zero
of ``int()`` is part of it (``total=3, allocation_ratio=1.5`` gives capacity 4).

Field defaults are Placement's API defaults: ``reserved=0``, ``min_unit=1``,
``max_unit=MAX_INT`` (2**31 - 1), ``step_size=1``, ``allocation_ratio=1.0``. Placement does not
require ``min_unit <= max_unit`` nor ``max_unit <= total``; neither do we.
"""

from __future__ import annotations

from dataclasses import dataclass

from placement_numa.errors import BadRequest

__all__ = [
    "MAX_INT",
    "MAX_FLOAT",
    "MAX_CAPACITY",
    "CAPACITY_LIMIT",
    "InventoryFields",
    "capacity",
    "check_capacity",
]

# Largest value of an integer inventory field (a signed 32-bit int, as Placement's schema).
MAX_INT = 0x7FFFFFFF
# Largest allocation_ratio (the largest single-precision float, as Placement's schema).
MAX_FLOAT = 3.40282e38
# Largest capacity an inventory may have: 2**53, the largest integer every JSON client (and a
# float64) holds exactly, far below the 64-bit range of our SQL columns and JSON encoder, so
# sums of capacities and usages never overflow. Placement 16 accepts up to
# MAX_INT * MAX_FLOAT (~7e47), which no 64-bit field can carry; we refuse such an inventory at
# write time with a 400 instead of failing every later read that renders it.
MAX_CAPACITY = 2**53
# What a capacity read back is clamped to: +-(2**63 - 1), the 64-bit signed range of our SQL
# columns and JSON encoder. Rows written before MAX_CAPACITY was enforced, or by Placement
# (a stored ratio of 3e38), must not break reads: such a capacity renders as 2**63 - 1.
CAPACITY_LIMIT = 2**63 - 1


def capacity(total: int, reserved: int, allocation_ratio: float) -> int:
    """Units of a resource class that allocations may consume: ``int((total - reserved) * ratio)``,
    clamped to +-``CAPACITY_LIMIT``; 0 when the product is not a number (the one place capacity
    is computed: writes check it against ``MAX_CAPACITY``, the candidate engine reads it).

    Source: OpenStack Placement, ``placement.objects.inventory.Inventory.capacity``.
    """
    value = (total - reserved) * allocation_ratio
    if value != value:  # NaN
        return 0
    if value >= CAPACITY_LIMIT:
        return CAPACITY_LIMIT
    if value <= -CAPACITY_LIMIT:
        return -CAPACITY_LIMIT
    return int(value)


@dataclass(frozen=True, slots=True)
class InventoryFields:
    """The six numbers of one inventory (units of the resource class: CPUs, MiB, GiB, ...)."""

    total: int
    reserved: int = 0
    min_unit: int = 1
    max_unit: int = MAX_INT
    step_size: int = 1
    allocation_ratio: float = 1.0

    @property
    def capacity(self) -> int:
        """``int((total - reserved) * allocation_ratio)`` (see the module docstring)."""
        return capacity(self.total, self.reserved, self.allocation_ratio)

    def as_dict(self) -> dict[str, int | float]:
        """The API representation (``allocation_ratio`` always a float)."""
        return {
            "total": self.total,
            "reserved": self.reserved,
            "min_unit": self.min_unit,
            "max_unit": self.max_unit,
            "step_size": self.step_size,
            "allocation_ratio": float(self.allocation_ratio),
        }


def check_capacity(
    resource_class: str,
    provider_uuid: str,
    fields: InventoryFields,
    *,
    reserved_may_equal_total: bool,
) -> None:
    """Reject an inventory whose capacity is unusable, as Placement does.

    Before microversion 1.26 (``reserved_may_equal_total=False``) capacity must be > 0; from 1.26
    it must be >= 0 (so ``reserved == total`` is allowed). Note the rule is on the *capacity*, so a
    ratio of 0 is also refused before 1.26 and a negative ratio always. A capacity above
    ``MAX_CAPACITY`` (2**53) is refused too (our bound, see ``MAX_CAPACITY``).

    Raises ``BadRequest`` (400; ``placement.inventory.capacity_too_large`` for the last case).
    """
    cap = fields.capacity
    if cap > MAX_CAPACITY:
        raise BadRequest(
            f"Invalid inventory for '{resource_class}' on resource provider '{provider_uuid}'."
            f" The capacity (total - reserved) * allocation_ratio = {cap:.6g} exceeds"
            f" {MAX_CAPACITY}.",
            code="placement.inventory.capacity_too_large",
        )
    if reserved_may_equal_total:
        if cap >= 0:
            return
        why = "The reserved value is greater than total."
    else:
        if cap > 0:
            return
        why = "The reserved value is greater than or equal to total."
    raise BadRequest(
        f"Invalid inventory for '{resource_class}' on resource provider '{provider_uuid}'. {why}"
    )
