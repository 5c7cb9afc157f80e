"""Request shapes of the trait routes (Placement's ``placement/schemas/trait.py``).

* ``PUT /traits/{name}``: no body; ``name`` must be a custom trait name (``^CUSTOM_[A-Z0-9_]+$``,
  at most 255 characters).
* ``PUT /resource_providers/{uuid}/traits``: ``{"traits": [name, ...],
  "resource_provider_generation": int}`` (names 1-255 characters; unknown ones are a 400 later).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, StringConstraints

from placement_numa.api.schemas.inventories import JsonInt

__all__ = ["CustomTraitName", "TraitName", "ProviderTraitsBody", "CUSTOM_TRAIT_PROBLEM"]

CustomTraitName = Annotated[
    str,
    StringConstraints(pattern=r"^CUSTOM_[A-Z0-9_]+$", min_length=1, max_length=255, strict=True),
]
TraitName = Annotated[str, StringConstraints(min_length=1, max_length=255, strict=True)]

CUSTOM_TRAIT_PROBLEM = (
    "The trait is invalid. A valid trait must be no longer than 255 characters, start with the"
    ' prefix "CUSTOM_" and use following characters: "A"-"Z", "0"-"9" and "_"'
)


class ProviderTraitsBody(BaseModel):
    """Body of ``PUT /resource_providers/{uuid}/traits``: the provider's whole trait set."""

    model_config = ConfigDict(extra="forbid")

    traits: list[TraitName]
    resource_provider_generation: JsonInt
