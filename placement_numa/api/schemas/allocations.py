"""Request bodies of ``PUT /allocations/{consumer_uuid}`` and ``POST /allocations``, per
microversion.

Placement's shapes (``placement/schemas/allocation.py``), as pydantic models with extra keys
forbidden and strict types (a JSON string is never an integer):

* 1.0-1.7:   ``{"allocations": [{"resource_provider": {"uuid"}, "resources": {RC: n}}]}``
* 1.8-1.11:  the same plus required ``project_id``, ``user_id``
* 1.12-1.27: ``{"allocations": {rp_uuid: {"resources": {RC: n}, "generation"?}}, project_id,
  user_id}``
* 1.28-1.33: plus required ``consumer_generation`` (int or null); ``allocations`` may be ``{}``
* 1.34-1.37: plus optional ``mappings`` ``{suffix: [rp_uuid, ...]}``
* 1.38+:     plus required ``consumer_type`` (``^[A-Z0-9_]+$``)

``POST /allocations`` (1.13+) takes ``{consumer_uuid: <the 1.12+ body, allocations may be {}>}``.
Amounts are integers >= 1 in the resource class's unit.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    RootModel,
    StringConstraints,
)

from placement_numa.api import microversion as mv
from placement_numa.api.schemas.inventories import JsonInt
from placement_numa.api.schemas.resource_providers import UuidStr

__all__ = [
    "put_schema",
    "post_schema",
    "AllocationsPutV1_38",
    "AllocationsPostV1_38",
]

UuidKey = Annotated[str, StringConstraints(pattern=r"^[0-9a-fA-F-]{36}$")]
ClassName = Annotated[str, StringConstraints(pattern=r"^[A-Z0-9_]+$")]
ExternalId = Annotated[str, StringConstraints(min_length=1, max_length=255, strict=True)]
ConsumerType = Annotated[
    str, StringConstraints(pattern=r"^[A-Z0-9_]+$", min_length=1, max_length=255, strict=True)
]
Amount = Annotated[JsonInt, Field(ge=1)]
Resources = Annotated[dict[ClassName, Amount], Field(min_length=1)]
# "" names the unsuffixed group (Placement leaves keys outside its pattern unconstrained).
Suffix = Annotated[str, StringConstraints(pattern=r"^[a-zA-Z0-9_-]{0,64}$")]
# Provider uuids in any form ``uuid.UUID`` reads (Placement's ``format: uuid``), at least one.
Mappings = Annotated[
    dict[Suffix, Annotated[list[UuidStr], Field(min_length=1)]],
    Field(min_length=1),
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProviderRef(_Strict):
    uuid: Annotated[
        str,
        StringConstraints(
            pattern=r"^[0-9a-fA-F]{8}(-?[0-9a-fA-F]{4}){3}-?[0-9a-fA-F]{12}$",
            strict=True,
        ),
    ]


class ListItem(_Strict):
    resource_provider: ProviderRef
    resources: Resources


class AllocationsPutV1_0(_Strict):
    allocations: Annotated[list[ListItem], Field(min_length=1)]


class AllocationsPutV1_8(AllocationsPutV1_0):
    project_id: ExternalId
    user_id: ExternalId


class ProviderAllocation(_Strict):
    resources: Resources
    generation: JsonInt | None = Field(default=None, description="ignored")


class AllocationsPutV1_12(_Strict):
    allocations: Annotated[dict[UuidKey, ProviderAllocation], Field(min_length=1)]
    project_id: ExternalId
    user_id: ExternalId


class DeletableAllocations(_Strict):
    allocations: dict[UuidKey, ProviderAllocation]
    project_id: ExternalId
    user_id: ExternalId


class AllocationsPutV1_28(DeletableAllocations):
    consumer_generation: JsonInt | None


class AllocationsPutV1_34(AllocationsPutV1_28):
    # Optional, but an object when given: ``null`` is refused, as in Placement.
    mappings: Mappings = None  # type: ignore[assignment]


class AllocationsPutV1_38(AllocationsPutV1_34):
    """One consumer's allocations (1.38+): ``allocations``, ``project_id``, ``user_id``,
    ``consumer_generation``, optional ``mappings`` and a required ``consumer_type``."""

    consumer_type: ConsumerType


class AllocationsPostV1_13(
    RootModel[Annotated[dict[UuidKey, DeletableAllocations], Field(min_length=1)]]
):
    pass


class AllocationsPostV1_28(
    RootModel[Annotated[dict[UuidKey, AllocationsPutV1_28], Field(min_length=1)]]
):
    pass


class AllocationsPostV1_34(
    RootModel[Annotated[dict[UuidKey, AllocationsPutV1_34], Field(min_length=1)]]
):
    pass


class AllocationsPostV1_38(
    RootModel[Annotated[dict[UuidKey, AllocationsPutV1_38], Field(min_length=1)]]
):
    """The body of ``POST /allocations`` (1.38+), keyed by consumer uuid:
    ``{consumer_uuid: {allocations, project_id, user_id, consumer_generation, consumer_type}}``."""


def put_schema(version: mv.Microversion) -> type[BaseModel]:
    """The model of a ``PUT /allocations/{consumer_uuid}`` body at ``version``."""
    if version >= mv.CONSUMER_TYPES:
        return AllocationsPutV1_38
    if version >= mv.CANDIDATE_MAPPINGS:
        return AllocationsPutV1_34
    if version >= mv.CONSUMER_GENERATION:
        return AllocationsPutV1_28
    if version >= mv.ALLOCATIONS_DICT:
        return AllocationsPutV1_12
    if version >= mv.ALLOCATION_REQUIRES_PROJECT_USER:
        return AllocationsPutV1_8
    return AllocationsPutV1_0


def post_schema(version: mv.Microversion) -> type[RootModel[Any]]:
    """The model of a ``POST /allocations`` body at ``version`` (1.13+)."""
    if version >= mv.CONSUMER_TYPES:
        return AllocationsPostV1_38
    if version >= mv.CANDIDATE_MAPPINGS:
        return AllocationsPostV1_34
    if version >= mv.CONSUMER_GENERATION:
        return AllocationsPostV1_28
    return AllocationsPostV1_13
