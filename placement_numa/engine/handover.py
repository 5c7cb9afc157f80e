"""Handing a fleet snapshot over to its refresh: the ownership contract, in one place.

A fleet source keeps its current snapshot in a ``SnapshotHolder``. A refresh derives the
snapshot at a newer revision from it (``engine.fleet_patch.replace_trees``, called by the
source's ``load``). Patching the old snapshot in place costs O(trees replaced), copying what the
patch changes costs O(fleet); in place is only safe when nothing else can reach the old one.

The contract:

1. ``SnapshotHolder.refresh(revision, load)`` takes the current snapshot off the holder (later
   callers wait for the holder's lock), so the holder itself no longer hands it out;
2. the holder owns it when no caller of ``snapshot()`` still holds it. Callers say they are done
   with a snapshot by dropping their reference to it (a search, the rendering of its answer, a
   request's several searches): the holder reads that from CPython's reference count, the one
   place this is done (``owned``);
3. it calls ``load(previous, owned)``, which returns the new snapshot. With ``owned`` the load
   may move the indexes nothing but ``previous`` references (``movable_indexes``: not shared
   with another snapshot still alive) into the new one, patched in place; it then sets
   ``previous.handed_over``, and ``previous`` is never used again (not even restored when the
   load fails). Without ``owned``, or for the other indexes, ``previous`` is left as it is;
4. the holder keeps the new snapshot and returns it (``full_loads``, ``patches``,
   ``patches_in_place`` count what happened).

The cyclic garbage collector: a load makes ~10 long-lived, acyclic objects per provider, so it
is disabled during the load and the result frozen (``gc.freeze``) so that no collection walks
the fleet again; a patch in place adds a few objects per tree, so those are frozen only every
``FREEZE_EVERY`` patches. Garbage is collected first, so a freeze pins none. Once a fleet is
frozen, what the collector walks is what requests make, and a request makes thousands of
short-lived containers (candidates, rendered fragments, a parsed body): the young generation is
collected every ``YOUNG_COLLECTION_THRESHOLD`` allocations instead of CPython's 700
(``young_collections``), so that a scheduler's query and claim no longer run a few young
collections each, every one walking and promoting the request's live objects.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Callable, Iterable

from placement_numa.engine.fleet import FleetSnapshot

__all__ = [
    "SnapshotHolder",
    "Load",
    "movable_indexes",
    "young_collections",
    "FREEZE_EVERY",
    "YOUNG_COLLECTION_THRESHOLD",
]

# Freeze the garbage collector's view after a full load, a patch of a copy and every
# FREEZE_EVERY patches in place.
FREEZE_EVERY = 256

# Allocations (less deallocations) of container objects between two collections of the young
# generation once a fleet is frozen (CPython's default: 700). On the 1,000-host mixed fleet a
# scheduler's boot (GET at limit=1000, then PUT) ran 3 young collections and the older ones they
# set off, 0.9 ms of its ~15 ms of server CPU (8.5 young, 3.4 ms of ~31 without a limit); at
# 20,000: 0.2 ms and under 0.1 ms (doc/source/benchmarks/numa-flavor-scale.rst, eighth pass).
YOUNG_COLLECTION_THRESHOLD = 20_000


def young_collections() -> None:
    """Collect the young generation every ``YOUNG_COLLECTION_THRESHOLD`` allocations from
    now on (process-wide, ``gc.set_threshold``), unless it is already collected more rarely;
    the older generations keep their thresholds."""
    young, *older = gc.get_threshold()
    if 0 < young < YOUNG_COLLECTION_THRESHOLD:
        gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *older)


# ``load(previous, owned) -> snapshot``: the fleet loaded whole (``previous`` None) or
# ``previous`` refreshed; ``owned``: see the module docstring (3.).
Load = Callable[[FleetSnapshot | None, bool], FleetSnapshot]


def movable_indexes(snapshot: FleetSnapshot, names: Iterable[str]) -> frozenset[str]:
    """The attributes of an owned ``snapshot`` among ``names`` whose value nothing else
    references (not shared with another snapshot), which a patch may therefore change in place
    and move to the successor. Only meaningful on a snapshot the holder owns (no other thread
    can reach it, so no one takes a new reference between this check and the patch)."""
    attributes = vars(snapshot)
    # the attribute itself and getrefcount's argument
    return frozenset(name for name in names if sys.getrefcount(attributes[name]) == 2)


class SnapshotHolder:
    """The current snapshot of one fleet source and its hand-over to refreshes (see the module
    docstring). Thread-safe; ``current`` never blocks."""

    def __init__(self) -> None:
        self._fleet: FleetSnapshot | None = None
        self._lock = threading.Lock()
        self.full_loads = 0  # counters (tests, diagnostics, metrics)
        self.patches = 0
        self.patches_in_place = 0  # patches of a snapshot the holder owned

    def current(self) -> FleetSnapshot | None:
        """The snapshot held now (``None`` before the first load or during a refresh)."""
        return self._fleet

    def refresh(self, revision: int, load: Load) -> FleetSnapshot:
        """A snapshot at ``revision`` or later: the held one when it is that recent, else the
        result of ``load`` (see the module docstring), which is then held. Raises what ``load``
        raises (the held snapshot stays unless it was handed over). The caller must hold no
        reference to the current snapshot (it would keep the hand-over from happening)."""
        with self._lock:
            if self._fleet is not None and self._fleet.revision >= revision:
                return self._fleet
            previous = self._fleet
            self._fleet = None
            # ``previous`` and getrefcount's argument: no one else can reach the snapshot
            owned = previous is not None and sys.getrefcount(previous) == 2
            previous_revision = previous.revision if previous is not None else None
            if not owned:
                # collect the garbage now: a reference cycle left by a finished request
                # (hooks holding the snapshot) may be all that keeps the snapshot, and else
                # this refresh copies O(fleet) indexes (or loads the fleet), so freezing the
                # new snapshot below pins none
                gc.collect()
                owned = previous is not None and sys.getrefcount(previous) == 2
            collecting = gc.isenabled()
            gc.disable()  # no collection walks the growing load; it is frozen below instead
            try:
                try:
                    fleet = load(previous, owned)
                except BaseException:
                    if previous is not None and not previous.handed_over:
                        self._fleet = previous  # untouched (a handed-over one may be half patched)
                    raise
                in_place = previous is not None and previous.handed_over
                del previous
                if fleet.patched_from is not None and fleet.patched_from == previous_revision:
                    self.patches += 1
                    self.patches_in_place += in_place
                else:
                    self.full_loads += 1
                self._fleet = fleet
                if fleet.patched_from is None or not in_place or self.patches % FREEZE_EVERY == 0:
                    if in_place:
                        gc.collect()  # a young collection: the fleet itself is still frozen
                    gc.unfreeze()
                    gc.freeze()
                young_collections()
                return fleet
            finally:
                if collecting:
                    gc.enable()  # after the freeze: no young collection walks the load
