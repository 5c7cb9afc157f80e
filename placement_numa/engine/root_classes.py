"""Look-alike roots as numpy columns: which roots answer a query alike, without a Python pass
per root.

``RootSearch._profile`` tells, root by root, what decides a root's answer up to renaming its
members: the tree's shape (``FleetSnapshot.shape_profiles``) and the room codes of its members
(``answers.room_codes``). A ranked search that bounds every root (``merge.merge_ranked``) needs
that for every root of the fleet, so here it is computed for all roots at once:

* ``tree_layout(fleet)``: the roots grouped by shape, with their members as a 2-D array per
  shape (``roots x members``); built once per full snapshot and shared by the snapshots
  patched from it while no tree changed shape (``engine.fleet_patch`` carries it over);
* ``profile_classes(plan, codes)``: per provider index, a class id equal for two roots exactly
  when their shape and their members' room codes are equal (-1 for non-roots), computed with
  numpy gathers, kept per snapshot and query amounts (``answers.per_snapshot``).
"""

from __future__ import annotations

from typing import Any

import numpy

from placement_numa.engine.fleet import FleetSnapshot

__all__ = ["TreeLayout", "tree_layout", "profile_classes"]

# a combined column key is re-densified before it could pass this
_KEY_LIMIT = 2**62


class TreeLayout:
    """The fleet's roots grouped by tree shape: ``groups`` is a list of ``(roots, members)``,
    ``roots`` an int64 array of root indices (index order) and ``members`` an int64 array of
    shape ``(len(roots), tree size)``: row ``k`` holds ``tree[roots[k]]`` (member order)."""

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
        (numpy.array(roots, dtype=numpy.int64), numpy.array(members, dtype=numpy.int64))
        for roots, members in by_shape.values()
    ]
    layout = fleet.tree_layout = TreeLayout(groups, len(fleet.providers))
    return layout


def _dense(key: Any) -> Any:
    """``key`` renumbered to ``0..distinct-1`` (equal values, equal numbers)."""
    return numpy.unique(key, return_inverse=True)[1].astype(numpy.int64).reshape(-1)


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
        for column in range(members.shape[1]):
            values = codes[members[:, column]]
            spread = int(values.max()) + 1 if len(values) else 1
            if top * spread >= _KEY_LIMIT:
                key = _dense(key)
                top = int(key.max()) + 1
            key = key * spread + values
            top *= spread
        dense = _dense(key)
        classes[roots] = dense + offset
        offset += int(dense.max()) + 1 if len(dense) else 0
    return classes
