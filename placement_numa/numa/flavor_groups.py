"""The request groups of a translated flavor besides its guest cells (step 2 of the NUMA
pipeline, ``numa.translate``): the flavor's own ``resources[$S]:``/``trait[$S]:`` groups
(``extra_groups``), one group per PCI device (``device_groups``, ``device_request_groups``),
the thread policy's traits on the compute node (``root_traits``) and the one-group query of a
flavor without NUMA request or of the fallback for hosts not reshaped (``flat_query``).

Plain functions of the ``NumaRequest`` and ``GuestTopology`` values; ``numa.translate`` calls
them while it builds a ``NumaQuery``.
"""

from __future__ import annotations

from placement_numa.domain.request_groups import CandidateQuery, RequestGroup
from placement_numa.numa.numa_query import DeviceGroup, GuestTopology
from placement_numa.numa.request import NumaRequest

__all__ = [
    "HYPERTHREADING",
    "device_groups",
    "device_request_groups",
    "extra_groups",
    "flat_query",
    "root_traits",
]

HYPERTHREADING = "HW_CPU_HYPERTHREADING"
_PLACED = ("VCPU", "PCPU", "MEMORY_MB")


def extra_groups(
    request: NumaRequest, skip_placed: bool
) -> tuple[dict[str, int], set[str], set[str], list[RequestGroup]]:
    """Unsuffixed resources/required/forbidden from the flavor's ``resources:``/``trait:``
    groups, and the numbered groups (``skip_placed``: without the CPU and memory classes, which
    the NUMA cells place)."""
    unsuffixed: dict[str, int] = {}
    required: set[str] = set()
    forbidden: set[str] = set()
    numbered: list[RequestGroup] = []
    for group in request.groups:
        resources = {
            rc: n for rc, n in group.resources.items() if not (skip_placed and rc in _PLACED)
        }
        if group.suffix == "":
            unsuffixed.update(resources)
            required |= group.required
            forbidden |= group.forbidden
        else:
            numbered.append(
                RequestGroup(
                    suffix=group.suffix,
                    resources={rc: n for rc, n in resources.items() if n > 0},
                    required_traits=group.required,
                    forbidden_traits=group.forbidden,
                )
            )
    return unsuffixed, required, forbidden, numbered


def device_groups(request: NumaRequest, cells: int) -> tuple[DeviceGroup, ...]:
    """One group per device; tied by ``same_subtree`` when the guest has one cell and the
    policy is ``required`` (the only policy a subtree expresses exactly)."""
    return tuple(
        DeviceGroup(
            f"_PCI{n}", d.resource_class, d.numa_policy, cells == 1 and d.numa_policy == "required"
        )
        for n, d in enumerate(request.devices, start=1)
    )


def device_request_groups(request: NumaRequest) -> list[RequestGroup]:
    """The request group of each PCI device (``_PCI<n>``: one of its class, its traits)."""
    return [
        RequestGroup(suffix=f"_PCI{n}", resources={d.resource_class: 1}, required_traits=d.traits)
        for n, d in enumerate(request.devices, start=1)
    ]


def root_traits(topology: GuestTopology | None) -> tuple[frozenset[str], frozenset[str]]:
    """``(required, forbidden)`` traits of the compute node for the guest's thread policy
    (``require``: ``HW_CPU_HYPERTHREADING``; ``isolate``: forbidden)."""
    if topology is None or topology.thread_policy is None:
        return frozenset(), frozenset()
    if topology.thread_policy == "require":
        return frozenset({HYPERTHREADING}), frozenset()
    if topology.thread_policy == "isolate":
        return frozenset(), frozenset({HYPERTHREADING})
    return frozenset(), frozenset()


def flat_query(
    request: NumaRequest, topology: GuestTopology | None, forbidden_extra: frozenset[str]
) -> CandidateQuery:
    """One unsuffixed group with the whole flavor, plus its numbered and device groups
    (non-NUMA flavors and the fallback)."""
    extra, required, forbidden, numbered = extra_groups(request, skip_placed=topology is not None)
    numbered = numbered + device_request_groups(request)
    if topology is not None:
        vcpu = sum(c.vcpu for c in topology.cells)
        pcpu = sum(c.pcpu for c in topology.cells)
    else:
        vcpu, pcpu = request.vcpus, 0
    resources: dict[str, int] = {}
    if vcpu:
        resources["VCPU"] = vcpu
    if pcpu:
        resources["PCPU"] = pcpu
    resources["MEMORY_MB"] = request.memory_mb
    if request.disk_gb:
        resources["DISK_GB"] = request.disk_gb
    resources.update(extra)
    resources = {rc: n for rc, n in resources.items() if n > 0}
    root_required, root_forbidden = root_traits(topology)
    return CandidateQuery(
        groups=(
            RequestGroup(
                suffix=None,
                resources=resources,
                required_traits=frozenset(required),
                forbidden_traits=frozenset(forbidden) | forbidden_extra,
            ),
            *numbered,
        ),
        group_policy=request.group_policy or ("none" if len(numbered) > 1 else None),
        root_required=root_required,
        root_forbidden=root_forbidden,
    )
