"""The one error of the flavor pipeline: ``InvalidFlavor`` (400 ``placement_numa.flavor.invalid``).

Its own module so that every step that resolves a setting (``resolve``, ``pci_alias``,
``validation``, ``request``) raises the same error without importing one another.
"""

from __future__ import annotations

from placement_numa.errors import BadRequest

__all__ = ["INVALID_FLAVOR_CODE", "InvalidFlavor"]

INVALID_FLAVOR_CODE = "placement_numa.flavor.invalid"


class InvalidFlavor(BadRequest):
    """400 ``placement_numa.flavor.invalid``: the flavor/image cannot be turned into a query.

    ``keys`` are the offending extra spec / image property names; the detail starts with them.
    """

    default_code = INVALID_FLAVOR_CODE

    def __init__(self, keys: list[str] | tuple[str, ...], message: str) -> None:
        self.keys = tuple(keys)
        super().__init__(f"Invalid flavor ({', '.join(self.keys)}): {message}")
