"""Look-alike roots as numpy columns: which roots answer a query alike, without a Python pass
per root.

``RootSearch._profile`` tells, root by root, what decides a root's answer up to renaming its
members: the tree's shape (``FleetSnapshot.shape_profiles``) and the room codes of its members
(``answers.room_codes``). A ranked search that bounds every root (``merge.merge_ranked``), and
an unranked one that reads every root or many (no limit, a limit near the fleet's size:
``snapshot_engine.CLASSIFY_SHARE``), need that for every root of the fleet, so here it is
computed for all roots at once (``RootSearch.classify_roots`` reads it):

* ``tree_layout(fleet)``: the roots grouped by shape, with their members as a 2-D array per
  shape (``roots x members``); built once per full snapshot and shared by the snapshots
  patched from it while no tree changed shape (``engine.fleet_patch`` carries it over);
* ``profile_classes(plan, codes)``: per provider index, a class id equal for two roots exactly
  when their shape and their members' room codes are equal (-1 for non-roots), computed with
  numpy gathers, kept per snapshot and query amounts (``answers.per_snapshot``);
* ``distinct(keys, top)``: ``numpy.unique(keys, return_index=True, return_inverse=True)`` for
  keys in a known range, counted in a table when the range is small (a fleet of 100,000 roots
  usually falls into a handful of classes: sorting it to find them cost ~7 ms a query).
"""

from __future__ import annotations

from typing import Any

import numpy

from placement_numa.engine.fleet import FleetSnapshot

__all__ = ["TreeLayout", "tree_layout", "profile_classes", "distinct"]

# a combined column key is re-densified before it could pass this
_KEY_LIMIT = 2**62
# ``distinct`` counts keys in a table of ``top`` slots when ``top`` is at most this many slots
# per key (plus the floor), else sorts them
_TABLE_SLOTS_PER_KEY = 8
_TABLE_FLOOR = 1 << 16


class TreeLayout:
    """The fleet's roots grouped by tree shape: ``groups`` is a list of ``(roots, members)``,
    ``roots`` an int64 array of root indices (index order) and ``members`` an int64 array of
    shape ``(tree size, len(roots))``: column ``k`` holds ``tree[roots[k]]`` (member order),
    row ``j`` every tree's ``j``-th member (contiguous: ``profile_classes`` reads a member
    position at a time, half the time of a strided column at 100,000 roots)."""

    __slots__ = ("groups", "size")

    def __init__(self, groups: list[tuple[Any, Any]], size: int) -> None:
        self.groups = groups
        self.size = size  # len(fleet.providers) when built


def tree_layout(fleet: FleetSnapshot) -> TreeLayout:
    """``fleet``'s ``TreeLayout`` (built on first use, O(providers); then kept on the snapshot
    and carried over by patches that keep every tree's members and shape)."""
    layout: TreeLayout | None = fleet.tree_layout
    if layout is not None:
        return layout
    by_shape: dict[int, tuple[list[int], list[list[int]]]] = {}
    shapes, tree = fleet.shape_profiles, fleet.tree
    for root in fleet.roots:
        entry = by_shape.get(shapes[root])
        if entry is None:
            entry = by_shape[shapes[root]] = ([], [])
        entry[0].append(root)
        entry[1].append(tree[root])
    groups = [
        (
            numpy.array(roots, dtype=numpy.int64),
            numpy.ascontiguousarray(numpy.array(members, dtype=numpy.int64).T),
        )
        for roots, members in by_shape.values()
    ]
    layout = fleet.tree_layout = TreeLayout(groups, len(fleet.providers))
    return layout


def distinct(keys: Any, top: int) -> tuple[Any, Any, Any]:
    """``(values, first, inverse)`` of ``keys``, a 1-D integer array with every key in
    ``[0, top)``: its distinct values ascending, the index of each one's first occurrence in
    ``keys`` and, per key, the position of its value in ``values`` (int64 arrays; what
    ``numpy.unique(keys, return_index=True, return_inverse=True)`` returns). Numbered as
    ``_numbered`` does. Raises ``ValueError`` when ``top`` is negative."""
    values, inverse = _numbered(keys, top)
    first = numpy.full(len(values), len(keys), dtype=numpy.int64)
    numpy.minimum.at(first, inverse, numpy.arange(len(keys), dtype=numpy.int64))
    return values, first, inverse


def _numbered(keys: Any, top: int) -> tuple[Any, Any]:
    """``(values, inverse)`` of ``keys`` (every key in ``[0, top)``): the distinct values
    ascending and, per key, the position of its value among them (int64 arrays).

    When ``top`` is small beside ``len(keys)`` (at most ``_TABLE_SLOTS_PER_KEY`` slots per key,
    or ``_TABLE_FLOOR``), the values are marked in a table of ``top`` slots: O(len(keys) + top)
    instead of a sort, about 14x faster for 100,000 keys (0.5 against 7 ms on the benchmark
    machine); else ``numpy.unique`` sorts them. Raises ``ValueError`` when ``top`` is
    negative."""
    if top < 0:
        raise ValueError(f"top must not be negative: {top}")
    if top > _TABLE_FLOOR + _TABLE_SLOTS_PER_KEY * len(keys):
        values, inverse = numpy.unique(keys, return_inverse=True)
        return values.astype(numpy.int64), inverse.astype(numpy.int64).reshape(-1)
    present = numpy.zeros(top, dtype=bool)
    present[keys] = True
    values = numpy.flatnonzero(present).astype(numpy.int64)
    position = numpy.empty(top, dtype=numpy.int64)
    position[values] = numpy.arange(len(values), dtype=numpy.int64)
    return values, position[keys]


def _dense(key: Any, top: int) -> Any:
    """``key`` (every value in ``[0, top)``) renumbered to ``0..distinct-1`` in value order
    (equal values, equal numbers)."""
    return _numbered(key, top)[1]


def profile_classes(fleet: FleetSnapshot, codes: Any) -> Any:
    """Per provider index (int32 array of ``len(fleet.providers)``): a class id, equal for two
    roots exactly when their trees have one shape and their members, position by position, the
    same ``codes`` (room codes of one query, an integer array per provider index); -1 for
    providers that are not roots. O(providers) in numpy."""
    layout = tree_layout(fleet)
    # 32 bits (fewer than 2**31 roots): half the fresh pages of a first-time query
    classes = numpy.full(len(fleet.providers), -1, dtype=numpy.int32)
    offset = 0
    for roots, members in layout.groups:
        key = numpy.zeros(len(roots), dtype=numpy.int64)
        top = 1  # key < top
        for position in members:
            values = codes.take(position)
            low = int(values.min()) if len(values) else 0
            spread = int(values.max()) - low + 1 if len(values) else 1
            if spread == 1:  # every tree's member has one code here: it tells none apart
                continue
            if low:
                values = values - low
            if top * spread >= _KEY_LIMIT:
                key = _dense(key, top)
                top = int(key.max()) + 1
            key = key * spread + values
            top *= spread
        dense = _dense(key, top)
        classes[roots] = dense + offset
        offset += int(dense.max()) + 1 if len(dense) else 0
    return classes
