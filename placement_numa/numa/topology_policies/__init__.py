"""The Topology Manager's policies as a request option (``topology_policy``), one per module.

``POLICIES`` maps each name to its ``TopologyPolicy``; ``policy(name)`` looks one up (``None``
for ``None``: Nova's flavor semantics stand).
"""

from __future__ import annotations

from placement_numa.numa.topology_policies.policy import TopologyPolicy, Widths
from placement_numa.numa.topology_policies.policy_best_effort import BEST_EFFORT
from placement_numa.numa.topology_policies.policy_none import NONE
from placement_numa.numa.topology_policies.policy_restricted import RESTRICTED
from placement_numa.numa.topology_policies.policy_single_numa_node import SINGLE_NUMA_NODE

__all__ = ["POLICIES", "TopologyPolicy", "Widths", "policy"]

POLICIES: dict[str, TopologyPolicy] = {
    p.name: p for p in (NONE, BEST_EFFORT, RESTRICTED, SINGLE_NUMA_NODE)
}


def policy(name: str | None) -> TopologyPolicy | None:
    """The policy named ``name`` (``None`` when not given). Raises ``KeyError`` for an unknown
    name (the API schema admits only the four)."""
    return None if name is None else POLICIES[name]
