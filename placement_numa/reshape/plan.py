"""A planned reshape: the providers to create or delete, the ``POST /reshaper`` body, a summary.

``Plan.as_dict()`` is the JSON the plan API and ``placement-numa reshape plan`` print::

    {
      "direction": "to_numa" | "to_flat",
      "host": "cn1", "root_provider_uuid": "...",
      "microversion": "1.38",                     # the version to POST the body with
      "create_providers": [{"uuid", "name", "parent_provider_uuid", "traits": [...]}],
      "delete_providers": ["uuid", ...],          # to_flat: emptied children, leaves first
      "reshaper": {"inventories": {...}, "allocations": {...}},   # the POST /reshaper body
      "distances": {"cells": [0, 1], "distances": [[10, 21], [21, 10]]} | null,
      "placements": {"<consumer>": {"<provider name>": {"VCPU": 2, ...}}},
      "usages": {"before": {"VCPU": 24, ...}, "after": {...}},    # summed over the host's tree
      "summary": ["...", ...]
    }

Providers in ``create_providers`` appear in the body with the generation they have once created
with their traits (1: creation, then one trait update); an applier re-reads the real generations
(``with_generations``) before posting.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["NewProvider", "Plan", "Reparent", "GENERATION_AFTER_CREATE"]

# Generation of a provider just created (0) and given its traits (one bump).
GENERATION_AFTER_CREATE = 1


@dataclass(frozen=True)
class NewProvider:
    """A child provider to create before posting the body (parents listed before children)."""

    uuid: str
    name: str
    parent_provider_uuid: str
    traits: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        """The provider as the plan's JSON shows it (``create_providers`` entry)."""
        return {
            "uuid": self.uuid,
            "name": self.name,
            "parent_provider_uuid": self.parent_provider_uuid,
            "traits": list(self.traits),
        }


@dataclass(frozen=True)
class Reparent:
    """An existing provider (a PCI device's) moved under another parent of the same tree, with
    its inventories and allocations (``reparent_providers`` entry)."""

    uuid: str
    name: str
    parent_provider_uuid: str

    def as_dict(self) -> dict[str, Any]:
        """The move as the plan's JSON shows it."""
        return {
            "uuid": self.uuid,
            "name": self.name,
            "parent_provider_uuid": self.parent_provider_uuid,
        }


@dataclass(frozen=True)
class Plan:
    """A reshape, ready to apply (see the module docstring for the JSON shape)."""

    direction: Literal["to_numa", "to_flat"]
    host: str
    root_provider_uuid: str
    microversion: str
    body: Mapping[str, Any]
    create_providers: tuple[NewProvider, ...] = ()
    delete_providers: tuple[str, ...] = ()
    reparent_providers: tuple[Reparent, ...] = ()
    distances: Mapping[str, Any] | None = None
    placements: Mapping[str, Mapping[str, Mapping[str, int]]] = field(default_factory=dict)
    usages_before: Mapping[str, int] = field(default_factory=dict)
    usages_after: Mapping[str, int] = field(default_factory=dict)
    summary: tuple[str, ...] = ()

    def with_generations(self, generations: Mapping[str, int]) -> dict[str, Any]:
        """A copy of the body with ``resource_provider_generation`` replaced for the providers in
        ``generations`` (``{uuid: generation}``), e.g. after creating the child providers."""
        body = copy.deepcopy(dict(self.body))
        for uuid, entry in body["inventories"].items():
            if uuid in generations:
                entry["resource_provider_generation"] = generations[uuid]
        return body

    def as_dict(self) -> dict[str, Any]:
        """The plan as JSON: direction, host, root uuid, providers to create/delete, the
        ``POST /reshaper`` body with its microversion, and a summary."""
        return {
            "direction": self.direction,
            "host": self.host,
            "root_provider_uuid": self.root_provider_uuid,
            "microversion": self.microversion,
            "create_providers": [p.as_dict() for p in self.create_providers],
            "delete_providers": list(self.delete_providers),
            "reparent_providers": [p.as_dict() for p in self.reparent_providers],
            "reshaper": copy.deepcopy(dict(self.body)),
            "distances": None if self.distances is None else dict(self.distances),
            "placements": {
                c: {p: dict(r) for p, r in v.items()} for c, v in self.placements.items()
            },
            "usages": {"before": dict(self.usages_before), "after": dict(self.usages_after)},
            "summary": list(self.summary),
        }
