"""One writer per provider tree: is this compute node nova-compute's?

nova-compute rewrites its compute node's provider on every periodic update: the root's
inventory (``VCPU``, ``MEMORY_MB``, ``DISK_GB``, or with a NUMA-reporting Nova the cells below
it) and the root's traits. If the agent also managed that tree, each writer would undo the
other's changes, and the host's capacity would be counted twice in between (``VCPU`` on the root
*and* on the agent's cells). So the agent refuses such a tree before writing anything.

The signs, read on the root (``nova_signs``):

* a trait of Nova's namespaces in os-traits: ``OWNER_NOVA`` (``os_traits.owner``; Nova 34
  marks every provider it manages), ``COMPUTE_*`` (``os_traits.compute``: ``COMPUTE_NODE`` is on
  every Nova compute node, with the driver's capabilities) and ``HW_CPU_*`` (``os_traits.hw.cpu``:
  the CPU flags the libvirt driver reports), except the traits the agent itself writes
  (``desired_tree.AGENT_TRAITS``: ``HW_CPU_HYPERTHREADING``);
* inventory the agent never leaves on a root: ``VCPU``, ``PCPU``, ``MEMORY_MB`` (it reports them on
  its NUMA cells; ``DISK_GB`` on the root is its own, so it is not a sign).

The same host may carry another name in Nova (libvirt reports the FQDN where the agent's
``--hostname`` may be the short name, or the reverse): before creating a new compute node the
agent also looks for those names (``other_names``), and refuses when one of them is a tree
nova-compute manages, since a second tree would count the host twice (no override: the agent
would not write that tree but its own).

How the agent recognises its own tree: by construction it carries none of these signs (the agent
writes no ``OWNER_*``, ``COMPUTE_*`` or other ``HW_CPU_*`` trait and moves every CPU and memory
class off the root), so a second run of the agent passes, while nova-compute puts them back at
its next update and the agent's next run refuses.

The operator's override, ``take_over`` (``placement-numa agent --once --take-over-from-nova``),
is for a host whose nova-compute was stopped for good: the agent then removes Nova's traits from
the root (``nova_trait``) and moves the flat inventory onto the cells (with the reshape planner
when guests hold it), so later runs pass without the override. It is refused in periodic mode,
so it is never left on in a service unit, and it is refused (``takeover_refusal``) on a root
that nova-compute marked as its compute node (``COMPUTE_NODE`` or ``OWNER_NOVA``) unless that
service was disabled first: Nova puts ``COMPUTE_STATUS_DISABLED`` on the root when an operator
disables a running nova-compute, which also stops the scheduler from sending guests there.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable

import os_traits

from placement_numa.agent.desired_tree import AGENT_TRAITS

__all__ = [
    "NOVA_ROOT_CLASSES",
    "NovaManagedTree",
    "nova_signs",
    "nova_trait",
    "alias_refusal",
    "other_names",
    "refusal",
    "takeover_refusal",
]

NOVA_ROOT_CLASSES = ("VCPU", "PCPU", "MEMORY_MB")
# nova-compute marks every compute node it manages with both (Nova 34's resource tracker).
_NOVA_MARKS = frozenset({os_traits.COMPUTE_NODE, os_traits.OWNER_NOVA})
# os-traits' namespaces of the traits nova-compute sets on its compute nodes.
_NOVA_TRAITS = frozenset(
    os_traits.get_traits("OWNER_NOVA")
    + os_traits.get_traits("COMPUTE_")
    + os_traits.get_traits("HW_CPU_")
)


class NovaManagedTree(RuntimeError):
    """The compute node's tree is managed by nova-compute; nothing was written. The message (one
    line) names the provider and the signs found."""


def nova_trait(trait: str) -> bool:
    """True for a standard trait nova-compute sets on a compute node and the agent never writes
    (see the module docstring)."""
    return trait in _NOVA_TRAITS and trait not in AGENT_TRAITS


def nova_signs(inventory_classes: Iterable[str], traits: Iterable[str]) -> list[str]:
    """The signs of nova-compute among a root provider's resource classes and traits, sorted
    (inventory classes first); empty when the tree may be the agent's."""
    classes = sorted(rc for rc in set(inventory_classes) if rc in NOVA_ROOT_CLASSES)
    return classes + sorted(t for t in set(traits) if nova_trait(t))


def refusal(name: str, uuid: str, signs: list[str]) -> NovaManagedTree:
    """The one-line error for compute node ``name`` (``uuid``) carrying ``signs``."""
    shown = ", ".join(signs[:6]) + (f" and {len(signs) - 6} more" if len(signs) > 6 else "")
    return NovaManagedTree(
        f"compute node {name} ({uuid}) is managed by nova-compute ({shown} on its root); "
        "one writer per provider tree: nothing written. Run nova-compute (with the "
        "placement-numa patch series for NUMA) on Nova hosts, or stop nova-compute for good "
        "and run 'placement-numa agent --once --take-over-from-nova'"
    )


def takeover_refusal(name: str, uuid: str, traits: Iterable[str]) -> NovaManagedTree | None:
    """The one-line error when compute node ``name`` may not be taken over yet: nova-compute
    marked it (``COMPUTE_NODE``/``OWNER_NOVA``) and it is not disabled (no
    ``COMPUTE_STATUS_DISABLED``); ``None`` when the take-over may go on."""
    present = set(traits)
    if os_traits.COMPUTE_STATUS_DISABLED in present or not present & _NOVA_MARKS:
        return None
    return NovaManagedTree(
        f"compute node {name} ({uuid}) is nova-compute's and its service is not disabled (no "
        f"{os_traits.COMPUTE_STATUS_DISABLED} on its root); nothing written. Disable it while it "
        "runs ('openstack compute service set --disable <host> nova-compute'), stop it for good, "
        "then take over"
    )


def other_names(hostname: str) -> list[str]:
    """Other names this host's compute node may have in Nova: the short name of a dotted
    ``hostname``; for a short one, this machine's FQDN (``socket.getfqdn``) when its first label
    is ``hostname``."""
    if "." in hostname:
        return [hostname.split(".", 1)[0]]
    fqdn = socket.getfqdn()
    return [fqdn] if fqdn != hostname and fqdn.split(".", 1)[0] == hostname else []


def alias_refusal(name: str, uuid: str, signs: list[str], hostname: str) -> NovaManagedTree:
    """The one-line error when this host (``hostname``) is nova-compute's compute node ``name``."""
    return NovaManagedTree(
        f"this host ({hostname}) is compute node {name} ({uuid}) of nova-compute "
        f"({', '.join(signs[:6])} on its root); a second tree would count it twice: nothing "
        "written. Run nova-compute (with the placement-numa patch series for NUMA) here, or stop "
        f"it for good and take over with --hostname {name}"
    )
