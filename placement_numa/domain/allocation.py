"""Allocations as values, and the capacity rule an allocation write must respect.

An allocation is an amount of one resource class that a consumer takes from one resource
provider. A write replaces *all* allocations of each consumer it names (Placement's
``replace_all``): its old allocations are subtracted before the new ones are checked.

The capacity rule (Placement's, ``objects/allocation.py::_check_capacity_exceeded``; the capacity
formula itself lives in ``domain.inventory``)::

    used + amount <= int((total - reserved) * allocation_ratio)
    min_unit <= amount <= max_unit  and  amount % step_size == 0

Nothing here imports FastAPI or SQLAlchemy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from placement_numa.domain.inventory import capacity as inventory_capacity

__all__ = [
    "UNKNOWN_CONSUMER_TYPE",
    "INCOMPLETE_CONSUMER_ID",
    "ConsumerAllocation",
    "InventoryLimits",
    "capacity",
    "violates_constraints",
    "exceeds_capacity",
]

# Consumers without a consumer type are reported as "unknown" (Placement 1.38).
UNKNOWN_CONSUMER_TYPE = "unknown"
# Project and user of consumers written before 1.8 without them (Placement's
# ``incomplete_consumer_project_id``/``incomplete_consumer_user_id`` default).
INCOMPLETE_CONSUMER_ID = "00000000-0000-0000-0000-000000000000"


@dataclass(frozen=True, slots=True)
class ConsumerAllocation:
    """The complete new set of allocations of one consumer.

    ``resources`` is ``{provider_uuid: {resource_class: amount}}``; empty means "remove all of
    this consumer's allocations" (the consumer record is then deleted).
    ``consumer_type`` is a name (``None``: keep the existing type; new consumers get none, shown
    as ``"unknown"``). When ``check_generation`` is true (microversion 1.28+),
    ``consumer_generation`` must equal the consumer's current generation, ``None`` meaning
    "the consumer must not exist yet"; otherwise it is ignored.
    """

    consumer_uuid: str
    project_id: str
    user_id: str
    resources: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    consumer_type: str | None = None
    consumer_generation: int | None = None
    check_generation: bool = False


@dataclass(frozen=True, slots=True)
class InventoryLimits:
    """The part of an inventory record that limits allocations (amounts in the class's unit)."""

    total: int
    reserved: int
    min_unit: int
    max_unit: int
    step_size: int
    allocation_ratio: float


def capacity(limits: InventoryLimits) -> int:
    """How much may be allocated in all: ``domain.inventory.capacity`` (Placement's rule,
    ``int((total - reserved) * allocation_ratio)``; for integer amounts the truncation gives the
    same answers as Placement's untruncated comparison in its allocation check)."""
    return inventory_capacity(limits.total, limits.reserved, limits.allocation_ratio)


def violates_constraints(limits: InventoryLimits, amount: int) -> bool:
    """True unless ``min_unit <= amount <= max_unit`` and ``amount % step_size == 0``."""
    return (
        amount < limits.min_unit
        or amount > limits.max_unit
        or (limits.step_size > 0 and amount % limits.step_size != 0)
    )


def exceeds_capacity(
    limits: InventoryLimits,
    used: int,
    amount: int,
    amount_so_far: int | None = None,
    *,
    previous_used: int | None = None,
) -> bool:
    """True when Placement 16 refuses an allocation of ``amount`` for capacity.

    Placement's ``objects/allocation.py::_check_capacity_exceeded``, carried over: ``used`` is
    what other allocations take from this inventory once the writing consumers' old allocations
    are removed; ``amount_so_far`` is the running sum of the write's amounts for this provider
    and class up to and including this one (``amount`` when omitted); ``previous_used`` is the
    usage before the write (``None`` when there was none). The allocation is over capacity when
    ``used + amount`` or ``used + amount_so_far`` exceeds ``(total - reserved) * ratio``; it is
    still accepted when ``previous_used`` is known and ``used + amount_so_far <= previous_used``
    (the write leaves the provider no more over capacity than it was, e.g. shrinking an
    allocation on an inventory whose capacity was lowered below its usage). A provider that
    had no usage before (``previous_used is None``) never goes over capacity.
    """
    so_far = amount if amount_so_far is None else amount_so_far
    cap = capacity(limits)
    if used + amount <= cap and used + so_far <= cap:
        return False
    return previous_used is None or used + so_far > previous_used
