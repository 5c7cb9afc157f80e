"""The patch log of a snapshot lineage: which trees changed between two of its revisions.

A refresh publishes what it replaced since the snapshot it patched (``FleetSnapshot``:
``patched_from``, ``replaced_roots``, ``usage_roots``, ``changed_beyond_trees``). A cache of a
layer above that was derived at an older revision of the lineage (the NUMA host view and cell
index a prefork supervisor built before forking, then a hundred claims later the first flavor
query of a worker) needs what changed across several patches: ``changes_since`` unions them.

The log lives in the lineage's ``derived`` dict (shared by every snapshot patched from one full
build; a full load starts a new lineage and a new log), one entry per patch, the newest
``MAX_PATCHES`` kept. The fleet source records each patch once it is complete
(``record_patch``, after the loader set ``usage_roots`` and ``changed_beyond_trees``); a patch
not recorded (another source) ends the walk, and callers rebuild as after a full load.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

__all__ = ["LineageChanges", "record_patch", "changes_since", "MAX_PATCHES"]

# patches kept per lineage (a few small frozensets each: a claim replaces one tree)
MAX_PATCHES = 4096
_LOG_KEY = "patch-log"


class LineageChanges(NamedTuple):
    """What changed between two revisions of one lineage.

    * ``roots``: root indices of every tree replaced by a patch in between;
    * ``reread``: those of them replaced by at least one patch for more than their usage
      (allocations): what is derived from names, traits, inventories or shapes is stale there
      only;
    * ``beyond_trees``: a patch in between recorded writes that touched no provider (names,
      NUMA distances)."""

    roots: frozenset[int]
    reread: frozenset[int]
    beyond_trees: bool


class PatchedSnapshot(Protocol):
    """What the log reads of an ``engine.fleet.FleetSnapshot`` (which imports this module,
    so it is not imported here)."""

    revision: int
    patched_from: int | None
    replaced_roots: frozenset[int]
    usage_roots: frozenset[int]
    changed_beyond_trees: bool
    derived: dict[object, Any]


# revision -> (patched_from, replaced_roots, usage_roots, changed_beyond_trees)
_Entry = tuple[int, frozenset[int], frozenset[int], bool]


def _entry(fleet: PatchedSnapshot) -> _Entry | None:
    """The log entry of the patch that made ``fleet`` (``None`` after a full build)."""
    if fleet.patched_from is None:
        return None
    return (
        fleet.patched_from,
        fleet.replaced_roots,
        fleet.usage_roots,
        fleet.changed_beyond_trees,
    )


def record_patch(fleet: PatchedSnapshot) -> None:
    """Record the patch that made ``fleet`` (nothing for a full build) in its lineage's log,
    dropping the oldest entries past ``MAX_PATCHES``. Called by the one thread that refreshes
    the lineage (``engine.handover``'s holder lock)."""
    entry = _entry(fleet)
    if entry is None:
        return
    log: dict[int, _Entry] = fleet.derived.setdefault(_LOG_KEY, {})
    log[fleet.revision] = entry
    while len(log) > MAX_PATCHES:
        del log[next(iter(log))]


def changes_since(fleet: PatchedSnapshot, revision: int, max_roots: int) -> LineageChanges | None:
    """What changed between the snapshot of ``fleet``'s lineage at ``revision`` and ``fleet``
    (the union of the patches in between, walked back from ``fleet`` through the log), or
    ``None`` when unknown: ``revision`` is not an earlier revision of the lineage, a patch in
    between was not recorded (or dropped), or more than ``max_roots`` trees changed (a caller
    then rebuilds what it derived). Cost: O(patches in between)."""
    if revision == fleet.revision:
        return LineageChanges(frozenset(), frozenset(), False)
    log: dict[int, _Entry] = fleet.derived.get(_LOG_KEY, {})
    roots: set[int] = set()
    reread: set[int] = set()
    beyond = False
    at = fleet.revision
    while at != revision:
        # the last patch is read off the snapshot itself (recorded or not)
        entry = _entry(fleet) if at == fleet.revision else log.get(at)
        if entry is None or entry[0] < revision:
            return None
        at, replaced, usage, changed_beyond = entry
        roots |= replaced
        reread |= replaced - usage
        beyond = beyond or changed_beyond
        if len(roots) > max_roots:
            return None
    return LineageChanges(frozenset(roots), frozenset(reread), beyond)
