"""Request body of ``PUT /resource_providers/{uuid}/numa_distances`` (an extension).

``{"generation": null | int, "distances": {"0": {"0": 10, "1": 21}, "1": {"0": 21, "1": 10}},
"sockets": {"0": 0, "1": 1}}``:
``generation`` is ``null`` to create the matrix, else the generation last read; ``distances`` is
the kernel's SLIT keyed by NUMA cell id (10 local, 10..254); ``sockets`` (optional) each
cell's socket (``physical_package_id``). Extra keys are refused (400).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from placement_numa.api.schemas.inventories import JsonInt

__all__ = ["NumaDistancesBody"]


class NumaDistancesBody(BaseModel):
    """A compute node's NUMA distance matrix and the generation it replaces."""

    model_config = ConfigDict(extra="forbid")

    generation: JsonInt | None = Field(
        description="null to create; otherwise the matrix's current generation (409 if stale)"
    )
    distances: dict[str, dict[str, JsonInt]] = Field(
        description='SLIT distances keyed by NUMA cell id, e.g. {"0": {"0": 10, "1": 21}, ...}',
        examples=[{"0": {"0": 10, "1": 21}, "1": {"0": 21, "1": 10}}],
    )
    sockets: dict[str, JsonInt] | None = Field(
        None,
        description=(
            "socket (physical_package_id) of each NUMA cell, keyed by cell id, e.g."
            ' {"0": 0, "1": 1}; used by the socket PCI NUMA affinity policy'
        ),
    )
