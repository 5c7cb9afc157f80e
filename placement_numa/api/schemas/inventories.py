"""Request bodies of the inventory routes (Placement's ``placement/schemas/inventory.py`` shapes).

* ``PUT /resource_providers/{uuid}/inventories``: ``{"resource_provider_generation": int,
  "inventories": {RC: {total, reserved?, min_unit?, max_unit?, step_size?, allocation_ratio?}}}``
* ``POST /resource_providers/{uuid}/inventories``: ``{resource_class, total, ...}`` (a
  ``resource_provider_generation`` is accepted and ignored, as in Placement)
* ``PUT /resource_providers/{uuid}/inventories/{rc}``:
  ``{resource_provider_generation, total, ...}``

Integers are JSON integers (an integral float such as ``8.0`` counts, as in JSON Schema; strings and
booleans do not) between the field's minimum and 2**31 - 1. Extra keys are refused (400).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    StringConstraints,
)

from placement_numa.domain.inventory import MAX_FLOAT, MAX_INT, InventoryFields

__all__ = [
    "JsonInt",
    "ResourceClassName",
    "InventoryRecordBody",
    "InventoriesBody",
    "InventoryBody",
    "InventoryPostBody",
]


# The integers JSON carries between systems without loss (I-JSON, RFC 7493 section 2.2): a
# float holds them exactly, so ``8.0`` and ``8`` are the same number.
JSON_SAFE_INT = 2**53 - 1


def _integral_float_to_int(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) <= JSON_SAFE_INT:
        return int(value)
    return value


# A JSON Schema "integer": ints and integral floats, never strings or booleans, within
# +-(2**53 - 1) (a field's own bounds narrow it).
JsonInt = Annotated[
    StrictInt,
    BeforeValidator(_integral_float_to_int),
    Field(ge=-JSON_SAFE_INT, le=JSON_SAFE_INT),
]
ResourceClassName = Annotated[str, StringConstraints(pattern=r"^[A-Z0-9_]+$", strict=True)]


class InventoryRecordBody(BaseModel):
    """One inventory in a request; omitted fields take Placement's defaults."""

    model_config = ConfigDict(extra="forbid")

    resource_provider_generation: JsonInt | None = None
    total: Annotated[JsonInt, Field(ge=1, le=MAX_INT)]
    reserved: Annotated[JsonInt, Field(ge=0, le=MAX_INT)] = 0
    min_unit: Annotated[JsonInt, Field(ge=1, le=MAX_INT)] = 1
    max_unit: Annotated[JsonInt, Field(ge=1, le=MAX_INT)] = MAX_INT
    step_size: Annotated[JsonInt, Field(ge=1, le=MAX_INT)] = 1
    allocation_ratio: Annotated[StrictFloat, Field(le=MAX_FLOAT)] = 1.0

    def to_fields(self) -> InventoryFields:
        """The six inventory numbers as the domain's ``InventoryFields`` (units of the class)."""
        return InventoryFields(
            total=self.total,
            reserved=self.reserved,
            min_unit=self.min_unit,
            max_unit=self.max_unit,
            step_size=self.step_size,
            allocation_ratio=self.allocation_ratio,
        )


class InventoriesBody(BaseModel):
    """Body of ``PUT /resource_providers/{uuid}/inventories``: the provider's whole inventory."""

    model_config = ConfigDict(extra="forbid")

    resource_provider_generation: JsonInt
    inventories: dict[str, InventoryRecordBody]


class InventoryBody(InventoryRecordBody):
    """Body of ``PUT /resource_providers/{uuid}/inventories/{resource_class}``."""

    resource_provider_generation: JsonInt


class InventoryPostBody(InventoryRecordBody):
    """Body of ``POST /resource_providers/{uuid}/inventories``: one new inventory."""

    resource_class: ResourceClassName
