"""Use case (extension): schedule and claim in one call (``POST /allocation_candidates/claim``).

A scheduler that asks for candidates and then ``PUT``s the first one races every other
scheduler for the same best host; all but one get 409 and retry. ``claim`` does both steps in
the service, so the race is settled under the provider row locks instead of over HTTP:

1. search the ranked candidates (``services.numa_candidates``: the same search, ranking and
   snapshot freshness as ``POST /allocation_candidates``), ``window`` of them;
2. order them for claiming: candidates of EQUAL rank key (KEP-3545 width, distance, KEP-2902
   spread, cell tie-break) are shuffled among themselves, so concurrent callers spread over
   equally good hosts instead of all starting at the same one; better-ranked candidates always
   come before worse ones, so the NUMA ranking is never given up;
3. in ONE write transaction, walk them: lock the candidate's providers with ``SELECT ... FOR
   UPDATE SKIP LOCKED`` (a host another claimer is writing right now is passed over, not waited
   for), then write it with ``repositories.allocations.replace_allocations`` (the write path of
   ``PUT /allocations``: the same capacity, min/max/step and generation rules, under the same row
   locks) inside a savepoint. A candidate that no longer fits rolls back to the savepoint and the
   walk goes on; the first that fits is committed. Candidates passed over because they were
   locked are then tried again, waiting for their locks;
4. if nothing in the window could be claimed (every candidate was taken since the search), the
   search runs again on a fresh snapshot (at most ``MAX_ROUNDS`` times; a deadlock the database
   breaks re-runs the whole request, as for any write: ``api/db_retry.py``).

Answers: ``ClaimWritten`` (the candidate written, the consumer's new generation, up to
``alternates`` other candidates on other hosts, best first, for Nova's alternate hosts).
Raises ``NoRoom`` (409 ``placement_numa.claim.no_room``, with ``requested`` and ``lacking``)
only when a fresh search finds no candidate at all, i.e. when the fleet truly has no room for
the request; ``ClaimContended`` (409 ``placement_numa.claim.contended``) if ``MAX_ROUNDS``
fresh windows were all taken by others first (not seen in the benchmarks: a client may simply
retry); ``ConcurrentUpdate`` (409 ``placement.concurrent_update``) when the consumer generation
does not match (a consumer is never claimed twice); ``InvalidFlavor``/``BadRequest`` (400).

Usages, generations, the change log and the fleet snapshot see the claim as any allocation
write: it is one ``Database.write()`` transaction through the same repository function.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from sqlalchemy.engine import Connection

from placement_numa.db.database import Database
from placement_numa.db.repositories import allocations as allocation_repo
from placement_numa.db.repositories import consumers as consumer_repo
from placement_numa.db.repositories import providers as provider_repo
from placement_numa.domain.allocation import ConsumerAllocation
from placement_numa.domain.request_groups import CandidateQuery
from placement_numa.engine import CandidateEngine, FleetSnapshot
from placement_numa.errors import BadRequest, ConcurrentUpdate, Conflict
from placement_numa.numa.flavor import Flavor, ImageProperties
from placement_numa.numa.pci_alias import PciAlias
from placement_numa.numa.ranking import rank_key
from placement_numa.numa.request import NumaOptions
from placement_numa.numa.resolve import numa_request
from placement_numa.numa.translate import SearchPlan, search_plan
from placement_numa.services import numa_candidates
from placement_numa.services.numa_candidates import CellIndexCache, RankedCandidate

__all__ = [
    "ClaimRequest",
    "ClaimWritten",
    "NoRoom",
    "ClaimContended",
    "claim",
    "claim_for",
    "claim_for_flavor",
    "requested_amounts",
    "lacking_amounts",
    "ClaimStrategy",
    "DEFAULT_WINDOW",
    "MAX_ROUNDS",
]

DEFAULT_WINDOW = 64  # ranked candidates searched per round (alternates come on top)
MAX_ROUNDS = 8  # fresh searches before ClaimContended

Search = Callable[[int], list[RankedCandidate]]
ClaimStrategy = Literal["spread", "ordered"]


class NoRoom(Conflict):
    """409: no candidate at all fits the request (``extra``: ``requested``, ``lacking``)."""

    default_code = "placement_numa.claim.no_room"


class ClaimContended(Conflict):
    """409: every candidate of ``MAX_ROUNDS`` fresh searches was taken by other claims first."""

    default_code = "placement_numa.claim.contended"


@dataclass(frozen=True)
class ClaimRequest:
    """Who the claim is for, as in ``PUT /allocations/{consumer_uuid}`` (1.38): the consumer's
    expected generation (``None``: a new consumer), project, user and consumer type (``None``:
    keep / unknown); ``alternates``: how many other candidates to return."""

    consumer_uuid: str
    project_id: str
    user_id: str
    consumer_generation: int | None
    consumer_type: str | None = None
    alternates: int = 0


@dataclass(frozen=True)
class ClaimWritten:
    """The claim written (the service's answer; ``claim_client.Claimed`` is a client's view of
    the HTTP answer): the candidate, the consumer's new generation, alternates (other
    hosts, best first), candidates tried under lock (``attempts``) and searches (``rounds``)."""

    chosen: RankedCandidate
    consumer_generation: int
    alternates: list[RankedCandidate]
    attempts: int
    rounds: int


class _NothingClaimed(Exception):
    """Internal: the window had no claimable candidate (rolls the round's transaction back)."""

    def __init__(self, attempts: int) -> None:
        super().__init__(attempts)
        self.attempts = attempts


def requested_amounts(query: CandidateQuery) -> dict[str, int]:
    """``{resource_class: total amount}`` over every group of ``query``."""
    total: dict[str, int] = {}
    for group in query.groups:
        for rc, amount in group.resources.items():
            total[rc] = total.get(rc, 0) + amount
    return total


def lacking_amounts(fleet: FleetSnapshot, requested: Mapping[str, int]) -> dict[str, int]:
    """``{resource_class: shortfall}``: for each class requested, how much more the best host
    (free capacity summed over its whole provider tree) would need. Empty when every class alone
    fits on some host (then traits, NUMA shape or the combination is what is lacking)."""
    lacking: dict[str, int] = {}
    providers = fleet.providers
    for rc, amount in requested.items():
        best = max(
            (sum(providers[i].free(rc) for i in fleet.tree[root]) for root in fleet.roots),
            default=0,
        )
        if best < amount:
            lacking[rc] = amount - best
    return lacking


def _rank_of(ranked: RankedCandidate, prefer_closest: bool) -> tuple[object, ...]:
    if ranked.score is None:
        return ("fallback" if ranked.fallback else "unranked",)
    return rank_key(ranked.score, prefer_closest=prefer_closest)


def _claim_order(
    found: Sequence[RankedCandidate], rng: random.Random, prefer_closest: bool
) -> list[RankedCandidate]:
    """``found`` (best first) with each run of equally ranked candidates shuffled."""
    ordered: list[RankedCandidate] = []
    run: list[RankedCandidate] = []
    key: tuple[object, ...] | None = None
    for ranked in found:
        this = _rank_of(ranked, prefer_closest)
        if run and this != key:
            rng.shuffle(run)
            ordered.extend(run)
            run = []
        run.append(ranked)
        key = this
    rng.shuffle(run)
    ordered.extend(run)
    return ordered


def _host_of(ranked: RankedCandidate) -> str:
    return ranked.fleet.providers[ranked.candidate.anchor].uuid


def _resources(ranked: RankedCandidate) -> dict[str, dict[str, int]]:
    providers = ranked.fleet.providers
    resources: dict[str, dict[str, int]] = {}
    for index, rc, amount in ranked.candidate.allocations:
        per = resources.setdefault(providers[index].uuid, {})
        per[rc] = per.get(rc, 0) + amount
    return resources


def _provider_ids(ranked: RankedCandidate) -> list[int]:
    providers = ranked.fleet.providers
    return sorted({providers[index].id for index, _, _ in ranked.candidate.allocations})


def _item(request: ClaimRequest, resources: Mapping[str, Mapping[str, int]]) -> ConsumerAllocation:
    return ConsumerAllocation(
        consumer_uuid=request.consumer_uuid,
        project_id=request.project_id,
        user_id=request.user_id,
        resources=resources,
        consumer_type=request.consumer_type,
        consumer_generation=request.consumer_generation,
        check_generation=True,
    )


def _try_one(
    conn: Connection, ranked: RankedCandidate, request: ClaimRequest, *, wait: bool
) -> bool | None:
    """Write ``ranked`` for the consumer inside a savepoint: True when written, False when it no
    longer fits (or its providers vanished), ``None`` when ``wait`` is false and another
    transaction holds some of its providers. Raises ``ConcurrentUpdate`` (consumer generation)."""
    item = _item(request, _resources(ranked))
    savepoint = conn.begin_nested()
    try:
        if not wait and not provider_repo.try_lock_providers(conn, _provider_ids(ranked)):
            savepoint.rollback()
            return None
        allocation_repo.replace_allocations(conn, [item])
    except ConcurrentUpdate:
        savepoint.rollback()
        raise
    except (Conflict, BadRequest):  # taken since the search, or its providers are gone
        savepoint.rollback()
        return False
    savepoint.commit()
    return True


def _walk(
    conn: Connection, order: Sequence[RankedCandidate], request: ClaimRequest, *, skip: bool
) -> tuple[RankedCandidate, int]:
    """Claim the first candidate of ``order`` that fits (see the module docstring, step 3);
    returns it and the number of candidates tried. ``skip``: pass over candidates whose
    providers another transaction holds, and come back to them last. Raises
    ``_NothingClaimed``."""
    attempts = 0
    locked: list[RankedCandidate] = []
    for ranked in order:
        outcome = _try_one(conn, ranked, request, wait=not skip)
        if outcome is None:
            locked.append(ranked)
            continue
        attempts += 1
        if outcome:
            return ranked, attempts
    for ranked in locked:
        attempts += 1
        if _try_one(conn, ranked, request, wait=True):
            return ranked, attempts
    raise _NothingClaimed(attempts)


def _alternates(
    found: Sequence[RankedCandidate], chosen: RankedCandidate, count: int
) -> list[RankedCandidate]:
    """Up to ``count`` candidates of ``found`` (best first), one per host, not the chosen one's."""
    seen = {_host_of(chosen)}
    picked: list[RankedCandidate] = []
    for ranked in found:
        if len(picked) >= count:
            break
        host = _host_of(ranked)
        if host not in seen:
            seen.add(host)
            picked.append(ranked)
    return picked


def claim(
    *,
    database: Database,
    engine: CandidateEngine,
    search: Search,
    requested: Mapping[str, int],
    request: ClaimRequest,
    window: int = DEFAULT_WINDOW,
    prefer_closest: bool = True,
    strategy: ClaimStrategy = "spread",
    rng: random.Random | None = None,
) -> ClaimWritten:
    """Search with ``search(limit)`` (ranked candidates, best first) and claim the first that
    still fits, in one transaction per round (module docstring). ``requested`` (per class) only
    words the ``NoRoom`` error. ``strategy``: ``"spread"`` (the module docstring's steps 2-3) or
    ``"ordered"`` (rank order, waiting for each candidate's locks: the baseline it is measured
    against). Raises ``NoRoom``, ``ClaimContended``, ``ConcurrentUpdate``."""
    rng = rng or random.Random()
    with database.read() as conn:  # a stale consumer generation fails before any search
        allocation_repo.check_consumer_generation(conn, _item(request, {}))
    attempts = 0
    for round_number in range(1, MAX_ROUNDS + 1):
        found = search(window + request.alternates)
        if not found:
            raise _no_room(engine, requested, request.consumer_uuid)
        spread = strategy == "spread"
        order = _claim_order(found, rng, prefer_closest) if spread else found
        try:
            with database.write() as conn:
                chosen, tried = _walk(conn, order, request, skip=spread)
                consumer = consumer_repo.get_by_uuid(conn, request.consumer_uuid)
                generation = consumer.generation if consumer is not None else 0
        except _NothingClaimed as nothing:
            attempts += nothing.attempts
            continue
        return ClaimWritten(
            chosen=chosen,
            consumer_generation=generation,
            alternates=_alternates(found, chosen, request.alternates),
            attempts=attempts + tried,
            rounds=round_number,
        )
    raise ClaimContended(
        f"Unable to claim for consumer {request.consumer_uuid}: every candidate of"
        f" {MAX_ROUNDS} fresh searches was claimed by others first; retry.",
    )


def _no_room(engine: CandidateEngine, requested: Mapping[str, int], consumer: str) -> NoRoom:
    lacking = lacking_amounts(engine.snapshot(), requested)
    if lacking:
        what = ", ".join(f"{rc} {amount}" for rc, amount in sorted(lacking.items()))
        reason = f"no host has enough free: short by {what}"
    else:
        reason = (
            "each resource class fits on some host, but no host offers them together in the"
            " requested NUMA arrangement and traits"
        )
    extra: dict[str, Any] = {"requested": dict(requested), "lacking": lacking}
    return NoRoom(f"No allocation candidate fits consumer {consumer}: {reason}.", extra=extra)


def claim_for(
    *,
    database: Database,
    engine: CandidateEngine,
    wanted: SearchPlan | CandidateQuery,
    options: NumaOptions,
    request: ClaimRequest,
    window: int = DEFAULT_WINDOW,
    strategy: ClaimStrategy = "spread",
    index_cache: CellIndexCache | None = None,
) -> ClaimWritten:
    """``claim`` over the ranked candidates of ``POST /allocation_candidates`` for a flavor's
    ``SearchPlan`` (built once for every round) or a ready query (the JSON form of the GET
    query), through ``numa_candidates.candidates_for``: every search round runs with
    ``options`` whole, ``limit`` replaced by the round's window; ``index_cache``: the
    process's cell index cache (see ``numa_candidates``). Raises what ``claim`` raises."""

    def search(limit: int) -> list[RankedCandidate]:
        return numa_candidates.candidates_for(
            database=database,
            engine=engine,
            wanted=wanted,
            options=replace(options, limit=limit),
            index_cache=index_cache,
        )

    query = wanted.main.query if isinstance(wanted, SearchPlan) else wanted
    return claim(
        database=database,
        engine=engine,
        search=search,
        requested=requested_amounts(query),
        request=request,
        window=window,
        prefer_closest=options.prefer_closest,
        strategy=strategy,
    )


def claim_for_flavor(
    *,
    database: Database,
    engine: CandidateEngine,
    flavor: Flavor,
    image: ImageProperties | None,
    options: NumaOptions,
    request: ClaimRequest,
    window: int = DEFAULT_WINDOW,
    strategy: ClaimStrategy = "spread",
    aliases: Mapping[str, PciAlias] | None = None,
    index_cache: CellIndexCache | None = None,
) -> ClaimWritten:
    """``claim_for`` the flavor's plan (``numa_request`` with ``aliases``, the ``[pci] alias``
    table, and ``options``, then ``search_plan``). Raises ``InvalidFlavor`` (400) before
    anything is searched, and what ``claim`` raises."""
    return claim_for(
        database=database,
        engine=engine,
        wanted=search_plan(numa_request(flavor, image, options, aliases=aliases)),
        options=options,
        request=request,
        window=window,
        strategy=strategy,
        index_cache=index_cache,
    )
