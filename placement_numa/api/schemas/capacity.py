"""Request body of ``POST /allocation_candidates/capacity`` (extension)::

    {"flavors": [{"name": "m1.pinned", "vcpus": 8, "memory_mb": 8192, "root_gb": 20,
                  "extra_specs": {"hw:cpu_policy": "dedicated"},
                  "image": {"hw_mem_page_size": "1GB"}}],
     "in_tree": "<provider uuid>", "member_of": ["in:<agg1>,<agg2>", "<agg3>"],
     "required": "HW_CPU_X86_AVX2,!CUSTOM_MAINTENANCE",
     "max_per_host": 1000, "hosts": true,
     "prefer_closest_numa_nodes": true, "distribute_cpus_across_numa": false,
     "topology_policy": null}

Each flavor is Nova's (``api.schemas.numa_candidates.FlavorBody``) with an optional ``image``
(properties, flat or under ``properties``); ``name`` names it in the answer (default
``flavor-<n>``, 1-based). ``in_tree``, ``member_of`` and ``required`` scope the hosts as in
``GET /allocation_candidates`` (on the compute node: ``services.capacity.CapacityScope``).
Bounded: at most ``MAX_FLAVORS`` flavors, ``max_per_host`` at most ``MAX_CAP``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from placement_numa.api.openapi_doc import MEMBER_OF, TRAITS, UUID_VALUE
from placement_numa.api.schemas.inventories import JsonInt
from placement_numa.api.schemas.numa_candidates import FlavorBody
from placement_numa.services.capacity import DEFAULT_CAP, MAX_CAP, MAX_FLAVORS

__all__ = ["CapacityBody", "CapacityFlavor"]


class CapacityFlavor(FlavorBody):
    """A Nova flavor and, optionally, the image properties it boots with."""

    image: dict[str, Any] | None = Field(
        None, description="image properties (hw_mem_page_size, ...), flat or under 'properties'"
    )

    def image_properties(self) -> dict[str, Any]:
        """The image properties as a flat dict (``properties`` unwrapped)."""
        if not self.image:
            return {}
        props = self.image.get("properties")
        return dict(props) if isinstance(props, dict) else dict(self.image)


class CapacityBody(BaseModel):
    """Flavors to count, the hosts in scope and the claim's options."""

    model_config = ConfigDict(extra="forbid")

    flavors: list[CapacityFlavor] = Field(min_length=1, max_length=MAX_FLAVORS)
    in_tree: str | None = Field(
        None,
        description="a provider uuid: only the host of its tree",
        json_schema_extra={"anyOf": [UUID_VALUE, {"type": "null"}]},
    )
    member_of: list[str] = Field(
        default_factory=list,
        max_length=64,
        description="as GET's member_of (each 'in:a,b' or one uuid): the compute node's aggregates",
        json_schema_extra={"items": MEMBER_OF},
    )
    required: str | None = Field(
        None,
        description="as GET's required ('A,!B'): traits of the compute node",
        json_schema_extra={"anyOf": [TRAITS, {"type": "null"}]},
    )
    max_per_host: Annotated[JsonInt, Field(ge=0, le=MAX_CAP)] = Field(
        DEFAULT_CAP, description="the most instances counted per host"
    )
    hosts: StrictBool = Field(True, description="list every host in scope (false: totals only)")
    prefer_closest_numa_nodes: StrictBool = Field(True, description="KEP-3545 distance ranking")
    distribute_cpus_across_numa: StrictBool = Field(
        False, description="KEP-2902: widen a flavor without hw:numa_nodes over 1, 2, ... cells"
    )
    topology_policy: Literal["none", "best-effort", "restricted", "single-numa-node"] | None = (
        Field(None, description="as POST /allocation_candidates")
    )
