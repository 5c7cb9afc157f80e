"""``CellIndex``: what SQL knows of the NUMA cells and the snapshot does not.

The candidate engine's ``FleetSnapshot`` holds providers, inventories and traits; the host cell
ids (from the cell providers' names ``<host>_NUMA<id>``), the SLIT matrices and the compute node
names live in SQL only. The services read them into a ``CellIndex``
(``services.numa_candidates``); the NUMA host view (``numa.host_view``) and the ranker
(``numa.engine_rank``) read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from placement_numa.numa.rank_distance import Distances

__all__ = ["CellIndex"]


@dataclass(frozen=True)
class CellIndex:
    """What SQL knows and the snapshot does not: cell ids by cell provider uuid, SLIT
    matrices by root provider uuid, and compute node names by root provider uuid (``sockets``:
    per root provider uuid, as ``services.numa_candidates`` reads them)."""

    cell_ids: Mapping[str, int] = field(default_factory=dict)
    distances: Mapping[str, Distances] = field(default_factory=dict)
    host_names: Mapping[str, str] = field(default_factory=dict)
    sockets: Mapping[str, Mapping[int, int]] = field(default_factory=dict)
