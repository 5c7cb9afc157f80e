"""The engine on fleets of issue 21's shape (hosts of mixed sizes, some with 1 GiB pages, guests)
against the brute-force oracle, and against itself without room codes.

Hosts are drawn so that rooms sit on and around the sums the queries ask (a cell with exactly
two requests' worth of VCPU left, one short of it, ...): the search replays one root's answer for
every root whose tree has the same shape and whose members' rooms admit the same sums
(``engine.answers.room_codes``), so a wrong code shows up as a candidate too many or missing.
Each answer must be the same list, in the same order, as the answer searched with exact
look-alike profiles only (room codes off), and equal the oracle's set where the oracle is
affordable (up to three slots: one cell without disk, or flat).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement_numa.domain.request_groups import CandidateQuery, RequestGroup
from placement_numa.engine import SnapshotEngine, StaticFleetSource, replay, snapshot_engine
from placement_numa.engine.fleet import FleetSnapshot
from tests.candidate_oracle import oracle

PAGES = ("4K", "2M", "1G")
PAGE_TRAITS = {p: f"CUSTOM_MEMORY_PAGE_SIZE_{p}" for p in PAGES}


def mixed_fleets(max_hosts: int = 4) -> st.SearchStrategy[FleetSnapshot]:
    """2-``max_hosts`` hosts: root ``DISK_GB``; 1-2 cells (``HW_NUMA_ROOT``, ``VCPU``, ``PCPU``)
    with 4K and 2M page children and sometimes 1G; usage near the queries' sums."""
    return mixed_fleet_rows(max_hosts).map(lambda rows: FleetSnapshot.build(1, *rows))


@st.composite
def mixed_fleet_rows(draw: Any, max_hosts: int = 4) -> tuple[list[Any], ...]:
    """The rows of ``mixed_fleets``: ``(providers, inventories, usages, traits)`` as
    ``FleetSnapshot.build`` takes them."""
    providers: list[Any] = []
    inventories: list[Any] = []
    usages: list[Any] = []
    traits: list[Any] = []

    def add(parent: int | None, root: int | None) -> int:
        pid = len(providers) + 1
        providers.append((pid, str(uuid.UUID(int=pid)), parent, root or pid))
        return pid

    def inventory(pid: int, rc: str, total: int, step: int = 1, ratio: float = 1.0) -> None:
        inventories.append((pid, rc, total, 0, 1, total, step, ratio))
        used = draw(st.sampled_from((0, 0, 1, 2, 4, 6, total // 2, total - 4, total - 8)))
        if 0 < used <= total * ratio:
            usages.append((pid, rc, used))

    cells = draw(st.integers(1, 2))
    for _ in range(draw(st.integers(2, max_hosts))):
        root = add(None, None)
        inventory(root, "DISK_GB", draw(st.sampled_from((10, 19, 20, 30, 100))))
        with_1g = draw(st.booleans())
        for _ in range(cells):
            cell = add(root, root)
            traits.append((cell, "HW_NUMA_ROOT"))
            inventory(cell, "VCPU", draw(st.sampled_from((4, 6, 8, 9, 16))))
            inventory(cell, "PCPU", draw(st.sampled_from((2, 8))))
            for page in PAGES if with_1g else PAGES[:2]:
                child = add(cell, root)
                traits.append((child, PAGE_TRAITS[page]))
                step = {"4K": 1, "2M": 2, "1G": 1024}[page]
                total = draw(st.sampled_from((1024, 2048, 4096, 6144, 8192)))
                inventory(child, "MEMORY_MB", total, step)
    return providers, inventories, usages, traits


@st.composite
def mixed_queries(draw: Any) -> CandidateQuery:
    """Issue 21's queries with drawn amounts: two-cell / hugepage (``same_subtree`` per cell,
    root ``DISK_GB``) or flat (one unsuffixed group)."""
    vcpu = draw(st.sampled_from((1, 2, 4)))
    memory = draw(st.sampled_from((1024, 2048, 4096)))
    disk = draw(st.sampled_from((0, 10, 20)))
    if draw(st.booleans()):
        resources = {"VCPU": vcpu, "MEMORY_MB": memory} | ({"DISK_GB": disk} if disk else {})
        return CandidateQuery(groups=(RequestGroup(suffix=None, resources=resources),))
    page = PAGE_TRAITS[draw(st.sampled_from(PAGES))]
    cells = draw(st.integers(1, 2))
    groups: list[RequestGroup] = []
    if disk:
        groups.append(RequestGroup(suffix=None, resources={"DISK_GB": disk}))
    subtrees = []
    for n in range(1, cells + 1):
        groups.append(RequestGroup(suffix=f"_PROC{n}", resources={"VCPU": vcpu}))
        groups.append(
            RequestGroup(
                suffix=f"_MEM{n}",
                resources={"MEMORY_MB": memory},
                required_traits=frozenset({page}),
            )
        )
        groups.append(RequestGroup(suffix=f"_NUMA{n}", required_traits=frozenset({"HW_NUMA_ROOT"})))
        subtrees.append(frozenset({f"_PROC{n}", f"_MEM{n}", f"_NUMA{n}"}))
    policy = draw(st.sampled_from(("none", "none", "isolate")))
    return CandidateQuery(groups=tuple(groups), group_policy=policy, same_subtree=tuple(subtrees))


def keys(fleet: FleetSnapshot, query: CandidateQuery, **options: Any) -> list[Any]:
    result = SnapshotEngine(StaticFleetSource(fleet)).search(query, **options)
    return [c.key() for c in result.candidates]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_fleets(), mixed_queries(), mixed_queries(), st.integers(1, 6))
def test_mixed_fleet_answers_equal_oracle_and_exact_replay(
    fleet: FleetSnapshot, query: CandidateQuery, other: CandidateQuery, limit: int
) -> None:
    found = keys(fleet, query)  # the snapshot's answer memo is empty: every profile searched
    assert len(found) == len(set(found)), "duplicate candidates"
    slots = sum(len(g.resources) if g.suffix is None else 1 for g in query.groups)
    if slots <= 3:  # the oracle tries every provider per slot: (tree size) ** slots per root
        assert set(found) == oracle(fleet, query)
    assert keys(fleet, query, limit=limit) == found[:limit]
    # answers kept in ``fleet.answer_memo`` for another query do not leak into this one's
    other_found = keys(fleet, other)
    assert keys(fleet, query) == found
    assert keys(fleet, other) == other_found
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(replay, "room_codes", lambda plan: None)
        assert keys(fleet, query) == found


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_fleet_rows(), mixed_queries(), st.integers(1, 6))
def test_roots_classed_at_once_answer_as_one_by_one(
    rows: tuple[list[Any], ...], query: CandidateQuery, limit: int
) -> None:
    """An unranked search that classes every root at once (``RootSearch.classify_roots``)
    answers as one that gathers each root's member codes, with and without a limit; each
    search on a fresh snapshot, so no answer kept by an earlier one serves it."""
    classed: list[object] = []  # what each search's classify_roots returned
    original = replay.RootSearch.classify_roots

    def counted(self: replay.RootSearch) -> Any:
        classed.append(original(self))
        return classed[-1]

    def fresh(**options: Any) -> list[Any]:
        return keys(FleetSnapshot.build(1, *rows), query, **options)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(replay.RootSearch, "classify_roots", counted)
        answers = (fresh(), fresh(limit=limit))
    # a fleet of a few hosts: both searches may read every root, and both classed them
    assert len(classed) == 2 and all(c is not None for c in classed)
    with pytest.MonkeyPatch.context() as patch:  # no search classes its roots
        patch.setattr(snapshot_engine, "CLASSIFY_SHARE", 0)
        assert (fresh(), fresh(limit=limit)) == answers
