"""``POST /allocation_candidates/claim`` (extension) against the real app on every backend.

Fleet (built through the API with ``placement_numa.cli.demo.load_host``)::

    host-a, host-b          compute nodes (DISK_GB 1000)
    ├── <host>_NUMA0        HW_NUMA_ROOT, PCPU 4, VCPU 4
    │   └── <host>_NUMA0_4K MEMORY_MB 4096 (small pages)
    └── <host>_NUMA1        the same

A pinned two-cell guest of 4 PCPU / 2048 MB takes 2 PCPU and 1024 MB on each cell, so each
host holds two of them and the fleet four.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from placement_numa.claim_client import ClaimRefused, claim_flavor
from placement_numa.cli.demo import HostShape, _cells, load_host
from placement_numa.db.repositories.fleet import SqlFleetSource
from placement_numa.engine import SnapshotEngine
from placement_numa.numa.flavor import Flavor
from placement_numa.services import claims
from placement_numa.services.numa_candidates import NumaOptions
from tests.conftest import PlacementAPI

V = "1.39"
FLAVOR = {
    "vcpus": 4,
    "memory_mb": 2048,
    "extra_specs": {"hw:numa_nodes": "2", "hw:cpu_policy": "dedicated"},
}


def _send(api: PlacementAPI) -> Any:
    def send(method: str, path: str, body: Any) -> tuple[int, Any]:
        response = api.request(method, path, json=body, version=V)
        return response.status_code, (response.json() if response.content else None)

    return send


def _fleet(api: PlacementAPI, *names: str) -> dict[str, dict[str, Any]]:
    return {
        name: load_host(_send(api), HostShape(name, _cells(2, 4, 4, {4: 4096}))) for name in names
    }


def _claim(api: PlacementAPI, consumer: str | None = None, **extra: Any) -> Any:
    body = {
        "flavor": FLAVOR,
        "consumer_uuid": consumer or str(uuid.uuid4()),
        "consumer_generation": None,
        "project_id": "p1",
        "user_id": "u1",
        "consumer_type": "INSTANCE",
        **extra,
    }
    return api.post("/allocation_candidates/claim", json=body, version=V)


def _pcpu_used(api: PlacementAPI, fleet: dict[str, dict[str, Any]]) -> int:
    total = 0
    for host in fleet.values():
        for cell in host["cells"].values():
            usages = api.get(f"/resource_providers/{cell}/usages", version=V).json()["usages"]
            total += usages.get("PCPU", 0)
    return total


def test_claim_writes_best_fit_and_answers_like_a_put(api: PlacementAPI) -> None:
    fleet = _fleet(api, "host-a", "host-b")
    consumer = str(uuid.uuid4())
    r = _claim(api, consumer, alternates=1)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["consumer_uuid"] == consumer
    assert body["consumer_generation"] == 1
    request = body["allocation_request"]
    assert request["numa"]["width"] == 2 and sorted(request["numa"]["cells"]) == [0, 1]
    host = request["numa"]["host"]
    assert host in fleet
    claimed = {rp: a["resources"] for rp, a in request["allocations"].items()}
    assert sum(res.get("PCPU", 0) for res in claimed.values()) == 4
    assert sum(res.get("MEMORY_MB", 0) for res in claimed.values()) == 2048
    assert [a["numa"]["host"] for a in body["alternates"]] == [
        next(name for name in fleet if name != host)
    ]

    # the rest of the API sees it as any allocation write
    got = api.get(f"/allocations/{consumer}", version=V).json()
    assert {rp: a["resources"] for rp, a in got["allocations"].items()} == claimed
    assert got["consumer_generation"] == 1 and got["consumer_type"] == "INSTANCE"
    assert got["project_id"] == "p1" and got["user_id"] == "u1"
    assert _pcpu_used(api, fleet) == 4
    project = api.get("/usages?project_id=p1", version=V).json()["usages"]
    assert project["INSTANCE"]["PCPU"] == 4 and project["INSTANCE"]["consumer_count"] == 1
    for rp in claimed:
        assert api.get(f"/resource_providers/{rp}", version=V).json()["generation"] >= 2
    # the candidate engine's snapshot sees the claim: the claimed cells have 2 PCPU left each
    summaries = api.post("/allocation_candidates", json={"flavor": FLAVOR}, version=V).json()[
        "provider_summaries"
    ]
    for rp, res in claimed.items():
        if "PCPU" in res:
            assert summaries[rp]["resources"]["PCPU"]["used"] == 2


def test_claims_fill_the_fleet_then_409_no_room_with_what_lacks(api: PlacementAPI) -> None:
    fleet = _fleet(api, "host-a", "host-b")
    hosts = []
    for _ in range(4):
        r = _claim(api)
        assert r.status_code == 200, r.text
        hosts.append(r.json()["allocation_request"]["numa"]["host"])
    assert sorted(hosts) == ["host-a", "host-a", "host-b", "host-b"]
    assert _pcpu_used(api, fleet) == 16

    refused = _claim(api)
    assert refused.status_code == 409, refused.text
    error = refused.json()["errors"][0]
    assert error["code"] == "placement_numa.claim.no_room"
    assert error["lacking"] == {"PCPU": 4}
    assert error["requested"]["PCPU"] == 4
    assert "PCPU 4" in error["detail"]
    assert _pcpu_used(api, fleet) == 16


def test_no_room_without_any_host(api: PlacementAPI) -> None:
    r = _claim(api)
    assert r.status_code == 409
    assert r.json()["errors"][0]["code"] == "placement_numa.claim.no_room"


def test_same_consumer_never_claimed_twice(api: PlacementAPI) -> None:
    fleet = _fleet(api, "host-a", "host-b")
    consumer = str(uuid.uuid4())
    assert _claim(api, consumer).status_code == 200
    again = _claim(api, consumer)
    assert again.status_code == 409
    assert again.json()["errors"][0]["code"] == "placement.concurrent_update"
    assert _pcpu_used(api, fleet) == 4
    # with the right generation the consumer's allocations are replaced, not added to
    moved = _claim(api, consumer, consumer_generation=1)
    assert moved.status_code == 200, moved.text
    assert moved.json()["consumer_generation"] == 2
    assert _pcpu_used(api, fleet) == 4


def test_query_form_and_window(api: PlacementAPI) -> None:
    fleet = _fleet(api, "host-a")
    r = api.post(
        "/allocation_candidates/claim",
        json={
            "query": {"resources": "DISK_GB:10"},
            "limit": 1,
            "consumer_uuid": str(uuid.uuid4()),
            "consumer_generation": None,
            "project_id": "p1",
            "user_id": "u1",
        },
        version=V,
    )
    assert r.status_code == 200, r.text
    assert list(r.json()["allocation_request"]["allocations"]) == [fleet["host-a"]["root"]]


@pytest.mark.parametrize(
    ("version", "body", "status"),
    [
        pytest.param("1.35", {}, 404, id="below-1.36"),
        pytest.param(V, {"consumer_uuid": "nope"}, 400, id="bad-uuid"),
        pytest.param(V, {"consumer_generation": "x"}, 400, id="bad-generation"),
        pytest.param(V, {"alternates": 1000}, 400, id="too-many-alternates"),
        pytest.param(V, {"limit": 0}, 400, id="zero-window"),
        pytest.param(V, {"flavor": {"vcpus": 0, "memory_mb": 1}}, 400, id="bad-flavor"),
        pytest.param(
            V,
            {"flavor": {**FLAVOR, "extra_specs": {"hw:numa_nodes": "2", "hw:numa_cpus.0": "0"}}},
            400,
            id="invalid-numa-spec",
        ),
    ],
)
def test_bad_requests(api: PlacementAPI, version: str, body: dict[str, Any], status: int) -> None:
    _fleet(api, "host-a")
    full = {
        "flavor": FLAVOR,
        "consumer_uuid": str(uuid.uuid4()),
        "consumer_generation": None,
        "project_id": "p1",
        "user_id": "u1",
        **body,
    }
    r = api.post("/allocation_candidates/claim", json=full, version=version)
    assert r.status_code == status, r.text
    assert r.json()["errors"][0]["status"] == status


def test_python_client(api: PlacementAPI) -> None:
    """``claim_client.claim_flavor`` over the app (the test client is an ``httpx.Client``)."""
    _fleet(api, "host-a")
    claimed = claim_flavor(api.client, FLAVOR, project_id="p1", user_id="u1", alternates=3)
    assert claimed.host == "host-a" and sorted(claimed.cells) == [0, 1]
    assert claimed.consumer_generation == 1 and claimed.alternates == []
    claim_flavor(api.client, FLAVOR, project_id="p1", user_id="u1")
    with pytest.raises(ClaimRefused) as refused:
        claim_flavor(api.client, FLAVOR, project_id="p1", user_id="u1")
    assert refused.value.no_room and refused.value.status == 409
    assert refused.value.lacking == {"PCPU": 4}
    with pytest.raises(ClaimRefused) as stale:
        claim_flavor(
            api.client,
            FLAVOR,
            project_id="p1",
            user_id="u1",
            consumer_uuid=claimed.consumer_uuid,
            consumer_generation=0,
        )
    assert stale.value.code == "placement.concurrent_update" and not stale.value.no_room


@pytest.mark.parametrize("strategy", ["spread", "ordered"])
def test_both_strategies_fill_the_fleet(app: Any, api: PlacementAPI, strategy: Any) -> None:
    """The service function under each ``claim_strategy``: the same claims, the same end."""
    fleet = _fleet(api, "host-a", "host-b")
    database = app.state.database
    engine = SnapshotEngine(SqlFleetSource(database))
    hosts = []
    for _ in range(4):
        claimed = claims.claim_for_flavor(
            database=database,
            engine=engine,
            flavor=Flavor(**FLAVOR),
            image=None,
            options=NumaOptions(),
            request=claims.ClaimRequest(str(uuid.uuid4()), "p1", "u1", None, "INSTANCE"),
            strategy=strategy,
        )
        assert claimed.consumer_generation == 1 and claimed.attempts == 1
        hosts.append(claimed.chosen.host)
    assert sorted(hosts) == ["host-a", "host-a", "host-b", "host-b"]
    assert _pcpu_used(api, fleet) == 16
    with pytest.raises(claims.NoRoom):
        claims.claim_for_flavor(
            database=database,
            engine=engine,
            flavor=Flavor(**FLAVOR),
            image=None,
            options=NumaOptions(),
            request=claims.ClaimRequest(str(uuid.uuid4()), "p1", "u1", None),
            strategy=strategy,
        )
