"""Request bodies of ``PUT /resource_providers/{uuid}/aggregates``.

* 1.1-1.18: a JSON list of unique aggregate uuids;
* 1.19+: ``{"aggregates": [uuid, ...], "resource_provider_generation": int}`` (both required).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter

from placement_numa.api.schemas.inventories import JsonInt
from placement_numa.api.schemas.resource_providers import UuidStr

__all__ = ["AggregateList", "AGGREGATES_V1_1", "SetAggregatesV1_19"]


def _unique(values: list[str]) -> list[str]:
    if len(set(values)) != len(values):
        raise ValueError(f"{values} has non-unique elements")
    return values


AggregateList = Annotated[
    list[UuidStr], AfterValidator(_unique), Field(json_schema_extra={"uniqueItems": True})
]

AGGREGATES_V1_1: TypeAdapter[list[str]] = TypeAdapter(AggregateList)


class SetAggregatesV1_19(BaseModel):
    """``PUT /resource_providers/{uuid}/aggregates`` from 1.19."""

    model_config = ConfigDict(extra="forbid", strict=True)
    aggregates: AggregateList
    resource_provider_generation: JsonInt
