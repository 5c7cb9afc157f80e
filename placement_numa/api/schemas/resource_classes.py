"""Request body of ``POST /resource_classes`` and of ``PUT /resource_classes/{name}`` before 1.7:
``{"name": "CUSTOM_..."}`` (``^CUSTOM_[A-Z0-9_]+$``, at most 255 characters, no other keys).

From 1.7 ``PUT /resource_classes/{name}`` has no body; the name in the path is validated with
the same model.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, StringConstraints

__all__ = ["CustomResourceClassName", "ResourceClassBody"]

CustomResourceClassName = Annotated[
    str, StringConstraints(pattern=r"^CUSTOM_[A-Z0-9_]+$", max_length=255, strict=True)
]


class ResourceClassBody(BaseModel):
    """A custom resource class name."""

    model_config = ConfigDict(extra="forbid")

    name: CustomResourceClassName
