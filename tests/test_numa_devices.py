"""PCI devices in the NUMA tree through the public API (issue 22): ``[pci] alias`` in
placement.conf, ``pci_passthrough:alias`` flavors, the device NUMA affinity policies, the
``topology_policy`` option, ranking with devices, the ``numa`` block's ``devices`` and claims.

Hosts are built over REST (``cli.demo.load_host``) with two cells of 4 PCPU each::

    host (compute node)              sockets: cell 0 -> 0, cell 1 -> 1 (unless said otherwise)
    +-- host_NUMA0  PCPU 4, VCPU 4, 4K pages 8 GiB   [+ devices whose cell is 0]
    +-- host_NUMA1  PCPU 4, VCPU 4, 4K pages 8 GiB   [+ devices whose cell is 1]
    +-- devices with no NUMA node (cell None)
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from placement_numa.app import create_app
from placement_numa.cli.demo import DeviceShape, HostShape, _cells, load_host
from placement_numa.numa.pci_alias import AliasConfigError, parse_aliases
from placement_numa.settings import Settings
from tests.backends import TestDatabase, reset_rows
from tests.conftest import PlacementAPI

V = "1.39"
NIC = "CUSTOM_PCI_8086_1572"
GPU = "CUSTOM_GPU_A100"
CONF = """
[pci]
alias = {"name": "nic", "vendor_id": "8086", "product_id": "1572", "traits": "physnet_a"}
alias = {"name": "gpu", "resource_class": "GPU_A100", "numa_policy": "preferred"}
alias = {"name": "strict", "vendor_id": "8086", "product_id": "1572", "numa_policy": "required"}
alias = {"name": "absent", "vendor_id": "8086", "product_id": "9999"}
"""


@pytest.fixture(scope="module")
def device_app(
    test_database: TestDatabase, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FastAPI]:
    """The real app with ``[pci] alias`` in its placement.conf."""
    conf = tmp_path_factory.mktemp("conf") / "placement.conf"
    conf.write_text(CONF)
    application = create_app(
        Settings(
            database_url=test_database.url,
            auto_migrate=False,
            auth_strategy="noauth2",
            config_file=conf,
        )
    )
    yield application
    application.state.database.dispose()


@pytest.fixture
def dapi(device_app: FastAPI) -> Iterator[PlacementAPI]:
    with device_app.state.database.write() as conn:
        reset_rows(conn)
    with TestClient(device_app, raise_server_exceptions=False) as client:
        yield PlacementAPI(client)


def _send(api: PlacementAPI) -> Any:
    def send(method: str, path: str, body: Any) -> tuple[int, Any]:
        response = api.request(method, path, json=body, version=V)
        return response.status_code, (response.json() if response.content else None)

    return send


def host(
    api: PlacementAPI,
    name: str,
    *devices: DeviceShape,
    sockets: dict[int, int] | None = None,
    used: tuple[tuple[int, int, int, int], ...] = (),
) -> dict[str, Any]:
    shape = HostShape(
        name,
        _cells(2, 4, 4, {4: 8192}),
        {0: {0: 10, 1: 21}, 1: {0: 21, 1: 10}},
        devices=devices,
        sockets={0: 0, 1: 1} if sockets is None else sockets,
        used=used,
    )
    return load_host(_send(api), shape)


def nic(cell: int | None, total: int = 8) -> DeviceShape:
    return DeviceShape(f"0000_{cell}_00_0", cell, NIC, total, ("CUSTOM_PHYSNET_A",))


def gpu(cell: int | None) -> DeviceShape:
    return DeviceShape(f"0000_{cell}_01_0", cell, GPU)


def candidates(api: PlacementAPI, specs: dict[str, str], **options: Any) -> list[dict[str, Any]]:
    body = {
        "flavor": {
            "vcpus": options.pop("vcpus", 2),
            "memory_mb": options.pop("memory_mb", 2048),
            "extra_specs": {"hw:cpu_policy": "dedicated", **specs},
        },
        **options,
    }
    response = api.post("/allocation_candidates", json=body, version=V)
    assert response.status_code == 200, response.text
    return list(response.json()["allocation_requests"])


def placed(requests: list[dict[str, Any]]) -> list[tuple[str | None, list[int], list[Any]]]:
    """``(host, cells, device cells)`` per candidate, in order."""
    return [
        (r["numa"]["host"], r["numa"]["cells"], [d["cell"] for d in r["numa"]["devices"]])
        for r in requests
    ]


# --- aliases ----------------------------------------------------------------------------------


def test_aliases_parse_nova_format() -> None:
    aliases = parse_aliases(
        [
            '{"name": "a", "vendor_id": "8086", "product_id": "154d",'
            ' "traits": "foo,HW_CPU_X86_AVX"}',
            '[{"name": "b", "resource_class": "widget", "numa_policy": "socket"}]',
        ]
    )
    assert aliases["a"].resource_class == "CUSTOM_PCI_8086_154D"
    assert aliases["a"].traits == {"CUSTOM_FOO", "HW_CPU_X86_AVX"}
    assert aliases["b"].resource_class == "CUSTOM_WIDGET"
    assert aliases["b"].numa_policy == "socket"


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("not json", id="not-json"),
        pytest.param('{"vendor_id": "8086", "product_id": "1572"}', id="no-name"),
        pytest.param('{"name": "a", "vendor_id": "86", "product_id": "1572"}', id="bad-id"),
        pytest.param('{"name": "a", "resource_class": "X", "numa_policy": "x"}', id="bad-policy"),
        pytest.param('{"name": "a", "resource_class": "X", "colour": "red"}', id="unknown-key"),
        pytest.param('{"name": "a"}', id="no-class"),
    ],
)
def test_aliases_refused(line: str) -> None:
    with pytest.raises(AliasConfigError):
        parse_aliases([line])


# --- affinity policies ------------------------------------------------------------------------


def test_legacy_device_on_the_guest_cell(dapi: PlacementAPI) -> None:
    a = host(dapi, "a", nic(1))
    host(dapi, "b", nic(0))
    found = candidates(dapi, {"pci_passthrough:alias": "nic:1"}, diversify=False)
    assert sorted(placed(found)) == [("a", [1], [1]), ("b", [0], [0])]
    device = found[0]["numa"]["devices"][0]
    assert device["resource_class"] == NIC
    assert found[0]["numa"]["aligned"] is True
    on_a = next(r for r in found if r["numa"]["host"] == "a")
    assert on_a["numa"]["devices"][0]["provider"] == a["devices"]["0000_1_00_0"]
    assert on_a["allocations"][a["devices"]["0000_1_00_0"]] == {"resources": {NIC: 1}}
    explain = found[0]["numa"]["explain"]
    assert f"resources_PCI1={NIC}:1" in explain and "required_PCI1=CUSTOM_PHYSNET_A" in explain


def test_required_is_one_subtree_with_the_guest_cell(dapi: PlacementAPI) -> None:
    host(dapi, "a", nic(1))
    found = candidates(dapi, {"pci_passthrough:alias": "strict:1"})
    assert placed(found) == [("a", [1], [1])]
    assert "_PCI1" in found[0]["numa"]["explain"].split("same_subtree=")[1]


def test_device_without_numa_node(dapi: PlacementAPI) -> None:
    host(dapi, "a", nic(None))
    legacy = candidates(dapi, {"pci_passthrough:alias": "nic:1"})
    assert {(h, tuple(d)) for h, _, d in placed(legacy)} == {("a", (None,))}
    assert all(r["numa"]["aligned"] is False for r in legacy)
    required = candidates(
        dapi, {"pci_passthrough:alias": "nic:1", "hw:pci_numa_affinity_policy": "required"}
    )
    assert required == []


def test_preferred_ranks_aligned_first(dapi: PlacementAPI) -> None:
    # host a: the NIC's cell 1 is busy (3 of 4 PCPU used): only an unaligned fit there
    host(dapi, "a", nic(1), used=((1, 3, 0, 1024),))
    host(dapi, "b", nic(0))
    specs = {"pci_passthrough:alias": "nic:1", "hw:pci_numa_affinity_policy": "preferred"}
    found = candidates(dapi, specs, diversify=False)
    assert placed(found) == [("b", [0], [0]), ("a", [0], [1]), ("b", [1], [0])]
    assert [r["numa"]["aligned"] for r in found] == [True, False, False]
    # image property, same meaning; flavor and image may not disagree
    image_found = candidates(
        dapi, {"pci_passthrough:alias": "nic:1"}, image={"hw_pci_numa_affinity_policy": "preferred"}
    )
    assert len(image_found) == 3
    clash = dapi.post(
        "/allocation_candidates",
        json={
            "flavor": {"vcpus": 2, "memory_mb": 2048, "extra_specs": specs},
            "image": {"hw_pci_numa_affinity_policy": "required"},
        },
        version=V,
    )
    assert clash.status_code == 400
    assert clash.json()["errors"][0]["code"] == "placement_numa.flavor.invalid"
    # legacy refuses the unaligned one
    legacy = candidates(dapi, {"pci_passthrough:alias": "nic:1"})
    assert sorted(placed(legacy)) == [("b", [0], [0])]


def test_alias_policy_and_image_override(dapi: PlacementAPI) -> None:
    host(dapi, "a", gpu(1), used=((1, 3, 0, 1024),))
    # the gpu alias says preferred: the GPU on busy cell 1 still serves a guest on cell 0
    found = candidates(dapi, {"pci_passthrough:alias": "gpu:1"})
    assert placed(found) == [("a", [0], [1])]
    # the flavor's policy wins over the alias's
    assert (
        candidates(
            dapi, {"pci_passthrough:alias": "gpu:1", "hw:pci_numa_affinity_policy": "required"}
        )
        == []
    )


def test_socket_policy(dapi: PlacementAPI) -> None:
    specs = {"pci_passthrough:alias": "nic:1", "hw:pci_numa_affinity_policy": "socket"}
    # both cells on socket 0: a guest on cell 0 may take the NIC of cell 1
    host(dapi, "same", nic(1), sockets={0: 0, 1: 0}, used=((1, 3, 0, 1024),))
    # cells on two sockets: it may not
    host(dapi, "split", nic(1), used=((1, 3, 0, 1024),))
    # sockets unknown: socket behaves as required
    host(dapi, "unknown", nic(1), sockets={}, used=((1, 3, 0, 1024),))
    found = candidates(dapi, specs)
    assert placed(found) == [("same", [0], [1])]


def test_two_cell_guest_devices_on_either_cell(dapi: PlacementAPI) -> None:
    host(dapi, "a", nic(0, total=1), nic(1, total=1))
    found = candidates(
        dapi,
        {"pci_passthrough:alias": "nic:2", "hw:numa_nodes": "2"},
        vcpus=4,
        memory_mb=4096,
    )
    assert placed(found) == [("a", [0, 1], [0, 1])]


def test_two_vfs_of_one_pf(dapi: PlacementAPI) -> None:
    a = host(dapi, "a", nic(1))
    found = candidates(dapi, {"pci_passthrough:alias": "nic:2"})
    assert placed(found) == [("a", [1], [1, 1])]
    pf = a["devices"]["0000_1_00_0"]
    assert found[0]["allocations"][pf] == {"resources": {NIC: 2}}


def test_unknown_alias_and_bad_value(dapi: PlacementAPI) -> None:
    for value, words in (("nope:1", "not defined"), ("nic:0", "<alias>:<count>")):
        response = dapi.post(
            "/allocation_candidates",
            json={
                "flavor": {
                    "vcpus": 2,
                    "memory_mb": 2048,
                    "extra_specs": {"pci_passthrough:alias": value},
                }
            },
            version=V,
        )
        assert response.status_code == 400, response.text
        error = response.json()["errors"][0]
        assert error["code"] == "placement_numa.flavor.invalid" and words in error["detail"]


def test_alias_of_a_class_nobody_has_gives_no_candidates(dapi: PlacementAPI) -> None:
    host(dapi, "a", nic(0))
    assert candidates(dapi, {"pci_passthrough:alias": "absent:1"}) == []


def test_device_guest_without_numa_request_is_one_cell(dapi: PlacementAPI) -> None:
    host(dapi, "a", nic(0))
    body = {"flavor": {"vcpus": 2, "memory_mb": 2048, "extra_specs": {}}}
    body["flavor"]["extra_specs"] = {"pci_passthrough:alias": "nic:1"}  # type: ignore[index]
    response = dapi.post("/allocation_candidates", json=body, version=V)
    found = response.json()["allocation_requests"]
    assert [r["numa"]["cells"] for r in found] == [[0]]


# --- topology_policy --------------------------------------------------------------------------


def test_single_numa_node(dapi: PlacementAPI) -> None:
    host(dapi, "a", nic(1), gpu(None))
    specs = {"pci_passthrough:alias": "nic:1"}
    found = candidates(dapi, specs, topology_policy="single-numa-node")
    assert placed(found) == [("a", [1], [1])]
    two = {**specs, "hw:numa_nodes": "2"}
    assert candidates(dapi, two, vcpus=4, topology_policy="single-numa-node") == []
    # a GPU only under the compute node: not on one cell
    assert (
        candidates(dapi, {"pci_passthrough:alias": "gpu:1"}, topology_policy="single-numa-node")
        == []
    )
    # too big for one cell (4 PCPU per cell)
    assert candidates(dapi, specs, vcpus=6, topology_policy="single-numa-node") == []


def test_restricted_spreads_to_the_narrowest(dapi: PlacementAPI) -> None:
    host(dapi, "a", nic(1))
    found = candidates(
        dapi, {"pci_passthrough:alias": "nic:1"}, vcpus=6, topology_policy="restricted"
    )
    assert placed(found) == [("a", [0, 1], [1])]
    assert all(r["numa"]["aligned"] for r in found)
    narrow = candidates(
        dapi, {"pci_passthrough:alias": "nic:1"}, vcpus=2, topology_policy="restricted"
    )
    assert placed(narrow) == [("a", [1], [1])]


def test_best_effort_every_placement_aligned_first(dapi: PlacementAPI) -> None:
    host(dapi, "a", nic(1))
    found = candidates(
        dapi,
        {"pci_passthrough:alias": "nic:1"},
        vcpus=2,
        topology_policy="best-effort",
        diversify=False,
    )
    assert placed(found) == [("a", [1], [1]), ("a", [0, 1], [1]), ("a", [0], [1])]
    assert [r["numa"]["aligned"] for r in found] == [True, True, False]


def test_none_policy_no_alignment(dapi: PlacementAPI) -> None:
    host(dapi, "a", nic(1))
    found = candidates(
        dapi, {"pci_passthrough:alias": "strict:1"}, topology_policy="none", diversify=False
    )
    assert placed(found) == [("a", [1], [1]), ("a", [0], [1])]  # KEP-3545 counts the device
    assert [r["numa"]["aligned"] for r in found] == [True, False]


def test_average_distance_counts_device_cells(dapi: PlacementAPI) -> None:
    host(dapi, "a", nic(1), used=((1, 3, 0, 1024),))
    found = candidates(dapi, {"pci_passthrough:alias": "nic:1"}, topology_policy="best-effort")
    unaligned = [r for r in found if not r["numa"]["aligned"]]
    assert unaligned[0]["numa"]["width"] == 1
    assert unaligned[0]["numa"]["average_distance"] == (10 + 21 + 21 + 10) / 4


# --- claims and sockets -----------------------------------------------------------------------


def test_claim_with_a_device(dapi: PlacementAPI) -> None:
    a = host(dapi, "a", nic(1, total=1))
    consumer = str(uuid.uuid4())
    body = {
        "flavor": {
            "vcpus": 2,
            "memory_mb": 2048,
            "extra_specs": {"hw:cpu_policy": "dedicated", "pci_passthrough:alias": "nic:1"},
        },
        "topology_policy": "restricted",
        "consumer_uuid": consumer,
        "consumer_generation": None,
        "project_id": "p",
        "user_id": "u",
    }
    claimed = dapi.post("/allocation_candidates/claim", json=body, version=V)
    assert claimed.status_code == 200, claimed.text
    numa = claimed.json()["allocation_request"]["numa"]
    assert numa["cells"] == [1] and numa["devices"][0]["cell"] == 1
    usage = dapi.get(f"/resource_providers/{a['devices']['0000_1_00_0']}/usages", version=V)
    assert usage.json()["usages"] == {NIC: 1}
    body["consumer_uuid"] = str(uuid.uuid4())
    again = dapi.post("/allocation_candidates/claim", json=body, version=V)
    assert again.status_code == 409
    assert again.json()["errors"][0]["code"] == "placement_numa.claim.no_room"


def test_sockets_stored_with_the_distances(dapi: PlacementAPI) -> None:
    a = host(dapi, "a")
    path = f"/resource_providers/{a['root']}/numa_distances"
    body = dapi.get(path, version=V).json()
    assert body["sockets"] == {"0": 0, "1": 1}
    replaced = dapi.put(
        path,
        json={
            "generation": body["generation"],
            "distances": body["distances"],
            "sockets": {"0": 3},
        },
        version=V,
    )
    assert replaced.status_code == 200 and replaced.json()["sockets"] == {"0": 3}
    bad = dapi.put(
        path,
        json={"generation": 2, "distances": body["distances"], "sockets": {"7": 0}},
        version=V,
    )
    assert bad.status_code == 400
    assert bad.json()["errors"][0]["code"] == "placement_numa.numa_distances.invalid"


def test_bad_alias_configuration(test_database: TestDatabase, tmp_path: Path) -> None:
    conf = tmp_path / "placement.conf"
    conf.write_text('[pci]\nalias = {"name": "x"}\n')
    application = create_app(
        Settings(
            database_url=test_database.url,
            auto_migrate=False,
            auth_strategy="noauth2",
            config_file=conf,
        )
    )
    try:
        with TestClient(application, raise_server_exceptions=False) as client:
            api = PlacementAPI(client)
            response = api.post(
                "/allocation_candidates",
                json={
                    "flavor": {
                        "vcpus": 1,
                        "memory_mb": 512,
                        "extra_specs": {"pci_passthrough:alias": "x:1"},
                    }
                },
                version=V,
            )
            assert response.status_code == 400
            assert response.json()["errors"][0]["code"] == "placement_numa.pci_alias.invalid"
            plain = api.post(
                "/allocation_candidates",
                json={"flavor": {"vcpus": 1, "memory_mb": 512}},
                version=V,
            )
            assert plain.status_code == 200
    finally:
        application.state.database.dispose()
