"""GET /allocation_candidates through the API on every backend: a NUMA host, every response
shape, freshness after writes, limit."""

from __future__ import annotations

import uuid
from typing import Any

from tests.conftest import PlacementAPI

TWO_CELLS = (
    "resources_MEM1=MEMORY_MB:4096&required_MEM1=MEMORY_PAGE_SIZE_SMALL"
    "&resources_PROC1=VCPU:4&required_NUMA1=HW_NUMA_ROOT&same_subtree=_MEM1,_PROC1,_NUMA1"
    "&resources_MEM2=MEMORY_MB:4096&required_MEM2=MEMORY_PAGE_SIZE_SMALL"
    "&resources_PROC2=VCPU:4&required_NUMA2=HW_NUMA_ROOT&same_subtree=_MEM2,_PROC2,_NUMA2"
    "&group_policy=none"
)


def provider(
    api: PlacementAPI,
    name: str,
    parent: str | None = None,
    inventories: dict[str, Any] | None = None,
    traits: list[str] = (),
) -> str:  # type: ignore[assignment]
    u = str(uuid.uuid4())
    body: dict[str, Any] = {"name": name, "uuid": u}
    if parent:
        body["parent_provider_uuid"] = parent
    assert api.post("/resource_providers", json=body).status_code == 200
    gen = 0
    if inventories:
        r = api.put(
            f"/resource_providers/{u}/inventories",
            json={"resource_provider_generation": gen, "inventories": inventories},
        )
        assert r.status_code == 200, r.text
        gen = r.json()["resource_provider_generation"]
    if traits:
        r = api.put(
            f"/resource_providers/{u}/traits",
            json={"resource_provider_generation": gen, "traits": list(traits)},
        )
        assert r.status_code == 200, r.text
    return u


def numa_host(api: PlacementAPI, name: str = "cn1") -> dict[str, str]:
    """A compute node with two NUMA cells, each with a 4K and a 2M page-size child::

    cn1 (DISK_GB: 100)
    ├── cn1_NUMA0 (VCPU: 8, PCPU: 4; HW_NUMA_ROOT)
    │   ├── cn1_NUMA0_4K (MEMORY_MB: 8192; MEMORY_PAGE_SIZE_SMALL)
    │   └── cn1_NUMA0_2M (MEMORY_MB: 4096 step 2; MEMORY_PAGE_SIZE_LARGE)
    └── cn1_NUMA1 (same)
        ├── cn1_NUMA1_4K
        └── cn1_NUMA1_2M
    """
    uuids = {name: provider(api, name, inventories={"DISK_GB": {"total": 100}})}
    for cell in range(2):
        c = f"{name}_NUMA{cell}"
        uuids[c] = provider(
            api, c, uuids[name], {"VCPU": {"total": 8}, "PCPU": {"total": 4}}, ["HW_NUMA_ROOT"]
        )
        uuids[c + "_4K"] = provider(
            api, c + "_4K", uuids[c], {"MEMORY_MB": {"total": 8192}}, ["MEMORY_PAGE_SIZE_SMALL"]
        )
        uuids[c + "_2M"] = provider(
            api,
            c + "_2M",
            uuids[c],
            {"MEMORY_MB": {"total": 4096, "step_size": 2}},
            ["MEMORY_PAGE_SIZE_LARGE"],
        )
    return uuids


def test_nova_two_cell_query(api: PlacementAPI) -> None:
    rp = numa_host(api)
    body = api.get("/allocation_candidates?" + TWO_CELLS, version="1.36").json()
    by_name = {u: n for n, u in rp.items()}
    found = sorted(
        tuple(by_name[item["mappings"][s][0]] for s in ("_PROC1", "_MEM1", "_PROC2", "_MEM2"))
        for item in body["allocation_requests"]
    )
    assert found == [
        ("cn1_NUMA0", "cn1_NUMA0_4K", "cn1_NUMA0", "cn1_NUMA0_4K"),
        ("cn1_NUMA0", "cn1_NUMA0_4K", "cn1_NUMA1", "cn1_NUMA1_4K"),
        ("cn1_NUMA1", "cn1_NUMA1_4K", "cn1_NUMA0", "cn1_NUMA0_4K"),
        ("cn1_NUMA1", "cn1_NUMA1_4K", "cn1_NUMA1", "cn1_NUMA1_4K"),
    ]
    same_cell = next(
        i
        for i in body["allocation_requests"]
        if i["mappings"]["_PROC1"] == i["mappings"]["_PROC2"] == [rp["cn1_NUMA0"]]
    )
    assert same_cell["allocations"] == {
        rp["cn1_NUMA0"]: {"resources": {"VCPU": 8}},
        rp["cn1_NUMA0_4K"]: {"resources": {"MEMORY_MB": 8192}},
    }
    assert set(body["provider_summaries"]) == set(rp.values())
    isolate = api.get("/allocation_candidates?" + TWO_CELLS.replace("=none", "=isolate")).json()
    assert isolate["allocation_requests"] == []  # _NUMA1 and _PROC1 share a provider


def test_shapes_per_microversion(api: PlacementAPI) -> None:
    rp = numa_host(api)
    flat = "resources=DISK_GB:10"
    old = api.get(f"/allocation_candidates?{flat}", version="1.10").json()
    assert old["allocation_requests"] == [
        {"allocations": [{"resource_provider": {"uuid": rp["cn1"]}, "resources": {"DISK_GB": 10}}]}
    ]
    assert old["provider_summaries"] == {
        rp["cn1"]: {"resources": {"DISK_GB": {"capacity": 100, "used": 0}}}
    }
    v12 = api.get(f"/allocation_candidates?{flat}", version="1.12").json()
    assert v12["allocation_requests"] == [
        {"allocations": {rp["cn1"]: {"resources": {"DISK_GB": 10}}}}
    ]
    r = api.get(f"/allocation_candidates?{flat}", version="1.17")
    assert r.json()["provider_summaries"][rp["cn1"]]["traits"] == []
    assert r.headers["cache-control"] == "no-cache" and "last-modified" in r.headers
    nested = "resources=DISK_GB:10,VCPU:1"
    assert api.get(f"/allocation_candidates?{nested}", version="1.28").json() == {
        "allocation_requests": [],
        "provider_summaries": {},
    }
    v29 = api.get(f"/allocation_candidates?{nested}", version="1.29").json()
    assert len(v29["allocation_requests"]) == 2 and "mappings" not in v29["allocation_requests"][0]
    summary = v29["provider_summaries"][rp["cn1_NUMA0"]]
    assert summary == {
        "resources": {"PCPU": {"capacity": 4, "used": 0}, "VCPU": {"capacity": 8, "used": 0}},
        "traits": ["HW_NUMA_ROOT"],
        "parent_provider_uuid": rp["cn1"],
        "root_provider_uuid": rp["cn1"],
    }
    v34 = api.get(f"/allocation_candidates?{nested}", version="1.34").json()
    assert sorted(v34["allocation_requests"][0]["mappings"][""]) == sorted(
        [rp["cn1"], rp["cn1_NUMA0"]]
    )
    assert api.get(f"/allocation_candidates?{flat}", version="1.9").status_code == 404


def test_answers_follow_writes_and_limit(api: PlacementAPI) -> None:
    rp = numa_host(api)
    one_cell = "resources_P=VCPU:6&required_N=HW_NUMA_ROOT&same_subtree=_P,_N&group_policy=none"
    assert len(api.get(f"/allocation_candidates?{one_cell}").json()["allocation_requests"]) == 2
    consumer = str(uuid.uuid4())
    r = api.put(
        f"/allocations/{consumer}",
        version="1.28",
        json={
            "allocations": {rp["cn1_NUMA0"]: {"resources": {"VCPU": 4}}},
            "project_id": "p",
            "user_id": "u",
            "consumer_generation": None,
        },
    )
    assert r.status_code == 204, r.text
    body = api.get(f"/allocation_candidates?{one_cell}").json()
    assert [i["mappings"]["_P"] for i in body["allocation_requests"]] == [[rp["cn1_NUMA1"]]]
    assert body["provider_summaries"][rp["cn1_NUMA0"]]["resources"]["VCPU"]["used"] == 4
    everything = api.get(f"/allocation_candidates?{TWO_CELLS}").json()["allocation_requests"]
    first = api.get(f"/allocation_candidates?{TWO_CELLS}&limit=1").json()["allocation_requests"]
    assert first == everything[:1]


def test_unknown_names_are_400(api: PlacementAPI) -> None:
    r = api.get("/allocation_candidates?resources=CUSTOM_NOPE:1")
    assert r.status_code == 400
    assert "No such resource class CUSTOM_NOPE" in r.json()["errors"][0]["detail"]
    r = api.get("/allocation_candidates?resources=VCPU:1&required=CUSTOM_NOPE")
    assert r.status_code == 400 and "No such trait(s): CUSTOM_NOPE." in r.text


def test_every_worker_sees_committed_writes(api: PlacementAPI, test_database: Any) -> None:
    """A second app on the same database (another worker process's engine and snapshot)
    answers from the state after a write committed through the first one."""
    from fastapi.testclient import TestClient

    from placement_numa.app import create_app
    from placement_numa.settings import Settings

    rp = numa_host(api)
    other_app = create_app(
        Settings(database_url=test_database.url, auto_migrate=False, auth_strategy="noauth2")
    )
    try:
        with TestClient(other_app) as client:
            other = PlacementAPI(client)
            query = "/allocation_candidates?resources=DISK_GB:60"
            assert len(other.get(query).json()["allocation_requests"]) == 1  # snapshot loaded
            r = api.put(
                f"/allocations/{uuid.uuid4()}",
                version="1.28",
                json={
                    "allocations": {rp["cn1"]: {"resources": {"DISK_GB": 50}}},
                    "project_id": "p",
                    "user_id": "u",
                    "consumer_generation": None,
                },
            )
            assert r.status_code == 204
            assert other.get(query).json()["allocation_requests"] == []
    finally:
        other_app.state.database.dispose()
