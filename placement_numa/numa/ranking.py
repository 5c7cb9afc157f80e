"""Candidate ranking: the rules composed, with the tie-breaks written out.

A candidate is scored from what it uses of one host (``HostCells``) and sorted by, in order:

0. NUMA fits before fallback candidates on hosts not reshaped (done by the caller, which asks
   the fallback query only after the NUMA query);
1. aligned devices first: a candidate with a PCI device off the cells its CPUs and memory come
   from (or under the compute node, with no cell) ranks after every aligned one (issue 22;
   not applied under ``topology_policy=none``);
2. fewer host NUMA cells (``rank_width``; the cells CPUs and memory come from);
3. lower average distance, KEP-3545 (``rank_distance``; over the cells of CPUs, memory and
   devices together; skipped when ``prefer_closest_numa_nodes`` is off);
4. lower spread score, KEP-2902 balance (``rank_spread``);
5. lower-numbered cells (``CellSet.tie_break_key``, as Kubernetes' bitmask tie-break);
6. the engine's deterministic order (root creation order, then depth-first provider order),
   which the engine keeps for equal keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from placement_numa.numa.cellset import CellSet
from placement_numa.numa.rank_distance import Distances, average_distance
from placement_numa.numa.rank_spread import spread
from placement_numa.numa.rank_width import width

__all__ = ["HostCells", "NumaScore", "score", "rank_key"]


@dataclass(frozen=True)
class HostCells:
    """One host's NUMA cells as ranking sees them.

    ``free_cpus``: cell id -> free CPUs of the classes asked (before the candidate);
    ``distances``: the SLIT matrix by cell id (``None``: kernel defaults).
    """

    free_cpus: Mapping[int, int]
    distances: Distances | None = None


@dataclass(frozen=True, slots=True)
class NumaScore:
    """A candidate's NUMA score: the cells CPUs and memory come from, width, average distance
    (over those cells and the devices' cells), spread, the devices' cells (``None``: a device
    under the compute node), whether every device sits on one of ``cells`` and whether that
    counts in the rank (not under ``topology_policy=none``)."""

    cells: CellSet
    width: int
    average_distance: float
    spread: float
    device_cells: tuple[int | None, ...] = ()
    aligned: bool = True
    rank_alignment: bool = True


def score(
    host: HostCells,
    used_cpus: Mapping[int, int],
    device_cells: Sequence[int | None] = (),
    *,
    align_devices: bool = True,
) -> NumaScore:
    """Score a candidate using ``used_cpus`` (cell id -> CPUs taken there; cells with 0 CPUs
    but memory count too, so list every cell used) and ``device_cells`` (the cell of each PCI
    device taken, ``None`` for one under the compute node). ``align_devices`` false (
    ``topology_policy=none``): alignment is reported but not ranked."""
    cells = CellSet.from_iterable(used_cpus)
    free_after: Sequence[int] = [
        free - used_cpus.get(cell, 0) for cell, free in sorted(host.free_cpus.items())
    ]
    placed = [c for c in device_cells if c is not None]
    every = CellSet.from_iterable([*used_cpus, *placed]) if placed else cells
    aligned = all(c is not None and c in used_cpus for c in device_cells)
    return NumaScore(
        cells,
        width(cells),
        average_distance(every, host.distances),
        spread(free_after),
        tuple(device_cells),
        aligned,
        align_devices,
    )


def rank_key(numa: NumaScore, *, prefer_closest: bool = True) -> tuple[object, ...]:
    """The sort key of rules 1-5 (smaller is better). Rule 1's flag leads the key only for a
    candidate with devices (every candidate of one query has them or none has), so the keys of
    device-less queries keep the width first, as ``rank_bound`` reads them."""
    unaligned = numa.rank_alignment and not numa.aligned
    head: tuple[object, ...] = ((1 if unaligned else 0),) if numa.device_cells else ()
    return head + (
        numa.width,
        round(numa.average_distance, 9) if prefer_closest else 0.0,
        round(numa.spread, 9),
        numa.cells.tie_break_key(),
    )
