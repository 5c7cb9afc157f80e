"""The values of step 2 of the NUMA pipeline (``numa.translate``): the guest's
NUMA cells (``GuestCell``, ``GuestTopology``) and the translated query (``NumaQuery``: the
request groups of each guest cell, ``CellGroups``, and of each PCI device, ``DeviceGroup``),
with the ``explain`` string of what a search of it runs.

Only values here; ``translate.guest_topology`` and ``translate.translate`` build them. The
``explain`` of every ranked candidate is written here, in one way: ``NumaQuery.explain`` for a
NUMA search, ``to_query_string`` for a plain query (a flavor without NUMA request, the fallback,
the JSON form of the GET query). ``to_query_string`` renders a ``CandidateQuery`` as the
equivalent ``GET /allocation_candidates`` query string. Order: the unsuffixed group, then each
suffixed group in query order (``resources$S``, ``required$S`` with ``!`` for forbidden traits
and ``in:`` for any-of, ``member_of$S``, ``in_tree$S``), then ``same_subtree``,
``group_policy``, ``root_required``, ``limit``. Trait names inside one parameter are sorted, so
equal queries render equally.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from placement_numa.domain.request_groups import CandidateQuery, RequestGroup
from placement_numa.numa.page_sizes import PageSizeRequest
from placement_numa.numa.request import NumaRequest

__all__ = [
    "ALIGNING_POLICIES",
    "CellGroups",
    "DeviceGroup",
    "GuestCell",
    "GuestTopology",
    "NumaQuery",
    "group_params",
    "to_query_string",
]


@dataclass(frozen=True, slots=True)
class GuestCell:
    """One guest NUMA cell: guest CPU ids, memory (MiB), and its ``VCPU``/``PCPU`` amounts."""

    index: int
    cpus: frozenset[int]
    memory_mb: int
    vcpu: int
    pcpu: int

    @property
    def cpu_count(self) -> int:
        """CPUs of the cell (``VCPU`` + ``PCPU``)."""
        return self.vcpu + self.pcpu


@dataclass(frozen=True, slots=True)
class GuestTopology:
    """The guest cells plus the per-instance settings the translation needs."""

    cells: tuple[GuestCell, ...]
    page_size: PageSizeRequest
    cpu_policy: str | None
    thread_policy: str | None
    emulator_threads_isolate: bool
    fixed_cell_count: bool
    explicit_page_size: bool = False
    # Whether Nova refuses to overcommit this guest's memory: dedicated CPUs (``dedicated`` /
    # ``mixed``) or an explicit ``hw:mem_page_size`` make Nova count FREE pages at ratio 1.0
    # (``_numa_fit_instance_cell``; ``numa.memory_rule`` enforces it). Derived, not given.
    memory_not_overcommitted: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        rule = self.explicit_page_size or self.cpu_policy in ("dedicated", "mixed")
        object.__setattr__(self, "memory_not_overcommitted", rule)


@dataclass(frozen=True, slots=True)
class CellGroups:
    """The request groups of one guest cell: ``anchor`` lands on the host NUMA cell provider."""

    index: int
    anchor: str
    proc: str
    mem: str


# Device affinity policies that refuse a device off the guest's cells (no fallback hosts then).
ALIGNING_POLICIES = ("required", "socket")


@dataclass(frozen=True, slots=True)
class DeviceGroup:
    """The request group of one PCI device: its suffix (``_PCI<n>``), resource class and
    effective NUMA affinity policy (``required``, ``legacy``, ``preferred``, ``socket`` or
    ``none``); ``in_subtree``: the query itself ties it to the guest's only cell
    (``same_subtree``), so the search needs no further check for it."""

    suffix: str
    resource_class: str
    policy: str
    in_subtree: bool = False


@dataclass(frozen=True)
class NumaQuery:
    """A translated flavor.

    * ``query``: the main query (NUMA-anchored for NUMA flavors, ``!HW_NUMA_ROOT`` otherwise);
    * ``cells``: the groups of each guest cell (empty without NUMA request);
    * ``fallback``: the query for non-reshaped hosts (NUMA flavors only);
    * ``topology``: the guest topology (``None`` without NUMA request);
    * ``cpu_classes``: the CPU resource classes asked (for the spread score);
    * ``search`` / ``search_cells``: the query the service runs. Guest cells must land on
      distinct host cells; when the flavor has no numbered groups of its own (or asks
      ``isolate``), this is the folded form under ``group_policy=isolate``, so the engine's
      isolate rule enforces it while searching. Otherwise (numbered groups with
      ``group_policy=none``) it is ``query`` and ``filter_anchors`` tells the caller to drop
      candidates whose anchors share a provider;
    * ``devices``: the request group of each PCI device (``_PCI1``, ...), with its affinity
      policy, which the search enforces (``numa.device_affinity``) unless ``in_subtree``;
    * ``request``: the typed request it was translated from.
    """

    query: CandidateQuery
    cells: tuple[CellGroups, ...]
    fallback: CandidateQuery | None
    topology: GuestTopology | None
    cpu_classes: tuple[str, ...]
    search: CandidateQuery | None = None
    search_cells: tuple[CellGroups, ...] = ()
    filter_anchors: bool = False
    devices: tuple[DeviceGroup, ...] = ()
    request: NumaRequest | None = None

    @property
    def anchors(self) -> tuple[str, ...]:
        """Suffixes that must land on distinct providers (one host NUMA cell per guest cell)."""
        return tuple(cell.anchor for cell in self.cells)

    @property
    def search_query(self) -> CandidateQuery:
        """The query the service runs (``search``, else ``query``)."""
        return self.search if self.search is not None else self.query

    @property
    def explain(self) -> str:
        """The ``explain`` of this query's candidates: the query the service runs as a ``GET
        /allocation_candidates`` query string, plus ``#`` and the constraints the search adds
        (``&``-separated) when there are any::

            resources_MEM1=...&resources_PCI1=CUSTOM_PCI_8086_1572:1&same_subtree=...
            #device_affinity=_PCI1:required&guest_cells=_NUMA1,_NUMA2&distinct_cells=_NUMA1,_NUMA2

        (a URL fragment: ``GET /allocation_candidates?<explain>`` still runs the query). Each
        constraint is present only when the search applies it:

        * ``device_affinity=<suffix>:<policy>,...``: the device groups whose NUMA affinity the
          search checks (``numa.device_affinity``: ``required``, ``legacy``, ``socket``) or
          ranks (``preferred``), and ``guest_cells``: the anchor groups whose host cells count
          as the guest's; a ``required`` device of a one-cell guest is in the query's
          ``same_subtree`` instead;
        * ``distinct_cells=<suffix>,...``: guest cells on distinct host cells, when the query
          itself (``group_policy=isolate``) does not enforce it;
        * ``memory=free_pages``: Nova's rule for pinned or explicit-page-size guests
          (``numa.memory_rule``).
        """
        constraints = self._constraints()
        query = to_query_string(self.search_query)
        return query + ("#" + "&".join(constraints) if constraints else "")

    def _constraints(self) -> list[str]:
        """``name=value`` of each constraint the search adds to the query (``explain``)."""
        found: list[str] = []
        devices = [d for d in self.devices if not d.in_subtree and d.policy != "none"]
        if devices:
            found.append("device_affinity=" + ",".join(f"{d.suffix}:{d.policy}" for d in devices))
            anchors = self.search_cells or self.cells
            found.append("guest_cells=" + ",".join(c.anchor for c in anchors))
        if self.filter_anchors:
            found.append("distinct_cells=" + ",".join(self.anchors))
        if self.topology is not None and self.topology.memory_not_overcommitted:
            found.append("memory=free_pages")
        return found


def _required(group: RequestGroup) -> list[str]:
    values = []
    plain = sorted(group.required_traits) + [f"!{t}" for t in sorted(group.forbidden_traits)]
    if plain:
        values.append(",".join(plain))
    values.extend("in:" + ",".join(sorted(any_of)) for any_of in group.any_traits)
    return values


def group_params(group: RequestGroup) -> list[tuple[str, str]]:
    """The ``(name, value)`` parameters of one request group."""
    suffix = group.suffix or ""
    params: list[tuple[str, str]] = []
    if group.resources:
        params.append(
            (f"resources{suffix}", ",".join(f"{rc}:{n}" for rc, n in group.resources.items()))
        )
    params.extend((f"required{suffix}", value) for value in _required(group))
    for aggregates in group.member_of:
        ordered = sorted(aggregates)
        params.append(
            (f"member_of{suffix}", ordered[0] if len(ordered) == 1 else "in:" + ",".join(ordered))
        )
    if group.forbidden_aggregates:
        params.append((f"member_of{suffix}", "!in:" + ",".join(sorted(group.forbidden_aggregates))))
    if group.in_tree:
        params.append((f"in_tree{suffix}", group.in_tree))
    return params


def to_query_string(query: CandidateQuery) -> str:
    """``resources=DISK_GB:20&resources_MEM1=MEMORY_MB:4096&required_MEM1=...&group_policy=none``.

    Values are written literally (names and suffixes need no escaping; ``!`` and ``:`` and ``,``
    are legal in a query string)."""
    params: list[tuple[str, str]] = []
    for group in query.groups:
        params.extend(group_params(group))
    order = {g.suffix: i for i, g in enumerate(query.groups)}
    for subtree in query.same_subtree:
        params.append(
            ("same_subtree", ",".join(sorted(subtree, key=lambda s: order.get(s, 1 << 30))))
        )
    if query.group_policy:
        params.append(("group_policy", query.group_policy))
    root = sorted(query.root_required) + [f"!{t}" for t in sorted(query.root_forbidden)]
    if root:
        params.append(("root_required", ",".join(root)))
    params.extend(("root_required", "in:" + ",".join(sorted(a))) for a in query.root_any)
    if query.limit is not None:
        params.append(("limit", str(query.limit)))
    return "&".join(f"{name}={value}" for name, value in params)
