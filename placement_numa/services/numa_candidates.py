"""Use case: NUMA-aware allocation candidates (``POST /allocation_candidates``).

Flow (design notes, "NUMA layer"): flavor + image -> ``numa.translate`` -> the candidate engine
with the NUMA rank hook (``numa.engine_rank``) -> ranked candidates, NUMA fits first, then the
fallback candidates on hosts not reshaped yet.

* ``flavor_candidates``: translate, search (with ``distribute_cpus_across_numa`` and a flavor that
  does not fix its cell count: widths 1, 2, ... as KEP-2902, keeping each host's narrowest fit),
  then the fallback query (``!HW_NON_NUMA,!HW_NUMA_ROOT``) after every NUMA fit;
* ``query_candidates``: a ready ``CandidateQuery`` (the JSON form of the GET query), ranked.

Nova's memory rule for guests with dedicated CPUs or an explicit page size (never overcommit
their memory: free pages at ratio 1.0) is applied to each candidate through the engine's
``accept`` hook (``numa.memory_rule``), as is "guest cells on distinct host cells" when the
query itself cannot enforce it.

Ranked searches give the engine the ranker's ``bound`` hook (``NumaRanker.bound``): roots are
searched in ascending order of the best key they can offer and the search stops once ``limit``
candidates are known to come first, so the work follows the candidates returned, not those that
exist. ``exhaustive=True`` runs the previous path (every candidate of every root ranked; KEP-2902
widths searched host by host); it is kept as the reference the tests compare against.

Reads only. Every search of one request runs on one engine snapshot (``engine.snapshot()``, fresh
as of the request). The cell index (cell names, distance matrices, host names) is cached per
process (a ``CellIndexCache`` the caller keeps, the API on ``app.state``, passed as
``index_cache``), and reloaded from SQL only when the snapshot's ``placement_revision`` is newer
than the one the cached index was read at (every write, a distance matrix PUT included, bumps
the revision), so a request sees every committed write yet does no SQL for the index when
nothing changed. Raises ``InvalidFlavor`` (400) from the
translation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace

from placement_numa.db.database import Database
from placement_numa.db.repositories import numa_distances as repo
from placement_numa.db.repositories.fleet import current_revision
from placement_numa.domain.request_groups import CandidateQuery
from placement_numa.engine import Candidate, CandidateEngine, FleetSnapshot
from placement_numa.numa.device_affinity import device_accept
from placement_numa.numa.distances import cell_id_from_name
from placement_numa.numa.distribute import widths_to_try
from placement_numa.numa.engine_rank import CellIndex, NumaRanker
from placement_numa.numa.flavor import Flavor, ImageProperties
from placement_numa.numa.memory_rule import memory_accept
from placement_numa.numa.pci_alias import PciAlias
from placement_numa.numa.query_string import to_query_string
from placement_numa.numa.ranking import NumaScore, rank_key
from placement_numa.numa.request import FlavorRequest, resolve_request
from placement_numa.numa.topology_policies import policy as topology_policy_named
from placement_numa.numa.translate import NumaQuery, translate
from placement_numa.numa.unknown_traits import known_traits_only

__all__ = [
    "NumaOptions",
    "RankedCandidate",
    "CellIndexCache",
    "flavor_candidates",
    "flavor_request",
    "query_candidates",
    "MAX_DISTRIBUTE_CELLS",
]

# KEP-2902 tries 1..N cells; hosts rarely have more than 8 cells per socket pair.
MAX_DISTRIBUTE_CELLS = 16


@dataclass(frozen=True)
class NumaOptions:
    """``limit`` (``None`` = all), ``prefer_closest_numa_nodes`` (KEP-3545, default on),
    ``distribute_cpus_across_numa`` (KEP-2902, default off), ``every_ordering`` (default off:
    guest cells with identical requests are interchangeable, so each distinct set of host
    cells is returned once; on: every assignment of guest cells to them, as GET does) and
    ``diversify`` (default on: the best candidate of every host, in rank order, before the
    second best of any host, so a ``limit`` answer offers alternates on distinct hosts);
    ``topology_policy``: the Topology Manager policy (``none``, ``best-effort``,
    ``restricted``, ``single-numa-node``; ``None``: Nova's flavor semantics)."""

    limit: int | None = None
    prefer_closest: bool = True
    distribute: bool = False
    every_ordering: bool = False
    diversify: bool = True
    topology_policy: str | None = None


def _rounds(found: list[RankedCandidate]) -> list[RankedCandidate]:
    """``found`` (ranked) reordered by rounds: each host's best, then each host's second
    best, ...; rank order kept within a round (the engine's ``diversify`` order)."""
    seen: dict[int, int] = {}
    keyed = []
    for n, ranked in enumerate(found):
        anchor = ranked.candidate.anchor
        keyed.append((seen.get(anchor, 0), n, ranked))
        seen[anchor] = seen.get(anchor, 0) + 1
    keyed.sort(key=lambda item: (item[0], item[1]))
    return [ranked for _, _, ranked in keyed]


@dataclass(frozen=True)
class RankedCandidate:
    """One candidate, best first: the engine's candidate and snapshot, its NUMA score
    (``None`` for fallback candidates), the query string it answers, whether it is a
    fallback (host not reshaped), the host name and the PCI devices it takes:
    ``((resource class, provider uuid, cell id or None), ...)``."""

    candidate: Candidate
    fleet: FleetSnapshot
    score: NumaScore | None
    explain: str
    fallback: bool = False
    host: str | None = None
    devices: tuple[tuple[str, str, int | None], ...] = ()


def _load_cell_index(database: Database) -> tuple[int, CellIndex]:
    """``(revision, index)``: the revision counter read BEFORE the cell names, distance matrices
    and host names (one read connection), so the index reflects at least that revision."""
    with database.read() as conn:
        revision = current_revision(conn)
        names = repo.all_cell_names(conn)
        matrices = repo.all_matrices(conn)
        hosts = repo.root_names(conn)
        sockets = repo.all_sockets(conn)
    ids = {uuid: cid for uuid, name in names if (cid := cell_id_from_name(name)) is not None}
    return revision, CellIndex(ids, matrices, hosts, sockets)


class CellIndexCache:
    """The last ``CellIndex`` read from SQL and the ``placement_revision`` it reflects at least.

    One per process, kept by the caller (the API: ``app.state.cell_index``) and keyed by what the
    engine publishes (``FleetSnapshot.revision``). ``get(database, revision)`` returns
    the cached index when it was read at ``revision`` or later, else reloads it (thread-safe;
    ``loads`` counts reloads, for tests and diagnostics).
    """

    def __init__(self) -> None:
        self._entry: tuple[int, CellIndex] | None = None
        self._lock = threading.Lock()
        self.loads = 0

    def get(self, database: Database, revision: int) -> CellIndex:
        """The index as of ``revision`` (a ``FleetSnapshot.revision``) or later."""
        entry = self._entry
        if entry is not None and entry[0] >= revision:
            return entry[1]
        with self._lock:
            entry = self._entry
            if entry is None or entry[0] < revision:
                entry = self._entry = _load_cell_index(database)
                self.loads += 1
            return entry[1]


def _cell_index(
    database: Database | None, index_cache: CellIndexCache | None, fleet: FleetSnapshot
) -> CellIndex:
    """The cell index for a search of ``fleet`` (empty without a database; read from SQL when
    no ``index_cache`` is given)."""
    if database is None:
        return CellIndex()
    return (index_cache or CellIndexCache()).get(database, fleet.revision)


def _known_classes(query: CandidateQuery | None, fleet: FleetSnapshot) -> CandidateQuery | None:
    """``query``, or ``None`` when it asks a resource class the service does not know (a
    device alias whose class no provider was given yet: a valid flavor, no candidates)."""
    known = fleet.resource_class_names
    if query is None or known is None:
        return query
    if any(rc not in known for g in query.groups for rc in g.resources):
        return None
    return query


def _runnable(numa: NumaQuery, fleet: FleetSnapshot) -> NumaQuery | None:
    """``numa`` with its search and fallback queries checked against the traits the service
    knows (``numa.unknown_traits``): ``None`` when the search requires an unknown trait (no
    candidates, never a 400: the flavor is valid), else unknown forbidden traits dropped; a
    fallback that requires an unknown trait is dropped; a query asking a resource class the
    service does not know (``_known_classes``) is treated as one requiring an unknown trait."""
    fallback = _known_classes(numa.fallback, fleet)
    if fallback is not None:
        fallback = known_traits_only(fallback, fleet.trait_names)
    search = _known_classes(numa.search_query, fleet)
    if search is not None:
        search = known_traits_only(search, fleet.trait_names)
    if search is None:
        return replace(numa, fallback=fallback, search=None) if fallback is not None else None
    return replace(numa, search=search, fallback=fallback)


def _anchors_distinct(candidate: Candidate, anchors: tuple[str, ...]) -> bool:
    chosen = [g.providers for g in candidate.groups if g.suffix in anchors]
    return len({p for p in chosen}) == len(chosen)


def _accept(
    numa: NumaQuery, fleet: FleetSnapshot, index: CellIndex | None = None
) -> Callable[[Candidate], bool] | None:
    """The search's ``accept`` filter: guest cells on distinct host cells when the query cannot
    enforce it (``filter_anchors``), Nova's memory rule for pinned and explicit-page-size
    guests (``numa.memory_rule``) and the devices' NUMA affinity (``numa.device_affinity``);
    ``None`` when none applies."""
    checks: list[Callable[[Candidate], bool]] = []
    if numa.filter_anchors:
        anchors = numa.anchors
        checks.append(lambda c: _anchors_distinct(c, anchors))
    memory = memory_accept(numa.topology, fleet)
    if memory is not None:
        checks.append(memory)
    devices = device_accept(numa, fleet, index or CellIndex())
    if devices is not None:
        checks.append(devices)
    if not checks:
        return None
    if len(checks) == 1:
        return checks[0]
    return lambda c: all(check(c) for check in checks)


def _ranker(index: CellIndex, numa: NumaQuery, options: NumaOptions) -> NumaRanker:
    return NumaRanker(
        index,
        numa.cpu_classes,
        prefer_closest=options.prefer_closest,
        distinct=numa.anchors if numa.filter_anchors else (),
        device_classes=frozenset(d.resource_class for d in numa.devices),
        align_devices=any(d.policy != "none" for d in numa.devices),
    )


def _ranked(
    candidate: Candidate, fleet: FleetSnapshot, ranker: NumaRanker, explain: str
) -> RankedCandidate:
    return RankedCandidate(
        candidate,
        fleet,
        ranker.score(candidate, fleet),
        explain,
        devices=ranker.devices(candidate, fleet),
    )


def _search_bounded(
    engine: CandidateEngine,
    numa: NumaQuery,
    ranker: NumaRanker,
    limit: int | None,
    roots: Collection[str] | None = None,
    fleet: FleetSnapshot | None = None,
    options: NumaOptions = NumaOptions(),
) -> tuple[list[RankedCandidate], FleetSnapshot]:
    """The first ``limit`` ranked candidates (all with ``None``) of ``numa``'s search query,
    anchored at ``roots`` (uuids; ``None``: any), guest cells on distinct host cells; roots
    searched best bound first; on ``fleet`` (``None``: a fresh snapshot). Same answer as
    ``_search``."""
    query = numa.search_query
    if fleet is None:
        fleet = engine.snapshot()
    # the rank bound's contract reads key[0] as the width; device keys lead with alignment
    result = engine.search(
        query,
        limit=limit,
        rank=ranker.rank,
        rank_bound=None if numa.devices else ranker.bound,
        roots=roots,
        accept=_accept(numa, fleet, ranker.index),
        fleet=fleet,
        orderings=options.every_ordering,
        diversify=options.diversify,
    )
    explain = to_query_string(query)
    fleet = result.fleet
    found = [_ranked(c, fleet, ranker, explain) for c in result.candidates]
    return found, fleet


def _search(
    engine: CandidateEngine,
    numa: NumaQuery,
    ranker: NumaRanker,
    limit: int | None,
    fleet: FleetSnapshot | None = None,
    options: NumaOptions = NumaOptions(),
) -> list[RankedCandidate]:
    """The exhaustive reference of ``_search_bounded`` (every candidate ranked)."""
    query = numa.search_query
    if fleet is None:
        fleet = engine.snapshot()
    accept = _accept(numa, fleet, ranker.index)
    result = engine.search(
        query,
        limit=None if accept is not None or options.diversify else limit,
        rank=ranker.rank,
        fleet=fleet,
        orderings=options.every_ordering,
    )
    explain = to_query_string(query)
    found = []
    for candidate in result.candidates:
        if accept is not None and not accept(candidate):
            continue
        found.append(_ranked(candidate, result.fleet, ranker, explain))
    if options.diversify:
        found = _rounds(found)
    return found if limit is None else found[:limit]


def _named(found: list[RankedCandidate], index: CellIndex) -> list[RankedCandidate]:
    """Attach the compute node name (root provider name) to each candidate."""
    return [
        replace(r, host=index.host_names.get(r.fleet.providers[r.candidate.anchor].uuid))
        for r in found
    ]


def _in_tree(query: CandidateQuery, root_uuid: str) -> CandidateQuery:
    """``query`` restricted to one tree (``in_tree`` on every group)."""
    return replace(query, groups=tuple(replace(g, in_tree=root_uuid) for g in query.groups))


def _numa_cells(fleet: FleetSnapshot, root: int) -> list[int]:
    return [i for i in fleet.tree[root] if "HW_NUMA_ROOT" in fleet.providers[i].traits]


def _distributed_bounded(
    engine: CandidateEngine,
    request: FlavorRequest,
    index: CellIndex,
    options: NumaOptions,
    fleet: FleetSnapshot,
    *,
    every: bool = False,
) -> list[RankedCandidate]:
    """KEP-2902 over the fleet, with the answer of ``_distributed``: width 1 over every host;
    then, for each wider width, the hosts not placed yet that have that many NUMA cells and
    enough free CPUs in total. Each width is one bounded ranked search (``_search_bounded``)
    asked only for the candidates still missing, so a wider width is searched only when the
    narrower ones gave fewer than ``limit`` (and then they gave all theirs, so the placed hosts
    are known).

    ``every`` (``topology_policy=best-effort``): every width of every host, placed or not, all
    ranked together (aligned, then narrowest first), then ``limit``."""
    limit = None if every else options.limit
    found: list[RankedCandidate] = []
    placed: set[str] = set()
    cells_of: dict[int, list[int]] = {}
    for width in widths_to_try(request.flavor.vcpus, MAX_DISTRIBUTE_CELLS):
        runnable = _runnable(translate(request, cell_count=width), fleet)
        if runnable is None or runnable.search is None:
            continue
        attempt = runnable
        ranker = _ranker(index, attempt, options)
        remaining = None if limit is None else limit - len(found)
        if width == 1:
            batch, _ = _search_bounded(
                engine, attempt, ranker, remaining, fleet=fleet, options=options
            )
        else:
            needed = sum(c.cpu_count for c in attempt.topology.cells) if attempt.topology else 0
            eligible = []
            providers = fleet.providers
            for root in fleet.roots:
                uuid = providers[root].uuid
                if uuid in placed and not every:
                    continue
                cells = cells_of.get(root)
                if cells is None:
                    cells = cells_of[root] = _numa_cells(fleet, root)
                if len(cells) < width:
                    continue
                free = sum(providers[i].free(rc) for i in cells for rc in attempt.cpu_classes)
                if free >= needed:
                    eligible.append(uuid)
            batch = []
            if eligible:
                batch, _ = _search_bounded(
                    engine,
                    attempt,
                    ranker,
                    remaining,
                    roots=eligible,
                    fleet=fleet,
                    options=options,
                )
        for ranked in batch:
            placed.add(ranked.fleet.providers[ranked.candidate.anchor].uuid)
        found.extend(batch)
        if limit is not None and len(found) >= limit:
            return found[:limit]
    if every:
        found.sort(
            key=lambda r: (
                rank_key(r.score, prefer_closest=options.prefer_closest) if r.score else ()
            )
        )
        if options.diversify:
            found = _rounds(found)
        if options.limit is not None:
            found = found[: options.limit]
    return found


def _distributed(
    engine: CandidateEngine,
    request: FlavorRequest,
    index: CellIndex,
    options: NumaOptions,
    fleet: FleetSnapshot,
    *,
    every: bool = False,
) -> list[RankedCandidate]:
    """KEP-2902 over the fleet: width 1 over every host; then, for each wider width, only the
    hosts not placed yet that have that many NUMA cells and enough free CPUs in total (each
    searched with ``in_tree``), so a host is reported at its narrowest even split only and the
    search never enumerates wide splits of hosts that already fit narrower. Stops at ``limit``.
    The exhaustive reference of ``_distributed_bounded`` (``every``: as there)."""
    limit = None if every else options.limit
    found: list[RankedCandidate] = []
    placed: set[str] = set()
    for width in widths_to_try(request.flavor.vcpus, MAX_DISTRIBUTE_CELLS):
        runnable = _runnable(translate(request, cell_count=width), fleet)
        if runnable is None or runnable.search is None:
            continue
        attempt = runnable
        ranker = _ranker(index, attempt, replace(options, limit=None))
        if width == 1:
            batch = _search(engine, attempt, ranker, None, fleet, options)
        else:
            needed = sum(c.cpu_count for c in attempt.topology.cells) if attempt.topology else 0
            batch = []
            for root in fleet.roots:
                info = fleet.providers[root]
                cells = [i for i in fleet.tree[root] if "HW_NUMA_ROOT" in fleet.providers[i].traits]
                if (info.uuid in placed and not every) or len(cells) < width:
                    continue
                free = sum(fleet.providers[i].free(rc) for i in cells for rc in attempt.cpu_classes)
                if free < needed:
                    continue
                restricted = replace(attempt, search=_in_tree(attempt.search_query, info.uuid))
                batch.extend(_search(engine, restricted, ranker, None, fleet, options))
            batch.sort(
                key=lambda r: (
                    rank_key(r.score, prefer_closest=options.prefer_closest) if r.score else ()
                )
            )
            if options.diversify:
                batch = _rounds(batch)
        for ranked in batch:
            placed.add(ranked.fleet.providers[ranked.candidate.anchor].uuid)
        found.extend(batch)
        if limit is not None and len(found) >= limit:
            return found[:limit]
    if every:
        found.sort(
            key=lambda r: (
                rank_key(r.score, prefer_closest=options.prefer_closest) if r.score else ()
            )
        )
        if options.diversify:
            found = _rounds(found)
        if options.limit is not None:
            found = found[: options.limit]
    return found


def flavor_request(
    flavor: Flavor,
    image: ImageProperties | None,
    options: NumaOptions,
    aliases: Mapping[str, PciAlias] | None = None,
) -> FlavorRequest:
    """The typed request of ``flavor`` (+ ``image``) under ``options.topology_policy`` with the
    ``[pci] alias`` table ``aliases``. Raises ``InvalidFlavor`` (400)."""
    return resolve_request(
        flavor,
        image,
        aliases=aliases,
        topology_policy=topology_policy_named(options.topology_policy),
    )


def _numa_found(
    engine: CandidateEngine,
    request: FlavorRequest,
    numa: NumaQuery,
    index: CellIndex,
    options: NumaOptions,
    fleet: FleetSnapshot,
    exhaustive: bool,
) -> list[RankedCandidate]:
    """The NUMA fits of ``numa`` (no fallback), by the widths its topology policy or
    ``distribute_cpus_across_numa`` asks."""
    assert numa.topology is not None
    policy = request.topology_policy
    widths = policy.widths if policy is not None else "flavor"
    widen = not numa.topology.fixed_cell_count and (
        widths != "flavor" or (options.distribute and (policy is None or policy.max_cells != 1))
    )
    if widen:
        distributed = _distributed if exhaustive else _distributed_bounded
        return distributed(engine, request, index, options, fleet, every=widths == "every")
    if numa.search is None:  # the NUMA search requires an unknown trait: only the fallback
        return []
    ranker = _ranker(index, numa, options)
    if exhaustive:
        return _search(engine, numa, ranker, options.limit, fleet, options)
    found, _ = _search_bounded(engine, numa, ranker, options.limit, fleet=fleet, options=options)
    return found


def flavor_candidates(
    *,
    database: Database | None,
    engine: CandidateEngine,
    flavor: Flavor,
    image: ImageProperties | None,
    options: NumaOptions,
    index: CellIndex | None = None,
    index_cache: CellIndexCache | None = None,
    exhaustive: bool = False,
    aliases: Mapping[str, PciAlias] | None = None,
    request: FlavorRequest | None = None,
) -> list[RankedCandidate]:
    """Ranked candidates for a Nova flavor (see the module docstring). Raises ``InvalidFlavor``.
    ``index`` (cell ids, distances, host names, sockets) is read from ``database`` unless
    given (through ``index_cache`` when given); ``exhaustive`` runs the reference path (same
    answer, slower); ``aliases``: the ``[pci] alias`` table; ``request``: the flavor already
    resolved (``flavor_request``), so a caller that searches several times resolves once."""
    if request is None:
        request = flavor_request(flavor, image, options, aliases)
    policy = request.topology_policy
    if policy is not None and not policy.admits(request.numa_nodes):
        return []  # single-numa-node and a guest fixed at more than one cell
    translated = translate(request)
    limit = options.limit
    fleet = engine.snapshot()
    index = index if index is not None else _cell_index(database, index_cache, fleet)
    runnable = _runnable(translated, fleet)
    if runnable is None:  # requires a trait no provider can have: a valid flavor, no candidates
        return []
    numa = runnable
    if numa.topology is None:  # no NUMA request: non-NUMA hosts only, engine order
        result = engine.search(numa.search_query, limit=limit, fleet=fleet)
        explain = to_query_string(numa.search_query)
        return _named(
            [RankedCandidate(c, result.fleet, None, explain) for c in result.candidates], index
        )

    found = _numa_found(engine, request, numa, index, options, fleet, exhaustive)
    if numa.fallback is not None and (limit is None or len(found) < limit):
        remaining = None if limit is None else limit - len(found)
        result = engine.search(numa.fallback, limit=remaining, fleet=fleet)
        explain = to_query_string(numa.fallback)
        found.extend(
            RankedCandidate(c, result.fleet, None, explain, True) for c in result.candidates
        )
    return _named(found, index)


def query_candidates(
    *,
    database: Database | None,
    engine: CandidateEngine,
    query: CandidateQuery,
    options: NumaOptions,
    index: CellIndex | None = None,
    index_cache: CellIndexCache | None = None,
    exhaustive: bool = False,
) -> list[RankedCandidate]:
    """Ranked candidates for a ready query (the JSON form of the GET query). Candidates on
    hosts without NUMA cells score width 0 and come first; the query is run as given (roots
    searched best bound first unless ``exhaustive``; same answer); ``index`` and ``index_cache`` as
    for ``flavor_candidates``."""
    fleet = engine.snapshot()
    index = index if index is not None else _cell_index(database, index_cache, fleet)
    classes = tuple(
        rc for rc in ("VCPU", "PCPU") if any(rc in g.resources for g in query.groups)
    ) or ("VCPU", "PCPU")
    ranker = NumaRanker(index, classes, prefer_closest=options.prefer_closest)
    bound = None if exhaustive else ranker.bound
    result = engine.search(
        query,
        limit=options.limit,
        rank=ranker.rank,
        rank_bound=bound,
        fleet=fleet,
        orderings=options.every_ordering,
        diversify=options.diversify,
    )
    explain = to_query_string(query)
    return _named(
        [
            RankedCandidate(c, result.fleet, ranker.score(c, result.fleet), explain)
            for c in result.candidates
        ],
        index,
    )
