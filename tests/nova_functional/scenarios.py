"""Scenarios of issue 28 in Nova 34's functional framework, patched Nova, live placement-numa.

Run in the Nova virtualenv through ``run.py`` (``tests/test_nova_functional.py`` drives it). Each
test starts fake libvirt hosts with NUMA topologies (``fakelibvirt.HostInfo``), turns
``[compute] enable_numa_reporting_to_placement`` on, and after every operation checks, for every
guest, that the NUMA cells of its Placement allocation are the host cells its
``instance.numa_topology`` runs on, and that every cell provider's usage equals the sum of its
guests' allocations (``assertCellsAligned``).
"""

from __future__ import annotations

import collections
import json
import os
import re
import time
from unittest import mock

from nova import context as nova_context
from nova import objects
from nova.tests.fixtures import libvirt as fakelibvirt
from nova.tests.functional.libvirt import base

# placement-numa's rank weigher (integrations/nova, installed in the Nova virtualenv)
WEIGHER = "placement_numa_nova.weights.NUMARankWeigher"
CELL_RE = re.compile(r"^(?P<host>.+)_NUMA(?P<cell>\d+)(_PAGE_(?P<page>\d+)KB)?$")


class NumaPlacementBase(base.ServersTestBase):
    """Fake libvirt hosts reporting NUMA trees to a live placement-numa."""

    ADDITIONAL_FILTERS = ["NUMATopologyFilter"]

    def setUp(self) -> None:
        super().setUp()
        self.ctxt = nova_context.get_admin_context()
        self.flags(enable_numa_reporting_to_placement=True, group="compute")

    # --- Placement views -------------------------------------------------------------------

    def providers(self) -> dict[str, dict]:
        body = self.placement.get("/resource_providers", version="1.14").body
        return {rp["uuid"]: rp for rp in body["resource_providers"]}

    def tree(self, hostname: str) -> dict[str, dict]:
        """Provider name -> {inventories, traits, parent name} of ``hostname``'s tree."""
        providers = self.providers()
        root = next(rp for rp in providers.values() if rp["name"] == hostname)
        shape = {}
        for uuid, rp in providers.items():
            if rp["root_provider_uuid"] != root["uuid"]:
                continue
            inventories = self.placement.get(
                f"/resource_providers/{uuid}/inventories", version="1.14"
            ).body["inventories"]
            traits = self.placement.get(f"/resource_providers/{uuid}/traits", version="1.14").body[
                "traits"
            ]
            parent = providers.get(rp["parent_provider_uuid"] or "", {}).get("name")
            shape[rp["name"]] = {
                "inventories": {rc: inv["total"] for rc, inv in inventories.items()},
                "traits": set(traits),
                "parent": parent,
            }
        return shape

    def allocation_cells(self, server_id: str) -> dict[str, set[int]]:
        """Host name -> the NUMA cell ids of the guest's Placement allocation."""
        providers = self.providers()
        allocations = self.placement.get(f"/allocations/{server_id}", version="1.28").body
        cells: dict[str, set[int]] = collections.defaultdict(set)
        for uuid in allocations["allocations"]:
            match = CELL_RE.match(providers[uuid]["name"])
            if match:
                cells[match["host"]].add(int(match["cell"]))
        return cells

    def assertCellsAligned(self) -> None:  # noqa: N802 (testtools naming)
        """Every guest's allocation cells are its instance.numa_topology cells; every NUMA
        provider's usage is the sum of its consumers' allocations."""
        instances = objects.InstanceList.get_by_filters(
            self.ctxt, {"deleted": False}, expected_attrs=["numa_topology"]
        )
        for inst in instances:
            if inst.deleted or inst.vm_state in ("error", "shelved_offloaded"):
                continue
            if not inst.numa_topology:
                continue  # a guest without NUMA topology may use any cells
            running = {cell.id for cell in inst.numa_topology.cells}
            self.assertEqual(
                {inst.node: running},
                dict(self.allocation_cells(inst.uuid)),
                f"instance {inst.uuid} on {inst.node}: allocation cells vs numa_topology",
            )
        providers = self.providers()
        for uuid, rp in providers.items():
            if not CELL_RE.match(rp["name"]):
                continue
            usages = self.placement.get(f"/resource_providers/{uuid}/usages", version="1.14").body[
                "usages"
            ]
            consumers = self.placement.get(
                f"/resource_providers/{uuid}/allocations", version="1.14"
            ).body["allocations"]
            summed: dict[str, int] = collections.Counter()
            for alloc in consumers.values():
                summed.update(alloc["resources"])
            self.assertEqual(
                {rc: n for rc, n in usages.items() if n},
                dict(summed),
                f"usage of {rp['name']}",
            )

    def server_cells(self, server_id: str) -> set[int]:
        inst = objects.Instance.get_by_uuid(self.ctxt, server_id)
        return {cell.id for cell in inst.numa_topology.cells}

    # --- hosts -----------------------------------------------------------------------------

    def start_numa_compute(
        self,
        hostname: str,
        cells: int = 2,
        cores: int = 4,
        huge_pages: int = 0,
        pci_info: fakelibvirt.HostPCIDevicesInfo | None = None,
    ) -> None:
        """A host of ``cells`` NUMA cells, ``cores`` cores each (no SMT), 16 GiB per cell
        (``kB_mem`` spread), with ``huge_pages`` 2 MiB pages per cell and ``pci_info``'s
        devices."""
        host_info = fakelibvirt.HostInfo(
            cpu_nodes=cells, cpu_sockets=1, cpu_cores=cores, cpu_threads=1, kB_mem=16777216
        )
        if huge_pages:
            for cell in host_info.numa_topology.cells:
                small = (host_info.kB_mem // cells - 2048 * huge_pages) // 4
                cell.mempages = fakelibvirt.create_mempages([(4, small), (2048, huge_pages)])
        self.start_compute(host_info=host_info, hostname=hostname, pci_info=pci_info)


class TreeTest(NumaPlacementBase):
    """Patch 1: the libvirt driver reports the spec's tree."""

    def test_tree_shape(self) -> None:
        self.flags(cpu_dedicated_set="0-3", cpu_shared_set="4-7", group="compute")
        self.start_numa_compute("compute1", cells=2, cores=4, huge_pages=512)
        tree = self.tree("compute1")
        root = tree["compute1"]
        self.assertNotIn("VCPU", root["inventories"])
        self.assertNotIn("MEMORY_MB", root["inventories"])
        self.assertIn("DISK_GB", root["inventories"])
        self.assertNotIn("HW_NON_NUMA", root["traits"])
        cells = {name for name in tree if re.match(r"^compute1_NUMA\d+$", name)}
        self.assertEqual({"compute1_NUMA0", "compute1_NUMA1"}, cells)
        for name in cells:
            self.assertEqual("compute1", tree[name]["parent"])
            self.assertIn("HW_NUMA_ROOT", tree[name]["traits"])
        self.assertEqual({"PCPU": 4}, tree["compute1_NUMA0"]["inventories"])
        self.assertEqual({"VCPU": 4}, tree["compute1_NUMA1"]["inventories"])
        small = tree["compute1_NUMA0_PAGE_4KB"]
        self.assertEqual("compute1_NUMA0", small["parent"])
        self.assertEqual({"MEMORY_PAGE_SIZE_SMALL", "CUSTOM_MEMORY_PAGE_SIZE_4"}, small["traits"])
        self.assertEqual({"MEMORY_MB": 8192 - 1024}, small["inventories"])
        large = tree["compute1_NUMA1_PAGE_2048KB"]
        self.assertEqual(
            {"MEMORY_PAGE_SIZE_LARGE", "CUSTOM_MEMORY_PAGE_SIZE_2048"}, large["traits"]
        )
        self.assertEqual({"MEMORY_MB": 1024}, large["inventories"])

    def test_non_numa_trait(self) -> None:
        self.flags(enable_numa_reporting_to_placement=False, group="compute")
        self.start_numa_compute("compute1")
        tree = self.tree("compute1")
        self.assertEqual({"compute1"}, set(tree))
        self.assertIn("HW_NON_NUMA", tree["compute1"]["traits"])
        self.assertIn("VCPU", tree["compute1"]["inventories"])


class BootTest(NumaPlacementBase):
    """Boots of pinned, huge-page and two-cell guests land where Placement allocated."""

    def test_boot_two_cells(self) -> None:
        self.start_numa_compute("compute1", cells=2, cores=4)
        flavor = self._create_flavor(vcpu=4, memory_mb=4096, extra_spec={"hw:numa_nodes": "2"})
        server = self._create_server(flavor_id=flavor)
        self.assertEqual({0, 1}, self.server_cells(server["id"]))
        self.assertCellsAligned()

    def test_boot_pinned(self) -> None:
        self.flags(cpu_dedicated_set="0-7", cpu_shared_set=None, group="compute")
        self.start_numa_compute("compute1", cells=2, cores=4)
        three = self._create_flavor(
            vcpu=3, memory_mb=1024, extra_spec={"hw:cpu_policy": "dedicated"}
        )
        four = self._create_flavor(
            vcpu=4, memory_mb=1024, extra_spec={"hw:cpu_policy": "dedicated"}
        )
        first = self._create_server(flavor_id=three)
        self.assertCellsAligned()
        second = self._create_server(flavor_id=four)
        self.assertCellsAligned()
        self.assertEqual(1, len(self.server_cells(first["id"])))
        self.assertEqual(1, len(self.server_cells(second["id"])))
        self.assertNotEqual(self.server_cells(first["id"]), self.server_cells(second["id"]))

    def test_boot_pinned_two_cells(self) -> None:
        self.flags(cpu_dedicated_set="0-7", cpu_shared_set=None, group="compute")
        self.start_numa_compute("compute1", cells=2, cores=4)
        flavor = self._create_flavor(
            vcpu=6, memory_mb=2048, extra_spec={"hw:cpu_policy": "dedicated", "hw:numa_nodes": "2"}
        )
        server = self._create_server(flavor_id=flavor)
        self.assertEqual({0, 1}, self.server_cells(server["id"]))
        self.assertCellsAligned()

    def test_boot_huge_pages(self) -> None:
        self.start_numa_compute("compute1", cells=2, cores=4, huge_pages=512)
        flavor = self._create_flavor(
            vcpu=2, memory_mb=1024, extra_spec={"hw:mem_page_size": "large"}
        )
        servers = [self._create_server(flavor_id=flavor) for _ in range(2)]
        self.assertCellsAligned()
        for server in servers:
            allocations = self.placement.get(f"/allocations/{server['id']}", version="1.28").body
            names = {self.providers()[uuid]["name"] for uuid in allocations["allocations"]}
            self.assertTrue(any(name.endswith("_PAGE_2048KB") for name in names), names)
        # each cell has 1 GiB of 2 MiB pages: the two guests take one cell each
        self.assertNotEqual(
            self.server_cells(servers[0]["id"]), self.server_cells(servers[1]["id"])
        )
        third = self._create_server(flavor_id=flavor, expected_state="ERROR")
        self.assertIn("No valid host", third["fault"]["message"])


class MoveTest(NumaPlacementBase):
    """Resize, cold migration, evacuation, shelve/unshelve and delete of NUMA guests between two
    NUMA-reporting hosts; the alignment is checked after every step."""

    def setUp(self) -> None:
        super().setUp()
        self.flags(vif_plugging_timeout=0)
        # per cell: 3 dedicated CPUs and 1 shared
        self.flags(cpu_dedicated_set="0-2,4-6", cpu_shared_set="3,7", group="compute")
        self.start_numa_compute("compute1", cells=2, cores=4)
        self.start_numa_compute("compute2", cells=2, cores=4)
        self.no_disk_copy = mock.patch(
            "nova.virt.libvirt.driver.LibvirtDriver.migrate_disk_and_power_off",
            return_value="{}",
        )
        self.no_disk_copy.start()
        self.addCleanup(self.no_disk_copy.stop)

    def pinned(self, vcpus: int, cells: int = 1) -> str:
        specs = {"hw:cpu_policy": "dedicated"}
        if cells > 1:
            specs["hw:numa_nodes"] = str(cells)
        return self._create_flavor(vcpu=vcpus, memory_mb=1024, extra_spec=specs)

    def host_of(self, server: dict) -> str:
        return objects.Instance.get_by_uuid(self.ctxt, server["id"]).host

    def test_resize_confirm_and_revert(self) -> None:
        server = self._create_server(flavor_id=self.pinned(1))
        self.assertCellsAligned()
        server = self._resize_server(server, self.pinned(2, cells=2))
        self.assertEqual({0, 1}, self.server_cells(server["id"]))
        self.assertCellsAligned()
        server = self._confirm_resize(server)
        self.assertCellsAligned()
        server = self._resize_server(server, self.pinned(3))
        self.assertCellsAligned()
        server = self._revert_resize(server)
        self.assertEqual({0, 1}, self.server_cells(server["id"]))
        self.assertCellsAligned()

    def test_cold_migrate(self) -> None:
        servers = [self._create_server(flavor_id=self.pinned(2, cells=2)) for _ in range(2)]
        self.assertCellsAligned()
        source = self.host_of(servers[0])
        server = self._migrate_server(servers[0], api=self.admin_api)
        self.assertNotEqual(source, self.host_of(server))
        self.assertCellsAligned()
        self._confirm_resize(server)
        self.assertCellsAligned()

    def test_evacuate(self) -> None:
        server = self._create_server(flavor_id=self.pinned(2, cells=2))
        source = self.host_of(server)
        self.computes[source].stop()
        self.admin_api.microversion = "2.53"
        service = self.admin_api.get_services(host=source, binary="nova-compute")[0]
        self.admin_api.put_service_force_down(service["id"], True)
        server = self._evacuate_server(server, expected_state="ACTIVE")
        target = self.host_of(server)
        self.assertNotEqual(source, target)
        # the source keeps its allocation until its nova-compute is back and cleans it up
        self.assertEqual({0, 1}, self.allocation_cells(server["id"])[target])
        self.assertEqual(
            self.server_cells(server["id"]), self.allocation_cells(server["id"])[target]
        )
        self.restart_compute_service(source)
        self.admin_api.put_service_force_down(service["id"], False)
        self.assertCellsAligned()

    def test_shelve_unshelve_delete(self) -> None:
        servers = [self._create_server(flavor_id=self.pinned(3)) for _ in range(3)]
        self.assertCellsAligned()
        self._shelve_server(servers[0])
        self.assertCellsAligned()
        self._unshelve_server(servers[0])
        self.assertCellsAligned()
        for server in servers:
            self._delete_server(server)
        self.assertCellsAligned()
        self.assertEqual(
            {}, self.placement.get("/allocations/" + servers[0]["id"]).body["allocations"]
        )


class PciAffinityTest(NumaPlacementBase):
    """Guests asking a PCI alias with NUMA affinity (``numa_policy`` required / preferred),
    Nova's PCI tracking (devices not in Placement, Nova's default): one device per host, on a
    known cell (compute1: cell 1, compute2: cell 0). Boot, then a cold migration and a resize to
    the other host: the guest runs where Placement allocated its CPUs and memory, and with
    ``required`` its device sits on one of the guest's cells."""

    ADDITIONAL_FILTERS = ["NUMATopologyFilter", "PciPassthroughFilter"]
    DEVICE_CELL = {"compute1": 1, "compute2": 0}
    microversion = "latest"
    ADMIN_API = True

    def setUp(self) -> None:
        device = {"vendor_id": fakelibvirt.PCI_VEND_ID, "product_id": fakelibvirt.PCI_PROD_ID}
        aliases = [
            json.dumps({**device, "name": f"nic-{policy}", "numa_policy": policy})
            for policy in ("required", "preferred")
        ]
        self.flags(device_spec=[json.dumps(device)], alias=aliases, group="pci")
        super().setUp()
        self.flags(vif_plugging_timeout=0)
        self.flags(cpu_dedicated_set="0-7", cpu_shared_set=None, group="compute")
        self.no_disk_copy = mock.patch(
            "nova.virt.libvirt.driver.LibvirtDriver.migrate_disk_and_power_off",
            return_value="{}",
        )
        self.no_disk_copy.start()
        self.addCleanup(self.no_disk_copy.stop)

    def start_host(self, hostname: str) -> None:
        pci = fakelibvirt.HostPCIDevicesInfo(num_pci=1, numa_node=self.DEVICE_CELL[hostname])
        self.start_numa_compute(hostname, cells=2, cores=4, pci_info=pci)

    def flavor(self, policy: str, vcpus: int = 2) -> str:
        specs = {"hw:cpu_policy": "dedicated", "pci_passthrough:alias": f"nic-{policy}:1"}
        return self._create_flavor(vcpu=vcpus, memory_mb=1024, extra_spec=specs)

    def assertDeviceAligned(self, server: dict, required: bool) -> set[int]:  # noqa: N802
        """The invariants, plus: one device on the guest's host, on one of its cells when
        ``required``. Returns the guest's cells."""
        self.assertCellsAligned()
        inst = objects.Instance.get_by_uuid(self.ctxt, server["id"])
        node = objects.ComputeNode.get_by_host_and_nodename(self.ctxt, inst.host, inst.node)
        devices = [  # a move's source keeps its device until the move is confirmed
            d
            for d in objects.PciDeviceList.get_by_instance_uuid(self.ctxt, server["id"])
            if d.compute_node_id == node.id
        ]
        self.assertEqual(1, len(devices), "the guest's device on its host")
        cells = self.server_cells(server["id"])
        if required:
            self.assertEqual([self.DEVICE_CELL[inst.host]], [d.numa_node for d in devices])
            self.assertIn(self.DEVICE_CELL[inst.host], cells)
        return cells

    def test_required_boot_and_moves(self) -> None:
        self.start_host("compute1")
        server = self._create_server(flavor_id=self.flavor("required"), networks="none")
        self.assertEqual({1}, self.assertDeviceAligned(server, required=True))
        self.start_host("compute2")
        server = self._migrate_server(server, api=self.admin_api)
        self.assertEqual("compute2", objects.Instance.get_by_uuid(self.ctxt, server["id"]).host)
        self.assertEqual({0}, self.assertDeviceAligned(server, required=True))
        server = self._confirm_resize(server)
        self.assertDeviceAligned(server, required=True)
        # a resize goes to the other host (not to the same host by default): cell 1 again
        server = self._resize_server(server, self.flavor("required", vcpus=3))
        self.assertEqual("compute1", objects.Instance.get_by_uuid(self.ctxt, server["id"]).host)
        self.assertEqual({1}, self.assertDeviceAligned(server, required=True))
        server = self._revert_resize(server)
        self.assertEqual({0}, self.assertDeviceAligned(server, required=True))
        self._delete_server(server)
        self.assertCellsAligned()

    def test_required_and_preferred_with_device_cell_full(self) -> None:
        """compute1's cell 1 (the device's) full of pinned guests: ``required`` cannot boot,
        ``preferred`` boots on cell 0 with the remote device."""
        self.start_host("compute1")
        filler = self._create_flavor(
            vcpu=4, memory_mb=1024, extra_spec={"hw:cpu_policy": "dedicated"}
        )
        first = self._create_server(flavor_id=filler, networks="none")
        cell = self.server_cells(first["id"])
        if cell != {1}:  # fill cell 1: the first guest took cell 0, the second takes cell 1
            self._create_server(flavor_id=filler, networks="none")
            self._delete_server(first)
        self.assertCellsAligned()
        failed = self._create_server(
            flavor_id=self.flavor("required"), networks="none", expected_state="ERROR"
        )
        self.assertIn("No valid host", failed["fault"]["message"])
        server = self._create_server(flavor_id=self.flavor("preferred"), networks="none")
        self.assertEqual({0}, self.assertDeviceAligned(server, required=False))
        self.start_host("compute2")
        server = self._migrate_server(server, api=self.admin_api)
        self.assertEqual("compute2", objects.Instance.get_by_uuid(self.ctxt, server["id"]).host)
        self.assertDeviceAligned(server, required=False)
        self._confirm_resize(server)
        self.assertCellsAligned()


class ReshapeTest(NumaPlacementBase):
    """Patch 4: guests booted with NUMA reporting off; reporting switched on and nova-compute
    restarted: the reshape moves their allocations onto the cells they run on, the compute node
    keeps none of VCPU, PCPU, MEMORY_MB, and capacity is not counted twice."""

    def test_enable_on_running_host(self) -> None:
        self.flags(enable_numa_reporting_to_placement=None, group="compute")
        self.flags(cpu_dedicated_set="0-1,4-5", cpu_shared_set="2-3,6-7", group="compute")
        self.start_numa_compute("compute1", cells=2, cores=4, huge_pages=512)
        flat = self.tree("compute1")["compute1"]["inventories"]
        pinned = self._create_flavor(
            vcpu=2, memory_mb=1024, extra_spec={"hw:cpu_policy": "dedicated"}
        )
        two_cells = self._create_flavor(vcpu=2, memory_mb=2048, extra_spec={"hw:numa_nodes": "2"})
        huge = self._create_flavor(vcpu=1, memory_mb=512, extra_spec={"hw:mem_page_size": "2MB"})
        plain = self._create_flavor(vcpu=1, memory_mb=512)
        servers = [
            self._create_server(flavor_id=f) for f in (pinned, pinned, two_cells, huge, plain)
        ]
        before = {
            s["id"]: self.placement.get(f"/allocations/{s['id']}", version="1.28").body
            for s in servers
        }

        self.flags(enable_numa_reporting_to_placement=True, group="compute")
        self.restart_compute_service("compute1")

        tree = self.tree("compute1")
        root = tree["compute1"]
        for rc in ("VCPU", "PCPU", "MEMORY_MB"):
            self.assertNotIn(rc, root["inventories"])
        cells = [v["inventories"] for k, v in tree.items() if k != "compute1"]
        for rc in ("VCPU", "PCPU"):
            self.assertEqual(flat[rc], sum(inv.get(rc, 0) for inv in cells), rc)
        self.assertCellsAligned()
        for server in servers:
            after = self.placement.get(f"/allocations/{server['id']}", version="1.28").body
            totals: dict[str, int] = collections.Counter()
            for alloc in after["allocations"].values():
                totals.update(alloc["resources"])
            expected: dict[str, int] = collections.Counter()
            for alloc in before[server["id"]]["allocations"].values():
                expected.update(alloc["resources"])
            self.assertEqual(expected, totals, server["id"])
        root_uuid = next(rp["uuid"] for rp in self.providers().values() if rp["name"] == "compute1")
        usages = self.placement.get(f"/resource_providers/{root_uuid}/usages").body["usages"]
        self.assertEqual({"DISK_GB"}, {rc for rc, n in usages.items() if n})
        huge_alloc = self.placement.get(f"/allocations/{servers[3]['id']}", version="1.28").body
        names = {self.providers()[u]["name"] for u in huge_alloc["allocations"]}
        self.assertTrue(any(n.endswith("_PAGE_2048KB") for n in names), names)
        # and the host keeps working: a new two-cell guest lands where Placement puts it
        self._create_server(flavor_id=two_cells)
        self.assertCellsAligned()
        # one way: switched back off, the host keeps its cells (no double counting)
        self.flags(enable_numa_reporting_to_placement=False, group="compute")
        self.restart_compute_service("compute1")
        tree = self.tree("compute1")
        self.assertEqual(len(cells), len(tree) - 1)
        self.assertNotIn("VCPU", tree["compute1"]["inventories"])
        self.assertNotIn("HW_NON_NUMA", tree["compute1"]["traits"])
        self.assertCellsAligned()


class NoValidHostBase(base.ServersTestBase):
    """The classic NoValidHost: 40 hosts of 2 cells x 3 dedicated CPUs, 37 of them split 4 + 2
    (their CPUs split unevenly across cells), 3 split 3 + 3; the flavor is 6 pinned vCPUs over
    two cells (3 + 3), so only those 3 hosts fit, while the flat query (``PCPU:6``) matches all
    40 and ``max_placement_results = 5`` keeps 5 of them (upstream's order is arbitrary: about
    one boot in three sees a host that fits). ``ATTEMPTS`` boots, each deleted after."""

    ADDITIONAL_FILTERS = ["NUMATopologyFilter"]
    HOSTS = 40
    FITTING = 3
    ATTEMPTS = 5

    def setUp(self) -> None:
        super().setUp()
        self.ctxt = nova_context.get_admin_context()
        self.flags(max_placement_results=5, group="scheduler")
        self.flags(cpu_dedicated_set="0-5", cpu_shared_set=None, group="compute")

    def start_fleet(self) -> list[str]:
        fitting = []
        for n in range(self.HOSTS):
            host_info = fakelibvirt.HostInfo(
                cpu_nodes=2, cpu_sockets=1, cpu_cores=3, cpu_threads=1, kB_mem=16777216
            )
            if n % (self.HOSTS // self.FITTING) or len(fitting) == self.FITTING:
                cells = host_info.numa_topology.cells
                cells[0].cpus.append(cells[1].cpus.pop(0))  # 4 + 2
            else:
                fitting.append(f"host{n:02d}")
            self.start_compute(host_info=host_info, hostname=f"host{n:02d}")
        return fitting

    FLAVOR = {
        "vcpus": 6,
        "memory_mb": 2048,
        "extra_specs": {"hw:cpu_policy": "dedicated", "hw:numa_nodes": "2"},
    }

    def boot_attempts(self, check=None, expect=None) -> list[str | None]:
        """The host of each attempt (None: NoValidHost); ``check(server)`` runs on each
        active guest before it is deleted; ``expect()``, asked before each boot, names the host
        the boot must land on."""
        flavor = self._create_flavor(
            vcpu=self.FLAVOR["vcpus"],
            memory_mb=self.FLAVOR["memory_mb"],
            extra_spec=self.FLAVOR["extra_specs"],
        )
        hosts: list[str | None] = []
        for _ in range(self.ATTEMPTS):
            expected = expect() if expect is not None else None
            server = self.api.post_server({"server": self._build_server(flavor_id=flavor)})
            for _ in range(300):
                server = self.api.get_server(server["id"])
                if server["status"] in ("ACTIVE", "ERROR"):
                    break
                time.sleep(0.1)
            if server["status"] == "ACTIVE":
                hosts.append(objects.Instance.get_by_uuid(self.ctxt, server["id"]).host)
                if expected is not None:
                    self.assertEqual(expected, hosts[-1], "the host placement-numa ranks first")
                if check is not None:
                    check(server)
            else:
                self.assertIn("No valid host", server["fault"]["message"])
                hosts.append(None)
            self._delete_server(server)
            if hosts[-1] is not None:
                self.wait_settled(server["id"], hosts[-1])
        print(f"{type(self).__name__}: hosts of {self.ATTEMPTS} boots: {hosts}")
        return hosts

    def wait_settled(self, server_id: str, host: str) -> None:
        """Until a deleted guest is gone from Placement and from its host's NUMA usage (the
        scheduler's view): Nova's API answers 404 before the compute's resource tracker has
        released the cells, and the next boot must see the host free again."""
        for _ in range(300):
            node = objects.ComputeNode.get_by_host_and_nodename(self.ctxt, host, host)
            topology = objects.NUMATopology.obj_from_db_obj(node.numa_topology)
            allocations = self.placement.get(f"/allocations/{server_id}").body["allocations"]
            if not allocations and not any(cell.pinned_cpus for cell in topology.cells):
                return
            time.sleep(0.1)
        self.fail(f"{host} still holds the deleted guest {server_id}")


class NoValidHostStockTest(NoValidHostBase):
    """Stock Nova (reporting off, the flat GET) with upstream Placement 16 (``run.py
    --upstream``). Upstream's candidate order is arbitrary but fixed within a process, so the 5
    hosts Nova sees are the first 5 of the flat query: when none of them fits (about 2 fleets in
    3), every boot is NoValidHost; with the cut lifted (``max_placement_results = 1000``) the
    same boot succeeds on a host that fits: the cut, not the fleet, fails the boot."""

    ATTEMPTS = 3

    def test_stock_nova_no_valid_host(self) -> None:
        if not os.environ.get("PLACEMENT_NUMA_FUNC_UPSTREAM"):
            self.skipTest("runs with upstream Placement (run.py --upstream)")
        fitting = self.start_fleet()
        names = {
            rp["uuid"]: rp["name"]
            for rp in self.placement.get("/resource_providers").body["resource_providers"]
        }
        query = "resources=PCPU:6,MEMORY_MB:2048,DISK_GB:20&limit=5"
        seen = self.placement.get(f"/allocation_candidates?{query}", version="1.36").body
        seen_hosts = {
            names[uuid] for ar in seen["allocation_requests"] for uuid in ar["allocations"]
        }
        print(f"stock: the flat query's 5 hosts {sorted(seen_hosts)}, hosts that fit {fitting}")
        hosts = self.boot_attempts()
        if seen_hosts & set(fitting):
            self.assertNotIn(None, hosts)
        else:
            self.assertEqual([None] * self.ATTEMPTS, hosts)
        self.flags(max_placement_results=1000, group="scheduler")
        self.ATTEMPTS = 1
        self.assertIn(self.boot_attempts()[0], fitting)


class NoValidHostPatchedTest(NoValidHostBase, NumaPlacementBase):
    """Patched Nova, reporting on, placement-numa, ``NUMARankWeigher`` enabled (as the guide
    says): every boot lands on the host placement-numa ranks first for the flavor (asked with
    the same body just before each boot; ties among the fitting hosts are broken by
    placement-numa's answer order, which the weigher follows), one of the hosts that fit."""

    ATTEMPTS = 5

    def _setup_scheduler_service(self):  # type: ignore[no-untyped-def]
        self.flags(
            weight_classes=["nova.scheduler.weights.all_weighers", WEIGHER],
            group="filter_scheduler",
        )
        return super()._setup_scheduler_service()

    def ranked_first(self) -> str:
        """The host of placement-numa's best candidate for the flavor (Nova's disk: 20 GiB)."""
        body = {"flavor": {**self.FLAVOR, "root_gb": 20}, "limit": 5}
        answer = self.placement.post("/allocation_candidates", body, version="1.39").body
        return str(answer["allocation_requests"][0]["numa"]["host"])

    def test_patched_nova_boots(self) -> None:
        fitting = self.start_fleet()

        def aligned(server: dict) -> None:
            self.assertEqual({0, 1}, self.server_cells(server["id"]))
            self.assertCellsAligned()

        hosts = self.boot_attempts(aligned, expect=self.ranked_first)
        self.assertEqual([], [h for h in hosts if h not in fitting])
        self.assertNotIn(None, hosts)


class StatusTest(NumaPlacementBase):
    """Patch 5: ``nova-status upgrade check`` warns while the option is unset."""

    def test_upgrade_check(self) -> None:
        from nova.cmd import status
        from oslo_upgradecheck import upgradecheck

        check = status.UpgradeCommands()._check_numa_reporting
        self.flags(enable_numa_reporting_to_placement=None, group="compute")
        self.assertEqual(upgradecheck.Code.WARNING, check().code)
        for value in (True, False):
            self.flags(enable_numa_reporting_to_placement=value, group="compute")
            self.assertEqual(upgradecheck.Code.SUCCESS, check().code)


class LiveMigrateTest(base.LibvirtMigrationMixin, NumaPlacementBase):
    """Live migration of a pinned two-cell guest between two NUMA-reporting hosts: the
    scheduler's POST picks the destination cells, the live-migration claim keeps them."""

    microversion = "latest"
    ADMIN_API = True

    def test_live_migrate(self) -> None:
        self.flags(cpu_dedicated_set="0-2,4-6", cpu_shared_set="3,7", group="compute")
        self.start_numa_compute("compute1", cells=2, cores=4)
        flavor = self._create_flavor(
            vcpu=4,
            memory_mb=1024,
            extra_spec={"hw:cpu_policy": "dedicated", "hw:numa_nodes": "2"},
        )
        self.server = self._create_server(flavor_id=flavor, networks="none")
        self.start_numa_compute("compute2", cells=2, cores=4)
        self.src, self.dest = self.computes["compute1"], self.computes["compute2"]
        self.assertCellsAligned()
        server = self._live_migrate(self.server)
        self.assertTrue(self.migrate_stub_ran)
        self.assertEqual("compute2", objects.Instance.get_by_uuid(self.ctxt, server["id"]).host)
        self.assertEqual({0, 1}, self.server_cells(server["id"]))
        self.assertCellsAligned()
