"""Use case (extension): the data of the fleet page ``GET /numa/fleet`` and of a host's page
``GET /numa/fleet/hosts/{uuid}`` (issue 31, "the fleet in a browser").

Read from one fleet snapshot: the host's cells as the NUMA host view numbers them
(``numa.host_view``), per cell ``PCPU``/``VCPU`` used and capacity (CPUs), memory per page
size (``MEMORY_MB``, MiB, of the cell's page-size children, keyed by page size in KiB) and
devices (any other class below the cell); the host's own resources (``DISK_GB``, everything on
a host not reshaped to NUMA). For a flavor catalogue (``[metrics] flavors_file``): how many
more of each flavor fit per host (``services.capacity.fleet_capacity``) and what is stranded
(``services.stranded``), counted once per fleet revision in the background
(``CatalogueCache``; a page waits at most ``WAIT_SECONDS`` for it, then shows the last count).

Sizes of work: every host is visited once per request for the sort keys and the aggregate
groups (O(providers)); rows are built only for the page asked (at most ``MAX_PER_PAGE``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from placement_numa.domain.numa_tree import page_size_from_traits
from placement_numa.engine import FleetSnapshot
from placement_numa.numa.engine_rank import CellIndex
from placement_numa.numa.host_view import host_view
from placement_numa.services.capacity import FlavorCapacity
from placement_numa.services.stranded import Stranded, stranded

__all__ = [
    "Amount",
    "CellRow",
    "HostRow",
    "GroupRow",
    "FleetQuery",
    "FleetPage",
    "CatalogueCache",
    "SORT_KEYS",
    "MAX_PER_PAGE",
    "DEFAULT_PER_PAGE",
    "NO_AGGREGATE",
    "fleet_page",
    "host_row",
]

LOG = logging.getLogger(__name__)
MAX_PER_PAGE = 200
WAIT_SECONDS = 1.0  # the longest a page waits for the catalogue's count
DEFAULT_PER_PAGE = 50
NO_AGGREGATE = "none"  # the group of hosts in no aggregate
CPU_CLASSES = ("PCPU", "VCPU")
# sort key -> what it orders hosts by (free amounts in CPUs / MiB)
# ("fits": how many more of the query's ``flavor`` fit)
SORT_KEYS = ("name", "free_pcpu", "free_vcpu", "free_memory_mb", "stranded_pcpu", "fits")


@dataclass(frozen=True)
class Amount:
    """Used and capacity of one class (its units); ``free = capacity - used`` (never < 0)."""

    used: int
    capacity: int

    @property
    def free(self) -> int:
        """``capacity - used``, at least 0."""
        return max(0, self.capacity - self.used)

    def __add__(self, other: Amount) -> Amount:
        return Amount(self.used + other.used, self.capacity + other.capacity)


@dataclass(frozen=True)
class CellRow:
    """One NUMA cell: host cell id, provider uuid, CPUs per class, ``memory`` per page size
    (KiB -> MiB amounts), ``devices`` per class, ``stranded`` (no catalogue flavor has a
    candidate on it; ``False`` without a catalogue)."""

    cell: int
    uuid: str
    cpus: dict[str, Amount]
    memory: dict[int, Amount]
    devices: dict[str, Amount]
    stranded: bool = False


@dataclass(frozen=True)
class HostRow:
    """One compute node: root ``uuid``, ``name``, aggregates, its cells (cell id order), its own
    resources outside the cells, ``fits`` per catalogue flavor and ``stranded`` free per class
    (empty without a catalogue)."""

    uuid: str
    name: str
    aggregates: tuple[str, ...]
    cells: tuple[CellRow, ...]
    own: dict[str, Amount]
    fits: dict[str, int] = field(default_factory=dict)
    stranded: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class GroupRow:
    """One aggregate (``NO_AGGREGATE`` for hosts in none): hosts, free per class, and how many
    more of each catalogue flavor fit on its hosts."""

    aggregate: str
    hosts: int
    free: dict[str, int]
    fits: dict[str, int]


@dataclass(frozen=True)
class FleetQuery:
    """What the page asks: hosts of ``aggregate`` (``None``: all), ordered by ``sort``
    (``SORT_KEYS``; ``fits``: by the count of catalogue flavor ``flavor``), page ``page``
    (from 1) of ``per_page`` (1..``MAX_PER_PAGE``) rows."""

    aggregate: str | None = None
    sort: str = "name"
    descending: bool = False
    page: int = 1
    per_page: int = DEFAULT_PER_PAGE
    flavor: str | None = None  # the catalogue flavor of ``sort="fits"``


@dataclass(frozen=True)
class FleetPage:
    """The fleet page: the query, the fleet revision, hosts in all and matching the query,
    the page's rows, the aggregate groups, the catalogue's totals (flavor -> count, in the
    catalogue's order) and the fleet's stranded capacity (``None`` without a catalogue or
    before its first count), the revision they were counted at, and ``counting`` (a count
    for the current revision is still running)."""

    query: FleetQuery
    revision: int
    hosts: int
    matching: int
    rows: list[HostRow]
    groups: list[GroupRow]
    totals: dict[str, int]
    stranded: Stranded | None
    catalogue_revision: int | None = None
    counting: bool = False

    @property
    def pages(self) -> int:
        """Number of pages (at least 1)."""
        return max(1, -(-self.matching // self.query.per_page))


@dataclass(frozen=True)
class _Catalogue:
    revision: int
    answers: list[FlavorCapacity]
    fits: dict[str, dict[str, int]]  # root uuid -> flavor -> count
    fleet: Stranded
    # the catalogue as one answer whose usable cells are every flavor's (``stranded`` of one
    # host then costs its tree, not the union of the flavors' sets again)
    union: FlavorCapacity

    def host_stranded(self, fleet: FleetSnapshot, root: int) -> dict[str, int]:
        """Stranded free per class on the tree of ``root`` (``services.stranded``)."""
        return stranded(fleet, [root], [self.union]).stranded


class CatalogueCache:
    """The catalogue's capacity answers, counted in one background thread per fleet revision
    asked (``compute(fleet)``: ``services.capacity.fleet_capacity`` over the catalogue on that
    snapshot; seconds at 10,000 hosts). ``get`` waits at most ``wait`` seconds for a count, so
    a page is never held longer: it shows the last answers (an older revision) meanwhile."""

    def __init__(
        self,
        compute: Callable[[FleetSnapshot], list[FlavorCapacity]],
        flavors: Sequence[str] = (),
        wait: float = WAIT_SECONDS,
    ) -> None:
        self.compute = compute
        self.flavors = tuple(flavors)  # the catalogue's flavor names
        self.wait = wait
        self._kept: _Catalogue | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def get(self, fleet: FleetSnapshot) -> _Catalogue | None:
        """The answers for ``fleet``'s revision when kept or counted within ``wait`` seconds;
        else the last answers (another revision; ``None`` before the first count ends)."""
        with self._lock:
            kept = self._kept
            if kept is not None and kept.revision == fleet.revision:
                return kept
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._count, args=(fleet,), name="fleet-page-catalogue", daemon=True
                )
                self._thread.start()
            thread = self._thread
        thread.join(self.wait)
        return self._kept

    def _count(self, fleet: FleetSnapshot) -> None:
        try:
            answers = self.compute(fleet)
            fits: dict[str, dict[str, int]] = {}
            for answer in answers:
                for host in answer.hosts:
                    fits.setdefault(host.uuid, {})[answer.flavor] = host.count
            union = FlavorCapacity(
                "catalogue", 0, usable=frozenset().union(*(a.usable for a in answers))
            )
            lost = stranded(fleet, fleet.roots, [union])
            self._kept = _Catalogue(fleet.revision, answers, fits, lost, union)
        except Exception as exc:  # the page shows the last answers; the log says why
            LOG.warning("fleet page: flavor catalogue not counted: %s", exc)


def _cell_of(fleet: FleetSnapshot, provider: int, cells: dict[int, int]) -> int | None:
    """The cell provider at or above ``provider`` (``None``: outside the cells)."""
    for a in fleet.ancestors(provider):
        if a in cells:
            return a
    return None


def host_row(
    fleet: FleetSnapshot,
    index: CellIndex,
    root: int,
    catalogue: _Catalogue | None = None,
) -> HostRow:
    """The ``HostRow`` of root provider index ``root`` (cells from the NUMA host view)."""
    ids, _cells, _number = host_view(fleet, index, CPU_CLASSES).host(fleet, root)
    providers = fleet.providers
    cpus: dict[int, dict[str, Amount]] = {c: {} for c in ids}
    memory: dict[int, dict[int, Amount]] = {c: {} for c in ids}
    devices: dict[int, dict[str, Amount]] = {c: {} for c in ids}
    own: dict[str, Amount] = {}
    for i in fleet.tree.get(root, ()):
        info = providers[i]
        cell = _cell_of(fleet, i, ids)
        page = page_size_from_traits(info.traits)
        for rc, inv in info.inventories.items():
            amount = Amount(inv.used, inv.capacity)
            if cell is None:
                own[rc] = own.get(rc, Amount(0, 0)) + amount
            elif rc in CPU_CLASSES and i == cell:
                cpus[cell][rc] = amount
            elif rc == "MEMORY_MB":
                size = page if page is not None else 4
                memory[cell][size] = memory[cell].get(size, Amount(0, 0)) + amount
            else:
                devices[cell][rc] = devices[cell].get(rc, Amount(0, 0)) + amount
    uuid = fleet.uuids[root]
    usable = catalogue.union.usable if catalogue else frozenset()
    rows = tuple(
        sorted(
            (
                CellRow(
                    ids[c],
                    fleet.uuids[c],
                    cpus[c],
                    memory[c],
                    devices[c],
                    stranded=catalogue is not None and c not in usable,
                )  # fmt: skip
                for c in ids
            ),
            key=lambda r: r.cell,
        )
    )
    lost = catalogue.host_stranded(fleet, root) if catalogue else {}
    return HostRow(
        uuid=uuid,
        name=index.host_names.get(uuid, uuid),
        aggregates=tuple(sorted(providers[root].aggregates)),
        cells=rows,
        own=own,
        fits=dict(catalogue.fits.get(uuid, {})) if catalogue else {},
        stranded={rc: n for rc, n in lost.items() if n},
    )


def _free(fleet: FleetSnapshot, root: int) -> dict[str, int]:
    """Free amount per class over the tree of ``root``."""
    free: dict[str, int] = {}
    for i in fleet.tree.get(root, ()):
        for rc, inv in fleet.providers[i].inventories.items():
            free[rc] = free.get(rc, 0) + max(0, inv.free)
    return free


def _groups(
    fleet: FleetSnapshot,
    frees: dict[int, dict[str, int]],
    catalogue: _Catalogue | None,
) -> list[GroupRow]:
    hosts: dict[str, int] = {}
    free: dict[str, dict[str, int]] = {}
    fits: dict[str, dict[str, int]] = {}
    for root, amounts in frees.items():
        host_fits = catalogue.fits.get(fleet.uuids[root], {}) if catalogue else {}
        for aggregate in fleet.providers[root].aggregates or (NO_AGGREGATE,):
            hosts[aggregate] = hosts.get(aggregate, 0) + 1
            sums = free.setdefault(aggregate, {})
            for rc, n in amounts.items():
                sums[rc] = sums.get(rc, 0) + n
            counts = fits.setdefault(aggregate, {})
            for flavor, n in host_fits.items():
                counts[flavor] = counts.get(flavor, 0) + n
    return [GroupRow(a, hosts[a], free[a], fits[a]) for a in sorted(hosts)]


def _sort_key(
    fleet: FleetSnapshot,
    index: CellIndex,
    query: FleetQuery,
    frees: dict[int, dict[str, int]],
    catalogue: _Catalogue | None,
) -> Callable[[int], tuple[object, ...]]:
    sort = query.sort

    def name(root: int) -> str:
        uuid = fleet.uuids[root]
        return index.host_names.get(uuid, uuid)

    if sort == "name":
        return lambda root: (name(root),)
    if sort in ("stranded_pcpu", "fits") and catalogue is None:
        return lambda root: (0, name(root))
    if sort == "fits":
        assert catalogue is not None
        fits = catalogue.fits
        return lambda root: (fits.get(fleet.uuids[root], {}).get(query.flavor or "", 0), name(root))
    if sort == "stranded_pcpu":
        assert catalogue is not None
        return lambda root: (
            catalogue.host_stranded(fleet, root)["PCPU"],
            name(root),
        )
    rc = {"free_pcpu": "PCPU", "free_vcpu": "VCPU", "free_memory_mb": "MEMORY_MB"}[sort]
    return lambda root: (frees[root].get(rc, 0), name(root))


def _in_group(fleet: FleetSnapshot, root: int, aggregate: str | None) -> bool:
    if aggregate is None:
        return True
    aggregates = fleet.providers[root].aggregates
    return not aggregates if aggregate == NO_AGGREGATE else aggregate in aggregates


def fleet_page(
    fleet: FleetSnapshot,
    index: CellIndex,
    query: FleetQuery,
    catalogue: CatalogueCache | None = None,
) -> FleetPage:
    """The fleet page for ``query`` on ``fleet`` (``index``: cell ids and host names;
    ``catalogue``: the flavor catalogue's answers, ``None`` when none is configured). A page
    past the last one has no rows. Sorting by stranded PCPU computes each host's stranded
    capacity (``services.stranded``) for the hosts of the group."""
    kept = catalogue.get(fleet) if catalogue is not None else None
    frees = {root: _free(fleet, root) for root in fleet.roots}
    groups = _groups(fleet, frees, kept)
    roots: Sequence[int] = [r for r in fleet.roots if _in_group(fleet, r, query.aggregate)]
    roots = sorted(
        roots,
        key=_sort_key(fleet, index, query, frees, kept),
        reverse=query.descending,
    )
    start = (query.page - 1) * query.per_page
    rows = [host_row(fleet, index, r, kept) for r in roots[start : start + query.per_page]]
    return FleetPage(
        query=query,
        revision=fleet.revision,
        hosts=len(fleet.roots),
        matching=len(roots),
        rows=rows,
        groups=groups,
        totals={a.flavor: a.total for a in kept.answers} if kept else {},
        stranded=kept.fleet if kept else None,
        catalogue_revision=kept.revision if kept else None,
        counting=catalogue is not None and (kept is None or kept.revision != fleet.revision),
    )
