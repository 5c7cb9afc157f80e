"""One NUMA host view per snapshot: every host's cells as ranking sees them, built once.

For a ``FleetSnapshot``, a ``CellIndex`` (cell ids, distance matrices: what SQL knows) and the
CPU classes a query counts, ``HostView`` holds per root (compute node):

* ``ids``: cell provider index -> host cell id (from the cell provider's name
  ``<host>_NUMA<id>``, else its order among the tree's ``HW_NUMA_ROOT`` providers);
* ``HostCells``: free CPUs per cell id (the classes asked) and the host's SLIT matrix, one
  object per host class, shared by the hosts of that class;
* a host class number: equal for hosts with equal free CPUs per cell id and equal distances
  (they score any cell usage alike), and a bound class (cell ids in tree order and host class:
  the rank bound's look of a host, ``NumaRanker.bound``) as an int64 column over provider
  indices, for the engine's classed bound (``engine.bounded_roots``).

It is built once per full snapshot and CPU classes (O(hosts)), then derived for every later
snapshot of the lineage by recomputing only the trees replaced since the newest kept view
(``FleetSnapshot.changes_since``, across any number of patches): their entries sit beside the
shared ones (folded in every ``MAX_CHANGED`` replaced trees), so a request after writes pays
for the trees that changed (issue 30), and a view a prefork supervisor built before forking
(``cli.prefork.warm``) serves every worker after its claims. Views are kept on the snapshot's
lineage (``FleetSnapshot.derived``, shared by snapshots patched from one full build), a few
revisions per CPU classes.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Collection
from typing import Any

import numpy
import os_traits

from placement_numa.engine.fleet import FleetSnapshot
from placement_numa.numa.cell_index import CellIndex
from placement_numa.numa.ranking import HostCells

__all__ = ["HostView", "HostEntry", "host_view"]

HW_NUMA_ROOT = os_traits.HW_NUMA_ROOT
# views kept per CPU classes (the newest revisions)
KEPT_REVISIONS = 4
# entries of replaced trees a derived view keeps beside the shared ones before folding them in
MAX_CHANGED = 4096
# rank bounds a lineage keeps (``HostView.bound_memo``) before it starts over
MAX_BOUNDS = 8192
_LOCK = threading.Lock()

# (cell provider index -> cell id, the host's cells, host class number)
HostEntry = tuple[dict[int, int], HostCells, int]


class _Tables:
    """Content-keyed numbering shared by the views of one lineage (append-only): cell
    positions and free CPUs per root profile, host classes (and one ``HostCells`` per class,
    shared by its hosts: equal free CPUs per cell id and equal distances), bound classes; and
    the rank bounds found for content keys (``HostView.bound_memo``)."""

    def __init__(self) -> None:
        self.shapes: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        self.host_classes: dict[tuple[object, ...], int] = {}
        self.host_cells: dict[int, HostCells] = {}
        self.bound_classes: dict[tuple[object, ...], int] = {}
        self.bounds: dict[tuple[object, ...], object] = {}


class HostView:
    """The NUMA host view of one snapshot, one ``CellIndex`` and one set of CPU classes (see
    the module docstring). ``host(root)``: the root's ``HostEntry``; ``bound_classes``: int64
    per provider index (-1: not a root); ``derived_from``: the revision of the view it was
    derived from (``None``: built whole)."""

    def __init__(
        self,
        fleet: FleetSnapshot,
        index: CellIndex,
        cpu_classes: tuple[str, ...],
        tables: _Tables,
        base: HostView | None = None,
        replaced: Collection[int] = (),
    ) -> None:
        self.revision = fleet.revision
        # the revision of the view this one was derived from (``None``: built whole)
        self.derived_from = None if base is None else base.revision
        self.index = index
        self.cpu_classes = cpu_classes
        self.tables = tables
        size = len(fleet.providers)
        self.bound_classes: Any = numpy.full(size, -1, dtype=numpy.int64)
        # every host's entry (built once, then shared read-only by the derived views) and the
        # entries of the trees replaced since (``None``: not a host any more)
        self.hosts: dict[int, HostEntry] = {}
        self.changed: dict[int, HostEntry | None] = {}
        if base is None:
            for root in fleet.roots:
                self._add(fleet, root, self.hosts)
            return
        self.hosts = base.hosts
        self.changed = dict(base.changed)
        self.bound_classes[: len(base.bound_classes)] = base.bound_classes[:size]
        for root in replaced:
            self.changed[root] = None
            self.bound_classes[root] = -1
            if root in fleet.tree and fleet.providers[root].parent < 0:
                self._add(fleet, root, self.changed)
        if len(self.changed) > MAX_CHANGED:  # fold them in: O(hosts), once per MAX_CHANGED
            merged = dict(self.hosts)
            for root, entry in self.changed.items():
                if entry is None:
                    merged.pop(root, None)
                else:
                    merged[root] = entry
            self.hosts, self.changed = merged, {}

    def host(self, fleet: FleetSnapshot, root: int) -> HostEntry:
        """The ``HostEntry`` of ``root`` (computed now for a root the view does not hold)."""
        changed = self.changed
        found = changed[root] if root in changed else self.hosts.get(root)
        if found is None:
            found = self._entry(fleet, root)
        return found

    def bound_memo(self) -> dict[tuple[object, ...], object]:
        """The rank bounds kept for this view's lineage and CPU classes
        (``NumaRanker.bound_of``), keyed by content (a root's ``amount_profile``, the CPUs
        its slots ask, its cell ids and host class): valid in every snapshot of the lineage,
        since host class numbers are content-keyed too. Emptied when it holds more than
        ``MAX_BOUNDS`` entries; thread-safe as a dict (a race computes a bound twice)."""
        bounds = self.tables.bounds
        if len(bounds) > MAX_BOUNDS:
            bounds.clear()
        return bounds

    def _add(self, fleet: FleetSnapshot, root: int, into: dict[int, Any]) -> None:
        entry = into[root] = self._entry(fleet, root)
        ids, _, number = entry
        key = (tuple(ids.values()), number)
        classes = self.tables.bound_classes
        found = classes.get(key)
        if found is None:
            found = classes.setdefault(key, len(classes))
        self.bound_classes[root] = found

    def _entry(self, fleet: FleetSnapshot, root: int) -> HostEntry:
        """``(ids, HostCells, host class)`` of one tree."""
        members = fleet.tree.get(root, [])
        profile = fleet.root_profiles.get(root)
        shapes = self.tables.shapes
        shape = shapes.get(profile) if profile is not None else None
        if shape is None:
            providers = fleet.providers
            positions = tuple(
                k for k, i in enumerate(members) if HW_NUMA_ROOT in providers[i].traits
            )
            frees = tuple(
                sum(providers[members[k]].free(rc) for rc in self.cpu_classes) for k in positions
            )
            shape = (positions, frees)
            if profile is not None:
                shapes[profile] = shape
        positions, frees = shape
        cell_ids, uuids = self.index.cell_ids, fleet.uuids
        ids: dict[int, int] = {}
        for order, k in enumerate(positions):
            cell = members[k]
            cell_id = cell_ids.get(uuids[cell])
            ids[cell] = cell_id if cell_id is not None else order
        free = {ids[members[k]]: f for k, f in zip(positions, frees, strict=True)}
        matrix = self.index.distances.get(uuids[root])
        frozen = (
            None
            if matrix is None
            else tuple(sorted((i, tuple(sorted(row.items()))) for i, row in matrix.items()))
        )
        key = (tuple(sorted(free.items())), frozen)
        classes = self.tables.host_classes
        number = classes.get(key)
        if number is None:
            number = classes.setdefault(key, len(classes))
        # one HostCells per host class (about 30 MiB less per view at 100,000 hosts)
        host = self.tables.host_cells.get(number)
        if host is None:
            host = self.tables.host_cells.setdefault(number, HostCells(free, matrix))
        return ids, host, number


def _built(
    fleet: FleetSnapshot,
    index: CellIndex,
    cpu_classes: tuple[str, ...],
    tables: _Tables,
    base: HostView | None,
    replaced: Collection[int],
) -> HostView:
    """A new ``HostView`` (derived from ``base`` with the trees ``replaced`` recomputed); a
    full build (a few long-lived objects per host, like the snapshot itself:
    ``engine.handover``) runs without the cyclic collector and is frozen after
    (``gc.freeze``), so that no later collection walks it again."""
    if base is not None:
        return HostView(fleet, index, cpu_classes, tables, base, replaced)
    collecting = gc.isenabled()
    gc.disable()
    try:
        view = HostView(fleet, index, cpu_classes, tables)
        gc.freeze()
    finally:
        if collecting:
            gc.enable()
    return view


def _same_index(a: CellIndex, b: CellIndex) -> bool:
    """Whether two cell indexes give every host the same cell ids and distances."""
    return a is b or (a.cell_ids == b.cell_ids and a.distances == b.distances)


def _base(
    fleet: FleetSnapshot, index: CellIndex, kept: dict[int, HostView]
) -> tuple[HostView, frozenset[int]] | None:
    """The newest kept view of an earlier revision of ``fleet``'s lineage and the trees
    replaced since (``FleetSnapshot.changes_since``: across several patches, so that a view
    built before a prefork supervisor forked serves its workers after many claims), when
    ``fleet`` can be derived from it: at most half the hosts (or ``MAX_CHANGED``) changed, and
    ``index`` is that view's or differs from it only in the changed trees (no write beyond
    trees in between)."""
    older = [revision for revision in list(kept) if revision < fleet.revision]
    if not older:
        return None
    base = kept.get(max(older))
    if base is None:
        return None
    changes = fleet.changes_since(base.revision, max(MAX_CHANGED, len(fleet.roots) // 2))
    if changes is None:
        return None
    if changes.beyond_trees and not _same_index(base.index, index):
        return None
    return base, changes.roots


def host_view(fleet: FleetSnapshot, index: CellIndex, cpu_classes: tuple[str, ...]) -> HostView:
    """The ``HostView`` of ``fleet`` under ``index`` for ``cpu_classes``: kept, derived from
    the newest kept view of an earlier revision of the lineage (the trees replaced since
    recomputed), or built (O(hosts)). Thread-safe: concurrent callers may build the same view
    twice."""
    kept: dict[int, HostView] = fleet.derived.setdefault(("numa-host-view", cpu_classes), {})
    view = kept.get(fleet.revision)
    if view is not None and _same_index(view.index, index):
        return view
    tables = fleet.derived.setdefault(("numa-host-tables", cpu_classes), _Tables())
    # same snapshot, another index: rebuilt under the new one
    found = _base(fleet, index, kept) if view is None else None
    base, replaced = found if found is not None else (None, frozenset[int]())
    view = _built(fleet, index, cpu_classes, tables, base, replaced)
    with _LOCK:
        kept[fleet.revision] = view
        while len(kept) > KEPT_REVISIONS:
            del kept[min(kept)]
    return view
