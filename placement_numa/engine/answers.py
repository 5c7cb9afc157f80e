"""What searches keep for later searches: answers per tree profile, room codes, replayed roots.

A root's answer to a query depends only on its tree's profile (``FleetSnapshot.shape_profiles``
plus the room codes of its members, or ``root_profiles``): ``memo_of`` keeps answers per
(query, profile) in member positions in ``FleetSnapshot.answer_memo``, valid in every snapshot
sharing the profile tables (patched from one full build). ``room_codes`` tells which rooms
admit the same sums of a query's amounts, once per snapshot, coded a block of providers at a
time as searches read them (``RoomCodes``); ``per_snapshot`` holds what is
valid for one snapshot only (the codes, each root's replayed candidates); ``root_answers``
starts a patched snapshot's replayed candidates from its predecessor's, but for the trees the
patch replaced.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable
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
    "root_answers",
    "room_code_array",
    "room_codes",
    "lazy_room_codes",
    "RoomCodes",
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
# query amounts whose room codes, or root classes, a snapshot keeps (all dropped past it)
MAX_SNAPSHOT_AMOUNTS = 32


def per_snapshot(
    fleet: FleetSnapshot, key: object, start: Callable[[], dict[Any, Any]] = dict
) -> dict[Any, Any]:
    """A dict kept as long as ``fleet`` lives, one per ``key`` (for values computed from that
    snapshot only), made by ``start`` (called under the module's lock); at most
    ``MAX_SNAPSHOT_QUERIES`` keys, all dropped past it."""
    kept = _PER_SNAPSHOT.get(fleet)
    found: dict[Any, Any] | None = None if kept is None else kept.get(key)
    if found is None:
        with _LOCK:
            kept = _PER_SNAPSHOT.get(fleet)
            if kept is None:
                kept = _PER_SNAPSHOT[fleet] = {}
            found = kept.get(key)
            if found is None:
                found = _bounded_put(kept, key, start(), MAX_SNAPSHOT_QUERIES)
    return found


def keep_per_amounts(kept: dict[Any, Any], key: object, value: Any) -> Any:
    """``value`` stored in ``kept`` (a ``per_snapshot`` table keyed by query amounts: room
    codes, root classes) under ``key``, and returned; the table starts over past
    ``MAX_SNAPSHOT_AMOUNTS`` entries (a quiet fleet asked one size after another would keep an
    array of a value per provider for each). Raises nothing."""
    with _LOCK:
        return _bounded_put(kept, key, value, MAX_SNAPSHOT_AMOUNTS)


def _bounded_put(table: dict[Any, Any], key: object, value: Any, bound: int) -> Any:
    """``table[key] = value`` after dropping every entry when ``table`` holds ``bound`` or
    more; ``value`` returned. The caller holds ``_LOCK``."""
    if len(table) >= bound:
        table.clear()
    table[key] = value
    return value


def root_answers(fleet: FleetSnapshot, key: object) -> dict[int, Any]:
    """Each root's replayed candidates in ``fleet`` for the query ``key`` (a list or a
    ``ReplayedRun``: ``RootSearch.replayed``, ``replayed_run``; kept per snapshot), started
    from the previous snapshot's when ``fleet`` was patched from the one that kept them last:
    all but the roots of the replaced trees and those a sharing provider is anchored at. A
    claim changes one tree; the answers of the others stay (issue 30: a query right after a
    claim). Nothing is carried over a full load or a write beyond trees
    (``FleetSnapshot.changed_beyond_trees``)."""
    lineage: dict[object, tuple[int, dict[int, Any]]] = fleet.derived.setdefault("root-answers", {})

    def start() -> dict[int, Any]:  # under _LOCK
        base = lineage.pop(key, None)
        found: dict[int, Any] = {}
        if (
            base is not None
            and fleet.patched_from is not None
            and base[0] == fleet.patched_from
            and not fleet.changed_beyond_trees
        ):
            # a copy first (one C call): searches of the older snapshot may add roots to it
            replaced, shared = fleet.replaced_roots, fleet.shared_into
            found = {
                root: answer
                for root, answer in dict(base[1]).items()
                if root not in replaced and root not in shared
            }
        # an entry older than the snapshot this one was patched from can never be carried
        # again (one step at a time): dropped, so the lineage keeps no retired snapshot's
        # answers alive
        oldest = fleet.revision if fleet.patched_from is None else fleet.patched_from
        for stale in [k for k, (revision, _) in lineage.items() if revision < oldest]:
            del lineage[stale]
        if len(lineage) >= MAX_SNAPSHOT_QUERIES:
            lineage.pop(next(iter(lineage)), None)
        lineage[key] = (fleet.revision, found)
        return found

    return per_snapshot(fleet, key, start)


def query_key(plan: QueryPlan, *, amounts: bool = True) -> tuple[object, ...]:
    """What decides a root's answer to ``plan`` besides its tree (everything of the query but
    ``limit``), hashable; ``amounts=False``: the resource classes of each group without their
    amounts (``amount_patterns.pattern_key`` adds what of the amounts matters)."""
    query = plan.query
    groups = tuple(
        (
            g.suffix,
            tuple(sorted(g.resources.items())) if amounts else tuple(sorted(g.resources)),
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
    call, O(providers): the search reads ``lazy_room_codes``.
    """
    found = room_code_array(plan)
    return None if found is None else found.tolist()


def amounts_key(plan: QueryPlan) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """The plan's requested amounts per class, sorted: what its room codes depend on."""
    amounts: dict[str, list[int]] = {}
    for slot in plan.slots:
        for rc, amount in slot.resources:
            amounts.setdefault(rc, []).append(amount)
    return tuple((rc, tuple(sorted(amounts[rc]))) for rc in sorted(amounts))


def room_code_array(plan: QueryPlan) -> Any:
    """``room_codes`` as an integer numpy array (int32 when the codes fit, else int64; or
    ``None``), kept per snapshot and amounts."""
    found = lazy_room_codes(plan)
    return None if found is None else found.whole(plan.fleet)


def lazy_room_codes(plan: QueryPlan) -> RoomCodes | None:
    """``plan``'s room codes as a ``RoomCodes`` (``None``: no codes, some class's amounts add
    up in more than ``MAX_SUMS`` ways), once per snapshot and amounts, coded a block of
    providers at a time as searches read them: derived from the codes of the snapshot this one
    was patched from when the lineage kept them (the blocks coded there are copied, those of
    the replaced and new providers coded again)."""
    key = amounts_key(plan)
    fleet = plan.fleet
    kept = per_snapshot(fleet, "codes")
    if key in kept:
        found: RoomCodes | None = kept[key]
        return found
    levels = _levels({rc: list(a) for rc, a in key})
    if levels is None:
        keep_per_amounts(kept, key, None)
        return None
    lineage: dict[object, Any] = fleet.derived.setdefault("room-codes", {})
    base = lineage.get(key)
    if base is not None and base[0] == fleet.patched_from:
        found = base[1].patched(fleet)
    else:
        found = RoomCodes(levels, len(fleet.providers))
    keep_per_amounts(kept, key, found)
    with _LOCK:
        lineage.pop(key, None)
        if len(lineage) >= MAX_LINEAGE_CODES:
            lineage.pop(next(iter(lineage)), None)
        lineage[key] = (fleet.revision, found)
    return found


# providers coded at a time by ``RoomCodes`` (a block is 2**BLOCK_BITS provider indices)
BLOCK_BITS = 13
# consecutive blocks ``RoomCodes`` codes in one pass (``whole``: 64 Ki providers a pass, which
# stay in the CPU's cache between the passes of each class and level)
RUN_BLOCKS = 8


class RoomCodes:
    """The room codes of one snapshot for one query's amounts (``room_codes``), coded a block
    of ``2**BLOCK_BITS`` provider indices at a time, when a search first reads a provider of
    the block: a search that stops after a few thousand roots (a ``limit``, an unranked query)
    codes those, not the 700,000 providers of a 100,000-host fleet (issue 30).

    ``of(fleet, members)``: the codes of some providers; ``whole(fleet)``: every provider's,
    an int64 array (what a ranked search that bounds every root reads). Holds no reference to
    the snapshot (it is kept in the snapshot's own tables); the caller passes the snapshot it
    was made for. Two threads may code one block at once: both write the same values."""

    __slots__ = ("levels", "array", "done", "complete", "lists")

    def __init__(self, levels: list[tuple[str, list[int]]], size: int) -> None:
        self.levels = levels  # per class (sorted): the sums its amounts add up to, ascending
        span = 1  # codes are below it
        for _, sums in levels:
            span *= len(sums) + 1
        # uninitialised: a block is read only once coded (and only its pages are touched);
        # 32 bits when the codes fit (nearly always): half the fresh pages a first-time query
        # touches (each page faulted in costs ~1 us, up to 9 us in a fresh VM: 700,000
        # providers are 1,370 pages at 64 bits)
        self.array = numpy.empty(size, dtype=numpy.int32 if span <= 2**31 else numpy.int64)
        self.done = bytearray((size >> BLOCK_BITS) + 1)  # per block: coded
        self.complete = False
        # per coded block read by ``of``: its codes as a Python list (a list index per member
        # instead of a numpy gather per tree: 0.7-1.0 against 2.0 us a tree of 7 at 100,000
        # hosts)
        self.lists: dict[int, list[int]] = {}

    def of(self, fleet: FleetSnapshot, members: list[int]) -> tuple[int, ...]:
        """The codes of the providers ``members`` (indices of ``fleet``), in order."""
        low, high = min(members) >> BLOCK_BITS, max(members) >> BLOCK_BITS
        if not self.complete:
            done = self.done
            if not done[low] or not done[high]:
                self._code(fleet, {low, high})
            if high - low > 1:  # a tree spread over blocks (patched trees get new indices)
                self._code(fleet, {m >> BLOCK_BITS for m in members})
        if low == high:
            codes = self._list(low)
            base = low << BLOCK_BITS
            return tuple([codes[m - base] for m in members])
        mask = (1 << BLOCK_BITS) - 1
        return tuple([self._list(m >> BLOCK_BITS)[m & mask] for m in members])

    def _list(self, block: int) -> list[int]:
        """The codes of the coded block ``block`` as a list (made on first use)."""
        found = self.lists.get(block)
        if found is None:
            start = block << BLOCK_BITS
            found = self.lists[block] = self.array[start : start + (1 << BLOCK_BITS)].tolist()
        return found

    def whole(self, fleet: FleetSnapshot) -> Any:
        """Every provider's code (int32 or int64 array per provider index of ``fleet``)."""
        if not self.complete:
            self._code(fleet, range(len(self.done)))
            self.complete = True
        return self.array

    def patched(self, fleet: FleetSnapshot) -> RoomCodes:
        """The codes of ``fleet``, a snapshot patched from this one's: the coded blocks copied,
        except those holding providers the patch replaced or added."""
        size = len(fleet.providers)
        fresh = RoomCodes(self.levels, size)
        done = bytes(self.done)  # read before the array: a block marked done is written
        count = min(size, len(self.array))
        fresh.array[:count] = self.array[:count]
        fresh.done[: min(len(done), len(fresh.done))] = done[: len(fresh.done)]
        for index in fleet.replaced_providers:
            if index < size:
                fresh.done[index >> BLOCK_BITS] = 0
        for block in range(count >> BLOCK_BITS, len(fresh.done)):
            fresh.done[block] = 0
        return fresh

    def _code(self, fleet: FleetSnapshot, blocks: Iterable[int]) -> None:
        """Code the blocks ``blocks`` not coded yet, up to ``RUN_BLOCKS`` consecutive ones in
        one pass."""
        size, done, array = len(self.array), self.done, self.array
        pending = sorted(block for block in blocks if not done[block])
        k = 0
        while k < len(pending):
            first = last = pending[k]
            k += 1
            while k < len(pending) and pending[k] == last + 1 and last - first + 1 < RUN_BLOCKS:
                last = pending[k]
                k += 1
            start, end = first << BLOCK_BITS, min(size, (last + 1) << BLOCK_BITS)
            if start < end:
                array[start:end] = _coded(fleet, self.levels, start, end, array.dtype)
            for block in range(first, last + 1):
                done[block] = 1


def _levels(amounts: dict[str, list[int]]) -> list[tuple[str, list[int]]] | None:
    """Per class (sorted), the positive sums of its amounts, ascending; ``None`` when some
    class's amounts add up in more than ``MAX_SUMS`` ways or the codes would pass 2**40."""
    found = []
    span = 1
    for rc in sorted(amounts):
        sums = {0}
        for amount in amounts[rc]:
            sums |= {s + amount for s in sums}
            if len(sums) > MAX_SUMS:
                return None
        levels = sorted(sums - {0})
        span *= len(levels) + 1
        if span > 2**40:
            return None
        found.append((rc, levels))
    return found


def _coded(
    fleet: FleetSnapshot, levels: list[tuple[str, list[int]]], start: int, end: int, dtype: Any
) -> Any:
    """The codes of the providers ``start`` to ``end`` (indices, ``end`` excluded) as an array
    of ``dtype`` (int32 when every code fits: ``RoomCodes``; a third less time than int64 at
    700,000 providers): per class, how many of its sums the room admits, the classes as
    digits of one number (all zeros for a query of no amounts)."""
    codes = numpy.zeros(end - start, dtype=dtype)
    for rc, sums in levels:
        rooms = fleet.room_column(rc)[start:end]
        codes *= len(sums) + 1
        if len(sums) <= FEW_LEVELS:  # sums at or under each room, one compare per level
            for level in sums:
                codes += rooms >= level
        else:
            codes += numpy.searchsorted(numpy.array(sums, dtype=numpy.int64), rooms, side="right")
    return codes
