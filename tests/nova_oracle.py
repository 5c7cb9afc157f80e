"""Nova's own NUMA fitting as an oracle: run with the Python of a virtualenv holding Nova 34
(``.nova-venv``, made by ``.ci/run``), JSON in on stdin, JSON out on stdout. Stdlib and Nova only:
the test process never imports Nova.

Input::

    {"pairs": [{"host": HOST, "flavor": FLAVOR}, ...], "cpu_specs": ["0-3,^2", ...]}

    HOST   = {"cells": [{"id", "cpuset": [shared ids], "pcpuset": [dedicated ids],
                          "memory": MiB, "cpu_usage": n, "memory_usage": MiB,
                          "pinned_cpus": [ids], "siblings": [[ids], ...],
                          "mempages": [{"size_kb", "total", "used", "reserved"}, ...]}],
              "cpu_allocation_ratio": r, "ram_allocation_ratio": r}
    FLAVOR = {"vcpus", "memory_mb", "extra_specs": {...}}

PCI (issue 22, optional): HOST may carry ``"pci": [{"address", "vendor_id", "product_id",
"numa_node": int | null}, ...]`` (whole devices, type-PCI) and its cells a ``"socket"``; FLAVOR
may carry ``"pci_requests": [{"count", "vendor_id", "product_id", "numa_policy"}, ...]``. Nova
then fits with ``pci_requests`` and a ``PciDeviceStats`` built from the devices (a device spec
per vendor/product), as the NUMATopologyFilter and PciPassthroughFilter do.

Output::

    {"pairs": [{"fits": bool | null, "error": "<Nova exception class>" | null,
                "cells": [host cell ids] | null, "numa": bool, "verified": bool}, ...],
     "cpu_specs": [{"cpus": [ids] | null, "error": "<class>" | null}, ...]}

``numa`` says whether ``numa_get_constraints`` asked for a guest NUMA topology; ``fits`` is
``numa_fit_instance_to_host`` with the host's limits (the NUMATopologyFilter's call), or true
when the guest has no NUMA topology (the filter then passes every host); ``verified`` says
whether each guest cell of a fit also fits its host cell when checked afresh (see ``_verify``).
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any


def _host(objects: Any, data: dict[str, Any]) -> Any:
    cells = []
    for cell in data["cells"]:
        cells.append(
            objects.NUMACell(
                id=cell["id"],
                cpuset=set(cell["cpuset"]),
                pcpuset=set(cell["pcpuset"]),
                memory=cell["memory"],
                cpu_usage=cell["cpu_usage"],
                memory_usage=cell["memory_usage"],
                pinned_cpus=set(cell["pinned_cpus"]),
                siblings=[set(s) for s in cell["siblings"]],
                mempages=[objects.NUMAPagesTopology(**page) for page in cell["mempages"]],
                network_metadata=objects.NetworkMetadata(physnets=set(), tunneled=False),
                socket=cell.get("socket", 0),
            )
        )
    return objects.NUMATopology(cells=cells)


def _pair(hardware: Any, objects: Any, pair: dict[str, Any]) -> dict[str, Any]:
    flavor_data = pair["flavor"]
    flavor = objects.Flavor(
        vcpus=flavor_data["vcpus"],
        memory_mb=flavor_data["memory_mb"],
        root_gb=0,
        ephemeral_gb=0,
        swap=0,
        extra_specs=dict(flavor_data.get("extra_specs", {})),
    )
    image = objects.ImageMeta.from_dict({"properties": {}})
    try:
        constraints = hardware.numa_get_constraints(flavor, image)
    except Exception as exc:  # Nova refuses the flavor
        return {"fits": None, "error": type(exc).__name__, "cells": None, "numa": False}
    if constraints is None:
        return {"fits": True, "error": None, "cells": None, "numa": False}
    host = _host(objects, pair["host"])
    limits = objects.NUMATopologyLimits(
        cpu_allocation_ratio=pair["host"]["cpu_allocation_ratio"],
        ram_allocation_ratio=pair["host"]["ram_allocation_ratio"],
    )
    pci_requests, pci_stats = _pci(objects, host, pair)
    fitted = hardware.numa_fit_instance_to_host(
        host, constraints, None, limits=limits, pci_requests=pci_requests, pci_stats=pci_stats
    )
    cells = [cell.id for cell in fitted.cells] if fitted is not None else None
    verified = cells is None or _verify(hardware, objects, pair, flavor, image, cells, limits)
    return {
        "fits": fitted is not None,
        "error": None,
        "cells": cells,
        "numa": True,
        "verified": verified,
    }


def _pci(objects: Any, host: Any, pair: dict[str, Any]) -> tuple[Any, Any]:
    """``(pci_requests, pci_stats)`` of the pair, or ``(None, None)`` without PCI requests."""
    wanted = pair["flavor"].get("pci_requests") or []
    if not wanted:
        return None, None
    import uuid

    from nova.pci import stats, whitelist

    devices = pair["host"].get("pci") or []
    kinds = sorted({(d["vendor_id"], d["product_id"]) for d in devices})
    specs = [json.dumps({"vendor_id": v, "product_id": p}) for v, p in kinds]
    pool = stats.PciDeviceStats(host, dev_filter=whitelist.Whitelist(specs))
    for n, device in enumerate(devices):
        pool.add_device(
            objects.PciDevice(
                compute_node_id=1,
                address=device["address"],
                vendor_id=device["vendor_id"],
                product_id=device["product_id"],
                dev_type="type-PCI",
                status="available",
                numa_node=device["numa_node"],
                dev_id=f"pci_{n}",
                label=f"label_{device['vendor_id']}_{device['product_id']}",
                parent_addr=None,
                request_id=None,
                extra_info={},
            )
        )
    requests = [
        objects.InstancePCIRequest(
            count=r["count"],
            spec=[{"vendor_id": r["vendor_id"], "product_id": r["product_id"]}],
            numa_policy=r["numa_policy"],
            alias_name=f"a{n}",
            request_id=str(uuid.uuid4()),
        )
        for n, r in enumerate(wanted)
    ]
    return objects.InstancePCIRequests(requests=requests).requests, pool


def _verify(
    hardware: Any,
    objects: Any,
    pair: dict[str, Any],
    flavor: Any,
    image: Any,
    cells: list[int],
    limits: Any,
) -> bool:
    """Whether each guest cell of Nova's answer fits its host cell when checked afresh (Nova's
    ``_numa_fit_instance_cell`` on fresh objects). Nova's permutation search caches fits by
    (host cell id, guest cell id) after rewriting the guest cell's id to the host cell's, so its
    answer can pair cells it never checked."""
    constraints = hardware.numa_get_constraints(flavor, image)
    host = {cell.id: cell for cell in _host(objects, pair["host"]).cells}
    isolated = constraints.emulator_threads_isolated
    for index, (guest, host_id) in enumerate(zip(constraints.cells, cells, strict=True)):
        reserved = 1 if isolated and index == 0 else 0
        try:
            got = hardware._numa_fit_instance_cell(host[host_id], guest, limits, reserved)
        except Exception:
            return False
        if got is None:
            return False
    return True


def _cpu_spec(hardware: Any, spec: str) -> dict[str, Any]:
    try:
        return {"cpus": sorted(hardware.parse_cpu_spec(spec)), "error": None}
    except Exception as exc:
        return {"cpus": None, "error": type(exc).__name__}


def main() -> int:
    warnings.simplefilter("ignore")
    from nova import objects
    from nova.virt import hardware

    objects.register_all()
    request = json.load(sys.stdin)
    answer = {
        "pairs": [_pair(hardware, objects, pair) for pair in request.get("pairs", [])],
        "cpu_specs": [_cpu_spec(hardware, spec) for spec in request.get("cpu_specs", [])],
    }
    json.dump(answer, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
