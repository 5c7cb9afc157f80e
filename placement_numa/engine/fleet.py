"""The fleet as the candidate search sees it: an immutable in-memory snapshot.

A ``FleetSnapshot`` holds, per resource provider: its parent and root, depth, traits, aggregates
and per resource class inventory with usage. It is built once from plain rows (the SQL loader lives
in ``placement_numa.db.repositories.fleet``) and tagged with the ``placement_revision`` it reflects;
when the revision moves, the engine derives a new snapshot with the touched trees replaced
(``replace_trees``; design notes: "fleet state in memory, always fresh"), sharing every untouched
provider and, when no provider came, went or moved, every structural index with the old one; a
snapshot nothing else holds is handed over, its indexes patched in place (O(touched trees), not
O(fleet)). Nothing here imports SQLAlchemy or FastAPI.

Providers are addressed by a dense index (``0..n-1``, in database id order), so the search works
on small integers; uuids are only used at the edges. Patched snapshots keep indices stable (new
providers are appended; deleted ones leave unreachable entries).

Capacity follows Placement: ``capacity = int((total - reserved) * allocation_ratio)``, free is
``capacity - used``; a request of ``amount`` fits one inventory when ``min_unit <= amount <=
max_unit``, ``amount % step_size == 0`` and ``used + amount <= capacity``.
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = [
    "Inventory",
    "ProviderInfo",
    "FleetSnapshot",
    "ProviderRow",
    "InventoryRow",
    "SHARING_TRAIT",
    "MAX_CAPACITY",
    "safe_capacity",
]

# os-traits' MISC_SHARES_VIA_AGGREGATE (a constant of the Placement protocol, not a list of names).
SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE"

# (id, uuid, parent_id | None, root_id)
ProviderRow = tuple[int, str, "int | None", int]
# (provider_id, resource class name, total, reserved, min_unit, max_unit, step_size, ratio)
InventoryRow = tuple[int, str, int, int, int, int, int, float]


MAX_CAPACITY = 2**63 - 1


def safe_capacity(total: int, reserved: int, ratio: float) -> int:
    """``int((total - reserved) * ratio)`` clamped to +-``MAX_CAPACITY`` (64-bit signed, what
    JSON clients and SQL columns hold); 0 when the product is not a number."""
    value = (total - reserved) * ratio
    if value != value:  # NaN
        return 0
    if value >= MAX_CAPACITY:
        return MAX_CAPACITY
    if value <= -MAX_CAPACITY:
        return -MAX_CAPACITY
    return int(value)


class Inventory:
    """One inventory record of a provider with its current usage (integer units of the class).

    ``capacity``: ``int((total - reserved) * allocation_ratio)``, as Placement reports it,
    clamped to +-``MAX_CAPACITY`` (a stored ratio of 3e38 must not break reads: it renders as
    2**63 - 1); 0 for a ratio that is not a number. Immutable by contract; a plain slotted
    class (a fleet holds one per provider and class, built at every load).
    """

    __slots__ = (
        "total",
        "reserved",
        "min_unit",
        "max_unit",
        "step_size",
        "allocation_ratio",
        "used",
        "capacity",
        "_hash",
    )

    def __init__(
        self,
        total: int,
        reserved: int,
        min_unit: int,
        max_unit: int,
        step_size: int,
        allocation_ratio: float,
        used: int = 0,
    ) -> None:
        self.total = total
        self.reserved = reserved
        self.min_unit = min_unit
        self.max_unit = max_unit
        self.step_size = step_size
        self.allocation_ratio = allocation_ratio
        self.used = used
        self.capacity = safe_capacity(total, reserved, allocation_ratio)
        self._hash = hash(self._key())

    def _key(self) -> tuple[int, int, int, int, int, float, int]:
        return (
            self.total,
            self.reserved,
            self.min_unit,
            self.max_unit,
            self.step_size,
            self.allocation_ratio,
            self.used,
        )

    def __eq__(self, other: object) -> bool:
        return self is other or (
            isinstance(other, Inventory)
            and self._hash == other._hash
            and self._key() == other._key()
        )

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return (
            f"Inventory(total={self.total}, reserved={self.reserved}, min_unit={self.min_unit},"
            f" max_unit={self.max_unit}, step_size={self.step_size},"
            f" allocation_ratio={self.allocation_ratio}, used={self.used})"
        )

    @property
    def free(self) -> int:
        """Capacity left: ``capacity - used`` (negative when usage exceeds a lowered capacity)."""
        return self.capacity - self.used

    def fits(self, amount: int) -> bool:
        """Whether one allocation of ``amount`` fits (min/max unit, step size, capacity)."""
        return (
            self.min_unit <= amount <= self.max_unit
            and amount % self.step_size == 0
            and self.used + amount <= self.capacity
        )


@dataclass(slots=True)
class ProviderInfo:
    """A resource provider in the snapshot (``parent`` is -1 for a root)."""

    index: int
    id: int
    uuid: str
    parent: int
    root: int
    depth: int = 0
    traits: frozenset[str] = frozenset()
    aggregates: frozenset[str] = frozenset()
    inventories: dict[str, Inventory] = field(default_factory=dict)

    @property
    def sharing(self) -> bool:
        """Whether the provider has ``MISC_SHARES_VIA_AGGREGATE`` (shares via aggregates)."""
        return SHARING_TRAIT in self.traits

    def free(self, resource_class: str) -> int:
        """Free capacity of ``resource_class`` (0 without inventory)."""
        inventory = self.inventories.get(resource_class)
        return inventory.free if inventory is not None else 0


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
      traits, aggregates, inventories, usage), so a search can replay one tree's answer.
    """

    # profile keys -> ids, shared by the snapshots patched from one full build (append-only;
    # ids are content keys, so equal ids mean equal trees in any of those snapshots)
    _provider_profile_ids: dict[tuple[object, ...], int]
    _root_profile_ids: dict[tuple[object, ...], int]

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
        self.chains = [_chain(providers, p.index) for p in providers]
        self.children_count = sum(1 for p in providers if p.parent >= 0)
        self.has_trees = self.children_count > 0
        # Look-alike trees: two roots with the same profile have trees that match any query the
        # same way (same shape, traits, aggregates, inventories and usage, member by member).
        self._provider_profile_ids = {}
        self._root_profile_ids = {}
        self.root_profiles: dict[int, int] = {
            root: self._root_profile(members) for root, members in self.tree.items()
        }
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
        # rendering caches (API layer), per response shape: a dict whose entries keyed by a
        # provider index, ("root", root) or ("root-q", root) describe that provider or tree
        # (dropped for the providers and trees a refresh replaces); other entries must not
        # depend on provider state (kept)
        self.summary_cache: dict[object, dict[object, object]] = {}

    def _root_profile(self, members: list[int]) -> int:
        providers = self.providers
        profile_ids = self._provider_profile_ids
        where = {m: k for k, m in enumerate(members)}
        key = (
            tuple(
                profile_ids.setdefault(
                    (p.traits, p.aggregates, tuple(sorted(p.inventories.items()))),
                    len(profile_ids),
                )
                for p in (providers[m] for m in members)
            ),
            tuple(where.get(providers[m].parent, -1) for m in members),
        )
        return self._root_profile_ids.setdefault(key, len(self._root_profile_ids))

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

    def replace_trees(
        self,
        revision: int,
        root_ids: Iterable[int],
        providers: Iterable[ProviderRow],
        inventories: Iterable[InventoryRow] = (),
        usages: Iterable[tuple[int, str, int]] = (),
        traits: Iterable[tuple[int, str]] = (),
        aggregates: Iterable[tuple[int, str]] = (),
        *,
        owned: bool = False,
    ) -> FleetSnapshot | None:
        """A new snapshot at ``revision``: this one with whole trees replaced (design notes:
        "applies the changes since the revision it holds").

        ``root_ids``: database ids of the roots whose trees (as this snapshot knows them) are
        dropped; the rows (as for ``build``) are every provider now in a replaced tree, which is
        every provider whose tree is among ``root_ids`` now. Providers keep their index; new
        ones are appended (their ids must exceed every id known here, so index order stays id
        order); dropped providers that are not in the rows are gone (their entries stay in
        ``providers``, unreachable). Indexes over aggregates and sharing providers are patched
        for the aggregates of every provider that left or entered. Returns ``None`` when a full
        build is needed instead: a new id not above the known ones, a provider of an untouched
        tree in the rows, or profile tables grown well past the fleet (nothing changed then).

        Structure is shared: the new snapshot reuses every index a patch leaves alone, and the
        rendering caches (``summary_cache``) keep their entries for untouched providers and
        trees. Without ``owned`` this snapshot is not changed (searches may still run on it):
        the indexes a patch changes (``providers``, ``root_profiles``, the caches, and the
        structural ones when providers came, went or moved) are copied, O(fleet). With
        ``owned`` the caller hands this snapshot over: it is no longer reachable by anyone
        else and is not used after the call (``SqlFleetSource`` checks that). The indexes that
        nothing but this snapshot references (CPython reference counts: not shared with
        another snapshot, not held by a running search) are then patched in place and moved to
        the new snapshot, so the patch costs O(replaced trees), not O(fleet); any other is
        copied as without ``owned``.
        """
        # which indexes may be patched in place: checked first, before any local reference
        movable = _sole_references(self, _PATCHED_INDEXES) if owned else frozenset()
        old = self
        old_providers = old.providers
        removed: set[int] = set()
        for root_id in root_ids:
            index = old.index_by_id.get(root_id)
            if index is not None and old_providers[index].parent < 0:
                removed.update(old.tree.get(index, ()))
        rows = sorted(providers, key=lambda r: r[0])
        index_of: dict[int, int] = {}
        next_index = len(old_providers)
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
        if len(old._provider_profile_ids) > 4 * len(old.index_by_id) + 10000:
            return None
        infos = _infos(rows, index_of, inventories, usages, traits, aggregates)
        loaded = {info.index for info in infos}
        # the replaced providers as this snapshot knows them (``providers`` may be patched in
        # place below)
        before = {i: old_providers[i] for i in removed}
        if movable:
            old.handed_over = True
        new = object.__new__(type(self))
        new.revision = revision
        new.patched_from = old.revision
        new.handed_over = False
        new.resource_class_names = old.resource_class_names
        new.trait_names = old.trait_names
        new.trait_order = old.trait_order
        new._provider_profile_ids = old._provider_profile_ids
        new._root_profile_ids = old._root_profile_ids
        plist = old_providers if "providers" in movable else list(old_providers)
        plist.extend(infos[0] for _ in range(next_index - len(plist)))  # placeholders
        for info in infos:
            plist[info.index] = info
        new.providers = plist
        _set_depths(plist, infos)
        gone = removed - loaded
        old_roots = {p.root for p in before.values()}
        same_places = (
            not gone
            and len(loaded) == len(removed)
            and all(
                info.parent == before[info.index].parent and info.root == before[info.index].root
                for info in infos
            )
        )
        if same_places:
            # same providers in the same places (usage, inventory, trait, aggregate changes):
            # every structural index is shared with the old snapshot
            new.index_by_uuid = old.index_by_uuid
            new.index_by_id = old.index_by_id
            new.max_id = old.max_id
            new.tree = old.tree
            new.roots = old.roots
            new.uuids = old.uuids
            new.chains = old.chains
            new.children_count = old.children_count
            new.has_trees = old.has_trees
            new_trees = {root: old.tree[root] for root in old_roots}
        else:
            new_trees = new._restructure(old, infos, before, gone, old_roots, index_of, movable)
        root_profiles = old.root_profiles if "root_profiles" in movable else dict(old.root_profiles)
        for root in old_roots:
            root_profiles.pop(root, None)
        for root, members in new_trees.items():
            root_profiles[root] = new._root_profile(members)
        new.root_profiles = root_profiles
        if same_places and all(
            info.aggregates == before[info.index].aggregates
            and info.sharing == before[info.index].sharing
            for info in infos
        ):
            new.aggregate_members = old.aggregate_members
            new.sharing = old.sharing
            new.sharing_anchors = old.sharing_anchors
            new.shared_into = old.shared_into
            new.roots_with_sharing = old.roots_with_sharing
        else:
            new._patch_sharing(old, infos, before, loaded)
        # roots per class: the replaced trees are looked at again (all dropped when sharing
        # providers changed: their anchors may have moved)
        new.class_roots = {}
        if (
            new.sharing_anchors is old.sharing_anchors
            and not any(p.sharing for p in before.values())
            and not any(plist[i].sharing for i in loaded)
        ):
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
        # rendering caches: everything but the replaced providers and trees is still right
        stale: list[object] = [*removed, *loaded]
        for root in old_roots | set(new_trees):
            stale.append(("root", root))
            stale.append(("root-q", root))
        new.summary_cache = _without(old, "summary_cache" in movable, stale)
        return new

    def _patch_sharing(
        self,
        old: FleetSnapshot,
        infos: list[ProviderInfo],
        before: dict[int, ProviderInfo],
        loaded: set[int],
    ) -> None:
        """Aggregate members and sharing-provider indexes of a patched snapshot, recomputed for
        the aggregates of every provider that left or entered (Placement's
        ``anchors_for_sharing_providers`` for the sharing providers in them); ``before``: the
        replaced providers as ``old`` knows them."""
        new = self
        plist = self.providers
        removed = set(before)
        touched_aggs: set[str] = set()
        for p in before.values():
            touched_aggs |= p.aggregates
        for info in infos:
            touched_aggs |= info.aggregates
        aggregate_members = dict(old.aggregate_members)
        for agg in touched_aggs:
            members = {m for m in aggregate_members.get(agg, frozenset()) if m not in removed}
            members.update(info.index for info in infos if agg in info.aggregates)
            if members:
                aggregate_members[agg] = frozenset(members)
            else:
                aggregate_members.pop(agg, None)
        new.aggregate_members = aggregate_members
        sharing = (old.sharing - removed) | {info.index for info in infos if info.sharing}
        new.sharing = frozenset(sharing)
        sharing_changed = any(p.sharing for p in before.values()) or any(
            info.sharing for info in infos
        )
        sharing_anchors = dict(old.sharing_anchors)
        for i in removed:
            sharing_anchors.pop(i, None)
        for i in sharing:
            p = plist[i]
            if p.aggregates and (i in loaded or not p.aggregates.isdisjoint(touched_aggs)):
                anchors = new._anchors(i)
                if sharing_anchors.get(i) != anchors:
                    sharing_changed = True
                sharing_anchors[i] = anchors
        new.sharing_anchors = sharing_anchors
        if sharing_changed:
            new._index_sharing()
        else:
            new.shared_into = old.shared_into
            new.roots_with_sharing = old.roots_with_sharing

    def _restructure(
        self,
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
        plist = self.providers
        index_by_uuid = old.index_by_uuid if "index_by_uuid" in movable else dict(old.index_by_uuid)
        index_by_id = old.index_by_id if "index_by_id" in movable else dict(old.index_by_id)
        for i in gone:
            info = before[i]
            del index_by_uuid[info.uuid]
            del index_by_id[info.id]
        for info in infos:
            index_by_uuid[info.uuid] = info.index
            index_by_id[info.id] = info.index
        self.index_by_uuid = index_by_uuid
        self.index_by_id = index_by_id
        if any(before[i].id == old.max_id for i in gone):
            self.max_id = max(index_by_id, default=0)
        else:
            self.max_id = max(old.max_id, *index_of, 0)
        tree = old.tree if "tree" in movable else dict(old.tree)
        for root in old_roots:
            tree.pop(root, None)
        new_trees: dict[int, list[int]] = {}
        for info in sorted(infos, key=lambda p: p.index):
            new_trees.setdefault(info.root, []).append(info.index)
        tree.update(new_trees)
        self.tree = tree
        self.roots = _patched_roots(old.roots, old_roots, set(new_trees), "roots" in movable)
        uuids = old.uuids if "uuids" in movable else list(old.uuids)
        chains = old.chains if "chains" in movable else list(old.chains)
        uuids.extend("" for _ in range(len(plist) - len(uuids)))
        chains.extend(() for _ in range(len(plist) - len(chains)))
        for info in infos:
            uuids[info.index] = info.uuid
            chains[info.index] = _chain(plist, info.index)
        self.uuids = uuids
        self.chains = chains
        self.children_count = (
            old.children_count
            - sum(1 for p in before.values() if p.parent >= 0)
            + sum(1 for info in infos if info.parent >= 0)
        )
        self.has_trees = self.children_count > 0
        return new_trees

    @classmethod
    def build(
        cls,
        revision: int,
        providers: Iterable[ProviderRow],
        inventories: Iterable[InventoryRow] = (),
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
        infos = _infos(rows, index_of, inventories, usages, traits, aggregates)
        _set_depths(infos, infos)
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

    def summary_resources(self, index: int) -> Mapping[str, Inventory]:
        """The inventories (with usage) of provider ``index``, by resource class."""
        return self.providers[index].inventories


# The indexes ``replace_trees`` changes, which an owned snapshot may hand over to its successor.
_PATCHED_INDEXES = (
    "providers",
    "root_profiles",
    "summary_cache",
    "index_by_uuid",
    "index_by_id",
    "tree",
    "roots",
    "uuids",
    "chains",
)


def _sole_references(snapshot: FleetSnapshot, names: Iterable[str]) -> frozenset[str]:
    """The attributes of ``snapshot`` among ``names`` whose value nothing else references
    (CPython reference counts: the attribute itself and ``getrefcount``'s argument). Only
    meaningful while no other thread can reach ``snapshot`` (the GIL then keeps anyone from
    taking a new reference between this check and a patch in place)."""
    attributes = vars(snapshot)
    return frozenset(name for name in names if sys.getrefcount(attributes[name]) == 2)


def _without(
    old: FleetSnapshot, movable: bool, stale: list[object]
) -> dict[object, dict[object, object]]:
    """``old.summary_cache`` less the ``stale`` keys in every per-shape cache. With
    ``movable`` (``old`` handed over and the outer dict referenced by it only), the dict and
    each per-shape cache nothing else references (no encoding in progress on ``old``) are
    patched in place; the others are copied."""
    caches = old.summary_cache
    if not movable:
        caches = dict(caches)
    for shape in list(caches):
        if not movable or sys.getrefcount(caches[shape]) != 2:
            caches[shape] = dict(caches[shape])
        cache = caches[shape]
        for key in stale:
            cache.pop(key, None)
    return caches


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


def _chain(providers: list[ProviderInfo], index: int) -> tuple[int, ...]:
    chain = [index]
    cursor = providers[index].parent
    while cursor >= 0:
        chain.append(cursor)
        cursor = providers[cursor].parent
    return tuple(chain)


def _set_depths(providers: list[ProviderInfo], infos: Iterable[ProviderInfo]) -> None:
    for info in infos:
        depth, cursor = 0, info.parent
        while cursor >= 0:
            depth += 1
            cursor = providers[cursor].parent
        info.depth = depth


def _infos(
    rows: list[ProviderRow],
    index_of: Mapping[int, int],
    inventories: Iterable[InventoryRow],
    usages: Iterable[tuple[int, str, int]],
    traits: Iterable[tuple[int, str]],
    aggregates: Iterable[tuple[int, str]],
) -> list[ProviderInfo]:
    """``ProviderInfo`` per row (id order), indices from ``index_of`` (parents and roots are
    among the rows); depths are left at 0 (``_set_depths``)."""
    infos = [
        ProviderInfo(
            index=index_of[row[0]],
            id=row[0],
            uuid=row[1],
            parent=index_of[row[2]] if row[2] is not None else -1,
            root=index_of[row[3]] if row[3] is not None else index_of[row[0]],
        )
        for row in rows
    ]
    by_id = {info.id: info for info in infos}
    used: dict[tuple[int, str], int] = {}
    for pid, rc, amount in usages:
        used[(pid, rc)] = used.get((pid, rc), 0) + int(amount)
    # Equal inventories (and trait and aggregate sets) are shared: they are immutable, and a
    # fleet of look-alike hosts holds a few distinct ones per class (memory at 700,000
    # providers), and equality checks of shared objects are identity checks.
    shared_inventories: dict[tuple[object, ...], Inventory] = {}
    for pid, rc, total, reserved, min_unit, max_unit, step, ratio in inventories:
        key = (
            rc,
            int(total),
            int(reserved),
            int(min_unit),
            int(max_unit),
            int(step),
            float(ratio),
            used.get((pid, rc), 0),
        )
        inventory = shared_inventories.get(key)
        if inventory is None:
            inventory = shared_inventories[key] = Inventory(*key[1:])
        by_id[pid].inventories[rc] = inventory
    shared_sets: dict[frozenset[str], frozenset[str]] = {}
    trait_sets: dict[int, set[str]] = {}
    for pid, name in traits:
        trait_sets.setdefault(pid, set()).add(name)
    for pid, names in trait_sets.items():
        frozen = frozenset(names)
        by_id[pid].traits = shared_sets.setdefault(frozen, frozen)
    agg_sets: dict[int, set[str]] = {}
    for pid, agg in aggregates:
        agg_sets.setdefault(pid, set()).add(agg)
    for pid, aggs in agg_sets.items():
        frozen = frozenset(aggs)
        by_id[pid].aggregates = shared_sets.setdefault(frozen, frozen)
    return infos
