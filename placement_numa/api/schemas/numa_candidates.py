"""Request body of ``POST /allocation_candidates`` (extension) and the JSON form of the GET query.

Either a Nova flavor (and image properties)::

    {"flavor": {"vcpus": 8, "memory_mb": 8192, "root_gb": 20, "ephemeral_gb": 0, "swap": 0,
                "extra_specs": {"hw:numa_nodes": "2"}},
     "image": {"hw_mem_page_size": "2MB"},
     "limit": 10, "prefer_closest_numa_nodes": true, "distribute_cpus_across_numa": false,
     "topology_policy": "restricted"}

or the GET query's parameters as JSON (a list where the parameter may repeat)::

    {"query": {"resources_MEM1": "MEMORY_MB:4096", "required_NUMA1": "HW_NUMA_ROOT",
               "resources_PROC1": "VCPU:4", "same_subtree": ["_MEM1,_PROC1,_NUMA1"],
               "group_policy": "none"},
     "limit": 10}
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, model_validator

from placement_numa.api.openapi_doc import (
    GROUP_POLICY,
    MEMBER_OF,
    RESOURCES,
    SUFFIXES,
    TRAITS,
    UUID_VALUE,
)
from placement_numa.api.schemas.inventories import JsonInt
from placement_numa.domain.inventory import MAX_INT
from placement_numa.numa.validation import MAX_VCPUS

__all__ = ["FlavorBody", "NumaCandidatesBody"]

SpecValue = str | StrictInt | float | StrictBool


_Size = Annotated[JsonInt, Field(ge=0, le=MAX_INT)]


def _one_or_more(value: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [value, {"type": "array", "items": value, "minItems": 1}]}


# What query_from_json (api/candidate_query.py) takes: GET's parameters, the value forms of
# GET's (api/openapi_doc.py), a list where the parameter may repeat.
_SUFFIX = "([a-zA-Z0-9_-]{1,64})?$"
_QUERY_SCHEMA: dict[str, Any] = {
    "properties": {
        "group_policy": GROUP_POLICY,
        "root_required": TRAITS,
        "same_subtree": _one_or_more(SUFFIXES),
    },
    "patternProperties": {
        f"^resources{_SUFFIX}": RESOURCES,
        f"^required{_SUFFIX}": _one_or_more(TRAITS),
        f"^member_of{_SUFFIX}": _one_or_more(MEMBER_OF),
        f"^in_tree{_SUFFIX}": UUID_VALUE,
    },
    "additionalProperties": False,
}


class FlavorBody(BaseModel):
    """A Nova flavor: sizes (MiB, GiB, CPUs) and extra specs; sizes at most 2**31 - 1, as Nova's
    flavors (``nova.db.api.MAX_INT``)."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    vcpus: Annotated[JsonInt, Field(ge=1, le=MAX_INT)] = Field(
        description="guest CPUs",
        json_schema_extra={"maximum": MAX_VCPUS},  # checked by numa.validation
    )
    memory_mb: Annotated[JsonInt, Field(ge=1, le=MAX_INT)] = Field(description="RAM in MiB")
    root_gb: _Size = Field(0, description="root disk in GiB")
    ephemeral_gb: _Size = Field(0, description="ephemeral disk in GiB")
    swap: _Size = Field(0, description="swap in MiB")
    extra_specs: dict[str, SpecValue] = Field(default_factory=dict)


class NumaCandidatesBody(BaseModel):
    """``flavor`` (+ ``image`` properties) or ``query`` (the GET parameters), plus options."""

    # The rule of ``_one_form``, for the OpenAPI document.
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "oneOf": [
                {
                    "required": ["flavor"],
                    "properties": {"flavor": {"type": "object"}, "query": {"type": "null"}},
                },
                {
                    "required": ["query"],
                    "properties": {
                        "query": {"type": "object"},
                        "flavor": {"type": "null"},
                        "image": {"type": "null"},
                    },
                },
            ]
        },
    )

    flavor: FlavorBody | None = None
    image: dict[str, Any] | None = Field(
        None,
        description=(
            "image properties (hw_numa_nodes, hw_mem_page_size, ...), flat or under 'properties'"
        ),
    )
    query: dict[str, str | list[str]] | None = Field(
        None,
        description="GET /allocation_candidates parameters as JSON (lists for repeated ones)",
        json_schema_extra=_QUERY_SCHEMA,
    )
    limit: Annotated[JsonInt, Field(ge=1)] | None = None
    prefer_closest_numa_nodes: StrictBool = Field(True, description="KEP-3545 distance ranking")
    distribute_cpus_across_numa: StrictBool = Field(
        False, description="KEP-2902: widen a flavor without hw:numa_nodes over 1, 2, ... cells"
    )
    every_ordering: StrictBool = Field(
        False,
        description=(
            "every assignment of interchangeable guest cells (identical requests) to the host"
            " cells, as GET returns them; by default each distinct set of host cells once"
        ),
    )
    diversify: StrictBool = Field(
        True,
        description=(
            "the best candidate of every host before the second best of any host (alternates"
            " on distinct hosts under limit); false: strict rank order"
        ),
    )
    topology_policy: Literal["none", "best-effort", "restricted", "single-numa-node"] | None = (
        Field(
            None,
            description=(
                "Kubernetes Topology Manager policy over CPUs, memory and PCI devices together;"
                " replaces the devices' NUMA affinity policy (single-numa-node and restricted:"
                " required, best-effort: preferred, none: no affinity). Absent: Nova's flavor"
                " semantics"
            ),
        )
    )

    @model_validator(mode="after")
    def _one_form(self) -> NumaCandidatesBody:
        if (self.flavor is None) == (self.query is None):
            raise ValueError("give exactly one of 'flavor' or 'query'")
        if self.image is not None and self.flavor is None:
            raise ValueError("'image' goes with 'flavor'")
        return self

    def image_properties(self) -> dict[str, Any]:
        """The image properties as a flat dict (``properties`` unwrapped)."""
        if not self.image:
            return {}
        props = self.image.get("properties")
        return dict(props) if isinstance(props, dict) else dict(self.image)
