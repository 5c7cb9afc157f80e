"""Use case: NUMA-aware allocation candidates (``POST /allocation_candidates``).

Flow (``doc/source/contributor/numa-pipeline.rst``): flavor + image + options ->
``numa_request`` (``NumaRequest``) -> ``numa.translate.search_plan`` (``SearchPlan``) ->
the candidate engine with the NUMA rank hook (``numa.engine_rank``) -> ranked candidates, NUMA
fits first, then the fallback candidates on hosts not reshaped yet.

* ``plan_candidates``: the searches of a ``SearchPlan`` (with a plan that widens: widths 1, 2,
  ... as KEP-2902, keeping each host's narrowest fit), then the fallback query
  (``!HW_NON_NUMA,!HW_NUMA_ROOT``) after every NUMA fit; ``flavor_candidates`` builds the
  request and the plan first;
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
nothing changed. Raises ``InvalidFlavor`` (400) from ``numa_request``.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable, Mapping
from typing import Any, TypeVar

from placement_numa.db.database import Database
from placement_numa.db.repositories import numa_distances as repo
from placement_numa.db.repositories.fleet import current_revision
from placement_numa.domain.request_groups import CandidateQuery
from placement_numa.engine import CandidateEngine, CandidateResult, FleetSnapshot
from placement_numa.numa.engine_rank import CellIndex, NumaRanker
from placement_numa.numa.flavor import Flavor, ImageProperties
from placement_numa.numa.numa_query import to_query_string
from placement_numa.numa.pci_alias import PciAlias
from placement_numa.numa.request import NumaOptions
from placement_numa.numa.resolve import numa_request
from placement_numa.numa.search_hooks import NumaHooks
from placement_numa.numa.translate import MAX_DISTRIBUTE_CELLS, SearchPlan, search_plan
from placement_numa.services.numa_distances import cell_id
from placement_numa.services.numa_search import (
    RankedCandidate,
    ranker_for,
    runnable,
    search_bounded,
    search_exhaustive,
)
from placement_numa.services.numa_widths import distributed, distributed_bounded

__all__ = [
    "NumaOptions",
    "RankedCandidate",
    "CellIndexCache",
    "candidates_for",
    "flavor_candidates",
    "plan_candidates",
    "query_candidates",
    "MAX_DISTRIBUTE_CELLS",
]


V = TypeVar("V")

# Trees a cached cell index is patched for at most; past that, it is read whole. Their rows are
# read by lists of ids (a tree's providers: about 7-20 each), so this bounds a statement's bind
# parameters well under the databases' limits (PostgreSQL's 65,535).
MAX_PATCHED_ROOTS = 1000


def _cell_rows(conn: Any, roots: Collection[int] | None = None) -> CellIndex:
    """The cell names, distance matrices, host names and sockets of every tree (of ``roots``,
    root provider database ids, when given) as a ``CellIndex``."""
    names = repo.all_cell_names(conn, roots)
    matrices = repo.all_matrices(conn, roots)
    hosts = repo.root_names(conn, roots)
    sockets = repo.all_sockets(conn, roots)
    stored = repo.all_cell_ids(conn, roots)  # the id a cell had when its matrix was stored
    ids = {uuid: cid for uuid, name in names if (cid := cell_id(uuid, name, stored)) is not None}
    return CellIndex(ids, matrices, hosts, sockets)


def _load_cell_index(database: Database) -> tuple[int, CellIndex]:
    """``(revision, index)``: the revision counter read BEFORE the cell names, distance matrices
    and host names (one read connection), so the index reflects at least that revision."""
    with database.read() as conn:
        revision = current_revision(conn)
        index = _cell_rows(conn)
    return revision, index


def _patched_index(
    database: Database, index: CellIndex, fleet: FleetSnapshot, reread: Collection[int]
) -> CellIndex:
    """``index`` (as of an earlier revision of ``fleet``'s lineage) brought to ``fleet``: the
    rows of the trees ``reread`` (root indices: those replaced since for more than their usage,
    ``FleetSnapshot.changes_since``; the writes in between touched only trees) are read again;
    the same object when none of them changed (allocation writes only), so caches keyed by the
    index stay valid."""
    providers = fleet.providers
    roots = [r for r in reread if r in fleet.tree and providers[r].parent < 0]
    if not roots:
        return index
    with database.read() as conn:
        fresh = _cell_rows(conn, [providers[r].id for r in roots])
    uuids = fleet.uuids
    cells = {uuids[m] for r in roots for m in fleet.tree[r]}
    hosts = [uuids[r] for r in roots]
    if (
        {u: index.cell_ids[u] for u in cells if u in index.cell_ids} == fresh.cell_ids
        and all(index.host_names.get(u) == fresh.host_names.get(u) for u in hosts)
        and all(index.distances.get(u) == fresh.distances.get(u) for u in hosts)
        and all(index.sockets.get(u) == fresh.sockets.get(u) for u in hosts)
    ):
        return index
    return CellIndex(
        _merged(index.cell_ids, fresh.cell_ids, cells),
        _merged(index.distances, fresh.distances, hosts),
        _merged(index.host_names, fresh.host_names, hosts),
        _merged(index.sockets, fresh.sockets, hosts),
    )


def _merged(old: Mapping[str, V], new: Mapping[str, V], replaced: Iterable[str]) -> dict[str, V]:
    """``old`` without the keys ``replaced``, plus ``new``."""
    merged = dict(old)
    for key in replaced:
        merged.pop(key, None)
    merged.update(new)
    return merged


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
        self.patches = 0

    def get(
        self, database: Database, revision: int, fleet: FleetSnapshot | None = None
    ) -> CellIndex:
        """The index as of ``revision`` (a ``FleetSnapshot.revision``) or later. When
        ``fleet`` (the snapshot at ``revision``) knows what changed since the revision the
        cached index reflects (``FleetSnapshot.changes_since``, across several patches: a
        prefork worker's first NUMA query after claims included), only trees changed (no write
        beyond them) and at most ``MAX_PATCHED_ROOTS`` trees did, the trees replaced for more
        than their usage are read again (``patches`` counts these); else the whole index is
        (``loads``)."""
        entry = self._entry
        if entry is not None and entry[0] >= revision:
            return entry[1]
        with self._lock:
            entry = self._entry
            if entry is not None and entry[0] >= revision:
                return entry[1]
            changes = None
            if entry is not None and fleet is not None and fleet.revision == revision:
                changes = fleet.changes_since(entry[0], MAX_PATCHED_ROOTS)
            if (
                entry is not None
                and fleet is not None
                and changes is not None
                and not changes.beyond_trees
            ):
                index = _patched_index(database, entry[1], fleet, changes.reread)
                entry = self._entry = (revision, index)
                self.patches += 1
            else:
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
    return (index_cache or CellIndexCache()).get(database, fleet.revision, fleet)


def _unranked(
    result: CandidateResult, explain: str, index: CellIndex, *, fallback: bool = False
) -> list[RankedCandidate]:
    """``result``'s candidates, in engine order, as ``RankedCandidate`` without a NUMA score:
    ``explain`` the query they answer, the host name from ``index``."""
    fleet = result.fleet
    names, uuids = index.host_names.get, fleet.uuids
    return [
        RankedCandidate(c, fleet, None, explain, fallback=fallback, host=names(uuids[c.anchor]))
        for c in result.candidates
    ]


def plan_candidates(
    *,
    database: Database | None,
    engine: CandidateEngine,
    plan: SearchPlan,
    options: NumaOptions | None = None,
    index: CellIndex | None = None,
    index_cache: CellIndexCache | None = None,
    exhaustive: bool = False,
) -> list[RankedCandidate]:
    """Ranked candidates of a ``SearchPlan`` (see the module docstring) under ``options``
    (default: the request's; a caller that searches one plan several times, as a claim does,
    gives ``dataclasses.replace(plan.request.options, limit=...)``). ``index`` (cell ids,
    distances, host names, sockets) is read from ``database`` unless given (through
    ``index_cache`` when given); ``exhaustive`` runs the reference path (same answer, slower)."""
    options = options if options is not None else plan.request.options
    if not plan.admitted:
        return []  # single-numa-node and a guest fixed at more than one cell
    limit = options.limit
    fleet = engine.snapshot()
    index = index if index is not None else _cell_index(database, index_cache, fleet)
    numa = runnable(plan.main, fleet)
    if numa is None:  # requires a trait no provider can have: a valid flavor, no candidates
        return []
    if numa.topology is None:  # no NUMA request: non-NUMA hosts only, engine order
        result = engine.search(numa.search_query, limit=limit, fleet=fleet)
        return _unranked(result, to_query_string(numa.search_query), index)
    if plan.widen:  # widths 1, 2, ... (numa_widths)
        widened = distributed if exhaustive else distributed_bounded
        found = widened(engine, plan, index, options, fleet)
    elif numa.search is None:  # the NUMA search requires an unknown trait: only the fallback
        found = []
    elif exhaustive:
        ranker = ranker_for(index, numa, options)
        found = search_exhaustive(engine, numa, ranker, limit, fleet, options)
    else:
        ranker = ranker_for(index, numa, options)
        found, _ = search_bounded(engine, numa, ranker, limit, fleet=fleet, options=options)
    if numa.fallback is not None and (limit is None or len(found) < limit):
        remaining = None if limit is None else limit - len(found)
        result = engine.search(numa.fallback, limit=remaining, fleet=fleet)
        found.extend(_unranked(result, to_query_string(numa.fallback), index, fallback=True))
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
) -> list[RankedCandidate]:
    """Ranked candidates for a Nova flavor: ``numa_request`` (``aliases``: the ``[pci] alias``
    table), ``search_plan``, then ``plan_candidates`` (the other arguments as there). Raises
    ``InvalidFlavor`` (400)."""
    plan = search_plan(numa_request(flavor, image, options, aliases=aliases))
    return plan_candidates(
        database=database,
        engine=engine,
        plan=plan,
        index=index,
        index_cache=index_cache,
        exhaustive=exhaustive,
    )


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
    hooks = NumaHooks(ranker)
    result = engine.search(
        query,
        limit=options.limit,
        rank=hooks.rank,
        rank_bound=None if exhaustive else hooks,
        fleet=fleet,
        orderings=options.every_ordering,
        diversify=options.diversify,
    )
    return hooks.ranked(result.candidates, result.fleet, to_query_string(query))


def candidates_for(
    *,
    database: Database | None,
    engine: CandidateEngine,
    wanted: SearchPlan | CandidateQuery,
    options: NumaOptions,
    index_cache: CellIndexCache | None = None,
) -> list[RankedCandidate]:
    """Ranked candidates of what a NUMA body asks (``api/numa_body.searched``): a flavor's
    ``SearchPlan`` (``plan_candidates``) or a ready query (``query_candidates``), under
    ``options`` (whole)."""
    if isinstance(wanted, SearchPlan):
        return plan_candidates(
            database=database, engine=engine, plan=wanted, options=options, index_cache=index_cache
        )
    return query_candidates(
        database=database, engine=engine, query=wanted, options=options, index_cache=index_cache
    )
