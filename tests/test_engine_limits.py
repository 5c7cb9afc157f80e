"""Bounded candidate generation (issue 10 items 1, 3, 4; issue 13's orders).

* ``[placement] max_allocation_candidates``: generation stops at the cap, the answer is truncated
  (as Placement truncates) and ``result.stats.cap_hit`` says so;
* a ranked search with ``limit`` ranks one candidate per ordering class of identical groups, so
  9 identical groups over 4 children cost hundreds of candidates, not 4**9;
* the search iterates over slots: 1,000 classes in one group is no RecursionError;
* a stored ``allocation_ratio`` of 3e38 renders (capacity clamped to 2**63 - 1);
* ``allocation_candidates_generation_strategy=breadth-first``: same candidates, one per root
  before a second of any; ``orderings=False``: one candidate per ordering class.

Work is asserted through ``SearchStats`` (deterministic), not wall time.
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement_numa.api import microversion as mv
from placement_numa.api.schemas.allocation_candidates import render_candidates
from placement_numa.app import create_app
from placement_numa.domain.inventory import CAPACITY_LIMIT
from placement_numa.domain.request_groups import CandidateQuery, RequestGroup
from placement_numa.engine import Candidate, SnapshotEngine, StaticFleetSource
from placement_numa.engine.fleet import FleetSnapshot
from placement_numa.settings import Settings
from tests.backends import TestDatabase, reset_rows
from tests.candidate_fleets import forests, queries
from tests.candidate_oracle import oracle
from tests.conftest import PlacementAPI
from tests.factories import create_provider, set_inventories


def wide_host(children: int, vfs: int = 1, hosts: int = 1) -> FleetSnapshot:
    """``hosts`` roots, each with ``children`` children of ``vfs`` VCPU each."""
    rows: list[Any] = []
    inventories: list[Any] = []
    next_id = 1
    for h in range(hosts):
        root = next_id
        rows.append((root, f"root{h}", None, root))
        next_id += 1
        for _ in range(children):
            rows.append((next_id, f"c{next_id}", root, root))
            inventories.append((next_id, "VCPU", vfs, 0, 1, vfs, 1, 1.0))
            next_id += 1
    return FleetSnapshot.build(1, rows, inventories)


def vcpu_groups(count: int, policy: str = "none", limit: int | None = None) -> CandidateQuery:
    return CandidateQuery(
        groups=tuple(RequestGroup(suffix=str(i), resources={"VCPU": 1}) for i in range(count)),
        group_policy=policy,  # type: ignore[arg-type]
        limit=limit,
    )


def test_cap_truncates_and_reports() -> None:
    fleet = wide_host(2, vfs=64)
    engine = SnapshotEngine(StaticFleetSource(fleet), max_candidates=1000)
    result = engine.search(vcpu_groups(16))  # 2**16 candidates exist
    assert len(result.candidates) == 1000
    assert result.stats.cap_hit and result.stats.generated == 1000
    assert result.stats.returned == 1000 and result.stats.roots_visited == 1
    small = engine.search(vcpu_groups(3))
    assert len(small.candidates) == 8 and not small.stats.cap_hit


def test_cap_truncates_a_replayed_root() -> None:
    """The cap lands inside a root answered by replay (a look-alike of the first, searched,
    root): its candidates are taken up to the cap, not whole."""
    fleet = wide_host(2, vfs=4, hosts=3)  # 4 candidates per host for two 1-VCPU groups
    engine = SnapshotEngine(StaticFleetSource(fleet), max_candidates=6)
    result = engine.search(vcpu_groups(2))
    assert len(result.candidates) == 6
    assert result.stats.cap_hit and result.stats.generated == 6
    assert result.stats.roots_visited == 2
    whole = SnapshotEngine(StaticFleetSource(fleet)).search(vcpu_groups(2)).candidates
    assert [c.key() for c in result.candidates] == [c.key() for c in whole[:6]]


def test_ranked_search_is_bounded_by_limit() -> None:
    fleet = wide_host(4, vfs=16)
    engine = SnapshotEngine(StaticFleetSource(fleet))

    def spread(c: Candidate, _: FleetSnapshot) -> tuple[int, ...]:
        return (-len(c.providers()),)

    result = engine.search(vcpu_groups(9), limit=1, rank=spread)
    assert len(result.candidates) == 1
    assert len(result.candidates[0].providers()) == 4  # the 4 children
    # 220 multisets of 9 groups over 4 children are ranked, not 4**9 = 262,144 orderings
    assert result.stats.generated <= 230  # (plus one look-ahead)


def test_thousand_classes_in_one_group() -> None:
    classes = [f"CUSTOM_C{i}" for i in range(1000)]
    fleet = FleetSnapshot.build(
        1, [(1, "r", None, 1)], [(1, rc, 10, 0, 1, 10, 1, 1.0) for rc in classes]
    )
    query = CandidateQuery(groups=(RequestGroup(suffix=None, resources=dict.fromkeys(classes, 1)),))
    result = SnapshotEngine(StaticFleetSource(fleet)).search(query)
    assert len(result.candidates) == 1
    assert len(result.candidates[0].allocations) == 1000


def test_huge_ratio_renders() -> None:
    fleet = FleetSnapshot.build(
        1, [(1, "r", None, 1)], [(1, "VCPU", 2147483647, 0, 1, 2147483647, 1, 3e38)]
    )
    query = CandidateQuery(groups=(RequestGroup(suffix=None, resources={"VCPU": 1}),))
    result = SnapshotEngine(StaticFleetSource(fleet)).search(query)
    body = render_candidates(result, query, mv.Microversion(1, 39), nested_aware=True)
    summary = orjson.loads(orjson.dumps(body))["provider_summaries"]["r"]
    assert summary["resources"]["VCPU"]["capacity"] == CAPACITY_LIMIT


def test_breadth_first_covers_roots_first() -> None:
    fleet = wide_host(3, vfs=4, hosts=5)
    query = vcpu_groups(2)
    depth = SnapshotEngine(StaticFleetSource(fleet)).search(query)
    breadth = SnapshotEngine(StaticFleetSource(fleet), strategy="breadth-first").search(query)
    assert {c.key() for c in depth.candidates} == {c.key() for c in breadth.candidates}
    assert [c.key() for c in depth.candidates] != [c.key() for c in breadth.candidates]
    assert len({c.anchor for c in breadth.candidates[:5]}) == 5
    assert len({c.anchor for c in depth.candidates[:5]}) == 1
    limited = SnapshotEngine(StaticFleetSource(fleet), strategy="breadth-first").search(
        query, limit=5
    )
    assert limited.stats.roots_visited == 5


def test_diversified_ranking_takes_each_roots_best_first() -> None:
    fleet = wide_host(3, vfs=4, hosts=4)

    def narrow(c: Candidate, _: FleetSnapshot) -> tuple[int, ...]:
        return (len(c.providers()),)

    engine = SnapshotEngine(StaticFleetSource(fleet))
    plain = engine.search(vcpu_groups(2), rank=narrow)
    diverse = engine.search(vcpu_groups(2), rank=narrow, diversify=True)
    assert {c.key() for c in plain.candidates} == {c.key() for c in diverse.candidates}
    assert len({c.anchor for c in diverse.candidates[:4]}) == 4
    assert len({c.anchor for c in plain.candidates[:4]}) < 4


PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(st.data())
def test_orders_keep_the_oracles_set(data: st.DataObject) -> None:
    """Breadth-first and diversified orders: the oracle's set, no duplicate; ``orderings=False``
    keeps exactly one candidate per class of reorderings of identical groups."""
    fleet = data.draw(forests())
    query = data.draw(queries(len(fleet.providers)))
    expected = oracle(fleet, query)
    breadth = SnapshotEngine(StaticFleetSource(fleet), strategy="breadth-first").search(query)
    keys = [c.key() for c in breadth.candidates]
    assert len(keys) == len(set(keys)) and set(keys) == expected
    engine = SnapshotEngine(StaticFleetSource(fleet))

    def width(c: Candidate, _: FleetSnapshot) -> tuple[int, ...]:
        return (len(c.providers()),)

    diverse = engine.search(query, rank=width, diversify=True)
    keys = [c.key() for c in diverse.candidates]
    assert len(keys) == len(set(keys)) and set(keys) == expected
    distinct = engine.search(query, orderings=False).candidates
    classes = {c.allocations for c in distinct}
    assert len(classes) == len({k[0] for k in expected})
    # every candidate is a reordering of exactly one distinct one
    assert len(distinct) <= len(expected)


def numa_like(cells: int, hosts: int) -> FleetSnapshot:
    """Hosts with ``cells`` cells (VCPU 8, ``HW_NUMA_ROOT``) each holding a memory child: a
    guest cell is one same_subtree set (as ``numa.translate`` writes it)."""
    rows: list[Any] = []
    inventories: list[Any] = []
    traits: list[Any] = []
    next_id = 1
    for h in range(hosts):
        root = next_id
        rows.append((root, f"h{h}", None, root))
        next_id += 1
        for _ in range(cells):
            cell = next_id
            rows.append((cell, f"c{cell}", root, root))
            inventories.append((cell, "VCPU", 8, 0, 1, 8, 1, 1.0))
            traits.append((cell, "HW_NUMA_ROOT"))
            rows.append((cell + 1, f"m{cell}", cell, root))
            inventories.append((cell + 1, "MEMORY_MB", 1024, 0, 1, 1024, 1, 1.0))
            next_id += 2
    return FleetSnapshot.build(1, rows, inventories, traits=traits)


def guest(cells: int, limit: int | None = None) -> CandidateQuery:
    groups = []
    sets = []
    for i in range(cells):
        groups.append(
            RequestGroup(
                suffix=f"_PROC{i}",
                resources={"VCPU": 2},
                required_traits=frozenset({"HW_NUMA_ROOT"}),
            )
        )
        groups.append(RequestGroup(suffix=f"_MEM{i}", resources={"MEMORY_MB": 256}))
        sets.append(frozenset({f"_PROC{i}", f"_MEM{i}"}))
    return CandidateQuery(
        groups=tuple(groups), group_policy="isolate", same_subtree=tuple(sets), limit=limit
    )


def test_guest_cells_once_per_host_cell_set() -> None:
    fleet = numa_like(4, 3)
    engine = SnapshotEngine(StaticFleetSource(fleet))
    every = engine.search(guest(3)).candidates
    distinct = engine.search(guest(3), orderings=False).candidates
    assert len(every) == 3 * 4 * 3 * 2  # ordered cell triples per host
    assert len(distinct) == 3 * 4  # cell sets per host
    assert {c.allocations for c in every} == {c.allocations for c in distinct}
    # lazily: limit 10 of the ordered answer looks at one host's orderings only
    limited = engine.search(guest(3), limit=10)
    assert limited.stats.generated == 10


def test_api_cap_and_strategy(test_database: TestDatabase) -> None:
    """Through the API: the cap truncates, breadth-first spreads a limit over hosts."""
    app = create_app(
        Settings(
            database_url=test_database.url,
            auto_migrate=False,
            auth_strategy="noauth2",
            max_allocation_candidates=5,
            allocation_candidates_generation_strategy="breadth-first",
        )
    )
    try:
        with app.state.database.write() as conn:
            reset_rows(conn)
        with TestClient(app) as client:
            api = PlacementAPI(client)
            for h in range(3):
                root = create_provider(api, f"host{h}")["uuid"]
                for c in range(2):
                    child = create_provider(api, f"host{h}_c{c}", parent=root)["uuid"]
                    set_inventories(api, child, {"VCPU": {"total": 4}})
            r = api.get(
                "/allocation_candidates?resources1=VCPU:1&resources2=VCPU:1&group_policy=none",
                version="1.39",
            )
            assert r.status_code == 200, r.text
            requests = r.json()["allocation_requests"]
            assert len(requests) == 5  # 12 exist; capped at 5
            roots = [
                r.json()["provider_summaries"][next(iter(req["allocations"]))]["root_provider_uuid"]
                for req in requests[:3]
            ]
            assert len(set(roots)) == 3
            assert api.get("/", version="1.39").status_code == 200
    finally:
        app.state.database.dispose()


def test_worker_start_loads_the_fleet(test_database: TestDatabase) -> None:
    """Cold start: the snapshot is loaded when the app starts, not by the first query."""
    app = create_app(
        Settings(database_url=test_database.url, auto_migrate=False, auth_strategy="noauth2")
    )
    try:
        with app.state.database.write() as conn:
            reset_rows(conn)
        with TestClient(app) as client:
            engine = app.state.candidate_engine
            engine = getattr(engine, "inner", engine)  # metrics wrapper (issue 12)
            source = getattr(engine.source, "inner", engine.source)
            assert source.full_loads == 1
            api = PlacementAPI(client)
            r = api.get("/allocation_candidates?resources=VCPU:1", version="1.39")
            assert r.status_code == 200
            assert source.full_loads == 1  # the first query used the preloaded snapshot
    finally:
        app.state.database.dispose()


def test_provider_list_follows_writes(api: PlacementAPI) -> None:
    """The whole list is cached per fleet revision: every write shows in the next listing."""
    first = create_provider(api, "listed-1")["uuid"]
    listed = api.get("/resource_providers", version="1.39").json()["resource_providers"]
    assert [p["uuid"] for p in listed] == [first]
    second = create_provider(api, "listed-2")["uuid"]
    listed = api.get("/resource_providers", version="1.39").json()["resource_providers"]
    assert [p["uuid"] for p in listed] == [first, second]
    assert api.delete(f"/resource_providers/{first}").status_code == 204
    listed = api.get("/resource_providers", version="1.14").json()["resource_providers"]
    assert [p["uuid"] for p in listed] == [second]
    assert "parent_provider_uuid" in listed[0]
    old = api.get("/resource_providers", version="1.0").json()["resource_providers"]
    assert "parent_provider_uuid" not in old[0]
