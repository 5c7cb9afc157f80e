"""``topology_policy=single-numa-node`` (Kubernetes ``policy_single_numa_node.go``): CPUs,
memory and devices all from one NUMA cell, or no candidate on that host.

Devices are ``required``; the guest is one cell (a flavor with ``hw:numa_nodes`` > 1 gets no
candidate anywhere); hosts without NUMA cells do not answer.
"""

from __future__ import annotations

from placement_numa.numa.topology_policies.policy import TopologyPolicy

__all__ = ["SINGLE_NUMA_NODE"]

SINGLE_NUMA_NODE = TopologyPolicy(
    name="single-numa-node",
    device_policy="required",
    numa_guest=True,
    widths="flavor",
    fallback=False,
    max_cells=1,
)
