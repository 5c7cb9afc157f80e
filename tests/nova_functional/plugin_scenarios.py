"""placement-numa's Nova plugins (``integrations/nova``) inside Nova 34's functional framework:
the patched Nova, the plugins enabled as an operator enables them, a live placement-numa.

Run in the Nova virtualenv through ``run.py`` (``tests/test_nova_plugins_functional.py`` drives
it, with ``integrations/nova`` on ``PYTHONPATH`` unless the virtualenv installed it). Each boot is
compared with placement-numa's own answer to the flavor, asked just before: the guest lands on
the host placement-numa ranks first, on the cells of that host's best candidate, and
``assertCellsAligned`` holds (allocation cells = the cells the guest runs on; every cell's usage
= the sum of its guests).
"""

from __future__ import annotations

from typing import Any

from scenarios import NumaPlacementBase

FILTER = "placement_numa_nova.filters.NUMACandidatesFilter"
WEIGHER = "placement_numa_nova.weights.NUMARankWeigher"


class PluginTest(NumaPlacementBase):
    """Boots with ``NUMACandidatesFilter`` and ``NUMARankWeigher`` enabled."""

    ADDITIONAL_FILTERS = ["NUMATopologyFilter", "NUMACandidatesFilter"]

    def _setup_scheduler_service(self) -> Any:
        self.flags(
            available_filters=["nova.scheduler.filters.all_filters", FILTER],
            weight_classes=["nova.scheduler.weights.all_weighers", WEIGHER],
            group="filter_scheduler",
        )
        return super()._setup_scheduler_service()

    def best(self, flavor: dict[str, Any]) -> tuple[str, set[int]] | None:
        """placement-numa's best host (name) for ``flavor`` and the cells of its candidate;
        ``None`` when nothing fits."""
        answer = self.placement.post(
            "/allocation_candidates", {"flavor": flavor}, version="1.39"
        ).body
        if not answer["allocation_requests"]:
            return None
        numa = answer["allocation_requests"][0]["numa"]
        return numa["host"], set(numa["cells"])

    def boot_where_ranked(self, vcpus: int, memory_mb: int, extra_specs: dict[str, str]) -> None:
        """Boot; the guest lands on placement-numa's best candidate, or NoValidHost when
        placement-numa has none."""
        best = self.best(
            {"vcpus": vcpus, "memory_mb": memory_mb, "root_gb": 0, "extra_specs": extra_specs}
        )
        flavor = self._create_flavor(vcpu=vcpus, memory_mb=memory_mb, extra_spec=extra_specs)
        if best is None:
            server = self._create_server(flavor_id=flavor, expected_state="ERROR")
            self.assertIn("No valid host", server["fault"]["message"])
            self.assertCellsAligned()
            return
        host, cells = best
        server = self._create_server(flavor_id=flavor)
        placed = self.allocation_cells(server["id"])
        self.assertEqual({host: cells}, dict(placed), "placement-numa's best candidate")
        self.assertEqual(cells, self.server_cells(server["id"]))
        self.assertCellsAligned()

    def test_guests_follow_the_rank(self) -> None:
        """A 2-cell host with 4 cores per cell and a 4-cell host with 2: pinned guests one after
        the other (two cells, then one cell, until nothing fits), each where placement-numa ranks
        best at that moment; the last one fits no cell and is NoValidHost."""
        self.flags(cpu_dedicated_set="0-7", cpu_shared_set=None, group="compute")
        self.start_numa_compute("compute1", cells=2, cores=4)
        self.start_numa_compute("compute2", cells=4, cores=2)
        pinned = {"hw:cpu_policy": "dedicated"}
        self.boot_where_ranked(4, 2048, {**pinned, "hw:numa_nodes": "2"})
        for _ in range(4):
            self.boot_where_ranked(2, 1024, pinned)
        self.boot_where_ranked(3, 1024, pinned)
