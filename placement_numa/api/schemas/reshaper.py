"""Request bodies of ``POST /reshaper`` (1.30+) and of the plan extension ``POST /reshaper/plan``.

``POST /reshaper`` (Placement's ``placement/schemas/reshaper.py`` shapes)::

    {"inventories": {rp_uuid: {"resource_provider_generation": int,
                               "inventories": {RC: {total, reserved?, ...}}}},     # >= 1 provider
     "allocations": {consumer_uuid: <a POST /allocations entry of the microversion>}}  # may be {}

The allocations entry is that of ``POST /allocations``: 1.28+ requires ``consumer_generation``
(int or null), 1.34+ accepts ``mappings``, 1.38+ requires ``consumer_type``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from placement_numa.api import microversion as mv
from placement_numa.api.schemas.allocations import (
    AllocationsPutV1_28,
    AllocationsPutV1_34,
    AllocationsPutV1_38,
    UuidKey,
)
from placement_numa.api.schemas.inventories import InventoriesBody

__all__ = [
    "ReshaperV1_30",
    "ReshaperV1_34",
    "ReshaperV1_38",
    "reshaper_schema",
    "ReshapePlanRequest",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


Inventories = Annotated[dict[UuidKey, InventoriesBody], Field(min_length=1)]


class ReshaperV1_30(_Strict):
    """``POST /reshaper`` 1.30-1.33: new ``inventories`` per provider and ``allocations`` per
    consumer (1.28 allocation shape)."""

    inventories: Inventories
    allocations: dict[UuidKey, AllocationsPutV1_28]


class ReshaperV1_34(_Strict):
    """``POST /reshaper`` 1.34-1.37: as 1.30, allocations may carry ``mappings``."""

    inventories: Inventories
    allocations: dict[UuidKey, AllocationsPutV1_34]


class ReshaperV1_38(_Strict):
    """The newest shape: inventories of >= 1 provider, allocations of any consumers."""

    inventories: Inventories
    allocations: dict[UuidKey, AllocationsPutV1_38]


def reshaper_schema(version: mv.Microversion) -> type[BaseModel]:
    """The model of a ``POST /reshaper`` body at ``version`` (1.30+)."""
    if version >= mv.CONSUMER_TYPES:
        return ReshaperV1_38
    if version >= mv.CANDIDATE_MAPPINGS:
        return ReshaperV1_34
    return ReshaperV1_30


class ReshapePlanRequest(_Strict):
    """Body of ``POST /reshaper/plan`` (extension): which host, which way, which topology.

    * ``host``: the compute node's root provider name (or give ``root_provider_uuid``);
    * ``direction``: ``to_numa`` (needs ``topology``, see ``placement_numa.reshape.topology``) or
      ``to_flat`` (collapse the NUMA tree back, a rollback);
    * ``policy``: ``pack`` (default: fill low-numbered cells first) or ``spread``.
    """

    # The host and topology rules of the plan service, for the OpenAPI document.
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "allOf": [
                {
                    "anyOf": [
                        {"required": ["host"], "properties": {"host": {"type": "string"}}},
                        {
                            "required": ["root_provider_uuid"],
                            "properties": {"root_provider_uuid": {"type": "string"}},
                        },
                    ]
                },
                {
                    "anyOf": [
                        {
                            "required": ["direction"],
                            "properties": {"direction": {"const": "to_flat"}},
                        },
                        {"required": ["topology"], "properties": {"topology": {"type": "object"}}},
                    ]
                },
            ]
        },
    )

    host: str | None = None
    root_provider_uuid: str | None = None
    direction: Literal["to_numa", "to_flat"] = "to_numa"
    topology: dict[str, Any] | None = None
    policy: Literal["pack", "spread"] = "pack"
