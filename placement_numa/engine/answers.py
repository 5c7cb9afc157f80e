"""What searches keep for later searches: answers per tree profile, room codes, replayed roots.

A root's answer to a query depends only on its tree's profile (``FleetSnapshot.shape_profiles``
plus the room codes of its members, or ``root_profiles``): ``memo_of`` keeps answers per
(query, profile) in member positions in ``FleetSnapshot.answer_memo``, valid in every snapshot
sharing the profile tables (patched from one full build). ``room_codes`` tells which rooms
admit the same sums of a query's amounts, once per snapshot; ``per_snapshot`` holds what is
valid for one snapshot only (the codes, each root's replayed candidates).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy

from placement_numa.engine.fleet import FleetSnapshot
from placement_numa.engine.plan import QueryPlan

__all__ = [
    "MAX_SUMS",
    "amounts_key",
    "memo_of",
    "per_snapshot",
    "query_key",
    "room_code_array",
    "room_codes",
]

# room codes are given up for a class whose amounts add up in more ways than this
MAX_SUMS = 64
# taken to add a query or a snapshot to the dicts below (look-ups take no lock)
_LOCK = threading.Lock()
# queries whose answers per profile ``FleetSnapshot.answer_memo`` keeps (oldest dropped first)
MAX_MEMO_QUERIES = 64
# per snapshot: room codes per sorted amounts (``room_codes``) and replayed candidates per
# (query, ...) and root (``RootSearch.replayed``), built once per snapshot
_PER_SNAPSHOT: weakref.WeakKeyDictionary[FleetSnapshot, dict[object, Any]] = (
    weakref.WeakKeyDictionary()
)
# up to this many sums of a class, a room's code is counted with one numpy compare per sum (a
# binary search per room, ``searchsorted``, costs more over a fleet's worth of rooms)
FEW_LEVELS = 8
# amounts whose room codes a snapshot lineage keeps for the next snapshot (oldest dropped first)
MAX_LINEAGE_CODES = 8
# queries whose replayed candidates per root a snapshot keeps (all dropped past it)
MAX_SNAPSHOT_QUERIES = 32


def per_snapshot(fleet: FleetSnapshot, key: object) -> dict[Any, Any]:
    """A dict kept as long as ``fleet`` lives, one per ``key`` (for values computed from that
    snapshot only); at most ``MAX_SNAPSHOT_QUERIES`` keys, all dropped past it."""
    kept = _PER_SNAPSHOT.get(fleet)
    found: dict[Any, Any] | None = None if kept is None else kept.get(key)
    if found is None:
        with _LOCK:
            kept = _PER_SNAPSHOT.get(fleet)
            if kept is None:
                kept = _PER_SNAPSHOT[fleet] = {}
            if len(kept) >= MAX_SNAPSHOT_QUERIES:
                kept.clear()
            found = kept.setdefault(key, {})
    return found


def query_key(plan: QueryPlan) -> tuple[object, ...]:
    """What decides a root's answer to ``plan`` besides its tree (everything of the query but
    ``limit``), hashable."""
    query = plan.query
    groups = tuple(
        (
            g.suffix,
            tuple(sorted(g.resources.items())),
            g.required_traits,
            g.any_traits,
            g.forbidden_traits,
            g.member_of,
            g.forbidden_aggregates,
            g.in_tree,
        )
        for g in query.groups
    )
    return (groups, query.group_policy, query.same_subtree)


def memo_of(plan: QueryPlan) -> tuple[dict[object, Any], dict[object, Any]]:
    """``(bases, expanded)``: answers of ``plan``'s query per tree profile in member positions
    (one per ordering class / every ordering), kept in ``fleet.answer_memo`` across searches.

    A profile (tree shape and room codes, or exact look) is a content key valid in every
    snapshot sharing the profile tables, so an answer recorded once serves later searches and
    later snapshots alike. Entries are written whole (one dict store) and never changed, so
    concurrent searches may share them."""
    memo = plan.fleet.answer_memo
    key = query_key(plan)
    found = memo.get(key)
    if found is None:
        with _LOCK:  # searches run in several threads: no insertion while the oldest is found
            if len(memo) >= MAX_MEMO_QUERIES:
                memo.pop(next(iter(memo)), None)
            found = memo.setdefault(key, ({}, {}))
    bases: dict[object, Any] = found[0]
    expanded: dict[object, Any] = found[1]
    return bases, expanded


def room_codes(plan: QueryPlan) -> list[int] | None:
    """Per provider index, one small integer telling what its room admits of this query.

    A provider's consumption of a class is a sum of some of the amounts the plan's slots ask
    of it, and it fits exactly when that sum is at most the provider's room (``min(max_unit,
    capacity - used)``). Two providers whose rooms admit the same subset sums for every
    requested class (``searchsorted`` over the sorted sums) behave alike in every check of the
    search, so trees of one shape (``FleetSnapshot.shape_profiles``) whose members have the
    same codes have the same answer up to renaming (the snapshot's room columns, vectorised).
    ``None`` when some class's amounts add up in more than ``MAX_SUMS`` ways. A new list each
    call, O(providers): the search reads ``room_code_array``.
    """
    found = _codes(plan)
    return None if found is None else found.tolist()


def amounts_key(plan: QueryPlan) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """The plan's requested amounts per class, sorted: what its room codes depend on."""
    amounts: dict[str, list[int]] = {}
    for slot in plan.slots:
        for rc, amount in slot.resources:
            amounts.setdefault(rc, []).append(amount)
    return tuple((rc, tuple(sorted(amounts[rc]))) for rc in sorted(amounts))


def room_code_array(plan: QueryPlan) -> Any:
    """``room_codes`` as an int64 numpy array (or ``None``), kept per snapshot and amounts."""
    return _codes(plan)


def _codes(plan: QueryPlan) -> Any:
    """``room_codes`` as an int64 array (``None``: no codes), once per snapshot and amounts:
    derived from the codes of the snapshot this one was patched from when the lineage kept
    them (only the providers of the replaced trees coded again), else computed for every
    provider."""
    key = amounts_key(plan)
    fleet = plan.fleet
    kept = per_snapshot(fleet, "codes")
    if key in kept:
        return kept[key]
    amounts = {rc: list(a) for rc, a in key}
    lineage: dict[object, Any] = fleet.derived.setdefault("room-codes", {})
    base = lineage.get(key)
    if base is not None and base[0] == fleet.patched_from and base[1] is not None:
        found = _patched_codes(fleet, amounts, base[1])
    else:
        found = _room_codes(fleet, amounts)
    kept[key] = found
    with _LOCK:
        lineage.pop(key, None)
        if len(lineage) >= MAX_LINEAGE_CODES:
            lineage.pop(next(iter(lineage)), None)
        lineage[key] = (fleet.revision, found)
    return found


def _patched_codes(fleet: FleetSnapshot, amounts: dict[str, list[int]], array: Any) -> Any:
    """The codes of ``fleet`` from ``array``, those of the snapshot it was patched from: the
    replaced and the new providers coded again."""
    size = len(fleet.providers)
    changed = sorted(
        {i for i in fleet.replaced_providers if i < size} | set(range(len(array), size))
    )
    codes = numpy.zeros(size, dtype=numpy.int64)
    codes[: min(size, len(array))] = array[:size]
    fresh = _room_codes(fleet, amounts, numpy.array(changed, dtype=numpy.int64))
    if fresh is None:
        return None
    codes[changed] = fresh
    return codes


def _room_codes(fleet: FleetSnapshot, amounts: dict[str, list[int]], indices: Any = None) -> Any:
    """``room_codes`` computed as an int64 array (see there), of the providers ``indices`` (an
    int64 array; ``None``: every provider)."""
    size = len(fleet.providers) if indices is None else len(indices)
    codes = numpy.zeros(size, dtype=numpy.int64)
    span = 1
    for rc in sorted(amounts):
        sums = {0}
        for amount in amounts[rc]:
            sums |= {s + amount for s in sums}
            if len(sums) > MAX_SUMS:
                return None
        levels = numpy.array(sorted(sums - {0}), dtype=numpy.int64)
        span *= len(levels) + 1
        if span > 2**40:
            return None
        column = fleet.room_column(rc)
        rooms = column if indices is None else column[indices]
        codes *= len(levels) + 1
        if len(levels) <= FEW_LEVELS:  # levels at or under each room, one compare per level
            for level in levels.tolist():
                codes += rooms >= level
        else:
            codes += numpy.searchsorted(levels, rooms, side="right")
    return codes
