"""Random writes between repeated queries on look-alike hosts: each answer of the service, whose
roots' replayed answers are carried from snapshot to snapshot (``engine.answers.root_answers``),
equals the answer of a fresh engine on a full load (on every backend)."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import parse_qsl

import orjson
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement_numa.api import microversion as mv
from placement_numa.api.candidate_query import parse_candidate_query
from placement_numa.api.schemas.allocation_candidates import encode_candidates
from placement_numa.db.repositories.fleet import SqlFleetSource
from placement_numa.engine import SnapshotEngine, StaticFleetSource
from tests.backends import reset_rows
from tests.conftest import PlacementAPI

pytestmark = pytest.mark.slow

VERSION = mv.Microversion(1, 39)
HOSTS = 4
AGGREGATE = str(uuid.UUID(int=7))
QUERIES = (
    "resources=VCPU:1,DISK_GB:5",
    "resources=DISK_GB:5&resources_C=VCPU:2&required_C=HW_NUMA_ROOT&group_policy=none",
    "resources=VCPU:2&required=HW_CPU_X86_AVX2",
)
host = st.integers(0, HOSTS - 1)
# HOSTS: the disk pool (a third of the draws: its aggregate changes the answers of untouched
# hosts)
target = st.sampled_from([*range(HOSTS), HOSTS, HOSTS])
operations = st.one_of(
    st.tuples(st.just("allocate"), st.integers(0, 2), host, st.integers(1, 6)),
    st.tuples(st.just("free"), st.integers(0, 2)),
    st.tuples(st.just("aggregates"), target, st.booleans()),
    st.tuples(st.just("avx2"), host, st.booleans()),
    st.tuples(st.just("vcpus"), host, st.integers(0, 8)),
)


def _rp(api: PlacementAPI, name: str, parent: str | None = None) -> str:
    u = str(uuid.uuid4())
    body: dict[str, Any] = {"name": name, "uuid": u, "parent_provider_uuid": parent}
    assert api.post("/resource_providers", json=body, version="1.39").status_code == 200
    return u


def _put(api: PlacementAPI, u: str, what: str, key: str, value: Any) -> None:
    generation = api.get(f"/resource_providers/{u}", version="1.39").json()["generation"]
    body = {"resource_provider_generation": generation, key: value}
    r = api.put(f"/resource_providers/{u}/{what}", json=body, version="1.39")
    assert r.status_code == 200, r.text


def _seed(api: PlacementAPI) -> list[tuple[str, str]]:
    """``HOSTS`` identical hosts (root with disk, one NUMA cell) and a disk pool; ``[(root,
    cell)]``, the pool last as ``(pool, pool)``."""
    hosts = []
    for n in range(HOSTS):
        root = _rp(api, f"h{n}")
        cell = _rp(api, f"h{n}_cell", root)
        _put(api, root, "inventories", "inventories", {"DISK_GB": {"total": 100}})
        _put(api, cell, "inventories", "inventories", {"VCPU": {"total": 8}})
        _put(api, cell, "traits", "traits", ["HW_NUMA_ROOT"])
        _put(api, root, "aggregates", "aggregates", [AGGREGATE])
        hosts.append((root, cell))
    pool = _rp(api, "pool")
    _put(api, pool, "inventories", "inventories", {"DISK_GB": {"total": 1000}})
    _put(api, pool, "traits", "traits", ["MISC_SHARES_VIA_AGGREGATE"])
    return hosts + [(pool, pool)]


def _apply(
    api: PlacementAPI, trees: list[tuple[str, str]], consumers: list[str], op: tuple[Any, ...]
) -> None:
    """One write; those the API refuses (over capacity, inventory in use) change nothing."""
    kind = op[0]
    if kind == "free":
        api.delete(f"/allocations/{consumers[op[1]]}", version="1.39")
    elif kind == "allocate":
        consumer = consumers[op[1]]
        current = api.get(f"/allocations/{consumer}", version="1.36").json()
        body = {
            "allocations": {trees[op[2]][1]: {"resources": {"VCPU": op[3]}}},
            "project_id": "p",
            "user_id": "u",
            "consumer_generation": current.get("consumer_generation"),
        }
        api.put(f"/allocations/{consumer}", json=body, version="1.36")
    elif kind == "aggregates":
        _put(api, trees[op[1]][0], "aggregates", "aggregates", [AGGREGATE] if op[2] else [])
    elif kind == "avx2":
        traits = ["HW_NUMA_ROOT", "HW_CPU_X86_AVX2"] if op[2] else ["HW_NUMA_ROOT"]
        _put(api, trees[op[1]][1], "traits", "traits", traits)
    elif kind == "vcpus":
        generation = api.get(f"/resource_providers/{trees[op[1]][1]}", version="1.39").json()
        body = {
            "resource_provider_generation": generation["generation"],
            "inventories": {"VCPU": {"total": op[2]}} if op[2] else {},
        }
        api.put(f"/resource_providers/{trees[op[1]][1]}/inventories", json=body, version="1.39")


def _fresh(app: FastAPI, text: str) -> Any:
    """The answer to ``text`` of a fresh engine on a full load of the database."""
    fleet = SqlFleetSource(app.state.database).snapshot()
    query = parse_candidate_query(parse_qsl(text), VERSION)
    result = SnapshotEngine(StaticFleetSource(fleet)).search(query, fleet=fleet)
    return orjson.loads(encode_candidates(result, query, VERSION, nested_aware=True))


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(ops=st.lists(operations, min_size=1, max_size=10))
def test_repeated_queries_between_random_writes_answer_like_a_fresh_engine(
    app: FastAPI, ops: list[tuple[Any, ...]]
) -> None:
    with app.state.database.write() as conn:
        reset_rows(conn)
    consumers = [str(uuid.uuid4()) for _ in range(3)]
    with TestClient(app, raise_server_exceptions=True) as client:
        api = PlacementAPI(client)
        trees = _seed(api)
        for text in QUERIES:  # asked once, so the next snapshots carry their roots' answers
            assert api.get(f"/allocation_candidates?{text}", version="1.39").status_code == 200
        for op in ops:
            _apply(api, trees, consumers, op)
            for text in QUERIES:
                answer = api.get(f"/allocation_candidates?{text}", version="1.39")
                assert answer.status_code == 200, answer.text
                assert answer.json() == _fresh(app, text), (op, text)
