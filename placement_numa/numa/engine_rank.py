"""The NUMA ranking plugged into the candidate engine's rank hook (``engine.RankFn``).

For a candidate, the host NUMA cells it uses are the ``HW_NUMA_ROOT`` providers at or above
each provider it takes resources from (or maps a group to); their ids come from the cell
provider names (``<host>_NUMA<id>``), else from their order under the root. The CPUs it takes on
each cell (classes ``cpu_classes``) and the free CPUs of every cell of the host feed the spread
score; the host's SLIT matrix (``distances``) the average distance. See ``ranking`` for the
order of the rules. ``bound`` is the engine's ``rank_bound`` hook: the best key a root can
offer (``rank_bound.relaxed_best_key``), memoised per look-alike tree, cell ids and distances.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from placement_numa.engine.candidates import Candidate, Layout
from placement_numa.engine.fleet import FleetSnapshot
from placement_numa.engine.protocol import RootBoundView
from placement_numa.numa.cell_index import CellIndex
from placement_numa.numa.host_view import HostView, host_view
from placement_numa.numa.rank_bound import relaxed_best_key
from placement_numa.numa.ranking import HostCells, NumaScore, rank_key, score

__all__ = ["CellIndex", "NumaBound", "NumaRanker"]

_UNKNOWN = object()  # a memo miss (a kept bound may be ``None``: no candidate)


class NumaRanker:
    """Scores candidates of one query; ``rank`` is the engine hook (smaller key is better)."""

    def __init__(
        self,
        index: CellIndex,
        cpu_classes: tuple[str, ...],
        *,
        prefer_closest: bool = True,
        distinct: tuple[str, ...] = (),
        device_classes: frozenset[str] = frozenset(),
        align_devices: bool = True,
    ) -> None:
        """``distinct``: suffixes of groups that must land on distinct providers (the guest
        cells' anchors when the caller filters candidates on it); only used by ``bound``.
        ``device_classes``: resource classes of the PCI devices asked (their cells are scored
        apart from those of CPUs and memory); ``align_devices`` false: no rank for aligned
        devices (``topology_policy=none``)."""
        self.index = index
        self.cpu_classes = cpu_classes
        self.prefer_closest = prefer_closest
        self.distinct = distinct
        self.device_classes = device_classes
        self.align_devices = align_devices
        self._view: tuple[weakref.ref[FleetSnapshot], HostView] | None = None
        self._cells: dict[int, int | None] = {}
        self._ranked: dict[
            tuple[int, tuple[tuple[int, int], ...], tuple[int | None, ...]],
            tuple[tuple[object, ...], NumaScore],
        ] = {}
        self._resourceless: dict[int, tuple[Layout, tuple[int, ...]]] = {}
        # (entry id, shape, bound class) -> (entry, (key, score)): see ``scored``
        self._by_entry: dict[
            tuple[int, int | None, int], tuple[object, tuple[tuple[object, ...], NumaScore]]
        ] = {}
        # id(candidate) -> (candidate, snapshot, (key, score)) of replayed ones: see ``scored``
        self._by_candidate: dict[
            int, tuple[Candidate, FleetSnapshot, tuple[tuple[object, ...], NumaScore]]
        ] = {}

    @property
    def bound(self) -> NumaBound:
        """The engine's ``rank_bound`` hook for this ranker (``NumaBound``; a new one each
        time, so the ranker holds no reference to it: no cycle keeps the ranker, its host view
        and the snapshot alive after the request, and the next refresh can patch the snapshot
        in place, ``engine.handover``)."""
        return NumaBound(self)

    def view(self, fleet: FleetSnapshot) -> HostView:
        """The NUMA host view of ``fleet`` for this query's CPU classes (``numa.host_view``:
        kept per snapshot, derived per changed tree)."""
        found = self._view
        if found is None or found[0]() is not fleet:
            # a weak reference: a ranker kept alive must not keep the snapshot from being
            # patched in place by the next refresh (``engine.handover``)
            found = self._view = (
                weakref.ref(fleet),
                host_view(fleet, self.index, self.cpu_classes),
            )
        return found[1]

    def _host(self, fleet: FleetSnapshot, root: int) -> tuple[dict[int, int], HostCells, int]:
        """(cell provider index -> cell id, HostCells, host class) of one tree (the host
        view's)."""
        return self.view(fleet).host(fleet, root)

    def _cell_of(self, fleet: FleetSnapshot, ids: Mapping[int, int], provider: int) -> int | None:
        """The host cell id at or above ``provider`` (cached per provider)."""
        cached = self._cells.get(provider, -1)
        if cached != -1:
            return cached
        cell = None
        for a in fleet.ancestors(provider):
            if a in ids:
                cell = ids[a]
                break
        self._cells[provider] = cell
        return cell

    def _resourceless_slots(self, layout: Layout) -> tuple[int, ...]:
        """Slots of resourceless groups (their providers touch a cell without taking from it)."""
        cached = self._resourceless.get(id(layout))
        if cached is None or cached[0] is not layout:
            slots = tuple(k for k, res in enumerate(layout.slot_resources) if not res)
            cached = self._resourceless[id(layout)] = (layout, slots)
        return cached[1]

    def _used(
        self, candidate: Candidate, fleet: FleetSnapshot, ids: Mapping[int, int]
    ) -> tuple[tuple[tuple[int, int], ...], tuple[int | None, ...]]:
        """``((cell id, CPUs taken), ...)`` sorted: every cell the candidate takes CPUs or
        memory from or anchors a group on (CPUs of ``cpu_classes`` counted on cell providers),
        and the cell of each device unit taken (``device_classes``; ``None`` when under the
        compute node), sorted."""
        used: dict[int, int] = {}
        devices: list[int | None] = []
        cpu_classes, device_classes = self.cpu_classes, self.device_classes
        for p, rc, amount in candidate.allocations:
            cell = self._cell_of(fleet, ids, p)
            if rc in device_classes:
                devices.extend([cell] * amount)
            elif cell is not None:
                used[cell] = used.get(cell, 0) + (amount if rc in cpu_classes and p in ids else 0)
        chosen = candidate.chosen
        for k in self._resourceless_slots(candidate.layout):
            cell = self._cell_of(fleet, ids, chosen[k])
            if cell is not None:
                used.setdefault(cell, 0)
        ordered = tuple(sorted(devices, key=lambda c: (c is None, c or 0)))
        return tuple(sorted(used.items())), ordered

    def scored(
        self, candidate: Candidate, fleet: FleetSnapshot
    ) -> tuple[tuple[object, ...], NumaScore]:
        """``(rank key, score)`` of ``candidate`` (what ``rank`` and ``score`` each return
        half of; ``search_hooks.NumaHooks.rank`` calls it directly), memoised per host class
        and cell usage, and for a candidate replayed from its tree's answer
        (``Candidate.entry`` in member positions) per entry and bound class: look-alike hosts
        with alike cells score an entry alike; such a candidate's pair is also kept by the
        candidate itself (the engine ranks it, then ``NumaHooks.ranked`` scores it again): one
        dict entry per candidate for the ranker's life (one request), and no candidate kept
        alive that the engine does not keep already (it keeps replayed lists per snapshot)."""
        entry, anchor = candidate.entry, candidate.anchor
        replayed = None
        if entry is not None and candidate.members is fleet.tree.get(anchor):
            mine = self._by_candidate.get(id(candidate))
            if mine is not None and mine[0] is candidate and mine[1] is fleet:
                return mine[2]
            view = self.view(fleet)
            shape = fleet.shape_profiles.get(anchor)
            replayed = (id(entry), shape, view.bound_classes.item(anchor))
            hit = self._by_entry.get(replayed)
            if hit is not None and hit[0] is entry:
                self._by_candidate[id(candidate)] = (candidate, fleet, hit[1])
                return hit[1]
        ids, host, number = self._host(fleet, anchor)
        used, devices = self._used(candidate, fleet, ids)
        memo = (number, used, devices)
        cached = self._ranked.get(memo)
        if cached is None:
            numa = score(host, dict(used), devices, align_devices=self.align_devices)
            cached = self._ranked[memo] = (rank_key(numa, prefer_closest=self.prefer_closest), numa)
        if replayed is not None:
            self._by_entry[replayed] = (entry, cached)
            self._by_candidate[id(candidate)] = (candidate, fleet, cached)
        return cached

    def scores(self, candidates: Iterable[Candidate], fleet: FleetSnapshot) -> list[NumaScore]:
        """``score`` of each of ``candidates`` on ``fleet``, in order: for a whole answer at
        once, a replayed candidate the engine ranked read from the pair ``scored`` kept for it
        (one look-up, no call), any other scored."""
        kept, scored = self._by_candidate.get, self.scored
        found: list[NumaScore] = []
        for candidate in candidates:
            mine = kept(id(candidate))
            if mine is not None and mine[0] is candidate and mine[1] is fleet:
                found.append(mine[2][1])
            else:
                found.append(scored(candidate, fleet)[1])
        return found

    def devices(
        self, candidate: Candidate, fleet: FleetSnapshot
    ) -> tuple[tuple[str, str, int | None], ...]:
        """``((resource class, provider uuid, cell id or None), ...)``: each device unit the
        candidate takes (classes ``device_classes``), in allocation order."""
        if not self.device_classes:
            return ()
        ids, _, _ = self._host(fleet, candidate.anchor)
        found: list[tuple[str, str, int | None]] = []
        for p, rc, amount in candidate.allocations:
            if rc in self.device_classes:
                cell = self._cell_of(fleet, ids, p)
                found.extend([(rc, fleet.uuids[p], cell)] * amount)
        return tuple(found)

    def score(self, candidate: Candidate, fleet: FleetSnapshot) -> NumaScore:
        """The NUMA score of ``candidate`` (cells used, width, distance, spread)."""
        return self.scored(candidate, fleet)[1]

    def rank(self, candidate: Candidate, fleet: FleetSnapshot) -> tuple[object, ...]:
        """The engine's rank hook: ``ranking.rank_key`` of the candidate's score (cached per
        host class and cell usage)."""
        return self.scored(candidate, fleet)[0]

    def bound_of(self, view: RootBoundView) -> tuple[object, ...] | None:
        """``bound`` for one root: a lower bound of the rank key of every candidate
        anchored at ``view.root`` (the exact best key for ``translate``'s NUMA queries), or
        ``None`` when the root has no candidate. Memoised for roots with the same cell ids and
        host class (free CPUs per cell, distances) and either the same look-alike profile
        (per search) or the same ``amount_profile`` and CPUs per slot (across the searches of
        the snapshot lineage, ``HostView.bound_memo``: a flavor's other sizes differ in memory,
        which the key does not read; the candidates are the same assignments, so the bound
        holds for them)."""
        fleet, root = view.fleet, view.root
        ids, host, number = self._host(fleet, root)
        memo: tuple[object, ...] | None = None
        store: dict[Any, object] = view.cache
        across = getattr(view, "amount_profile", None)  # optional in the contract
        if across is not None:
            cpu = self.cpu_classes
            asked = tuple(sum(a for rc, a in s.resources if rc in cpu) for s in view.plan.slots)
            memo = ("numa-bound", across, asked, tuple(ids.values()), number)
            memo += (self.prefer_closest, self.distinct)
            store = self.view(fleet).bound_memo()
        elif view.profile is not None:
            memo = ("numa-bound", view.profile, tuple(ids.values()), number)
        if memo is not None:
            found = store.get(memo, _UNKNOWN)
            if found is not _UNKNOWN:
                return found  # type: ignore[return-value]
        options = view.options()
        result: tuple[object, ...] | None = None
        if options is not None:
            plan = view.plan
            distinct = frozenset(
                i
                for i, g in enumerate(plan.groups)
                if g.suffix is not None and g.suffix in self.distinct
            )
            cell_set = set(ids)
            nested = any(a in cell_set for c in ids for a in fleet.ancestors(c)[1:])
            prefer = self.prefer_closest

            def key_of(used: tuple[tuple[int, int], ...]) -> tuple[object, ...]:
                cached = self._ranked.get((number, used, ()))
                if cached is not None:
                    return cached[0]
                return rank_key(score(host, dict(used)), prefer_closest=prefer)

            result = relaxed_best_key(
                plan,
                options,
                fleet=fleet,
                cell_of=lambda p: self._cell_of(fleet, ids, p),
                cell_providers=ids,
                cpu_classes=self.cpu_classes,
                key_of=key_of,
                distinct_groups=distinct,
                nested_cells=nested,
            )
        if memo is not None:
            store[memo] = result
        return result

    def as_hook(self) -> Callable[[Candidate, FleetSnapshot], tuple[object, ...]]:
        """``rank`` as a plain ``engine.RankFn``."""
        return self.rank


class NumaBound:
    """``NumaRanker.bound``, the engine's ``rank_bound`` hook (``engine.ClassedRankBound``):
    called with a ``RootBoundView``, ``NumaRanker.bound_of``; ``root_classes(fleet)``: the host
    view's bound classes (cell ids and host class per root), so the engine bounds one root per
    class of look-alike roots."""

    __slots__ = ("ranker",)

    def __init__(self, ranker: NumaRanker) -> None:
        self.ranker = ranker

    def __call__(self, view: RootBoundView) -> tuple[object, ...] | None:
        """The best key ``view.root`` can offer (``NumaRanker.bound_of``)."""
        return self.ranker.bound_of(view)

    def root_classes(self, fleet: FleetSnapshot) -> Any:
        """Per provider index of ``fleet``: the root's bound class (-1: not a root)."""
        return self.ranker.view(fleet).bound_classes
