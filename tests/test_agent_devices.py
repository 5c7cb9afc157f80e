"""PCI devices in the agent (issue 22): discovery from a fake sysfs tree (PFs, VFs, GPUs on
different nodes) and from this machine's real sysfs, ``[pci] device_spec`` (Nova's format), the
device providers under their cells, sockets, and the sync against the real service (devices
under their cells, idempotent; a device provider Nova created under the compute node moves under
its cell with its allocations).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from placement_numa.agent.client import PlacementClient
from placement_numa.agent.config import AgentConfigError, AgentSettings, device_specs_from_file
from placement_numa.agent.desired_tree import DesiredTree, build
from placement_numa.agent.pci import (
    MANAGED_TRAIT,
    DeviceSpecError,
    discover_pci,
    parse_device_specs,
    pci_providers,
)
from placement_numa.agent.reshape import topology_document
from placement_numa.agent.sync import sync
from placement_numa.agent.sysfs import discover
from placement_numa.reshape.topology import parse_topology
from tests.conftest import PlacementAPI
from tests.sysfs_fixtures import devices_host

VF_SPEC = '{"vendor_id": "8086", "product_id": "154c", "traits": "physnet_a"}'
NIC_SPEC = '{"devname": "eno1", "resource_class": "CUSTOM_NIC_1G"}'
GPU_SPEC = '{"vendor_id": "10de", "product_id": "20b5", "resource_class": "GPU_A100"}'
SPECS = [VF_SPEC, NIC_SPEC, GPU_SPEC]


def providers_of(sys: Path, specs: list[str]) -> dict[str, tuple[int, str, int, list[str]]]:
    devices = discover_pci(sys)
    found = pci_providers(devices, parse_device_specs(specs))
    return {p.address: (p.numa_node, p.resource_class, p.total, sorted(p.traits)) for p in found}


def test_discovery_of_the_fake_tree(tmp_path: Path) -> None:
    sys = devices_host(tmp_path)
    devices = {d.address: d for d in discover_pci(sys)}
    assert len(devices) == 9
    pf = devices["0000:81:00.0"]
    assert (pf.vendor_id, pf.product_id, pf.numa_node, pf.total_vfs) == ("8086", "1572", 1, 8)
    assert pf.vfs == tuple(f"0000:81:02.{f}" for f in range(4))
    assert pf.devnames == ("ens1f0",)
    assert devices["0000:81:02.3"].physfn == "0000:81:00.0"
    assert devices["0000:d8:00.0"].numa_node == -1
    host = discover(sys, small_page_kb=4)
    assert [c.socket for c in host.cells] == [0, 1]
    assert len(host.pci_devices) == 9


def test_device_specs_give_providers(tmp_path: Path) -> None:
    sys = devices_host(tmp_path)
    assert providers_of(sys, SPECS) == {
        "0000:18:00.0": (0, "CUSTOM_NIC_1G", 1, [MANAGED_TRAIT]),
        "0000:3b:00.0": (0, "CUSTOM_GPU_A100", 1, [MANAGED_TRAIT]),
        "0000:81:00.0": (1, "CUSTOM_PCI_8086_154C", 4, [MANAGED_TRAIT, "CUSTOM_PHYSNET_A"]),
        "0000:d8:00.0": (-1, "CUSTOM_GPU_A100", 1, [MANAGED_TRAIT]),
    }


def test_pf_by_product_is_whole_and_by_address_offers_its_vfs(tmp_path: Path) -> None:
    sys = devices_host(tmp_path)
    whole = providers_of(sys, ['{"vendor_id": "8086", "product_id": "1572"}'])
    assert whole == {"0000:81:00.0": (1, "CUSTOM_PCI_8086_1572", 1, [MANAGED_TRAIT])}
    by_address = providers_of(sys, ['{"address": "0000:81:00.0"}'])
    assert by_address == {"0000:81:00.0": (1, "CUSTOM_PCI_8086_154C", 4, [MANAGED_TRAIT])}
    by_glob = providers_of(sys, ['{"address": "*:3b:00.*"}', '{"address": "d8:00.0"}'])
    assert set(by_glob) == {"0000:3b:00.0", "0000:d8:00.0"}


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("{", id="not-json"),
        pytest.param('{"vendor_id": "xyz1"}', id="bad-id"),
        pytest.param('{"colour": "red"}', id="unknown-key"),
    ],
)
def test_bad_device_spec(line: str, tmp_path: Path) -> None:
    with pytest.raises(DeviceSpecError):
        parse_device_specs([line])
    host = discover(devices_host(tmp_path), small_page_kb=4)
    with pytest.raises(AgentConfigError):
        AgentSettings(hostname="cn1", disk_gb=1, pci_device_spec=[line]).policy_for(host)


def test_device_specs_from_nova_conf(tmp_path: Path) -> None:
    conf = tmp_path / "nova.conf"
    conf.write_text(f"[pci]\ndevice_spec = {VF_SPEC}\ndevice_spec = {GPU_SPEC}\n")
    assert device_specs_from_file(conf) == [VF_SPEC, GPU_SPEC]


def desired(sys: Path, hostname: str = "cn1") -> DesiredTree:
    host = discover(sys, small_page_kb=4)
    settings = AgentSettings(
        hostname=hostname, disk_gb=100, reserved_host_memory_mb=512, pci_device_spec=SPECS
    )
    return build(host, settings.policy_for(host))


def test_desired_tree_puts_devices_under_their_cells(tmp_path: Path) -> None:
    tree = desired(devices_host(tmp_path))
    devices = {p.name: p for p in tree.providers if p.path.startswith("PCI_")}
    assert {name: p.parent_path for name, p in devices.items()} == {
        "cn1_0000:18:00.0": "NUMA0",
        "cn1_0000:3b:00.0": "NUMA0",
        "cn1_0000:81:00.0": "NUMA1",
        "cn1_0000:d8:00.0": "",
    }
    assert tree.sockets == (0, 1)
    vf = devices["cn1_0000:81:00.0"].inventories["CUSTOM_PCI_8086_154C"]
    assert (vf.total, vf.max_unit) == (4, 4)


def test_reshape_topology_lists_each_cells_devices(tmp_path: Path) -> None:
    """The planner's topology document (a flat host asks for a reshape) names the devices of
    each cell, so the plan moves Nova's providers of them under their cells."""
    document = topology_document(desired(devices_host(tmp_path)))
    assert [c.get("devices", []) for c in document["cells"]] == [
        ["0000:18:00.0", "0000:3b:00.0"],
        ["0000:81:00.0"],
    ]
    parse_topology(document)  # the planner takes it


def tree_of(api: PlacementAPI, root_name: str) -> dict[str, dict[str, Any]]:
    root = api.get(f"/resource_providers?name={root_name}").json()["resource_providers"][0]
    members = api.get(f"/resource_providers?in_tree={root['uuid']}").json()["resource_providers"]
    names = {p["uuid"]: p["name"] for p in members}
    return {
        p["name"]: {
            "uuid": p["uuid"],
            "parent": names.get(p["parent_provider_uuid"]),
            "inventories": api.get(f"/resource_providers/{p['uuid']}/inventories").json()[
                "inventories"
            ],
        }
        for p in members
    }


def test_sync_reports_devices_idempotently(api: PlacementAPI, tmp_path: Path) -> None:
    client = PlacementClient(http=api.client)
    tree = desired(devices_host(tmp_path))
    first = sync(client, tree)
    assert first.changes
    stored = tree_of(api, "cn1")
    assert stored["cn1_0000:81:00.0"]["parent"] == "cn1_NUMA1"
    assert stored["cn1_0000:d8:00.0"]["parent"] == "cn1"
    assert stored["cn1_0000:81:00.0"]["inventories"]["CUSTOM_PCI_8086_154C"]["total"] == 4
    topology = api.get(f"/resource_providers/{stored['cn1']['uuid']}/numa_distances").json()
    assert topology["sockets"] == {"0": 0, "1": 1}
    second = sync(client, tree)
    assert second.changes == [] and second.writes == 0


def test_nova_device_provider_moves_under_its_cell_with_allocations(
    api: PlacementAPI, tmp_path: Path
) -> None:
    # what Nova's PCI in Placement made: cn1 / cn1_0000:81:00.0 with 2 VFs allocated
    root = api.post("/resource_providers", json={"name": "cn1"}).json()
    pf = api.post(
        "/resource_providers",
        json={"name": "cn1_0000:81:00.0", "parent_provider_uuid": root["uuid"]},
    ).json()
    api.put("/resource_classes/CUSTOM_PCI_8086_154C")
    api.put(
        f"/resource_providers/{pf['uuid']}/inventories",
        json={
            "resource_provider_generation": pf["generation"],
            "inventories": {"CUSTOM_PCI_8086_154C": {"total": 4, "max_unit": 4}},
        },
    )
    consumer = str(uuid.uuid4())
    put = api.put(
        f"/allocations/{consumer}",
        json={
            "allocations": {pf["uuid"]: {"resources": {"CUSTOM_PCI_8086_154C": 2}}},
            "consumer_generation": None,
            "project_id": "p",
            "user_id": "u",
            "consumer_type": "INSTANCE",
        },
    )
    assert put.status_code == 204, put.text
    report = sync(PlacementClient(http=api.client), desired(devices_host(tmp_path)))
    stored = tree_of(api, "cn1")
    assert stored["cn1_0000:81:00.0"]["uuid"] == pf["uuid"]
    assert stored["cn1_0000:81:00.0"]["parent"] == "cn1_NUMA1"
    assert any("re-parented" in change for change in report.changes)
    allocations = api.get(f"/allocations/{consumer}").json()["allocations"]
    assert allocations == {
        pf["uuid"]: {
            "generation": allocations[pf["uuid"]]["generation"],
            "resources": {"CUSTOM_PCI_8086_154C": 2},
        }
    }


def test_real_sysfs() -> None:
    """This machine's own sysfs: every device read, and a spec matching everything gives
    providers under a cell of the host or under the compute node."""
    if not Path("/sys/bus/pci/devices").is_dir():
        pytest.skip("no PCI bus in this machine's sysfs")
    devices = discover_pci("/sys")
    assert all(len(d.vendor_id) == 4 and len(d.product_id) == 4 for d in devices)
    host = discover("/sys")
    settings = AgentSettings(hostname="real", disk_gb=1, pci_device_spec=['{"vendor_id": "*"}'])
    tree = build(host, settings.policy_for(host))
    cells = {f"NUMA{c.id}" for c in host.cells}
    device_providers = [p for p in tree.providers if p.path.startswith("PCI_")]
    assert all(p.parent_path in cells | {""} for p in device_providers)
    whole = {d.address for d in devices if d.physfn is None}
    assert {p.path.removeprefix("PCI_") for p in device_providers} <= whole
