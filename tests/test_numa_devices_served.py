"""Issue 22 end to end, through a real served process: ``placement-numa serve`` with a
placement.conf holding ``[pci] alias``, hosts built with Placement's own REST calls (providers,
inventories, traits, resource classes) plus the distances/sockets extension, then candidates,
ranking and claims checked for every device affinity policy and every ``topology_policy``.

Each host is built the way a deployment tool would, on the Nova spec's model (memory on a
page-size child of each cell)::

    <name>                        compute node (DISK_GB)   [+ devices with no NUMA node]
    +-- <name>_NUMA0  PCPU 4, VCPU 4, HW_NUMA_ROOT            [+ devices of cell 0]
    |   +-- <name>_NUMA0_4K  MEMORY_MB 8192, MEMORY_PAGE_SIZE_SMALL, CUSTOM_MEMORY_PAGE_SIZE_4
    +-- <name>_NUMA1  ...                                     [+ devices of cell 1]
    ...            distances 10 local / 21 remote (or given); sockets given or unknown

Unlike ``test_numa_devices`` (in-process app, the demo's loader) nothing here shares code with
the service: the hosts, the configuration and the answers all cross a socket.
"""

from __future__ import annotations

import random
import shutil
import sys
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.servers import free_port, running, service_env, unexpected_tracebacks

NIC = "CUSTOM_PCI_8086_1572"  # the class Nova's "PCI in Placement" gives 8086:1572
GPU = "CUSTOM_GPU_A100"
CONF = """
[pci]
alias = {"name": "nic", "vendor_id": "8086", "product_id": "1572"}
alias = {"name": "strict", "vendor_id": "8086", "product_id": "1572", "numa_policy": "required"}
alias = {"name": "prefer", "vendor_id": "8086", "product_id": "1572", "numa_policy": "preferred"}
alias = {"name": "sock", "vendor_id": "8086", "product_id": "1572", "numa_policy": "socket"}
alias = {"name": "gpu", "resource_class": "GPU_A100", "traits": "nvlink"}
"""
SMALL_PAGES = ("MEMORY_PAGE_SIZE_SMALL", "CUSTOM_MEMORY_PAGE_SIZE_4")
HEADERS = {
    "x-auth-token": "admin",
    "openstack-api-version": "placement 1.39",
    "content-type": "application/json",
}
PORTS = list(range(19330, 19340))
COMMAND = shutil.which("placement-numa", path=str(Path(sys.executable).parent)) or "placement-numa"
Device = tuple[str, int | None, int]  # (resource class, cell or None for the root, total)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """``placement-numa serve`` on SQLite with ``CONF`` as its placement.conf."""
    where = tmp_path_factory.mktemp("served-devices")
    conf = where / "placement.conf"
    conf.write_text(CONF)
    port = free_port(random.sample(PORTS, len(PORTS)))
    env = service_env(PLACEMENT_NUMA_DATABASE_URL=f"sqlite:///{where / 'placement.sqlite'}")
    argv = [COMMAND, "serve", "--port", str(port), "--config-file", str(conf)]
    with running(argv, port, where / "serve.log", env=env, cwd=where) as served:
        with httpx.Client(base_url=served.base_url, headers=HEADERS, timeout=60) as client:
            yield client
        assert unexpected_tracebacks(served.log_text()) == []


@dataclass
class Fleet:
    """The hosts one test built (deleted afterwards, with the consumers it made)."""

    client: httpx.Client
    providers: list[str]
    consumers: list[str]

    def call(self, method: str, path: str, body: Any = None, ok: tuple[int, ...] = ()) -> Any:
        response = self.client.request(method, path, json=body)
        assert response.status_code in (ok or (200, 201, 204)), response.text
        return response.json() if response.content else None

    def provider(self, name: str, parent: str | None = None) -> str:
        body: dict[str, Any] = {"name": name, "uuid": str(uuid.uuid4())}
        if parent is not None:
            body["parent_provider_uuid"] = parent
        created = self.call("POST", "/resource_providers", body)
        self.providers.append(created["uuid"])
        return str(created["uuid"])

    def stock(self, rp: str, inventories: dict[str, Any], traits: tuple[str, ...] = ()) -> None:
        generation = self.call("GET", f"/resource_providers/{rp}")["generation"]
        for rc in inventories:
            if rc.startswith("CUSTOM_"):
                self.call("PUT", f"/resource_classes/{rc}")
        done = self.call(
            "PUT",
            f"/resource_providers/{rp}/inventories",
            {"resource_provider_generation": generation, "inventories": inventories},
        )
        if traits:
            for trait in traits:
                if trait.startswith("CUSTOM_"):
                    self.call("PUT", f"/traits/{trait}")
            self.call(
                "PUT",
                f"/resource_providers/{rp}/traits",
                {
                    "resource_provider_generation": done["resource_provider_generation"],
                    "traits": list(traits),
                },
            )

    def host(
        self,
        name: str,
        *devices: Device,
        cells: int = 2,
        sockets: dict[int, int] | None = None,
        distances: dict[int, dict[int, int]] | None = None,
        busy: dict[int, int] | None = None,
    ) -> dict[str, Any]:
        """A compute node with ``cells`` cells (4 PCPU, 4 VCPU, 8 GiB each), ``devices``
        ((class, cell or None, total)), sockets per cell (``None``: never given) and ``busy``
        PCPUs already taken per cell. Returns ``{"root", "cells": {id: uuid}, "devices":
        [uuid]}``."""
        root = self.provider(name)
        self.stock(root, {"DISK_GB": {"total": 500}})
        cell_uuids: dict[int, str] = {}
        for cell in range(cells):
            rp = self.provider(f"{name}_NUMA{cell}", root)
            self.stock(
                rp,
                {"PCPU": {"total": 4, "max_unit": 4}, "VCPU": {"total": 4, "max_unit": 4}},
                ("HW_NUMA_ROOT",),
            )
            cell_uuids[cell] = rp
            pages = self.provider(f"{name}_NUMA{cell}_4K", rp)
            self.stock(pages, {"MEMORY_MB": {"total": 8192}}, SMALL_PAGES)
        device_uuids = []
        for n, (rc, at, total) in enumerate(devices):
            parent = root if at is None else cell_uuids[at]
            rp = self.provider(f"{name}_pci_{n}", parent)
            traits = ("CUSTOM_NVLINK",) if rc == GPU else ()
            self.stock(rp, {rc: {"total": total, "max_unit": total}}, traits)
            device_uuids.append(rp)
        matrix = distances or {
            a: {b: 10 if a == b else 21 for b in range(cells)} for a in range(cells)
        }
        body: dict[str, Any] = {
            "generation": None,
            "distances": {str(a): {str(b): d for b, d in row.items()} for a, row in matrix.items()},
        }
        if sockets is not None:
            body["sockets"] = {str(c): s for c, s in sockets.items()}
        self.call("PUT", f"/resource_providers/{root}/numa_distances", body)
        for cell, pcpus in (busy or {}).items():
            self.allocate({cell_uuids[cell]: {"PCPU": pcpus}})
        return {"root": root, "cells": cell_uuids, "devices": device_uuids}

    def allocate(self, allocations: dict[str, dict[str, int]]) -> str:
        consumer = str(uuid.uuid4())
        self.call(
            "PUT",
            f"/allocations/{consumer}",
            {
                "allocations": {rp: {"resources": r} for rp, r in allocations.items()},
                "consumer_generation": None,
                "project_id": "p",
                "user_id": "u",
                "consumer_type": "INSTANCE",
            },
        )
        self.consumers.append(consumer)
        return consumer

    def candidates(self, specs: Mapping[str, str | None], **options: Any) -> list[dict[str, Any]]:
        """``POST /allocation_candidates`` for a flavor (2 dedicated CPUs, 2 GiB unless
        given) and ``options``; the allocation requests."""
        response = self.client.post("/allocation_candidates", json=self.body(specs, **options))
        assert response.status_code == 200, response.text
        return list(response.json()["allocation_requests"])

    def body(self, specs: Mapping[str, str | None], **options: Any) -> dict[str, Any]:
        extra = {"hw:cpu_policy": "dedicated", **specs}
        return {
            "flavor": {
                "vcpus": options.pop("vcpus", 2),
                "memory_mb": options.pop("memory_mb", 2048),
                "extra_specs": {k: v for k, v in extra.items() if v is not None},
            },
            **options,
        }

    def claim(self, specs: Mapping[str, str | None], **options: Any) -> httpx.Response:
        consumer = str(uuid.uuid4())
        body = {
            **self.body(specs, **options),
            "consumer_uuid": consumer,
            "consumer_generation": None,
            "project_id": "p",
            "user_id": "u",
        }
        response = self.client.post("/allocation_candidates/claim", json=body)
        if response.status_code == 200:
            self.consumers.append(consumer)
        return response

    def usages(self, rp: str) -> dict[str, int]:
        return dict(self.call("GET", f"/resource_providers/{rp}/usages")["usages"])


@pytest.fixture
def fleet(service: httpx.Client) -> Iterator[Fleet]:
    built = Fleet(service, [], [])
    try:
        yield built
    finally:
        for consumer in built.consumers:
            built.call("DELETE", f"/allocations/{consumer}", ok=(204, 404))
        for rp in reversed(built.providers):
            built.call("DELETE", f"/resource_providers/{rp}", ok=(204, 404))


def placed(found: list[dict[str, Any]]) -> list[tuple[str, list[int], list[int | None]]]:
    """``(host, cells, device cells)`` per candidate, in answer order."""
    return [
        (r["numa"]["host"], r["numa"]["cells"], [d["cell"] for d in r["numa"]["devices"]])
        for r in found
    ]


def cpus_per_cell(candidate: dict[str, Any], host: dict[str, Any]) -> dict[int, int]:
    """PCPU/VCPU taken on each cell of ``host`` by ``candidate``."""
    taken = {}
    for cell, rp in host["cells"].items():
        resources = candidate["allocations"].get(rp, {}).get("resources", {})
        if resources.get("PCPU", 0) + resources.get("VCPU", 0):
            taken[cell] = resources.get("PCPU", 0) + resources.get("VCPU", 0)
    return taken


# --- the affinity policies (flavor, image, alias) ---------------------------------------------


def test_required_device_from_a_guest_cell_only(fleet: Fleet) -> None:
    a = fleet.host("a", (NIC, 1, 8), (NIC, None, 8))
    found = fleet.candidates({"pci_passthrough:alias": "strict:1"})
    assert placed(found) == [("a", [1], [1])]
    (device,) = found[0]["numa"]["devices"]
    assert device == {"resource_class": NIC, "provider": a["devices"][0], "cell": 1}
    assert found[0]["allocations"][a["devices"][0]] == {"resources": {NIC: 1}}
    assert found[0]["numa"]["aligned"] is True
    # the flavor's policy wins over the alias's: required refuses the NIC under the root too
    flavor = fleet.candidates(
        {"pci_passthrough:alias": "prefer:1", "hw:pci_numa_affinity_policy": "required"}
    )
    assert placed(flavor) == [("a", [1], [1])]


def test_required_refuses_a_device_without_numa_node(fleet: Fleet) -> None:
    fleet.host("a", (NIC, None, 8))
    assert fleet.candidates({"pci_passthrough:alias": "strict:1"}) == []


def test_legacy_is_required_on_cells_and_anywhere_without(fleet: Fleet) -> None:
    a = fleet.host("a", (NIC, None, 8))
    found = fleet.candidates({"pci_passthrough:alias": "nic:1"})
    assert {h for h, _, _ in placed(found)} == {"a"}
    assert all(d == [None] for _, _, d in placed(found))
    device = found[0]["numa"]["devices"][0]
    assert device == {"resource_class": NIC, "provider": a["devices"][0], "cell": None}
    assert found[0]["numa"]["aligned"] is False
    # a NIC with a NUMA node: only that cell's candidates (cell 0 is the busy one here)
    fleet.host("b", (NIC, 1, 8))
    on_b = [p for p in placed(fleet.candidates({"pci_passthrough:alias": "nic:1"})) if p[0] == "b"]
    assert on_b == [("b", [1], [1])]


def test_preferred_unaligned_ranks_after_every_aligned(fleet: Fleet) -> None:
    # host a: its NIC's cell 1 is nearly full, so a fits only unaligned; host b fits aligned
    fleet.host("a", (NIC, 1, 8), busy={1: 3})
    fleet.host("b", (NIC, 0, 8))
    specs = {"pci_passthrough:alias": "prefer:1"}
    strict = fleet.candidates(specs, diversify=False)
    assert placed(strict) == [("b", [0], [0]), ("a", [0], [1]), ("b", [1], [0])]
    flags = [r["numa"]["aligned"] for r in strict]
    assert flags == sorted(flags, reverse=True)  # no unaligned before an aligned one
    diverse = fleet.candidates(specs)
    assert len(diverse) == 3
    for name in ("a", "b"):
        mine = [r["numa"]["aligned"] for r in diverse if r["numa"]["host"] == name]
        assert mine == sorted(mine, reverse=True)  # each host's own list: aligned first
    # the image says the same as the flavor's extra spec; they may not disagree
    image = fleet.candidates(
        {"pci_passthrough:alias": "nic:1"}, image={"hw_pci_numa_affinity_policy": "preferred"}
    )
    assert len(image) == 3
    clash = fleet.client.post(
        "/allocation_candidates",
        json=fleet.body(
            {"pci_passthrough:alias": "nic:1", "hw:pci_numa_affinity_policy": "preferred"},
            image={"hw_pci_numa_affinity_policy": "required"},
        ),
    )
    assert clash.status_code == 400
    assert clash.json()["errors"][0]["code"] == "placement_numa.flavor.invalid"


def test_average_distance_counts_device_cells_width_does_not(fleet: Fleet) -> None:
    distances = {0: {0: 10, 1: 12, 2: 32}, 1: {0: 12, 1: 10, 2: 32}, 2: {0: 32, 1: 32, 2: 10}}
    fleet.host("a", (NIC, 2, 8), cells=3, distances=distances, busy={2: 4})
    found = fleet.candidates({"pci_passthrough:alias": "prefer:1"}, diversify=False)
    assert [(c, d) for _, c, d in placed(found)] == [([0], [2]), ([1], [2])]
    numa = found[0]["numa"]
    assert numa["width"] == 1 and numa["cells"] == [0]
    assert numa["average_distance"] == (10 + 32 + 32 + 10) / 4  # cells {0, 2}, n^2 pairs
    assert numa["aligned"] is False


def test_socket_policy(fleet: Fleet) -> None:
    specs = {"pci_passthrough:alias": "sock:1"}
    fleet.host("same", (NIC, 1, 8), sockets={0: 0, 1: 0}, busy={1: 3})
    fleet.host("split", (NIC, 1, 8), sockets={0: 0, 1: 1}, busy={1: 3})
    fleet.host("unknown", (NIC, 1, 8), busy={1: 3})  # sockets never given: as required
    assert placed(fleet.candidates(specs)) == [("same", [0], [1])]
    # where the guest's own cell holds the device, socket admits it whatever the sockets
    fleet.host("free", (NIC, 1, 8))
    assert ("free", [1], [1]) in placed(fleet.candidates(specs))
    # a device without a NUMA node is on no socket
    fleet.host("rootnic", (NIC, None, 8))
    assert "rootnic" not in {h for h, _, _ in placed(fleet.candidates(specs))}


def test_socket_unknown_behaves_as_required(fleet: Fleet) -> None:
    fleet.host("unknown", (NIC, 1, 8))
    socket = placed(fleet.candidates({"pci_passthrough:alias": "sock:1"}))
    required = placed(fleet.candidates({"pci_passthrough:alias": "strict:1"}))
    assert socket == required == [("unknown", [1], [1])]


def test_devices_from_any_guest_cell(fleet: Fleet) -> None:
    fleet.host("a", (NIC, 0, 1), (NIC, 1, 1), cells=4)
    two = {"hw:numa_nodes": "2", "pci_passthrough:alias": "strict:2"}
    found = fleet.candidates(two, vcpus=4, memory_mb=4096)
    assert placed(found) == [("a", [0, 1], [0, 1])]
    # one device, two guest cells: the device on either of them
    fleet.host("b", (NIC, 3, 8), cells=4)
    one = {"hw:numa_nodes": "2", "pci_passthrough:alias": "strict:1"}
    on_b = [p for p in placed(fleet.candidates(one, vcpus=4, memory_mb=4096)) if p[0] == "b"]
    assert on_b and all(3 in cells and devices == [3] for _, cells, devices in on_b)
    assert len(on_b) == 3  # cell 3 with each of cells 0, 1, 2


def test_guest_with_devices_and_no_numa_nodes_is_one_cell(fleet: Fleet) -> None:
    a = fleet.host("a", (NIC, 0, 8))
    found = fleet.candidates({"hw:cpu_policy": None, "pci_passthrough:alias": "nic:1"})
    assert placed(found) == [("a", [0], [0])]
    assert found[0]["allocations"][a["cells"][0]] == {"resources": {"VCPU": 2}}


def test_a_flavor_too_wide_for_one_cell_without_numa_nodes(fleet: Fleet) -> None:
    fleet.host("a", (NIC, 0, 8))
    # 6 dedicated CPUs, cells of 4: one guest cell cannot fit (Nova's semantics, no policy)
    assert fleet.candidates({"pci_passthrough:alias": "nic:1"}, vcpus=6) == []


# --- topology_policy --------------------------------------------------------------------------


def test_single_numa_node(fleet: Fleet) -> None:
    fleet.host("a", (NIC, 1, 8), (GPU, None, 1))
    policy = {"topology_policy": "single-numa-node"}
    assert placed(fleet.candidates({"pci_passthrough:alias": "prefer:1"}, **policy)) == [
        ("a", [1], [1])
    ]
    assert fleet.candidates({"pci_passthrough:alias": "gpu:1"}, **policy) == []
    two = {"pci_passthrough:alias": "nic:1", "hw:numa_nodes": "2"}
    assert fleet.candidates(two, vcpus=4, **policy) == []
    assert fleet.candidates({"pci_passthrough:alias": "nic:1"}, vcpus=6, **policy) == []


def test_restricted_narrowest_aligned_placement(fleet: Fleet) -> None:
    fleet.host("a", (NIC, 1, 8), cells=4)
    policy = {"topology_policy": "restricted"}
    # 2 CPUs fit cell 1 with its NIC: one cell
    assert placed(fleet.candidates({"pci_passthrough:alias": "prefer:1"}, **policy)) == [
        ("a", [1], [1])
    ]
    # 6 CPUs need two cells; the narrowest (2), never 3, and the NIC's cell among them
    wide = fleet.candidates({"pci_passthrough:alias": "nic:1"}, vcpus=6, **policy)
    assert wide and all(len(c) == 2 and 1 in c and d == [1] for _, c, d in placed(wide))
    assert all(r["numa"]["aligned"] for r in wide)
    # a device under the root is never aligned
    fleet.host("b", (GPU, None, 1))
    assert fleet.candidates({"pci_passthrough:alias": "gpu:1"}, **policy) == []


def test_restricted_narrowest_width_any_cpu_split(fleet: Fleet) -> None:
    # cell 1 holds the NIC but only 2 free PCPUs: 6 CPUs fit cells {0, 1} as 4 + 2 (the
    # Topology Manager's narrowest mask asks only that they fit), never 3 cells
    a = fleet.host("a", (NIC, 1, 8), cells=4, busy={1: 2})
    found = fleet.candidates(
        {"pci_passthrough:alias": "nic:1"}, vcpus=6, topology_policy="restricted"
    )
    assert found and all(len(c) == 2 and 1 in c and d == [1] for _, c, d in placed(found))
    assert sorted(cpus_per_cell(found[0], a).values()) == [2, 4]
    # KEP-2902 (distribute_cpus_across_numa) splits evenly: 3 + 3 does not fit cell 1, so
    # the narrowest even split is 2 + 2 + 2 over three cells, cell 1 among them
    even = fleet.candidates(
        {"pci_passthrough:alias": "nic:1"},
        vcpus=6,
        distribute_cpus_across_numa=True,
        topology_policy="restricted",
    )
    assert even and all(len(c) == 3 and 1 in c for _, c, _ in placed(even))
    assert set(cpus_per_cell(even[0], a).values()) == {2}
    # best-effort: the same 4 + 2 placements among every other
    best = fleet.candidates(
        {"pci_passthrough:alias": "nic:1"}, vcpus=6, topology_policy="best-effort"
    )
    assert placed(best)[0][1] in ([0, 1], [1, 2], [1, 3]) and best[0]["numa"]["aligned"]


def test_restricted_even_split_with_distribute(fleet: Fleet) -> None:
    b = fleet.host("b", (NIC, 1, 8))
    found = fleet.candidates(
        {"pci_passthrough:alias": "nic:1"},
        vcpus=6,
        distribute_cpus_across_numa=True,
        topology_policy="restricted",
    )
    assert placed(found) == [("b", [0, 1], [1])]
    assert cpus_per_cell(found[0], b) == {0: 3, 1: 3}


def test_best_effort_every_placement_aligned_and_narrowest_first(fleet: Fleet) -> None:
    fleet.host("a", (NIC, 1, 8))
    found = fleet.candidates(
        {"pci_passthrough:alias": "strict:1"}, topology_policy="best-effort", diversify=False
    )
    assert placed(found) == [("a", [1], [1]), ("a", [0, 1], [1]), ("a", [0], [1])]
    assert [r["numa"]["aligned"] for r in found] == [True, True, False]
    # a device under the root is allowed (preferred) but never aligned
    fleet.host("b", (GPU, None, 1))
    gpu = fleet.candidates({"pci_passthrough:alias": "gpu:1"}, topology_policy="best-effort")
    assert gpu and all(
        d == [None] and r["numa"]["aligned"] is False
        for r, (_, _, d) in zip(gpu, placed(gpu), strict=True)
    )


def test_none_means_no_alignment(fleet: Fleet) -> None:
    fleet.host("a", (NIC, 1, 8), busy={1: 4})
    found = fleet.candidates({"pci_passthrough:alias": "strict:1"}, topology_policy="none")
    assert placed(found) == [("a", [0], [1])]
    assert found[0]["numa"]["aligned"] is False


# --- claims, one per policy -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("alias", "policy", "cell"),
    [
        pytest.param("strict", None, 1, id="required"),
        pytest.param("nic", None, 1, id="legacy"),
        pytest.param("prefer", None, 1, id="preferred"),
        pytest.param("sock", None, 1, id="socket"),
        pytest.param("nic", "none", 1, id="topology-none"),
        pytest.param("nic", "best-effort", 1, id="topology-best-effort"),
        pytest.param("nic", "restricted", 1, id="topology-restricted"),
        pytest.param("nic", "single-numa-node", 1, id="topology-single-numa-node"),
    ],
)
def test_claim_takes_the_aligned_device(
    fleet: Fleet, alias: str, policy: str | None, cell: int
) -> None:
    a = fleet.host("a", (NIC, 1, 1), sockets={0: 0, 1: 1})
    options = {} if policy is None else {"topology_policy": policy}
    claimed = fleet.claim({"pci_passthrough:alias": f"{alias}:1"}, **options)
    assert claimed.status_code == 200, claimed.text
    numa = claimed.json()["allocation_request"]["numa"]
    assert numa["cells"] == [cell] and [d["cell"] for d in numa["devices"]] == [cell]
    assert fleet.usages(a["devices"][0])[NIC] == 1
    assert fleet.usages(a["cells"][cell])["PCPU"] == 2
    # the only NIC is taken: the next claim finds no room
    again = fleet.claim({"pci_passthrough:alias": f"{alias}:1"}, **options)
    assert again.status_code == 409
    assert again.json()["errors"][0]["code"] == "placement_numa.claim.no_room"


def test_claim_preferred_falls_back_to_an_unaligned_device(fleet: Fleet) -> None:
    a = fleet.host("a", (NIC, 1, 1), busy={1: 4})
    claimed = fleet.claim({"pci_passthrough:alias": "prefer:1"})
    assert claimed.status_code == 200, claimed.text
    numa = claimed.json()["allocation_request"]["numa"]
    assert numa["cells"] == [0] and numa["aligned"] is False
    assert fleet.usages(a["devices"][0])[NIC] == 1
    required = fleet.claim({"pci_passthrough:alias": "strict:1"})
    assert required.status_code == 409


# --- configuration and errors ----------------------------------------------------------------


def test_alias_traits_and_unknown_alias(fleet: Fleet) -> None:
    a = fleet.host("a", (GPU, 0, 1))
    found = fleet.candidates({"pci_passthrough:alias": "gpu:1"})
    assert placed(found) == [("a", [0], [0])]
    assert found[0]["allocations"][a["devices"][0]] == {"resources": {GPU: 1}}
    assert "required_PCI1=CUSTOM_NVLINK" in found[0]["numa"]["explain"]
    unknown = fleet.client.post(
        "/allocation_candidates", json=fleet.body({"pci_passthrough:alias": "fpga:1"})
    )
    assert unknown.status_code == 400
    error = unknown.json()["errors"][0]
    assert error["code"] == "placement_numa.flavor.invalid" and "fpga" in error["detail"]


def test_explain_shows_the_device_groups_of_a_searched_constraint(fleet: Fleet) -> None:
    fleet.host("a", (NIC, 0, 1), (NIC, 1, 1))
    found = fleet.candidates(
        {"hw:numa_nodes": "2", "pci_passthrough:alias": "nic:2"}, vcpus=4, memory_mb=4096
    )
    query, _, constraints = found[0]["numa"]["explain"].partition("#")
    assert f"resources_PCI1={NIC}:1" in query and f"resources_PCI2={NIC}:1" in query
    assert constraints.split("&") == [
        "device_affinity=_PCI1:legacy,_PCI2:legacy",
        "guest_cells=_NUMA1,_NUMA2",
        "distinct_cells=_NUMA1,_NUMA2",
        "memory=free_pages",
    ]
    # the query part still runs as a GET (the fragment is the client's)
    got = fleet.client.get("/allocation_candidates?" + found[0]["numa"]["explain"])
    assert got.status_code == 200 and got.json()["allocation_requests"]
    # a required device of a one-cell guest is in the query itself: no device constraint
    one = fleet.candidates({"pci_passthrough:alias": "strict:1"})
    assert "_PCI1" in one[0]["numa"]["explain"].split("same_subtree=")[1]
    assert "device_affinity" not in one[0]["numa"]["explain"]
