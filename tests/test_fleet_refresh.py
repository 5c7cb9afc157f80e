"""The engine's incremental refresh (change log, whole trees patched) equals a fresh full load,
after every kind of write, on every backend."""

from __future__ import annotations

import uuid
from typing import Any

import orjson
from fastapi import FastAPI
from sqlalchemy import event, select

from placement_numa.api import microversion as mv
from placement_numa.db import tables as t
from placement_numa.db.repositories.fleet import SqlFleetSource
from placement_numa.engine.fleet import FleetSnapshot
from tests.conftest import PlacementAPI

SHARES = "MISC_SHARES_VIA_AGGREGATE"


def canonical(fleet: FleetSnapshot) -> dict[str, Any]:
    """Everything the search reads, keyed by uuids (indices may differ between snapshots)."""
    providers = fleet.providers
    uuid_of = fleet.uuids
    live = sorted(fleet.index_by_uuid.values())
    assert sorted(i for members in fleet.tree.values() for i in members) == live
    profiles: dict[int, set[str]] = {}
    for root, profile in fleet.root_profiles.items():
        profiles.setdefault(profile, set()).add(uuid_of[root])
    assert set(fleet.root_profiles) == set(fleet.roots)
    return {
        "revision": fleet.revision,
        "order": [uuid_of[i] for i in live],  # index order is database id order
        "providers": {
            uuid_of[i]: (
                providers[i].id,
                uuid_of[providers[i].parent] if providers[i].parent >= 0 else None,
                uuid_of[providers[i].root],
                providers[i].depth,
                providers[i].traits,
                providers[i].aggregates,
                sorted(providers[i].inventories.items()),
                [uuid_of[a] for a in fleet.chains[i]],
                fleet.index_by_id[providers[i].id] == i and providers[i].index == i,
            )
            for i in live
        },
        "roots": [uuid_of[r] for r in fleet.roots],
        "tree": {uuid_of[r]: [uuid_of[m] for m in ms] for r, ms in fleet.tree.items()},
        "has_trees": fleet.has_trees,
        "aggregate_members": {
            agg: {uuid_of[m] for m in ms} for agg, ms in fleet.aggregate_members.items()
        },
        "sharing_anchors": {
            uuid_of[s]: {uuid_of[r] for r in anchors}
            for s, anchors in fleet.sharing_anchors.items()
        },
        "shared_into": {
            uuid_of[r]: [uuid_of[s] for s in sps] for r, sps in fleet.shared_into.items()
        },
        "roots_with_sharing": {uuid_of[r] for r in fleet.roots_with_sharing},
        "profiles": sorted(sorted(group) for group in profiles.values()),
        "names": (fleet.resource_class_names, fleet.trait_names),
    }


class Refresh:
    """An engine's fleet source kept across writes, checked against a fresh full load."""

    def __init__(self, app: FastAPI) -> None:
        self.database = app.state.database
        self.source = SqlFleetSource(self.database)
        self.source.snapshot()

    def check(self, *, patched: bool = True) -> FleetSnapshot:
        before = self.source.patches
        fleet = self.source.snapshot()
        full = SqlFleetSource(self.database).snapshot()
        assert canonical(fleet) == canonical(full)
        if patched:
            assert self.source.patches == before + 1, "expected an incremental refresh"
        return fleet


def _rp(api: PlacementAPI, name: str, parent: str | None = None) -> str:
    u = str(uuid.uuid4())
    body: dict[str, Any] = {"name": name, "uuid": u}
    if parent:
        body["parent_provider_uuid"] = parent
    r = api.post("/resource_providers", json=body, version="1.39")
    assert r.status_code == 200, r.text
    return u


def _gen(api: PlacementAPI, u: str) -> int:
    r = api.get(f"/resource_providers/{u}", version="1.39")
    return int(r.json()["generation"])


def _inventory(api: PlacementAPI, u: str, inventories: dict[str, Any]) -> None:
    r = api.put(
        f"/resource_providers/{u}/inventories",
        json={"resource_provider_generation": _gen(api, u), "inventories": inventories},
        version="1.39",
    )
    assert r.status_code == 200, r.text


def _traits(api: PlacementAPI, u: str, traits: list[str]) -> None:
    r = api.put(
        f"/resource_providers/{u}/traits",
        json={"resource_provider_generation": _gen(api, u), "traits": traits},
        version="1.39",
    )
    assert r.status_code == 200, r.text


def _aggregates(api: PlacementAPI, u: str, aggs: list[str]) -> None:
    r = api.put(
        f"/resource_providers/{u}/aggregates",
        json={"resource_provider_generation": _gen(api, u), "aggregates": aggs},
        version="1.39",
    )
    assert r.status_code == 200, r.text


def _allocate(
    api: PlacementAPI, consumer: str, allocations: dict[str, dict[str, int]], generation: int | None
) -> None:
    body = {
        "allocations": {u: {"resources": res} for u, res in allocations.items()},
        "project_id": "p",
        "user_id": "u",
        "consumer_generation": generation,
    }
    r = api.put(f"/allocations/{consumer}", json=body, version="1.36")
    assert r.status_code == 204, r.text


def _host(api: PlacementAPI, name: str) -> dict[str, str]:
    root = _rp(api, name)
    cell = _rp(api, f"{name}_cell", root)
    _inventory(api, root, {"DISK_GB": {"total": 100}})
    _inventory(api, cell, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096}})
    _traits(api, cell, ["HW_NUMA_ROOT"])
    return {"root": root, "cell": cell}


def test_each_kind_of_write_is_applied_incrementally(app: FastAPI, api: PlacementAPI) -> None:
    a = _host(api, "a")
    b = _host(api, "b")
    refresh = Refresh(app)

    # providers: create a root and a child
    c = _rp(api, "c")
    refresh.check()
    c_child = _rp(api, "c_child", c)
    refresh.check()
    # inventories: replace all, update one, delete one
    _inventory(api, c_child, {"VCPU": {"total": 4}, "SRIOV_NET_VF": {"total": 2}})
    refresh.check()
    r = api.put(
        f"/resource_providers/{c_child}/inventories/VCPU",
        version="1.39",
        json={"resource_provider_generation": _gen(api, c_child), "total": 6},
    )
    assert r.status_code == 200, r.text
    refresh.check()
    r = api.delete(f"/resource_providers/{c_child}/inventories/SRIOV_NET_VF", version="1.39")
    assert r.status_code == 204, r.text
    refresh.check()
    # traits: set, then delete all
    _traits(api, c_child, ["HW_CPU_X86_AVX2"])
    refresh.check()
    r = api.delete(f"/resource_providers/{c_child}/traits", version="1.39")
    assert r.status_code == 204, r.text
    refresh.check()
    # custom trait and resource class names
    assert api.put("/traits/CUSTOM_GOLD", version="1.39").status_code == 201
    assert api.put("/resource_classes/CUSTOM_FPGA", version="1.39").status_code == 201
    fleet = refresh.check()
    assert fleet.trait_names is not None and "CUSTOM_GOLD" in fleet.trait_names
    _traits(api, c_child, ["CUSTOM_GOLD"])
    _inventory(api, c_child, {"VCPU": {"total": 6}, "CUSTOM_FPGA": {"total": 1}})
    refresh.check(patched=False)  # two revisions at once: one patch
    # aggregates and sharing: a sharing provider joins an aggregate of a's root
    share = _rp(api, "share")
    _inventory(api, share, {"DISK_GB": {"total": 1000}})
    _traits(api, share, [SHARES])
    refresh.check(patched=False)
    agg1, agg2 = str(uuid.uuid4()), str(uuid.uuid4())
    _aggregates(api, share, [agg1])
    refresh.check()
    _aggregates(api, a["root"], [agg1])
    fleet = refresh.check()
    assert fleet.shared_into[fleet.index_by_uuid[a["root"]]] == [fleet.index_by_uuid[share]]
    _aggregates(api, b["cell"], [agg1, agg2])  # a child's aggregate anchors its root
    refresh.check()
    _aggregates(api, a["root"], [])
    refresh.check()
    _traits(api, share, [])  # no longer sharing
    fleet = refresh.check()
    assert not fleet.sharing_anchors
    _traits(api, share, [SHARES])
    refresh.check()
    # allocations: create, replace (other providers), delete; several consumers at once
    consumer = str(uuid.uuid4())
    _allocate(api, consumer, {a["cell"]: {"VCPU": 2}, share: {"DISK_GB": 10}}, None)
    fleet = refresh.check()
    assert fleet.providers[fleet.index_by_uuid[a["cell"]]].inventories["VCPU"].used == 2
    _allocate(api, consumer, {b["cell"]: {"VCPU": 1, "MEMORY_MB": 512}}, 1)
    fleet = refresh.check()
    assert fleet.providers[fleet.index_by_uuid[a["cell"]]].inventories["VCPU"].used == 0
    other = str(uuid.uuid4())
    r = api.post(
        "/allocations",
        version="1.36",
        json={
            consumer: {
                "allocations": {a["root"]: {"resources": {"DISK_GB": 5}}},
                "project_id": "p",
                "user_id": "u",
                "consumer_generation": 2,
            },
            other: {
                "allocations": {c_child: {"resources": {"VCPU": 1}}},
                "project_id": "p",
                "user_id": "u",
                "consumer_generation": None,
            },
        },
    )
    assert r.status_code == 204, r.text
    refresh.check()
    assert api.delete(f"/allocations/{consumer}", version="1.39").status_code == 204
    fleet = refresh.check()
    assert fleet.providers[fleet.index_by_uuid[a["root"]]].inventories["DISK_GB"].used == 0
    # re-parent: c's child moves under b's cell (subtree moves trees), then back to a root
    grandchild = _rp(api, "c_grandchild", c_child)
    _inventory(api, grandchild, {"VCPU": {"total": 2}})
    refresh.check(patched=False)
    r = api.put(
        f"/resource_providers/{c_child}",
        version="1.37",
        json={"name": "c_child", "parent_provider_uuid": b["cell"]},
    )
    assert r.status_code == 200, r.text
    fleet = refresh.check()
    assert fleet.providers[fleet.index_by_uuid[grandchild]].root == fleet.index_by_uuid[b["root"]]
    r = api.put(
        f"/resource_providers/{c_child}",
        version="1.37",
        json={"name": "c_child", "parent_provider_uuid": None},
    )
    assert r.status_code == 200, r.text
    fleet = refresh.check()
    assert fleet.index_by_uuid[c_child] in fleet.roots
    # delete: a leaf, then a whole root
    assert api.delete(f"/allocations/{other}", version="1.39").status_code == 204
    assert api.delete(f"/resource_providers/{grandchild}", version="1.39").status_code == 204
    refresh.check(patched=False)
    assert api.delete(f"/resource_providers/{c}", version="1.39").status_code == 204
    fleet = refresh.check()
    assert c not in fleet.index_by_uuid
    # names: delete the custom resource class after its inventory went
    _inventory(api, c_child, {})
    assert api.delete("/resource_classes/CUSTOM_FPGA", version="1.39").status_code == 204
    fleet = refresh.check(patched=False)
    assert fleet.resource_class_names is not None
    assert "CUSTOM_FPGA" not in fleet.resource_class_names


def test_reshaper_is_applied_incrementally(app: FastAPI, api: PlacementAPI) -> None:
    host = _host(api, "h")
    refresh = Refresh(app)
    consumer = str(uuid.uuid4())
    _allocate(api, consumer, {host["cell"]: {"VCPU": 2}}, None)
    refresh.check()
    new_cell = _rp(api, "h_cell2", host["root"])
    refresh.check()
    gens = {u: _gen(api, u) for u in (host["root"], host["cell"], new_cell)}
    body = {
        "inventories": {
            host["root"]: {
                "resource_provider_generation": gens[host["root"]],
                "inventories": {"DISK_GB": {"total": 100}},
            },
            host["cell"]: {
                "resource_provider_generation": gens[host["cell"]],
                "inventories": {"VCPU": {"total": 4}},
            },
            new_cell: {
                "resource_provider_generation": gens[new_cell],
                "inventories": {"VCPU": {"total": 4}, "MEMORY_MB": {"total": 4096}},
            },
        },
        "allocations": {
            consumer: {
                "allocations": {new_cell: {"resources": {"VCPU": 2}}},
                "project_id": "p",
                "user_id": "u",
                "consumer_generation": 1,
            },
        },
    }
    r = api.post("/reshaper", json=body, version="1.36")
    assert r.status_code == 204, r.text
    fleet = refresh.check()
    assert fleet.providers[fleet.index_by_uuid[new_cell]].inventories["VCPU"].used == 2
    assert fleet.providers[fleet.index_by_uuid[host["cell"]]].inventories["VCPU"].used == 0


def test_unlogged_writes_force_a_full_reload(app: FastAPI, api: PlacementAPI) -> None:
    """Revisions without change rows (pruned, or bumped around ``Database.write``) and writes
    to fleet tables that touched no provider reload everything."""
    from sqlalchemy import delete, update

    from placement_numa.db import tables as t

    host = _host(api, "h")
    refresh = Refresh(app)
    with app.state.database.engine.begin() as conn:  # a write around Database.write()
        conn.execute(delete(t.inventories))
        conn.execute(
            update(t.placement_revision).values(revision=t.placement_revision.c.revision + 1)
        )
    before = refresh.source.full_loads
    fleet = refresh.check(patched=False)
    assert refresh.source.full_loads == before + 1
    assert not fleet.providers[fleet.index_by_uuid[host["cell"]]].inventories
    with app.state.database.write() as conn:  # DML that touched no provider
        conn.execute(delete(t.resource_provider_traits))
    fleet = refresh.check(patched=False)
    assert refresh.source.full_loads == before + 2
    assert not fleet.providers[fleet.index_by_uuid[host["cell"]]].traits


def test_old_change_rows_are_pruned(app: FastAPI, api: PlacementAPI) -> None:
    """Every ``PRUNE_EVERY`` revisions, rows older than ``KEEP_REVISIONS`` go; a reader that
    old reloads everything (its gap is no longer covered)."""
    from sqlalchemy import func, insert, select, update

    from placement_numa.db import tables as t
    from placement_numa.db.repositories import changes

    host = _host(api, "h")
    refresh = Refresh(app)
    stale = SqlFleetSource(app.state.database)
    stale.snapshot()
    with app.state.database.engine.begin() as conn:
        revision = int(conn.execute(select(t.placement_revision.c.revision)).scalar_one())
        conn.execute(insert(t.placement_changes).values(revision=1, kind="names"))
        target = (
            revision // changes.PRUNE_EVERY + 1
        ) * changes.PRUNE_EVERY + changes.KEEP_REVISIONS
        conn.execute(update(t.placement_revision).values(revision=target - 1))
    refresh.check(patched=False)  # the jump has no rows: reload
    _traits(api, host["cell"], [])  # commits revision ``target``, a multiple of PRUNE_EVERY
    refresh.check()
    with app.state.database.engine.connect() as conn:
        oldest = conn.execute(select(func.min(t.placement_changes.c.revision))).scalar_one()
    assert oldest > target - changes.KEEP_REVISIONS
    before = stale.full_loads
    stale.snapshot()
    assert stale.full_loads == before + 1


def _sql_source(app: FastAPI) -> SqlFleetSource:
    """The ``SqlFleetSource`` under the app's engine (and its metrics wrappers)."""
    from placement_numa.api.engine_dep import engine_for_state

    engine: Any = engine_for_state(app.state)
    source = getattr(engine, "inner", engine).source
    source = getattr(source, "inner", source)
    assert isinstance(source, SqlFleetSource)
    return source


def test_a_snapshot_no_one_holds_is_patched_in_place(app: FastAPI, api: PlacementAPI) -> None:
    """A refresh hands the cached snapshot over to its successor (indexes patched in place)
    when nothing else holds it, and patches a copy when something does (a search in flight):
    the held snapshot does not change; both equal a full load."""
    host = _host(api, "h")
    _host(api, "o")
    refresh = Refresh(app)
    source = refresh.source
    consumer = str(uuid.uuid4())
    _allocate(api, consumer, {host["cell"]: {"VCPU": 1}}, None)
    refresh.check()  # nothing held: in place
    assert source.patches_in_place == 1
    held = source.snapshot()
    seen = canonical(held)
    _allocate(api, consumer, {host["cell"]: {"VCPU": 2}}, 1)
    refresh.check()  # ``held``: a copy
    assert source.patches_in_place == 1
    assert not held.handed_over
    assert canonical(held) == seen
    del held
    _traits(api, host["cell"], ["HW_NUMA_ROOT", "HW_CPU_X86_AVX2"])
    refresh.check()
    _rp(api, "h_child", host["cell"])  # a provider added: structural indexes in place too
    refresh.check()
    assert source.patches_in_place == 3


def test_the_service_patches_in_place_after_a_write(app: FastAPI, api: PlacementAPI) -> None:
    """Through the API (the app's engine with its metrics wrappers), the query after a write
    finds the snapshot of the previous query unheld and patches it in place."""
    host = _host(api, "h")
    query = "/allocation_candidates?resources=VCPU:1"
    assert api.get(query, version="1.39").status_code == 200
    source = _sql_source(app)
    _allocate(api, str(uuid.uuid4()), {host["cell"]: {"VCPU": 1}}, None)
    before = (source.patches, source.patches_in_place)
    r = api.get(query, version="1.39")
    assert r.status_code == 200, r.text
    assert (source.patches, source.patches_in_place) == (before[0] + 1, before[1] + 1)
    summary = r.json()["provider_summaries"][host["cell"]]
    assert summary["resources"]["VCPU"]["used"] == 1


def _refresh_statements(source: SqlFleetSource) -> list[str]:
    """The SQL statements ``source``'s next snapshot() sends (their first lines)."""
    sent: list[str] = []

    def before(_c: Any, _cursor: Any, statement: str, *_: Any) -> None:
        sent.append(statement.strip().splitlines()[0])

    engine = source.database.engine
    event.listen(engine, "before_cursor_execute", before)
    try:
        source.snapshot()
    finally:
        event.remove(engine, "before_cursor_execute", before)
    return sent


def test_a_write_of_allocations_alone_reads_only_the_usage_of_its_trees(
    app: FastAPI, api: PlacementAPI
) -> None:
    """A write that changes nothing but allocations (``PUT /allocations``, ``DELETE
    /allocations``) logs a "usage" row beside each "provider" row, and the refresh reads the
    usage of the trees it touched, not the trees (no inventory, trait, aggregate or provider
    statement); a write that also changes an inventory of the tree (the reshaper) reads it
    whole. Both equal a full load."""
    host = _host(api, "u")
    other = _host(api, "v")
    refresh = Refresh(app)
    consumer = str(uuid.uuid4())
    _allocate(api, consumer, {host["cell"]: {"VCPU": 2}, other["root"]: {"DISK_GB": 5}}, None)
    with app.state.database.read() as conn:
        last = conn.execute(
            select(
                t.placement_changes.c.kind,
                t.placement_changes.c.provider_id,
                t.placement_changes.c.generation,
                t.resource_providers.c.generation,
            )
            .join(
                t.resource_providers,
                t.resource_providers.c.id == t.placement_changes.c.provider_id,
            )
            .order_by(t.placement_changes.c.id.desc())
            .limit(4)
        ).all()
    assert sorted(kind for kind, *_ in last) == ["provider", "provider", "usage", "usage"]
    # each row names the generation the write left its provider at (the watcher reads it)
    assert all(logged == now for *_, logged, now in last), last
    sent = _refresh_statements(refresh.source)
    assert any("FROM allocations" in s or "allocations." in s for s in sent), sent
    assert not [s for s in sent if "inventories" in s or "traits" in s or "aggregates" in s]
    fleet = refresh.check(patched=False)  # already refreshed above
    cell = fleet.providers[fleet.index_by_uuid[host["cell"]]]
    assert cell.inventories["VCPU"].used == 2
    # the consumer's allocations deleted: usage only again
    assert api.delete(f"/allocations/{consumer}", version="1.36").status_code == 204
    sent = _refresh_statements(refresh.source)
    assert not [s for s in sent if "inventories" in s or "traits" in s], sent
    fleet = refresh.check(patched=False)
    assert fleet.providers[fleet.index_by_uuid[host["cell"]]].inventories["VCPU"].used == 0
    # an inventory and allocations in one window: the tree is read whole
    _inventory(api, host["cell"], {"VCPU": {"total": 6}, "MEMORY_MB": {"total": 4096}})
    _allocate(api, str(uuid.uuid4()), {host["cell"]: {"VCPU": 1}}, None)
    sent = _refresh_statements(refresh.source)
    assert [s for s in sent if "inventories" in s], sent
    fleet = refresh.check(patched=False)
    assert fleet.providers[fleet.index_by_uuid[host["cell"]]].inventories["VCPU"].total == 6


def test_fragments_of_replaced_trees_go_in_place_unless_a_response_holds_them(
    app: FastAPI, api: PlacementAPI
) -> None:
    """The process's fragment cache (``candidate_pieces.FragmentCache``) drops what a refresh
    replaced from the dict it keeps when no response is being written from it, and from a copy
    when one is: that response's dict keeps every fragment, and its body is still right."""
    from placement_numa.api.engine_dep import engine_for_state
    from placement_numa.api.schemas.candidate_dicts import render_candidates
    from placement_numa.api.schemas.candidate_pieces import (
        candidate_body_pieces,
        process_fragments,
    )
    from placement_numa.domain.request_groups import CandidateQuery, RequestGroup

    host = _host(api, "f")
    _host(api, "g")
    path = "/allocation_candidates?resources=VCPU:1"
    assert api.get(path, version="1.39").status_code == 200
    fragments = process_fragments(app.state)

    def roots_of(cache: dict[Any, Any]) -> list[Any]:
        return [key for key in cache if isinstance(key, tuple) and key[0] == "root"]

    # ids, not references: holding the dict here would count as a response writing from it
    # (a copy is made while the original lives, so equal ids mean the same dict)
    (kept,) = [id(cache) for cache in fragments._shapes.values()]
    assert [len(roots_of(cache)) for cache in fragments._shapes.values()] == [2]
    _allocate(api, str(uuid.uuid4()), {host["cell"]: {"VCPU": 1}}, None)
    assert api.get(path, version="1.39").status_code == 200
    assert [id(cache) for cache in fragments._shapes.values()] == [kept]  # in place
    # the replaced tree's entry dropped, then written again by the GET
    assert [len(roots_of(cache)) for cache in fragments._shapes.values()] == [2]

    # a response being written holds the dict: the next refresh works on a copy
    engine: Any = engine_for_state(app.state)
    query = CandidateQuery(groups=(RequestGroup(suffix=None, resources={"VCPU": 1}),))
    result = engine.search(query)
    version = mv.Microversion(1, 39)
    pieces = candidate_body_pieces(result, query, version, nested_aware=True, fragments=fragments)
    first = next(pieces)  # the generator now holds the dict it writes from
    (writing,) = [id(cache) for cache in fragments._shapes.values()]
    _allocate(api, str(uuid.uuid4()), {host["cell"]: {"VCPU": 1}}, None)
    answer = api.get(path, version="1.39")
    assert answer.status_code == 200
    assert [id(cache) for cache in fragments._shapes.values()] != [writing]  # a copy
    # the older response finishes with its snapshot's fragments, in its own dict ...
    body = orjson.loads(first + b"".join(pieces))
    assert body == render_candidates(result, query, version, nested_aware=True)
    assert body["provider_summaries"][host["cell"]]["resources"]["VCPU"]["used"] == 1
    # ... and none of them reached the dict newer answers are written from
    again = api.get(path, version="1.39").json()["provider_summaries"][host["cell"]]
    assert again["resources"]["VCPU"]["used"] == 2
    assert answer.json()["provider_summaries"][host["cell"]]["resources"]["VCPU"]["used"] == 2


def test_a_bump_undone_with_its_savepoint_is_not_logged(app: FastAPI, api: PlacementAPI) -> None:
    """A generation bump rolled back with its savepoint (a claim's failed attempt) leaves the
    provider where it was, and the change row names that generation, not the noted one."""
    from placement_numa.db.repositories import changes
    from placement_numa.db.repositories import providers as provider_repo

    host = _host(api, "s")
    before = _gen(api, host["cell"])
    with app.state.database.write() as conn:
        cell = provider_repo.get_by_uuid(conn, host["cell"])
        assert cell is not None
        savepoint = conn.begin_nested()
        provider_repo.bump_generations(conn, provider_repo.lock_generations(conn, [cell.id]))
        changes.touch_usage(conn, [cell.id])
        savepoint.rollback()
    assert _gen(api, host["cell"]) == before
    with app.state.database.read() as conn:
        logged = conn.execute(
            select(t.placement_changes.c.generation)
            .where(t.placement_changes.c.kind == "provider")
            .order_by(t.placement_changes.c.id.desc())
            .limit(1)
        ).scalar_one()
    assert logged == before


def test_a_savepoint_on_a_connection_the_server_dropped_rolls_back_to_a_503(
    app: FastAPI, api: PlacementAPI, backend: str
) -> None:
    """The server ends the session inside a savepoint (a failover, as in
    ``test_postgresql_failover``): leaving the savepoint gives the disconnect's 503, not an
    error of the change log's savepoint listener, and the next write works."""
    import pytest

    from placement_numa.db.repositories import providers as provider_repo
    from placement_numa.errors import ServiceUnavailable

    if backend == "sqlite":
        pytest.skip("SQLite has no server that can end a session")
    host = _host(api, "d")
    database = app.state.database
    own_id = "SELECT pg_backend_pid()" if backend == "postgresql" else "SELECT CONNECTION_ID()"
    with pytest.raises(ServiceUnavailable):
        with database.write() as conn:
            session = conn.exec_driver_sql(own_id).scalar_one()
            cell = provider_repo.get_by_uuid(conn, host["cell"])
            assert cell is not None
            with conn.begin_nested():
                with database.engine.connect() as killer:
                    if backend == "postgresql":
                        killer.exec_driver_sql(f"SELECT pg_terminate_backend({int(session)})")
                    else:
                        killer.exec_driver_sql(f"KILL {int(session)}")
                provider_repo.lock_generations(conn, [cell.id])
    assert api.put("/traits/CUSTOM_AFTER_THE_DROP").status_code == 201
    before = _gen(api, host["cell"])
    assert (
        api.put(
            f"/resource_providers/{host['cell']}/traits",
            json={"resource_provider_generation": before, "traits": ["CUSTOM_AFTER_THE_DROP"]},
            version="1.39",
        ).status_code
        == 200
    )


def _replayed_roots(fleet: FleetSnapshot) -> dict[object, dict[int, Any]]:
    """The per-root replayed candidates ``fleet`` keeps, per query (``answers.root_answers``)."""
    from placement_numa.engine import answers

    kept = answers._PER_SNAPSHOT.get(fleet) or {}
    return {k: v for k, v in kept.items() if isinstance(k, tuple) and k[0] == "roots"}


def test_a_claim_keeps_the_replayed_answers_of_the_other_trees(
    app: FastAPI, api: PlacementAPI
) -> None:
    """After a claim on one tree, a query asked before replays none of the other roots again:
    their candidate lists are carried to the patched snapshot; the claimed tree's is not, and
    the answer equals a fresh service's on the same database."""
    from fastapi.testclient import TestClient

    from placement_numa.app import create_app
    from placement_numa.settings import Settings

    hosts = [_host(api, f"r{n}") for n in range(4)]
    query = (
        "/allocation_candidates?resources=DISK_GB:5&resources_C=VCPU:2,MEMORY_MB:512"
        "&required_C=HW_NUMA_ROOT&group_policy=none"
    )
    engine = app.state.candidate_engine
    assert api.get(query, version="1.39").status_code == 200
    before = engine.snapshot()
    kept_before = _replayed_roots(before)
    # the first root of the shape is searched, the others replayed from its answer
    assert max(len(kept) for kept in kept_before.values()) == len(hosts) - 1

    claimed = hosts[1]
    _allocate(api, str(uuid.uuid4()), {claimed["cell"]: {"VCPU": 6}}, None)
    after_claim = api.get(query, version="1.39")
    assert after_claim.status_code == 200
    fleet = engine.snapshot()
    assert fleet.patched_from == before.revision
    claimed_root = fleet.index_by_uuid[claimed["root"]]
    carried = 0
    for key, kept in _replayed_roots(fleet).items():
        old = kept_before[key]
        for root, answer in kept.items():
            if root in old:
                assert (answer is old[root]) == (root != claimed_root)
                carried += answer is old[root]
    assert carried >= len(hosts) - 2  # every replayed root but the claimed one
    # the claimed cell has 2 VCPUs left: still a candidate, with the new usage
    summaries = after_claim.json()["provider_summaries"]
    assert summaries[claimed["cell"]]["resources"]["VCPU"]["used"] == 6

    fresh_app = create_app(
        Settings(
            database_url=app.state.settings.database_url,
            auto_migrate=False,
            auth_strategy="noauth2",
        )
    )
    try:
        with TestClient(fresh_app) as client:
            fresh = PlacementAPI(client).get(query, version="1.39")
    finally:
        fresh_app.state.database.dispose()
    assert orjson.loads(fresh.content) == orjson.loads(after_claim.content)


def test_replayed_answers_are_not_carried_past_a_change_of_sharing(
    app: FastAPI, api: PlacementAPI
) -> None:
    """A sharing provider newly anchored at untouched roots (an aggregate written on it
    alone) adds candidates to their answers: none of them is carried to the patched
    snapshot."""
    hosts = [_host(api, f"s{n}") for n in range(3)]
    query = "/allocation_candidates?resources=VCPU:1,DISK_GB:5"
    pool = _rp(api, "disk-pool")
    _inventory(api, pool, {"DISK_GB": {"total": 1000}})
    _traits(api, pool, ["MISC_SHARES_VIA_AGGREGATE"])
    aggregate = str(uuid.uuid4())
    for host in hosts:
        _aggregates(api, host["root"], [aggregate])
    assert len(api.get(query, version="1.39").json()["allocation_requests"]) == len(hosts)
    engine = app.state.candidate_engine
    before = engine.snapshot()
    host_roots = {before.index_by_uuid[h["root"]] for h in hosts}
    assert any(host_roots & set(kept) for kept in _replayed_roots(before).values())

    _aggregates(api, pool, [aggregate])  # the pool's tree only: the hosts' rows are untouched
    answer = api.get(query, version="1.39")
    # each host's own disk or the pool's
    assert len(answer.json()["allocation_requests"]) == 2 * len(hosts)
    fleet = engine.snapshot()
    assert fleet.patched_from == before.revision
    for kept in _replayed_roots(fleet).values():
        assert not host_roots & set(kept)


def test_the_lineage_keeps_no_retired_snapshots_answers(app: FastAPI, api: PlacementAPI) -> None:
    """Queries asked once each, a claim after each: the answers passed from snapshot to
    snapshot are only those of the current snapshot and the one it was patched from (a
    scheduler's first-time queries would otherwise keep every retired snapshot's alive)."""
    hosts = [_host(api, f"l{n}") for n in range(3)]
    engine = app.state.candidate_engine
    for vcpus in range(1, 5):
        answer = api.get(f"/allocation_candidates?resources=VCPU:{vcpus}", version="1.39")
        assert answer.status_code == 200
        _allocate(api, str(uuid.uuid4()), {hosts[vcpus % 3]["cell"]: {"VCPU": 1}}, None)
    answer = api.get("/allocation_candidates?resources=VCPU:1,MEMORY_MB:1", version="1.39")
    assert answer.status_code == 200
    fleet = engine.snapshot()
    assert fleet.patched_from is not None
    lineage = fleet.derived["root-answers"]
    assert lineage and all(revision >= fleet.patched_from for revision, _ in lineage.values())
