"""Stranded capacity and fragmentation of the fleet for a catalogue of flavors (issue 31).

Definitions (``doc/source/numa/capacity.rst``, "Stranded capacity"):

* a NUMA cell's free ``PCPU``, ``VCPU`` and ``MEMORY_MB`` (its page-size children's) are
  **stranded** when no flavor of the catalogue has a candidate taking from that cell now
  (``FlavorCapacity.usable``: the cells of every candidate of the flavor's claim search); a
  compute node's own free resources (``DISK_GB``, and everything on a host not reshaped to
  NUMA) are stranded when no flavor has a candidate on that node;
* **fragmentation** of a resource class: stranded free / free, over the hosts in scope (0
  when nothing is free): the share of the free ``PCPU`` that sits on cells none of the
  catalogue's flavors can use, for example.

Free is ``capacity - used`` (units of the class: CPUs, MiB, GiB).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from placement_numa.domain.numa_tree import HW_NUMA_ROOT
from placement_numa.engine import FleetSnapshot
from placement_numa.services.capacity import FlavorCapacity

__all__ = ["Stranded", "stranded"]

CLASSES = ("PCPU", "VCPU", "MEMORY_MB", "DISK_GB")


@dataclass(frozen=True)
class Stranded:
    """Per resource class: ``free`` over the hosts, the ``stranded`` part of it, and
    ``fragmentation`` (stranded / free; 0.0 when nothing is free); ``places``: the stranded
    amounts per host and cell (``(root, cell)`` provider indices; ``cell`` is the root for
    what sits outside any cell), only where something is stranded."""

    free: dict[str, int]
    stranded: dict[str, int]
    # (root index, cell index or the root's when outside any cell) -> stranded per class
    places: dict[tuple[int, int], dict[str, int]] = field(default_factory=dict)

    @property
    def fragmentation(self) -> dict[str, float]:
        """``stranded / free`` per class."""
        return {rc: (self.stranded[rc] / f if f > 0 else 0.0) for rc, f in self.free.items()}

    def as_json(self) -> dict[str, object]:
        """``{"free": {...}, "stranded": {...}, "fragmentation": {...}}``."""
        return {
            "free": dict(self.free),
            "stranded": dict(self.stranded),
            "fragmentation": {rc: round(v, 6) for rc, v in self.fragmentation.items()},
        }


def _owner(fleet: FleetSnapshot, provider: int) -> int:
    """The cell at or above ``provider``, else its root."""
    for a in fleet.ancestors(provider):
        if HW_NUMA_ROOT in fleet.providers[a].traits:
            return a
    return fleet.providers[provider].root


def stranded(
    fleet: FleetSnapshot, roots: Sequence[int], catalogue: Sequence[FlavorCapacity]
) -> Stranded:
    """The stranded capacity of the hosts ``roots`` (indices of ``fleet``) for the flavors of
    ``catalogue`` (their capacity answers on the same snapshot; see the module docstring)."""
    usable: set[int] = set()
    for flavor in catalogue:
        usable |= flavor.usable
    free = dict.fromkeys(CLASSES, 0)
    lost = dict.fromkeys(CLASSES, 0)
    places: dict[tuple[int, int], dict[str, int]] = {}
    providers = fleet.providers
    for root in roots:
        for i in fleet.tree.get(root, ()):
            inventories = providers[i].inventories
            owner = None
            for rc in CLASSES:
                if rc not in inventories:
                    continue
                amount = max(0, inventories[rc].free)
                free[rc] += amount
                owner = _owner(fleet, i) if owner is None else owner
                if owner not in usable:
                    lost[rc] += amount
                    if amount:
                        place = places.setdefault((root, owner), {})
                        place[rc] = place.get(rc, 0) + amount
    return Stranded(free, lost, places)
