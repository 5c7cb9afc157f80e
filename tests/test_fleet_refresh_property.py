"""Random write sequences through the API: after each write the engine's incrementally refreshed
snapshot equals a fresh full load (on every backend)."""

from __future__ import annotations

import uuid
from typing import Any

import orjson
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement_numa.api import microversion as mv
from placement_numa.api.schemas.allocation_candidates import encode_candidates
from placement_numa.db.repositories.fleet import SqlFleetSource
from placement_numa.domain.request_groups import CandidateQuery, RequestGroup
from placement_numa.engine import SnapshotEngine, StaticFleetSource
from placement_numa.engine.fleet import FleetSnapshot
from tests.backends import reset_rows
from tests.conftest import PlacementAPI
from tests.test_fleet_refresh import canonical

pytestmark = pytest.mark.slow

AGGREGATES = [str(uuid.UUID(int=i + 1)) for i in range(3)]
TRAITS = ["HW_NUMA_ROOT", "MISC_SHARES_VIA_AGGREGATE", "HW_CPU_X86_AVX2"]

VERSION = mv.Microversion(1, 39)
index = st.integers(0, 7)
operations = st.one_of(
    st.tuples(st.just("root")),
    st.tuples(st.just("child"), index),
    st.tuples(st.just("inventory"), index, st.integers(0, 8)),
    st.tuples(st.just("traits"), index, st.sets(st.sampled_from(TRAITS))),
    st.tuples(st.just("aggregates"), index, st.sets(st.sampled_from(AGGREGATES))),
    st.tuples(st.just("allocate"), st.integers(0, 2), index, st.integers(1, 3)),
    st.tuples(st.just("free"), st.integers(0, 2)),
    st.tuples(st.just("move"), index, st.one_of(st.none(), index)),
    st.tuples(st.just("delete"), index),
)


def _apply(
    api: PlacementAPI, providers: list[str], consumers: list[str], op: tuple[Any, ...]
) -> None:
    """One write; invalid ones (a cycle, a provider in use...) are refused by the API: fine."""
    kind = op[0]
    if kind in ("root", "child"):
        u = str(uuid.uuid4())
        body: dict[str, Any] = {"name": u, "uuid": u}
        if kind == "child" and providers:
            body["parent_provider_uuid"] = providers[op[1] % len(providers)]
        if api.post("/resource_providers", json=body, version="1.39").status_code == 200:
            providers.append(u)
        return
    if kind in ("allocate", "free"):
        consumer = consumers[op[1]]
        if kind == "free":
            api.delete(f"/allocations/{consumer}", version="1.39")
            return
        if not providers:
            return
        current = api.get(f"/allocations/{consumer}", version="1.36").json()
        body = {
            "allocations": {providers[op[2] % len(providers)]: {"resources": {"VCPU": op[3]}}},
            "project_id": "p",
            "user_id": "u",
            "consumer_generation": current.get("consumer_generation"),
        }
        api.put(f"/allocations/{consumer}", json=body, version="1.36")
        return
    if not providers:
        return
    u = providers[op[1] % len(providers)]
    r = api.get(f"/resource_providers/{u}", version="1.39")
    if r.status_code != 200:
        return
    generation = r.json()["generation"]
    if kind == "inventory":
        inventories = {"VCPU": {"total": op[2]}, "DISK_GB": {"total": 10}} if op[2] else {}
        api.put(
            f"/resource_providers/{u}/inventories",
            version="1.39",
            json={"resource_provider_generation": generation, "inventories": inventories},
        )
    elif kind == "traits":
        api.put(
            f"/resource_providers/{u}/traits",
            version="1.39",
            json={"resource_provider_generation": generation, "traits": sorted(op[2])},
        )
    elif kind == "aggregates":
        api.put(
            f"/resource_providers/{u}/aggregates",
            version="1.39",
            json={"resource_provider_generation": generation, "aggregates": sorted(op[2])},
        )
    elif kind == "move":
        parent = None if op[2] is None else providers[op[2] % len(providers)]
        api.put(
            f"/resource_providers/{u}",
            version="1.39",
            json={"name": u, "parent_provider_uuid": parent},
        )
    elif kind == "delete":
        if api.delete(f"/resource_providers/{u}", version="1.39").status_code == 204:
            providers.remove(u)


def _body(fleet: FleetSnapshot) -> Any:
    """The parsed ``GET /allocation_candidates?resources=VCPU:1`` body for ``fleet``, encoded
    from (and filling) its rendering caches."""
    query = CandidateQuery(groups=(RequestGroup(suffix=None, resources={"VCPU": 1}),))
    result = SnapshotEngine(StaticFleetSource(fleet)).search(query, fleet=fleet)
    return orjson.loads(encode_candidates(result, query, VERSION, nested_aware=True))


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(ops=st.lists(st.tuples(operations, st.booleans()), min_size=1, max_size=12))
def test_random_writes_refresh_like_a_full_load(
    app: FastAPI, ops: list[tuple[tuple[Any, ...], bool]]
) -> None:
    """Each refresh either patches the snapshot in place (no one holds it) or a copy (a search
    still holds it, ``hold``: that one must not change); either way it equals a full load, and
    bodies encoded from its caches (kept for untouched trees) equal a full load's."""
    database = app.state.database
    with database.write() as conn:
        reset_rows(conn)
    source = SqlFleetSource(database)
    _body(source.snapshot())
    providers: list[str] = []
    consumers = [str(uuid.uuid4()) for _ in range(3)]
    with TestClient(app, raise_server_exceptions=True) as client:
        api = PlacementAPI(client)
        for op, hold in ops:
            held = source.snapshot() if hold else None
            seen = (canonical(held), _body(held)) if held is not None else None
            _apply(api, providers, consumers, op)
            patches, in_place = source.patches, source.patches_in_place
            fleet = source.snapshot()
            patched = source.patches - patches
            assert source.patches_in_place - in_place == (0 if hold else patched), op
            full = SqlFleetSource(database).snapshot()
            assert canonical(fleet) == canonical(full), op
            assert _body(fleet) == _body(full), op
            del fleet, full
            if held is not None:
                assert not held.handed_over
                assert (canonical(held), _body(held)) == seen
            del held
    assert source.full_loads == 1 or database.dialect == "sqlite"  # SQLite may reuse a max id
