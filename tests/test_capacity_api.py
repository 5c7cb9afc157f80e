# ruff: noqa: F811 (``dapi`` is a fixture imported from test_numa_devices)
"""``POST /allocation_candidates/capacity`` (extension, issue 31) against ``/claim`` on the real
app (``test_numa_devices``'s, with its ``[pci] alias`` lines): for every flavor shape,
claiming the flavor alone on a fresh copy of the fleet succeeds exactly ``total`` times (on the
hosts and as many times per host as answered), then answers 409
``placement_numa.claim.no_room``.

Fleet (built over REST with ``cli.demo.load_host``; sizes mixed, guests already on some
cells, 1 GiB pages on one host, a NIC on one cell, a 4-cell host, a host not reshaped)::

    cap-a  2 cells: PCPU 4, VCPU 8 (x4), 4K 8 GiB + 2M 4 GiB; NIC on cell 1; a guest on cell 0
    cap-b  2 cells: PCPU 8, VCPU 4 (x4), 4K 16 GiB + 1G 4 GiB; distances 10/21
    cap-c  4 cells: PCPU 4, VCPU 4 (x4), 4K 8 GiB; a guest on cell 2; distances 10/16/21
    cap-d  2 cells: PCPU 2, VCPU 16 (x4), 4K 32 GiB; DISK_GB 45 (disk runs out first)
    cap-e  not reshaped: VCPU 16 (x4), MEMORY_MB 16 GiB on the compute node
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import pytest

from placement_numa.cli.demo import DeviceShape, HostShape, _cells, load_host
from tests.conftest import PlacementAPI

# the app with test_numa_devices' [pci] alias lines ("nic": CUSTOM_PCI_8086_1572, physnet_a)
from tests.test_numa_devices import dapi, device_app  # noqa: F401

V = "1.39"
GiB = 1024
NIC = "CUSTOM_PCI_8086_1572"

FLAVORS: dict[str, dict[str, Any]] = {
    "one-cell": {
        "vcpus": 2,
        "memory_mb": 2048,
        "root_gb": 5,
        "extra_specs": {"hw:numa_nodes": "1"},
    },
    "two-cell": {
        "vcpus": 4,
        "memory_mb": 4096,
        "root_gb": 5,
        "extra_specs": {"hw:numa_nodes": "2"},
    },
    "pinned": {"vcpus": 2, "memory_mb": 2048, "extra_specs": {"hw:cpu_policy": "dedicated"}},
    "pinned-two-cell": {
        "vcpus": 4,
        "memory_mb": 2048,
        "root_gb": 5,
        "extra_specs": {"hw:cpu_policy": "dedicated", "hw:numa_nodes": "2"},
    },
    "1g-pages": {
        "vcpus": 2,
        "memory_mb": 2048,
        "extra_specs": {"hw:cpu_policy": "dedicated", "hw:mem_page_size": "1GB"},
    },
    "device": {
        "vcpus": 1,
        "memory_mb": 1024,
        "extra_specs": {"hw:cpu_policy": "dedicated", "pci_passthrough:alias": "nic:1"},
    },
    "mixed-cpus": {
        "vcpus": 4,
        "memory_mb": 2048,
        "extra_specs": {"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "^0-1"},
    },
    "flat": {"vcpus": 2, "memory_mb": 2048, "root_gb": 5},
}


def _send(api: PlacementAPI) -> Any:
    def send(method: str, path: str, body: Any) -> tuple[int, Any]:
        response = api.request(method, path, json=body, version=V)
        return response.status_code, (response.json() if response.content else None)

    return send


def _four_cell_distances() -> dict[int, dict[int, int]]:
    return {
        a: {b: 10 if a == b else (16 if a // 2 == b // 2 else 21) for b in range(4)}
        for a in range(4)
    }


def build_fleet(api: PlacementAPI) -> None:
    """The module docstring's fleet."""
    two = {0: {0: 10, 1: 21}, 1: {0: 21, 1: 10}}
    shapes = [
        HostShape(
            "cap-a",
            _cells(2, 4, 8, {4: 8 * GiB, 2048: 4 * GiB}),
            two,
            devices=(DeviceShape("0000_81_00_0", 1, NIC, 2, ("CUSTOM_PHYSNET_A",)),),
            used=((0, 1, 2, 3 * GiB),),
        ),
        HostShape("cap-b", _cells(2, 8, 4, {4: 16 * GiB, 1048576: 4 * GiB}), two),
        HostShape(
            "cap-c",
            _cells(4, 4, 4, {4: 8 * GiB}),
            _four_cell_distances(),
            used=((2, 2, 1, 5 * GiB),),
        ),
        HostShape("cap-d", _cells(2, 2, 16, {4: 32 * GiB}), two, disk_gb=45),
        HostShape("cap-e", flat_vcpu=16, flat_memory_mb=16 * GiB),
    ]
    send = _send(api)
    for shape in shapes:
        load_host(send, shape)


def capacity(api: PlacementAPI, *names: str, **extra: Any) -> dict[str, Any]:
    body = {"flavors": [{"name": n, **FLAVORS[n]} for n in names], **extra}
    response = api.post("/allocation_candidates/capacity", json=body, version=V)
    assert response.status_code == 200, response.text
    return {c["flavor"]: c for c in response.json()["capacity"]}


def claim_until_full(api: PlacementAPI, flavor: dict[str, Any], most: int) -> Counter[str]:
    """Claim ``flavor`` for new consumers until 409 no_room; the hosts claimed, counted."""
    hosts: Counter[str] = Counter()
    for _ in range(most + 1):
        body = {
            "flavor": flavor,
            "consumer_uuid": str(uuid.uuid4()),
            "consumer_generation": None,
            "project_id": "p",
            "user_id": "u",
        }
        r = api.post("/allocation_candidates/claim", json=body, version=V)
        if r.status_code == 409:
            assert r.json()["errors"][0]["code"] == "placement_numa.claim.no_room", r.text
            return hosts
        assert r.status_code == 200, r.text
        hosts[r.json()["allocation_request"]["numa"]["host"]] += 1
    raise AssertionError(f"more than {most} claims succeeded")


@pytest.mark.parametrize("name", list(FLAVORS))
def test_capacity_is_what_claims_get(dapi: PlacementAPI, name: str) -> None:
    build_fleet(dapi)
    answer = capacity(dapi, name)[name]
    per_host = {h["host"]: h["count"] for h in answer["hosts"]}
    assert answer["total"] == sum(per_host.values()) > 0
    claimed = claim_until_full(dapi, FLAVORS[name], answer["total"])
    assert sum(claimed.values()) == answer["total"]
    assert dict(claimed) == {h: n for h, n in per_host.items() if n}
    # and afterwards nothing is left
    assert capacity(dapi, name)[name]["total"] == 0


def test_capacity_of_several_flavors_says_what_stops_each_host(dapi: PlacementAPI) -> None:
    build_fleet(dapi)
    answers = capacity(dapi, "one-cell", "1g-pages", "device")
    assert list(answers) == ["one-cell", "1g-pages", "device"]
    hosts = {h["host"]: h for h in answers["one-cell"]["hosts"]}
    assert sorted(hosts) == ["cap-a", "cap-b", "cap-c", "cap-d", "cap-e"]
    # cap-d runs out of disk: 45 GiB, 5 per guest
    assert hosts["cap-d"]["count"] == 9
    assert {
        "reason": "short",
        "resource_class": "DISK_GB",
        "cell": None,
        "free": 0,
        "requested": 5,
    } in hosts["cap-d"]["limited_by"]
    one_g = {h["host"]: h for h in answers["1g-pages"]["hosts"]}
    assert one_g["cap-b"]["count"] == 4  # 4 GiB of 1 GiB pages per cell, 2 GiB per guest
    assert one_g["cap-a"]["count"] == 0
    assert one_g["cap-a"]["limited_by"][0]["resource_class"] == "MEMORY_MB"
    devices = {h["host"]: h["count"] for h in answers["device"]["hosts"]}
    assert devices == {"cap-a": 2, "cap-b": 0, "cap-c": 0, "cap-d": 0, "cap-e": 0}


def test_capacity_scope_cap_and_totals_only(dapi: PlacementAPI) -> None:
    build_fleet(dapi)
    tree = dapi.get("/resource_providers?name=cap-b", version=V).json()["resource_providers"][0]
    scoped = capacity(dapi, "one-cell", in_tree=tree["uuid"])["one-cell"]
    assert [h["host"] for h in scoped["hosts"]] == ["cap-b"]
    capped = capacity(dapi, "one-cell", max_per_host=1)["one-cell"]
    assert capped["total"] == 5
    assert all(
        h["capped"]
        and h["limited_by"]
        == [
            {"reason": "cap", "resource_class": None, "cell": None, "free": None, "requested": None}
        ]
        for h in capped["hosts"]
    )
    assert "hosts" not in capacity(dapi, "one-cell", hosts=False)["one-cell"]
    none = capacity(dapi, "one-cell", required="CUSTOM_NOWHERE")["one-cell"]
    assert none == {"flavor": "one-cell", "total": 0, "hosts": []}


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"flavors": []}, 400),
        ({"flavors": [FLAVORS["one-cell"]] * 21}, 400),
        ({"flavors": [FLAVORS["one-cell"]], "max_per_host": 10001}, 400),
        ({"flavors": [FLAVORS["one-cell"]], "in_tree": "not-a-uuid"}, 400),
        (
            {"flavors": [{"vcpus": 2, "memory_mb": 1024, "extra_specs": {"hw:numa_nodes": "x"}}]},
            400,
        ),
    ],
)
def test_capacity_refuses_bad_bodies(dapi: PlacementAPI, body: dict[str, Any], status: int) -> None:
    r = dapi.post("/allocation_candidates/capacity", json=body, version=V)
    assert r.status_code == status, r.text
    assert r.json()["errors"][0]["status"] == status


def test_capacity_needs_1_36(dapi: PlacementAPI) -> None:
    r = dapi.post(
        "/allocation_candidates/capacity", json={"flavors": [FLAVORS["one-cell"]]}, version="1.35"
    )
    assert r.status_code == 404


def test_capacity_answers_stranded_capacity(dapi: PlacementAPI) -> None:
    build_fleet(dapi)
    r = dapi.post(
        "/allocation_candidates/capacity",
        json={"flavors": [{"name": "1g", **FLAVORS["1g-pages"]}]},
        version=V,
    )
    lost = r.json()["stranded"]
    # only cap-b has 1 GiB pages: every other host's free PCPU is stranded for this catalogue
    pcpu_free = 8 * 2 + (4 + 4 - 1) + (4 * 4 - 2) + 2 * 2
    assert lost["free"]["PCPU"] == pcpu_free + 0  # cap-e has no PCPU
    assert lost["stranded"]["PCPU"] == pcpu_free - 16
    assert lost["fragmentation"]["PCPU"] == round((pcpu_free - 16) / pcpu_free, 6)
    # where: every cell of the hosts without 1 GiB pages, none of cap-b's
    places = lost["places"]
    assert {p["host"] for p in places if p["cell"] is not None} == {"cap-a", "cap-c", "cap-d"}
    assert sum(p["stranded"].get("PCPU", 0) for p in places) == pcpu_free - 16
    cap_c = sorted(p["cell"] for p in places if p["host"] == "cap-c" and p["cell"] is not None)
    assert cap_c == [0, 1, 2, 3]
