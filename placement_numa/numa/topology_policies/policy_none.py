"""``topology_policy=none`` (Kubernetes ``policy_none.go``): no alignment.

Devices come from anywhere and an aligned device earns no rank; CPUs and memory follow the
flavor (its guest cells, ``distribute_cpus_across_numa``); hosts without NUMA cells answer too.
"""

from __future__ import annotations

from placement_numa.numa.topology_policies.policy import TopologyPolicy

__all__ = ["NONE"]

NONE = TopologyPolicy(
    name="none", device_policy="none", numa_guest=False, widths="flavor", fallback=True
)
