"""The fleet as the candidate search sees it: an immutable in-memory snapshot.

A ``FleetSnapshot`` holds, per resource provider: its parent and root, depth, traits, aggregates
and per resource class inventory with usage. It is built once from plain rows (the SQL loader lives
in ``placement_numa.db.repositories.fleet``) and tagged with the ``placement_revision`` it reflects;
when the revision moves, the engine derives a new snapshot with the touched trees replaced
(``engine.fleet_patch``; design notes: "fleet state in memory, always fresh"). Nothing here
imports SQLAlchemy or FastAPI.

Providers are addressed by a dense index (``0..n-1``, in database id order), so the search works
on small integers; uuids are only used at the edges. Patched snapshots keep indices stable (new
providers are appended; deleted ones leave unreachable entries).

Providers and their inventories are ``engine/providers.py``'s; capacity follows Placement
(``domain.inventory.capacity``): ``int((total - reserved) * allocation_ratio)``, free is
``capacity - used``; a request of ``amount`` fits one inventory when ``min_unit <= amount <=
max_unit``, ``amount % step_size == 0`` and ``used + amount <= capacity``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import islice
from typing import Any, cast

import numpy

from placement_numa.engine.fleet_rows import build_infos, chain_of, set_depths
from placement_numa.engine.patch_log import LineageChanges, changes_since
from placement_numa.engine.providers import (
    SHARING_TRAIT,
    InventoryTuple,
    InventoryUsage,
    ProviderInfo,
    ProviderTuple,
)

__all__ = [
    "InventoryUsage",
    "ProviderInfo",
    "FleetSnapshot",
    "LineageChanges",
    "ProviderTuple",
    "InventoryTuple",
    "SHARING_TRAIT",
    "fits_summed",
]


def fits_summed(
    inventories: Mapping[str, InventoryUsage],
    consumption: Mapping[tuple[int, str], int],
    provider: int,
    resources: Iterable[tuple[str, int]],
) -> bool:
    """The search's capacity check (``engine/search.py``; the rank bound's too): whether
    ``resources`` (``(resource class, amount)``) still fit on ``provider`` (index; its
    ``inventories``) on top of what ``consumption`` (``(provider, class) -> amount`` already
    assigned) holds there: the summed amount at most ``max_unit`` and ``used + sum <=
    capacity`` per class, as Placement checks amounts of ``group_policy=none`` groups summed
    on one provider. (Each single amount's ``min_unit``/``step_size`` is checked where the
    options are found.)"""
    for rc, amount in resources:
        total = consumption.get((provider, rc), 0) + amount
        inventory = inventories[rc]
        if total > inventory.max_unit or inventory.used + total > inventory.capacity:
            return False
    return True


class FleetSnapshot:
    """All providers at one ``revision``, indexed for the candidate search.

    * ``providers[i]``: ``ProviderInfo`` (dense index, database id order). After an incremental
      refresh (``replace_trees``) the list may hold entries of deleted providers; they are in no
      other index (``index_by_uuid``, ``tree``, ``roots``...), so nothing reaches them;
    * ``index_by_uuid`` / ``index_by_id``;
    * ``roots``: root indices in id order; ``tree[root]``: that tree's provider indices, id order;
    * ``sharing_anchors[i]``: for a provider with ``MISC_SHARES_VIA_AGGREGATE`` that is in some
      aggregate, the roots of every tree holding a provider in one of its aggregates (its own
      tree included), as Placement's ``anchors_for_sharing_providers``;
    * ``has_trees``: whether any provider has a parent (pre-1.29 responses depend on it);
    * ``uuids[i]``: provider uuids; ``chains[i]``: ``i`` and its ancestors, nearest first;
    * ``root_profiles[root]``: equal for roots whose trees are alike member by member (shape,
      traits, aggregates, inventories, usage), so a search can replay one tree's answer;
    * ``shape_profiles[root]``: the same but for room: trees alike in shape, traits,
      aggregates and per class ``min_unit``/``step_size``; with ``room_column`` a search tells
      which of them answer a query alike (``engine/replay.py``);
    * ``answer_memo``: the search's answers per (query, tree profile), kept across searches
      and shared, like the profile id tables, by every snapshot patched from one full build.
    """

    # profile keys -> ids, shared by the snapshots patched from one full build (append-only;
    # ids are content keys, so equal ids mean equal trees in any of those snapshots)
    _provider_profile_ids: dict[tuple[object, ...], int]
    _root_profile_ids: dict[tuple[object, ...], int]
    _provider_shape_ids: dict[tuple[object, ...], int]
    _root_shape_ids: dict[tuple[object, ...], int]

    def __init__(self, revision: int, providers: list[ProviderInfo]) -> None:
        self.revision = revision
        self.patched_from: int | None = None  # revision of the snapshot this one patched
        # set once ``replace_trees(owned=True)`` started patching this snapshot's indexes in
        # place for its successor: it must not be used any more
        self.handed_over = False
        self.providers = providers
        # names known to the database (``None``: not checked), set by the loader
        self.resource_class_names: frozenset[str] | None = None
        self.trait_names: frozenset[str] | None = None
        # trait name -> database id: provider summaries list traits in id order, as Placement's
        # (``None``: by name)
        self.trait_order: dict[str, int] | None = None
        self.index_by_uuid = {p.uuid: p.index for p in providers}
        self.index_by_id = {p.id: p.index for p in providers}
        self.max_id = max(self.index_by_id, default=0)
        self.tree: dict[int, list[int]] = {}
        for p in providers:
            self.tree.setdefault(p.root, []).append(p.index)
        self.roots = [i for i in range(len(providers)) if providers[i].parent < 0]
        self.uuids = [p.uuid for p in providers]
        self.chains = [chain_of(providers, p.index) for p in providers]
        self.children_count = sum(1 for p in providers if p.parent >= 0)
        self.has_trees = self.children_count > 0
        # Look-alike trees: two roots with the same profile have trees that match any query the
        # same way (same shape, traits, aggregates, inventories and usage, member by member).
        self._provider_profile_ids = {}
        self._root_profile_ids = {}
        self.root_profiles: dict[int, int] = {
            root: self._root_profile(members) for root, members in self.tree.items()
        }
        # Trees alike but for room (see ``_shape_profile``)
        self._provider_shape_ids = {}
        self._root_shape_ids = {}
        self.shape_profiles: dict[int, int] = {
            root: self._shape_profile(members) for root, members in self.tree.items()
        }
        self._room_columns: dict[str, Any] = {}
        members: dict[str, set[int]] = {}
        for p in providers:
            for agg in p.aggregates:
                members.setdefault(agg, set()).add(p.index)
        self.aggregate_members = {agg: frozenset(idx) for agg, idx in members.items()}
        self.sharing = frozenset(p.index for p in providers if p.sharing)
        self.sharing_anchors: dict[int, frozenset[int]] = {}
        for i in self.sharing:
            if providers[i].aggregates:
                self.sharing_anchors[i] = self._anchors(i)
        self._index_sharing()
        # resource class -> roots_having(class), filled lazily
        self.class_roots: dict[str, frozenset[int]] = {}
        # what the refresh that made this snapshot replaced (``engine.fleet_patch``): provider
        # indices and roots whose trees changed since ``patched_from`` (empty after a full
        # build, where ``patched_from`` is ``None``); caches above key on these
        self.replaced_providers: frozenset[int] = frozenset()
        self.replaced_roots: frozenset[int] = frozenset()
        # the roots among ``replaced_roots`` whose trees changed nothing but their usage (their
        # allocations), set by the loader: what is derived from names, traits, inventories or
        # shapes of those trees alone stays as it was
        self.usage_roots: frozenset[int] = frozenset()
        # the writes since ``patched_from`` include some that touched no provider (names,
        # NUMA distances: what the change log records as ``names``), set by the loader
        self.changed_beyond_trees = False
        # answers of queries per tree profile, in member positions (``engine/replay.py``,
        # ``AnswerMemo``): content-keyed like the profile ids, so shared with the same tables
        self.answer_memo: dict[object, Any] = {}
        # roots grouped by tree shape as numpy arrays (``engine.root_classes.tree_layout``),
        # built on first use; patches that keep every tree's members and shape carry it over
        self.tree_layout: Any = None
        # what the layers above derive from snapshots, keyed by them (e.g. the NUMA host view
        # per revision): shared by every snapshot patched from one full build, like
        # ``answer_memo``, so a view of one revision can be derived for the next
        self.derived: dict[object, Any] = {}

    def _root_profile(self, members: list[int]) -> int:
        """The id of the look of a tree (``members``): equal for trees alike member by member
        (shape, traits, aggregates, inventories and usage)."""
        providers = self.providers
        profile_ids = self._provider_profile_ids
        looks = [
            profile_ids.setdefault(
                (p.traits, p.aggregates, tuple(sorted(p.inventories.items()))), len(profile_ids)
            )
            for p in (providers[m] for m in members)
        ]
        return self._tree_id(self._root_profile_ids, members, looks)

    def _shape_profile(self, members: list[int]) -> int:
        """The id of the shape of a tree (``members``): equal for trees alike member by member
        in everything but room (shape, traits, aggregates, per class ``min_unit`` and
        ``step_size``); the room per class (``room_column``) tells such trees apart."""
        providers = self.providers
        shape_ids = self._provider_shape_ids
        looks = []
        for p in (providers[m] for m in members):
            units = tuple(
                sorted((rc, inv.min_unit, inv.step_size) for rc, inv in p.inventories.items())
            )
            looks.append(shape_ids.setdefault((p.traits, p.aggregates, units), len(shape_ids)))
        return self._tree_id(self._root_shape_ids, members, looks)

    def _tree_id(
        self, ids: dict[tuple[object, ...], int], members: list[int], looks: list[int]
    ) -> int:
        where = {m: k for k, m in enumerate(members)}
        providers = self.providers
        key = (tuple(looks), tuple(where.get(providers[m].parent, -1) for m in members))
        return ids.setdefault(key, len(ids))

    def unit_kinds(self) -> tuple[tuple[str, int, int], ...]:
        """Every ``(resource class, min_unit, step_size)`` of the lineage's provider shapes
        (what a tree shape holds of its inventories besides room), sorted; read from the
        append-only table of provider shapes, kept per table size in ``derived``."""
        shapes = self._provider_shape_ids
        size = len(shapes)
        kept = self.derived.get("unit-kinds")
        if kept is not None and kept[0] == size:
            found: tuple[tuple[str, int, int], ...] = kept[1]
            return found
        units: set[tuple[str, int, int]] = set()
        for _traits, _aggregates, kinds in list(shapes):  # (traits, aggregates, units)
            units.update(cast(tuple[tuple[str, int, int], ...], kinds))
        found = tuple(sorted(units))
        self.derived["unit-kinds"] = (size, found)
        return found

    def overcommits(self, resource_class: str) -> bool:
        """Whether some provider of this lineage (this snapshot or one it was patched from)
        has had an inventory of ``resource_class`` with ``allocation_ratio`` above 1.0:
        ``False`` means no provider of this snapshot has one. Read from the append-only table
        of provider looks (every provider's inventories, as ``root_profiles`` keys them):
        only the looks added since the last call are read (newest first, kept per class in
        ``derived``), so a call costs O(looks added), and once ``True`` it stays so for the
        lineage (a full build starts a new one)."""
        looks = self._provider_profile_ids
        key = ("overcommits", resource_class)
        scanned, found = self.derived.get(key, (0, False))
        if found or len(looks) == scanned:
            return bool(found)
        size = len(looks)
        added = list(islice(reversed(looks), size - scanned))  # one C call: no insert between
        if len(looks) != size:  # a loader added looks meanwhile: read them all
            added, size = list(looks), len(looks)
        found = any(
            rc == resource_class and inventory.allocation_ratio > 1.0
            for _traits, _aggregates, inventories in added
            for rc, inventory in cast(tuple[tuple[str, InventoryUsage], ...], inventories)
        )
        self.derived[key] = (size, found)
        return found

    def room_column(self, resource_class: str) -> Any:
        """Room per provider index for ``resource_class`` as a numpy int64 array: ``min(max_unit,
        capacity - used)`` clamped to ``[-1, 2**62]``, -1 without inventory (what a summed
        request of the class must not exceed; built once per snapshot and class)."""
        column = self._room_columns.get(resource_class)
        if column is None:
            rooms = [-1] * len(self.providers)
            for index in self.index_by_uuid.values():
                inv = self.providers[index].inventories.get(resource_class)
                if inv is not None:
                    rooms[index] = max(-1, min(inv.max_unit, inv.capacity - inv.used, 2**62))
            column = self._room_columns[resource_class] = numpy.array(rooms, dtype=numpy.int64)
        return column

    def _anchors(self, sharing: int) -> frozenset[int]:
        providers = self.providers
        members = self.aggregate_members
        return frozenset(
            providers[m].root for agg in providers[sharing].aggregates for m in members[agg]
        )

    def _index_sharing(self) -> None:
        # sharing provider indices anchored at each root
        anchored: dict[int, list[int]] = {}
        for sp, anchors in self.sharing_anchors.items():
            for root in anchors:
                anchored.setdefault(root, []).append(sp)
        self.shared_into = {root: sorted(sps) for root, sps in anchored.items()}
        # roots whose candidates may also be found from another anchor (sharing providers)
        self.roots_with_sharing = frozenset(anchored) | {
            self.providers[i].root for i in self.sharing
        }

    @classmethod
    def build(
        cls,
        revision: int,
        providers: Iterable[ProviderTuple],
        inventories: Iterable[InventoryTuple] = (),
        usages: Iterable[tuple[int, str, int]] = (),
        traits: Iterable[tuple[int, str]] = (),
        aggregates: Iterable[tuple[int, str]] = (),
    ) -> FleetSnapshot:
        """Build a snapshot from plain rows keyed by provider database id.

        ``providers``: ``(id, uuid, parent_id, root_id)``; ``inventories``: ``(provider_id, rc,
        total, reserved, min_unit, max_unit, step_size, allocation_ratio)``; ``usages``:
        ``(provider_id, rc, used)`` (summed or not: amounts add up); ``traits``: ``(provider_id,
        trait name)``; ``aggregates``: ``(provider_id, aggregate uuid)``.
        """
        rows = sorted(providers, key=lambda r: r[0])
        index_of = {row[0]: i for i, row in enumerate(rows)}
        infos = build_infos(rows, index_of, inventories, usages, traits, aggregates)
        set_depths(infos, infos)
        return cls(revision, infos)

    def roots_having(self, resource_class: str) -> frozenset[int]:
        """Roots whose tree has a provider with inventory of ``resource_class``, or at which a
        sharing provider with it is anchored (computed once per snapshot and class; a refresh
        patches it for the trees it replaced)."""
        found = self.class_roots.get(resource_class)
        if found is None:
            providers = self.providers
            roots = {
                providers[i].root
                for i in self.index_by_uuid.values()
                if resource_class in providers[i].inventories
            }
            for sharing in self.sharing:
                if resource_class in providers[sharing].inventories:
                    roots |= self.sharing_anchors.get(sharing, frozenset())
            found = self.class_roots[resource_class] = frozenset(roots)
        return found

    def changes_since(self, revision: int, max_roots: int) -> LineageChanges | None:
        """What changed between this lineage's snapshot at ``revision`` and this one
        (``engine.patch_log.changes_since``: the trees replaced, those replaced for more than
        their usage, whether writes beyond trees happened), or ``None`` when unknown or more
        than ``max_roots`` trees changed. For caches derived at an older revision."""
        return changes_since(self, revision, max_roots)

    def ancestors(self, index: int) -> tuple[int, ...]:
        """``index`` and its ancestors up to the root, nearest first."""
        return self.chains[index]

    def is_ancestor_or_self(self, ancestor: int, index: int) -> bool:
        """Whether ``ancestor`` is ``index`` or one of its ancestors (indices)."""
        providers = self.providers
        depth = providers[ancestor].depth
        while providers[index].depth > depth:
            index = providers[index].parent
        return index == ancestor

    def summary_resources(self, index: int) -> Mapping[str, InventoryUsage]:
        """The inventories (with usage) of provider ``index``, by resource class."""
        return self.providers[index].inventories
