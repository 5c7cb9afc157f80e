"""``topology_policy=best-effort`` (Kubernetes ``policy_best_effort.go``): every placement is
admitted; aligned and narrowest ones first.

Devices are ``preferred`` (anywhere; a candidate with every device on a cell the guest uses
ranks before any other). A guest without ``hw:numa_nodes`` is searched at every width a host can
give (1, 2, ... cells; CPUs and memory split evenly, KEP-2902), all ranked together: aligned
first, then narrowest (ranking rules 0-1). Hosts without NUMA cells answer last (fallback).
"""

from __future__ import annotations

from placement_numa.numa.topology_policies.policy import TopologyPolicy

__all__ = ["BEST_EFFORT"]

BEST_EFFORT = TopologyPolicy(
    name="best-effort", device_policy="preferred", numa_guest=True, widths="every", fallback=True
)
