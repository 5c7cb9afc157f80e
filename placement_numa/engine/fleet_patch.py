"""A snapshot with whole trees replaced: how a refresh applies the changes since a revision.

``replace_trees`` derives the snapshot at a new revision from an old one and the rows of the
trees that changed (design notes: "applies the changes since the revision it holds"), sharing
every untouched provider and, when no provider came, went or moved, every structural index with
the old one. It publishes what it replaced (``FleetSnapshot.patched_from``,
``replaced_providers``, ``replaced_roots``) so that the layers above can keep their own caches
for the rest.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable

import numpy

from placement_numa.engine.fleet import FleetSnapshot
from placement_numa.engine.fleet_rows import build_infos, chain_of, set_depths
from placement_numa.engine.handover import movable_indexes
from placement_numa.engine.providers import InventoryTuple, ProviderInfo, ProviderTuple
from placement_numa.engine.sharing_patch import patch_sharing, share_sharing

__all__ = ["replace_trees"]


def replace_trees(
    old: FleetSnapshot,
    revision: int,
    root_ids: Iterable[int],
    providers: Iterable[ProviderTuple],
    inventories: Iterable[InventoryTuple] = (),
    usages: Iterable[tuple[int, str, int]] = (),
    traits: Iterable[tuple[int, str]] = (),
    aggregates: Iterable[tuple[int, str]] = (),
    *,
    owned: bool = False,
) -> FleetSnapshot | None:
    """A new snapshot at ``revision``: ``old`` with whole trees replaced.

    ``root_ids``: database ids of the roots whose trees (as ``old`` knows them) are dropped;
    the rows (as for ``FleetSnapshot.build``) are every provider now in a replaced tree, which
    is every provider whose tree is among ``root_ids`` now. Providers keep their index; new
    ones are appended (their ids must exceed every id known here, so index order stays id
    order); dropped providers that are not in the rows are gone (their entries stay in
    ``providers``, unreachable). Indexes over aggregates and sharing providers are patched for
    the aggregates of every provider that left or entered. Returns ``None`` when a full build
    is needed instead: a new id not above the known ones, a provider of an untouched tree in
    the rows, or profile tables grown well past the fleet (nothing changed then).

    Structure is shared: the new snapshot reuses every index a patch leaves alone. Without
    ``owned`` ``old`` is not changed (searches may still run on it): the indexes a patch
    changes (``providers``, ``root_profiles``, and the structural ones when providers came,
    went or moved) are copied, O(fleet). With ``owned`` the caller hands ``old`` over (the
    contract: ``engine.handover``): the indexes nothing but ``old`` references
    (``movable_indexes``) are patched in place and moved to the new snapshot, so the patch
    costs O(replaced trees), not O(fleet); any other is copied as without ``owned``.
    """
    # which indexes may be patched in place: checked first, before any local reference
    movable = movable_indexes(old, _PATCHED_INDEXES) if owned else frozenset()
    removed: set[int] = set()
    for root_id in root_ids:
        index = old.index_by_id.get(root_id)
        if index is not None and old.providers[index].parent < 0:
            removed.update(old.tree.get(index, ()))
    rows = sorted(providers, key=lambda r: r[0])
    index_of = _indices(old, rows, removed)
    if index_of is None or len(old._provider_profile_ids) > 4 * len(old.index_by_id) + 10000:
        return None
    infos = build_infos(rows, index_of, inventories, usages, traits, aggregates)
    loaded = {info.index for info in infos}
    # the replaced providers as ``old`` knows them (``providers`` may be patched in place)
    before = {i: old.providers[i] for i in removed}
    if movable:
        old.handed_over = True
    new = _successor(old, revision, infos, movable)
    gone = removed - loaded
    old_roots = {p.root for p in before.values()}
    same_places = not gone and len(loaded) == len(removed) and _same_places(infos, before)
    if same_places:
        new_trees = _share_structure(new, old, old_roots)
    else:
        new_trees = _restructure(new, old, infos, before, gone, old_roots, index_of, movable)
    new.root_profiles = _patched_profiles(
        old.root_profiles, "root_profiles" in movable, old_roots, new_trees, new._root_profile
    )
    shapes_before = {root: old.shape_profiles.get(root) for root in old_roots}
    _patch_shapes(new, old, old_roots, new_trees, movable)
    new.tree_layout = (
        old.tree_layout
        if same_places
        and all(new.shape_profiles.get(root) == shape for root, shape in shapes_before.items())
        else None
    )
    if same_places and all(
        info.aggregates == before[info.index].aggregates
        and info.sharing == before[info.index].sharing
        for info in infos
    ):
        share_sharing(new, old)
    else:
        patch_sharing(new, old, infos, before, loaded)
    _patch_class_roots(new, old, before, loaded, old_roots, new_trees)
    new.replaced_providers = frozenset(removed | loaded)
    new.replaced_roots = frozenset(old_roots | set(new_trees))
    return new


def _same_places(infos: list[ProviderInfo], before: dict[int, ProviderInfo]) -> bool:
    """Whether every reloaded provider is the one it was (same uuid: SQLite reuses the ids of
    deleted rows, so a deleted tree re-created may come back with its old ids) with the parent
    and root it had."""
    return all(
        info.uuid == before[info.index].uuid
        and info.parent == before[info.index].parent
        and info.root == before[info.index].root
        for info in infos
    )


def _indices(
    old: FleetSnapshot, rows: list[ProviderTuple], removed: set[int]
) -> dict[int, int] | None:
    """Index per database id of ``rows``: the old index for a replaced provider, appended
    ones for new providers; ``None`` when a full build is needed (a provider of an untouched
    tree among the rows, or a new id not above the known ones)."""
    index_of: dict[int, int] = {}
    next_index = len(old.providers)
    for row in rows:
        index = old.index_by_id.get(row[0])
        if index is not None:
            if index not in removed:
                return None  # moved out of a tree we were not told about
            index_of[row[0]] = index
        else:
            if row[0] <= old.max_id:
                return None  # an id below known ones would break id order
            index_of[row[0]] = next_index
            next_index += 1
    return index_of


def _successor(
    old: FleetSnapshot, revision: int, infos: list[ProviderInfo], movable: frozenset[str]
) -> FleetSnapshot:
    """The new snapshot with what never changes in a patch, and its ``providers``."""
    new = object.__new__(type(old))
    new.revision = revision
    new.patched_from = old.revision
    new.handed_over = False
    new.changed_beyond_trees = False
    new.usage_roots = frozenset()
    _share(new, old, _NEVER_PATCHED)
    plist = old.providers if "providers" in movable else list(old.providers)
    top = max((info.index for info in infos), default=-1) + 1
    plist.extend(infos[0] for _ in range(top - len(plist)))  # placeholders
    for info in infos:
        plist[info.index] = info
    new.providers = plist
    set_depths(plist, infos)
    return new


def _share_structure(
    new: FleetSnapshot, old: FleetSnapshot, old_roots: set[int]
) -> dict[int, list[int]]:
    """Same providers in the same places (usage, inventory, trait, aggregate changes): every
    structural index is shared with ``old``. Returns the replaced trees (root -> members)."""
    _share(new, old, _STRUCTURE)
    return {root: old.tree[root] for root in old_roots}


# what a patch never changes (names and profile tables: append-only, shared)
_NEVER_PATCHED = (
    "resource_class_names",
    "trait_names",
    "trait_order",
    "_provider_profile_ids",
    "_root_profile_ids",
    "_provider_shape_ids",
    "_root_shape_ids",
    "answer_memo",
    "derived",
)
# the structural indexes, unchanged when no provider came, went or moved
_STRUCTURE = (
    "index_by_uuid",
    "index_by_id",
    "max_id",
    "tree",
    "roots",
    "uuids",
    "chains",
    "children_count",
    "has_trees",
)


def _share(new: FleetSnapshot, old: FleetSnapshot, names: tuple[str, ...]) -> None:
    """``new`` takes ``old``'s attributes ``names`` (the same objects)."""
    for name in names:
        setattr(new, name, getattr(old, name))


def _patched_profiles(
    profiles: dict[int, int],
    in_place: bool,
    old_roots: set[int],
    new_trees: dict[int, list[int]],
    profile_of: Callable[[list[int]], int],
) -> dict[int, int]:
    """``profiles`` (root -> profile id) less ``old_roots`` plus ``new_trees``' profiles,
    patched in place when ``in_place``."""
    patched = profiles if in_place else dict(profiles)
    for root in old_roots:
        patched.pop(root, None)
    for root, members in new_trees.items():
        patched[root] = profile_of(members)
    return patched


def _patch_shapes(
    new: FleetSnapshot,
    old: FleetSnapshot,
    old_roots: set[int],
    new_trees: dict[int, list[int]],
    movable: frozenset[str],
) -> None:
    """Shape profiles of the replaced trees; room columns patched for the replaced providers
    (copied, as a search of ``old`` may still read them, unless ``old`` was handed over and
    its columns are movable: then patched in place, O(replaced providers))."""
    new.shape_profiles = _patched_profiles(
        old.shape_profiles, "shape_profiles" in movable, old_roots, new_trees, new._shape_profile
    )
    in_place = "_room_columns" in movable
    new._room_columns = old._room_columns if in_place else {}
    size = len(new.providers)
    changed = [i for members in new_trees.values() for i in members]
    for rc, column in list(old._room_columns.items()):
        if in_place and len(column) == size:
            patched = column
        else:
            patched = numpy.full(size, -1, dtype=numpy.int64)
            patched[: len(column)] = column
        for index in changed:
            inv = new.providers[index].inventories.get(rc)
            room = -1 if inv is None else min(inv.max_unit, inv.capacity - inv.used, 2**62)
            patched[index] = max(-1, room)
        new._room_columns[rc] = patched


def _patch_class_roots(
    new: FleetSnapshot,
    old: FleetSnapshot,
    before: dict[int, ProviderInfo],
    loaded: set[int],
    old_roots: set[int],
    new_trees: dict[int, list[int]],
) -> None:
    """Roots per class: the replaced trees are looked at again (all dropped when sharing
    providers changed: their anchors may have moved)."""
    plist = new.providers
    new.class_roots = {}
    if (
        new.sharing_anchors is not old.sharing_anchors
        or any(p.sharing for p in before.values())
        or any(plist[i].sharing for i in loaded)
    ):
        return
    shared_into = new.shared_into  # as in ``old``: no sharing provider changed
    for rc, roots in old.class_roots.items():
        having = {
            root
            for root, members in new_trees.items()
            if any(rc in plist[m].inventories for m in members)
            or any(rc in plist[sp].inventories for sp in shared_into.get(root, ()))
        }
        if having == (roots & old_roots) and old_roots == set(new_trees):
            new.class_roots[rc] = roots  # same trees hold the class: share the set
            continue
        new.class_roots[rc] = frozenset((set(roots) - old_roots) | having)


def _restructure(
    new: FleetSnapshot,
    old: FleetSnapshot,
    infos: list[ProviderInfo],
    before: dict[int, ProviderInfo],
    gone: set[int],
    old_roots: set[int],
    index_of: dict[int, int],
    movable: frozenset[str],
) -> dict[int, list[int]]:
    """Structural indexes of a patched snapshot (providers came, went or moved), patched in
    place when named in ``movable`` (see ``replace_trees``), else copied; ``before``: the
    replaced providers as ``old`` knows them. Returns the replaced trees (root ->
    members)."""
    plist = new.providers
    index_by_uuid = old.index_by_uuid if "index_by_uuid" in movable else dict(old.index_by_uuid)
    index_by_id = old.index_by_id if "index_by_id" in movable else dict(old.index_by_id)
    for i in gone:
        info = before[i]
        del index_by_uuid[info.uuid]
        del index_by_id[info.id]
    for info in infos:
        index_by_uuid[info.uuid] = info.index
        index_by_id[info.id] = info.index
    new.index_by_uuid = index_by_uuid
    new.index_by_id = index_by_id
    if any(before[i].id == old.max_id for i in gone):
        new.max_id = max(index_by_id, default=0)
    else:
        new.max_id = max(old.max_id, *index_of, 0)
    tree = old.tree if "tree" in movable else dict(old.tree)
    for root in old_roots:
        tree.pop(root, None)
    new_trees: dict[int, list[int]] = {}
    for info in sorted(infos, key=lambda p: p.index):
        new_trees.setdefault(info.root, []).append(info.index)
    tree.update(new_trees)
    new.tree = tree
    new.roots = _patched_roots(old.roots, old_roots, set(new_trees), "roots" in movable)
    uuids = old.uuids if "uuids" in movable else list(old.uuids)
    chains = old.chains if "chains" in movable else list(old.chains)
    uuids.extend("" for _ in range(len(plist) - len(uuids)))
    chains.extend(() for _ in range(len(plist) - len(chains)))
    for info in infos:
        uuids[info.index] = info.uuid
        chains[info.index] = chain_of(plist, info.index)
    new.uuids = uuids
    new.chains = chains
    new.children_count = (
        old.children_count
        - sum(1 for p in before.values() if p.parent >= 0)
        + sum(1 for info in infos if info.parent >= 0)
    )
    new.has_trees = new.children_count > 0
    return new_trees


# The indexes ``replace_trees`` changes, which an owned snapshot may hand over to its successor.
_PATCHED_INDEXES = (
    "providers",
    "root_profiles",
    "shape_profiles",
    "index_by_uuid",
    "index_by_id",
    "tree",
    "roots",
    "uuids",
    "chains",
    "_room_columns",
)


def _patched_roots(
    roots: list[int], dropped: set[int], added: set[int], movable: bool
) -> list[int]:
    """``roots`` (ascending) less ``dropped`` plus ``added``, in place when ``movable``."""
    if dropped == added:
        return roots
    result = roots if movable else list(roots)
    for root in sorted(dropped - added):
        position = bisect.bisect_left(result, root)
        if position < len(result) and result[position] == root:
            del result[position]
    for root in sorted(added - dropped):
        position = bisect.bisect_left(result, root)
        if position == len(result) or result[position] != root:
            result.insert(position, root)
    return result
