"""Reshape planning (pure): move a flat compute node onto its NUMA tree with its consumers'
allocations, or collapse the tree back, as one ``POST /reshaper`` body.

``plan_to_numa(host, topology, policy=)`` and ``plan_to_flat(host)`` take a ``HostState`` (read by
``placement_numa.services.reshaper`` from the database or by the CLI over HTTP) and return a
``Plan``; ``parse_topology`` reads the target topology document.
"""

from placement_numa.reshape.collapse import plan_to_flat
from placement_numa.reshape.errors import ConsumerUnplaceable, PlanError, TopologyInvalid
from placement_numa.reshape.model import ConsumerState, HostState, Inventory, ProviderState
from placement_numa.reshape.plan import NewProvider, Plan
from placement_numa.reshape.planner import plan_to_numa
from placement_numa.reshape.topology import Topology, parse_topology

__all__ = [
    "ConsumerUnplaceable",
    "PlanError",
    "TopologyInvalid",
    "ConsumerState",
    "HostState",
    "Inventory",
    "ProviderState",
    "NewProvider",
    "Plan",
    "plan_to_flat",
    "plan_to_numa",
    "Topology",
    "parse_topology",
]
