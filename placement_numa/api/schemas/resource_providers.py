"""Request bodies of ``POST /resource_providers`` and ``PUT /resource_providers/{uuid}``.

* 1.0-1.13: ``{"name": str (<= 200), "uuid": uuid (POST only, optional)}``;
* 1.14+: also ``"parent_provider_uuid": uuid | null``.

And of the extension ``POST /resource_providers/batch``: ``{"resource_providers": [{"name",
"uuid"?, "parent_provider_uuid"?, "inventories"?: {RC: inventory as in PUT
/resource_providers/{uuid}/inventories}, "traits"?: [name, ...]}, ...]}``.

No other keys are allowed (400, as Placement's JSON schema).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from placement_numa.api.query import is_uuid_like
from placement_numa.api.schemas.inventories import InventoryRecordBody
from placement_numa.api.schemas.traits import TraitName

__all__ = [
    "UuidStr",
    "CreateProviderV1_0",
    "CreateProviderV1_14",
    "UpdateProviderV1_0",
    "UpdateProviderV1_14",
    "BatchProvider",
    "CreateProvidersBatch",
]


def _check_uuid(value: str) -> str:
    if not is_uuid_like(value):
        raise ValueError(f"'{value}' is not a 'uuid'")
    return value


UuidStr = Annotated[str, AfterValidator(_check_uuid), Field(json_schema_extra={"format": "uuid"})]
"""A string that reads as a uuid (dashed or not), as Placement's ``format: uuid``."""

_STRICT = ConfigDict(extra="forbid", strict=True)
# An empty name is refused by the service (services.providers), with Placement's message.
_Name = Annotated[
    str,
    Field(
        max_length=200,
        description="Provider name, unique, 1-200 chars.",
        json_schema_extra={"minLength": 1},
    ),
]


class CreateProviderV1_0(BaseModel):
    """``POST /resource_providers`` before 1.14."""

    model_config = _STRICT
    name: _Name
    uuid: UuidStr = Field(default=None, description="Generated when absent.")  # type: ignore[assignment]


class CreateProviderV1_14(CreateProviderV1_0):
    """``POST /resource_providers`` from 1.14: may name a parent."""

    parent_provider_uuid: UuidStr | None = None


class UpdateProviderV1_0(BaseModel):
    """``PUT /resource_providers/{uuid}`` before 1.14."""

    model_config = _STRICT
    name: _Name


class UpdateProviderV1_14(UpdateProviderV1_0):
    """``PUT /resource_providers/{uuid}`` from 1.14: may set the parent (rules: 1.37)."""

    parent_provider_uuid: UuidStr | None = None

    def parent_given(self) -> bool:
        """Whether the body carried ``parent_provider_uuid`` (``null`` counts as given)."""
        return "parent_provider_uuid" in self.model_fields_set


class BatchProvider(CreateProviderV1_14):
    """One provider of ``POST /resource_providers/batch``: what ``POST /resource_providers``
    takes, plus its whole inventory and trait set (validated as the PUT routes validate them)."""

    inventories: dict[str, InventoryRecordBody] = Field(
        default_factory=dict,
        description="As in PUT /resource_providers/{uuid}/inventories; none when absent.",
    )
    traits: list[TraitName] = Field(
        default_factory=list, description="Trait names (existing traits); none when absent."
    )


class CreateProvidersBatch(BaseModel):
    """Body of ``POST /resource_providers/batch`` (extension): providers created in order, a
    parent being an existing provider or one earlier in the list."""

    model_config = _STRICT
    resource_providers: list[BatchProvider]
