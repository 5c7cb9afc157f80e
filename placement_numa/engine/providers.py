"""One provider of the snapshot and its inventories with usage, and the rows they are built from.

Capacity follows Placement (``domain.inventory.capacity``): ``int((total - reserved) *
allocation_ratio)``, free is ``capacity - used``; a request of ``amount`` fits one inventory when
``min_unit <= amount <= max_unit``, ``amount % step_size == 0`` and ``used + amount <=
capacity``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import os_traits

from placement_numa.domain.inventory import capacity

__all__ = ["InventoryUsage", "ProviderInfo", "ProviderTuple", "InventoryTuple", "SHARING_TRAIT"]

# the trait of a provider that shares its inventory with the trees of its aggregates
SHARING_TRAIT: str = os_traits.MISC_SHARES_VIA_AGGREGATE

# (id, uuid, parent_id | None, root_id)
ProviderTuple = tuple[int, str, "int | None", int]
# (provider_id, resource class name, total, reserved, min_unit, max_unit, step_size, ratio)
InventoryTuple = tuple[int, str, int, int, int, int, int, float]


class InventoryUsage:
    """One inventory record of a provider with its current usage (integer units of the class).

    ``capacity``: ``int((total - reserved) * allocation_ratio)``, as Placement reports it,
    clamped to +-``CAPACITY_LIMIT`` (``domain.inventory.capacity``: a stored ratio of 3e38
    must not break reads, it renders as 2**63 - 1); 0 for a ratio that is not a number.
    Immutable by contract; a plain slotted class (a fleet holds one per provider and class,
    built at every load).
    """

    __slots__ = (
        "total",
        "reserved",
        "min_unit",
        "max_unit",
        "step_size",
        "allocation_ratio",
        "used",
        "capacity",
        "_hash",
    )

    def __init__(
        self,
        total: int,
        reserved: int,
        min_unit: int,
        max_unit: int,
        step_size: int,
        allocation_ratio: float,
        used: int = 0,
    ) -> None:
        self.total = total
        self.reserved = reserved
        self.min_unit = min_unit
        self.max_unit = max_unit
        self.step_size = step_size
        self.allocation_ratio = allocation_ratio
        self.used = used
        self.capacity = capacity(total, reserved, allocation_ratio)
        self._hash = hash(self._key())

    def _key(self) -> tuple[int, int, int, int, int, float, int]:
        return (
            self.total,
            self.reserved,
            self.min_unit,
            self.max_unit,
            self.step_size,
            self.allocation_ratio,
            self.used,
        )

    def __eq__(self, other: object) -> bool:
        return self is other or (
            isinstance(other, InventoryUsage)
            and self._hash == other._hash
            and self._key() == other._key()
        )

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return (
            f"InventoryUsage(total={self.total}, reserved={self.reserved},"
            f" min_unit={self.min_unit}, max_unit={self.max_unit}, step_size={self.step_size},"
            f" allocation_ratio={self.allocation_ratio}, used={self.used})"
        )

    @property
    def free(self) -> int:
        """Capacity left: ``capacity - used`` (negative when usage exceeds a lowered capacity)."""
        return self.capacity - self.used

    def fits(self, amount: int) -> bool:
        """Whether one allocation of ``amount`` fits (min/max unit, step size, capacity)."""
        return (
            self.min_unit <= amount <= self.max_unit
            and amount % self.step_size == 0
            and self.used + amount <= self.capacity
        )


@dataclass(slots=True)
class ProviderInfo:
    """A resource provider in the snapshot (``parent`` is -1 for a root)."""

    index: int
    id: int
    uuid: str
    parent: int
    root: int
    depth: int = 0
    traits: frozenset[str] = frozenset()
    aggregates: frozenset[str] = frozenset()
    inventories: dict[str, InventoryUsage] = field(default_factory=dict)

    @property
    def sharing(self) -> bool:
        """Whether the provider has ``MISC_SHARES_VIA_AGGREGATE`` (shares via aggregates)."""
        return SHARING_TRAIT in self.traits

    def free(self, resource_class: str) -> int:
        """Free capacity of ``resource_class`` (0 without inventory)."""
        inventory = self.inventories.get(resource_class)
        return inventory.free if inventory is not None else 0
