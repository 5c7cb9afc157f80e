"""The NUMA ranking plugged into the candidate engine's rank hook (``engine.RankFn``).

For a candidate, the host NUMA cells it uses are the ``HW_NUMA_ROOT`` providers at or above
each provider it takes resources from (or maps a group to); their ids come from the cell
provider names (``<host>_NUMA<id>``), else from their order under the root. The CPUs it takes on
each cell (classes ``cpu_classes``) and the free CPUs of every cell of the host feed the spread
score; the host's SLIT matrix (``distances``) the average distance. See ``ranking`` for the
order of the rules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from placement_numa.engine.candidates import Candidate
from placement_numa.engine.fleet import FleetSnapshot
from placement_numa.numa.rank_distance import Distances
from placement_numa.numa.ranking import HostCells, NumaScore, rank_key, score

__all__ = ["CellIndex", "NumaRanker"]

HW_NUMA_ROOT = "HW_NUMA_ROOT"


@dataclass(frozen=True)
class CellIndex:
    """What SQL knows and the snapshot does not: cell ids by cell provider uuid, SLIT
    matrices by root provider uuid, and compute node names by root provider uuid."""

    cell_ids: Mapping[str, int] = field(default_factory=dict)
    distances: Mapping[str, Distances] = field(default_factory=dict)
    host_names: Mapping[str, str] = field(default_factory=dict)


class NumaRanker:
    """Scores candidates of one query; ``rank`` is the engine hook (smaller key is better)."""

    def __init__(self, index: CellIndex, cpu_classes: tuple[str, ...], *, prefer_closest: bool = True) -> None:
        self.index = index
        self.cpu_classes = cpu_classes
        self.prefer_closest = prefer_closest
        self._hosts: dict[int, tuple[dict[int, int], HostCells]] = {}

    def _host(self, fleet: FleetSnapshot, root: int) -> tuple[dict[int, int], HostCells]:
        """(cell provider index -> cell id, HostCells) of one tree, cached per root."""
        cached = self._hosts.get(root)
        if cached is not None:
            return cached
        cells = [i for i in fleet.tree.get(root, []) if HW_NUMA_ROOT in fleet.providers[i].traits]
        ids: dict[int, int] = {}
        for order, i in enumerate(cells):
            cell_id = self.index.cell_ids.get(fleet.providers[i].uuid)
            ids[i] = cell_id if cell_id is not None else order
        free = {ids[i]: sum(fleet.providers[i].free(rc) for rc in self.cpu_classes) for i in cells}
        host = HostCells(free, self.index.distances.get(fleet.providers[root].uuid))
        self._hosts[root] = (ids, host)
        return ids, host

    def score(self, candidate: Candidate, fleet: FleetSnapshot) -> NumaScore:
        """The NUMA score of ``candidate`` (cells used, width, distance, spread)."""
        ids, host = self._host(fleet, candidate.anchor)
        used: dict[int, int] = {}

        def cell_of(p: int) -> int | None:
            for a in fleet.ancestors(p):
                if a in ids:
                    return ids[a]
            return None

        for p in candidate.providers():
            cell = cell_of(p)
            if cell is not None:
                used.setdefault(cell, 0)
        for p, rc, amount in candidate.allocations:
            if rc in self.cpu_classes and p in ids:
                used[ids[p]] = used.get(ids[p], 0) + amount
        return score(host, used)

    def rank(self, candidate: Candidate, fleet: FleetSnapshot) -> tuple[object, ...]:
        """The engine's rank hook: ``ranking.rank_key`` of the candidate's score."""
        return rank_key(self.score(candidate, fleet), prefer_closest=self.prefer_closest)

    def as_hook(self) -> Callable[[Candidate, FleetSnapshot], tuple[object, ...]]:
        return self.rank
