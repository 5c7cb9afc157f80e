"""``topology_policy=restricted`` (Kubernetes ``policy_restricted.go``): only the host's
narrowest aligned placement.

Devices are ``required`` (on a cell the guest uses). A guest without ``hw:numa_nodes`` is
searched at 1, 2, ... cells and each host answers at the narrowest width where it fits aligned
(the Topology Manager's narrowest preferred mask); hosts without NUMA cells cannot prove an
alignment and do not answer.
"""

from __future__ import annotations

from placement_numa.numa.topology_policies.policy import TopologyPolicy

__all__ = ["RESTRICTED"]

RESTRICTED = TopologyPolicy(
    name="restricted",
    device_policy="required",
    numa_guest=True,
    widths="narrowest",
    fallback=False,
)
