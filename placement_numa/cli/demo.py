"""``placement-numa demo``: load a fleet of real machine shapes into a running service through
the HTTP API (httpx), so the NUMA candidate ranking can be tried on something real.

The fleet (``DEMO_FLEET``)::

    intel-2s-{1,2}     two-socket Intel, 2 cells, SLIT 10/21; 12 PCPU + 4 VCPU per cell,
                       small pages + 16 GiB of 2 MiB pages per cell; intel-2s-2 partly used
    amd-nps4-{1,2}     AMD EPYC one socket, 4 cells (NPS4), KEP-3545's 4-cell table; 8 PCPU +
                       8 VCPU per cell, small + 2 MiB pages; amd-nps4-2 partly used
    amd-2s-nps4        AMD EPYC two sockets, 8 cells, KEP-3545's 8-cell table; 8 PCPU + 4 VCPU
                       per cell, small + 1 GiB pages
    legacy-1           not reshaped (flat VCPU/MEMORY_MB/DISK_GB): NUMA flavors fall back here
    legacy-non-numa    not reshaped and HW_NON_NUMA: never gets NUMA flavors

With devices (``demo_fleet(with_devices=True)``, what ``placement-numa demo`` loads)::

    nic-2s-{1,2}       as intel-2s-1 (sockets 0 and 1), an SR-IOV PF (Intel X710, 8 VFs:
                       ``CUSTOM_PCI_8086_1572``, ``CUSTOM_PHYSNET_A``) under cell 1 on
                       nic-2s-1 and under cell 0 on nic-2s-2
    gpu-2s-1           as intel-2s-1, a GPU (``CUSTOM_PCI_10DE_20B5``, inventory 1) under
                       cell 0 and another under the compute node (numa_node -1)

Each NUMA cell is a child ``<host>_NUMA<id>`` with ``HW_NUMA_ROOT`` and ``VCPU``/``PCPU``; each
page size a grandchild ``<host>_NUMA<id>_<size>`` with ``MEMORY_MB`` (``step_size`` = page size
in MiB), ``MEMORY_PAGE_SIZE_SMALL|LARGE`` and ``CUSTOM_MEMORY_PAGE_SIZE_<KiB>`` (Nova spec).
Hosts carry ``HW_CPU_HYPERTHREADING`` on the compute node except ``amd-2s-nps4``. A device is
a child ``<host>_PCI_<address>`` of its cell (or of the compute node when it has no NUMA node)
with one resource class and the number of assignable functions as inventory (issue 22).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
import uuid as uuidlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from placement_numa.numa.page_sizes import provider_traits, step_size_mb

__all__ = [
    "register",
    "CellShape",
    "DeviceShape",
    "HostShape",
    "DEMO_FLEET",
    "load_fleet",
    "Send",
    "kep_four_cells",
    "kep_eight_cells",
    "load_demo",
    "load_when_up",
    "load_when_up_apart",
]

# send(method, path, json body or None) -> (status, parsed JSON or None)
Send = Callable[[str, str, Any], tuple[int, Any]]
GiB = 1024
PAGE_LABEL = {4: "4K", 2048: "2M", 1048576: "1G"}


@dataclass(frozen=True)
class CellShape:
    """One host NUMA cell: CPUs and MiB of memory per page size (KiB)."""

    id: int
    pcpu: int
    vcpu: int
    memory_mb: Mapping[int, int]


@dataclass(frozen=True)
class DeviceShape:
    """A PCI device provider: its address, host cell (``None``: the compute node), resource
    class, assignable functions (inventory) and traits."""

    address: str
    cell: int | None
    resource_class: str
    total: int = 1
    traits: tuple[str, ...] = ()


@dataclass(frozen=True)
class HostShape:
    """A compute node. ``cells`` empty: a host not reshaped (flat inventory on the root)."""

    name: str
    cells: tuple[CellShape, ...] = ()
    distances: Mapping[int, Mapping[int, int]] | None = None
    disk_gb: int = 1000
    traits: tuple[str, ...] = ()
    flat_vcpu: int = 0
    flat_memory_mb: int = 0
    # (cell id, PCPU, VCPU, MiB of small pages) already allocated to some instance
    used: tuple[tuple[int, int, int, int], ...] = ()
    uuid: str = field(default_factory=lambda: str(uuidlib.uuid4()))
    devices: tuple[DeviceShape, ...] = ()
    sockets: Mapping[int, int] | None = None


def kep_four_cells() -> dict[int, dict[int, int]]:
    """KEP-3545's 4-cell distance table (pairs 0-1 and 2-3 at 11, the rest 12)."""
    near = {(0, 1), (2, 3)}
    return {
        a: {b: 10 if a == b else 11 if (min(a, b), max(a, b)) in near else 12 for b in range(4)}
        for a in range(4)
    }


def kep_eight_cells() -> dict[int, dict[int, int]]:
    """KEP-3545's 8-cell distance table (two 4-cell sockets, 30 across)."""
    four = kep_four_cells()
    return {
        a: {b: four[a % 4][b % 4] if a // 4 == b // 4 else 30 for b in range(8)} for a in range(8)
    }


def _dual_socket() -> dict[int, dict[int, int]]:
    return {0: {0: 10, 1: 21}, 1: {0: 21, 1: 10}}


def _cells(count: int, pcpu: int, vcpu: int, pages: Mapping[int, int]) -> tuple[CellShape, ...]:
    return tuple(CellShape(i, pcpu, vcpu, dict(pages)) for i in range(count))


NIC_CLASS = "CUSTOM_PCI_8086_1572"
GPU_CLASS = "CUSTOM_PCI_10DE_20B5"


def _two_socket_intel(name: str, *devices: DeviceShape) -> HostShape:
    """A two-socket Intel host (12 PCPU + 4 VCPU, 96 GiB of 4K and 16 GiB of 2M pages per
    cell, cell N on socket N) with ``devices``."""
    pages = {4: 96 * GiB, 2048: 16 * GiB}
    return HostShape(
        name,
        _cells(2, 12, 4, pages),
        _dual_socket(),
        traits=("HW_CPU_HYPERTHREADING",),
        sockets={0: 0, 1: 1},
        devices=devices,
    )


def device_hosts() -> list[HostShape]:
    """Fresh shapes of the demo hosts with NICs and GPUs (module docstring)."""
    nic = ("CUSTOM_PHYSNET_A",)
    return [
        _two_socket_intel("nic-2s-1", DeviceShape("0000_81_00_0", 1, NIC_CLASS, 8, nic)),
        _two_socket_intel("nic-2s-2", DeviceShape("0000_18_00_0", 0, NIC_CLASS, 8, nic)),
        _two_socket_intel(
            "gpu-2s-1",
            DeviceShape("0000_3b_00_0", 0, GPU_CLASS),
            DeviceShape("0000_d8_00_0", None, GPU_CLASS),
        ),
    ]


def demo_fleet(with_devices: bool = False) -> list[HostShape]:
    """Fresh shapes (new uuids) of the demo fleet described in the module docstring (with the
    device hosts when ``with_devices``)."""
    intel = {4: 96 * GiB, 2048: 16 * GiB}
    amd4 = {4: 56 * GiB, 2048: 8 * GiB}
    amd8 = {4: 48 * GiB, 1048576: 16 * GiB}
    ht = ("HW_CPU_HYPERTHREADING",)
    return [
        HostShape("intel-2s-1", _cells(2, 12, 4, intel), _dual_socket(), traits=ht),
        HostShape(
            "intel-2s-2",
            _cells(2, 12, 4, intel),
            _dual_socket(),
            traits=ht,
            used=((0, 8, 0, 32 * GiB),),
        ),
        HostShape("amd-nps4-1", _cells(4, 8, 8, amd4), kep_four_cells(), traits=ht),
        HostShape(
            "amd-nps4-2",
            _cells(4, 8, 8, amd4),
            kep_four_cells(),
            traits=ht,
            used=((0, 6, 0, 16 * GiB), (1, 2, 0, 8 * GiB)),
        ),
        HostShape("amd-2s-nps4", _cells(8, 8, 4, amd8), kep_eight_cells()),
        HostShape("legacy-1", flat_vcpu=32, flat_memory_mb=128 * GiB, traits=ht),
        HostShape(
            "legacy-non-numa", flat_vcpu=32, flat_memory_mb=128 * GiB, traits=("HW_NON_NUMA",)
        ),
    ] + (device_hosts() if with_devices else [])


DEMO_FLEET = demo_fleet


class DemoError(RuntimeError):
    """An API call of the loader failed (status and body in the message)."""


def _call(
    send: Send, method: str, path: str, body: Any = None, ok: tuple[int, ...] = (200, 201, 204)
) -> Any:
    status, data = send(method, path, body)
    if status not in ok:
        raise DemoError(f"{method} {path} -> {status}: {_detail(data)}")
    return data


def _detail(data: Any) -> str:
    """The ``detail`` of a Placement error body (first line), else the body as JSON."""
    import json

    try:
        return str(data["errors"][0]["detail"]).strip().splitlines()[0]
    except (TypeError, KeyError, IndexError):
        return json.dumps(data)


def _provider(
    send: Send, name: str, parent: str | None = None, uuid: str | None = None
) -> tuple[str, int]:
    body: dict[str, Any] = {"name": name, "uuid": uuid or str(uuidlib.uuid4())}
    if parent:
        body["parent_provider_uuid"] = parent
    data = _call(send, "POST", "/resource_providers", body)
    return data["uuid"], data["generation"]


def _inventories(
    send: Send, rp: str, generation: int, inventories: dict[str, dict[str, Any]]
) -> int:
    data = _call(
        send,
        "PUT",
        f"/resource_providers/{rp}/inventories",
        {"resource_provider_generation": generation, "inventories": inventories},
    )
    return int(data["resource_provider_generation"])


def _traits(send: Send, rp: str, generation: int, traits: list[str]) -> int:
    for trait in traits:
        if trait.startswith("CUSTOM_"):
            _call(send, "PUT", f"/traits/{trait}", None, ok=(201, 204))
    data = _call(
        send,
        "PUT",
        f"/resource_providers/{rp}/traits",
        {"resource_provider_generation": generation, "traits": sorted(traits)},
    )
    return int(data["resource_provider_generation"])


def load_host(send: Send, host: HostShape) -> dict[str, Any]:
    """Create one host's provider tree, distances and existing usage through the API.
    Returns ``{"root": uuid, "cells": {id: uuid}, "pages": {(id, KiB): uuid}}``."""
    import os_traits

    root, gen = _provider(send, host.name, uuid=host.uuid)
    inventory: dict[str, dict[str, Any]] = {"DISK_GB": {"total": host.disk_gb}}
    if not host.cells:
        inventory["VCPU"] = {"total": host.flat_vcpu, "allocation_ratio": 4.0}
        inventory["MEMORY_MB"] = {"total": host.flat_memory_mb}
    gen = _inventories(send, root, gen, inventory)
    if host.traits:
        _traits(send, root, gen, list(host.traits))
    cells: dict[int, str] = {}
    pages: dict[tuple[int, int], str] = {}
    for cell in host.cells:
        cell_uuid, cgen = _provider(send, f"{host.name}_NUMA{cell.id}", root)
        cpu: dict[str, dict[str, Any]] = {}
        # max_unit = total, as the agent reports them: a guest cell never overcommits one host
        # cell's CPUs against itself (Nova's _numa_fit_instance_cell)
        if cell.pcpu:
            cpu["PCPU"] = {"total": cell.pcpu, "max_unit": cell.pcpu}
        if cell.vcpu:
            cpu["VCPU"] = {"total": cell.vcpu, "max_unit": cell.vcpu, "allocation_ratio": 4.0}
        cgen = _inventories(send, cell_uuid, cgen, cpu)
        _traits(send, cell_uuid, cgen, [os_traits.HW_NUMA_ROOT])
        cells[cell.id] = cell_uuid
        for size_kb, memory_mb in sorted(cell.memory_mb.items()):
            label = PAGE_LABEL.get(size_kb, f"{size_kb}K")
            page_uuid, pgen = _provider(send, f"{host.name}_NUMA{cell.id}_{label}", cell_uuid)
            step = step_size_mb(size_kb)
            pgen = _inventories(
                send,
                page_uuid,
                pgen,
                {
                    "MEMORY_MB": {
                        "total": memory_mb,
                        "step_size": step,
                        "min_unit": step,
                        "max_unit": memory_mb,
                    }
                },
            )
            _traits(send, page_uuid, pgen, provider_traits(size_kb))
            pages[(cell.id, size_kb)] = page_uuid
    devices = _devices(send, host, root, cells)
    if host.distances and host.cells:
        matrix = {str(a): {str(b): d for b, d in row.items()} for a, row in host.distances.items()}
        body: dict[str, Any] = {"generation": None, "distances": matrix}
        if host.sockets is not None:
            body["sockets"] = {str(c): s for c, s in host.sockets.items()}
        _call(send, "PUT", f"/resource_providers/{root}/numa_distances", body)
    for cell_id, pcpu, vcpu, memory_mb in host.used:
        resources: dict[str, dict[str, dict[str, int]]] = {}
        cpu_used = {rc: v for rc, v in (("PCPU", pcpu), ("VCPU", vcpu)) if v}
        if cpu_used:
            resources[cells[cell_id]] = {"resources": cpu_used}
        if memory_mb:
            resources[pages[(cell_id, 4)]] = {"resources": {"MEMORY_MB": memory_mb}}
        _call(
            send,
            "PUT",
            f"/allocations/{uuidlib.uuid4()}",
            {
                "allocations": resources,
                "consumer_generation": None,
                "project_id": "demo-project",
                "user_id": "demo-user",
                "consumer_type": "INSTANCE",
            },
        )
    return {"root": root, "cells": cells, "pages": pages, "devices": devices}


def _devices(send: Send, host: HostShape, root: str, cells: Mapping[int, str]) -> dict[str, str]:
    """Create the device providers of ``host`` under their cells (``{address: uuid}``)."""
    found: dict[str, str] = {}
    for device in host.devices:
        parent = cells[device.cell] if device.cell is not None else root
        uuid, gen = _provider(send, f"{host.name}_PCI_{device.address}", parent)
        _call(send, "PUT", f"/resource_classes/{device.resource_class}", None, ok=(201, 204))
        gen = _inventories(
            send,
            uuid,
            gen,
            {device.resource_class: {"total": device.total, "max_unit": device.total}},
        )
        if device.traits:
            _traits(send, uuid, gen, list(device.traits))
        found[device.address] = uuid
    return found


def load_fleet(send: Send, hosts: list[HostShape] | None = None) -> dict[str, dict[str, Any]]:
    """Load every host of ``hosts`` (default: a fresh demo fleet); returns per host name what
    ``load_host`` returns. Raises ``DemoError`` on the first failing call."""
    return {host.name: load_host(send, host) for host in (hosts or demo_fleet())}


def httpx_sender(base_url: str, token: str = "admin", timeout: float = 30.0) -> Send:
    """A ``Send`` over httpx at microversion 1.39 with the noauth2 token
    (``placement_http.open_client``)."""
    from placement_numa.placement_http import open_client

    client = open_client(base_url, token=token, timeout=timeout)

    def send(method: str, path: str, body: Any) -> tuple[int, Any]:
        response = client.request(method, path, json=body)
        try:
            data = response.json() if response.content else None
        except ValueError:
            data = response.text
        return response.status_code, data

    return send


def fleet_is_empty(send: Send) -> bool:
    """True when the service has no resource provider yet."""
    _, data = send("GET", "/resource_providers", None)
    return not (data or {}).get("resource_providers")


def wait_until_up(send: Send, seconds: float = 30.0) -> None:
    """Poll ``/`` until the service answers (raises ``DemoError`` after ``seconds``)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            status, _ = send("GET", "/", None)
            if status == 200:
                return
        except Exception:  # noqa: BLE001 - connection refused while starting
            pass
        if time.monotonic() > deadline:
            raise DemoError("the service did not come up")
        time.sleep(0.2)


def register(subparsers: Any) -> None:
    """Add the ``demo`` subcommand to ``subparsers`` (argparse)."""
    from placement_numa.cli.config_file import add_config_file

    parser = subparsers.add_parser(
        "demo",
        help="load a demo fleet of real NUMA machine shapes",
        description="Load the demo fleet into a running service. Exit codes: 0 loaded (or "
        "skipped with --if-empty), 1 the service is unreachable, refused a write, or already "
        "holds the demo fleet.",
    )
    parser.add_argument("--url", default="http://127.0.0.1:8778", help="service URL")
    parser.add_argument("--token", default="admin", help="x-auth-token (noauth2)")
    parser.add_argument(
        "--if-empty",
        action="store_true",
        help="load only into a service without resource providers (else skip, exit 0)",
    )
    parser.add_argument(
        "--wait",
        type=float,
        default=0.0,
        help="seconds to wait for the service to come up",
    )
    add_config_file(parser, client=True)
    parser.set_defaults(handler=run)


def _already_loaded(send: Send, hosts: list[HostShape]) -> str | None:
    """The name of a demo host the service already has, if any."""
    for host in hosts:
        _, data = send("GET", f"/resource_providers?name={host.name}", None)
        if (data or {}).get("resource_providers"):
            return host.name
    return None


def run(args: argparse.Namespace) -> int:
    """Load the demo fleet into the service at ``--url``; prints one line per host."""
    from placement_numa.cli.failures import CommandError
    from placement_numa.cli.progress import progress

    send = httpx_sender(args.url, args.token)
    if args.wait > 0:
        try:
            wait_until_up(send, seconds=args.wait)
        except DemoError as exc:
            raise CommandError(f"{exc} at {args.url} within {args.wait:g} s") from None
    status, _ = send("GET", "/", None)  # an unreachable service ends here, as one line
    if status != 200:
        raise CommandError(f"{args.url} does not look like a Placement service (GET / -> {status})")
    if not fleet_is_empty(send):
        if args.if_empty:
            print("demo: the service already has resource providers; nothing loaded")
            return 0
        hosts = demo_fleet()
        present = _already_loaded(send, hosts)
        if present is not None:
            raise CommandError(
                f"the demo fleet is already loaded at {args.url} ({present} exists); "
                "nothing loaded (use --if-empty to skip quietly)"
            )
    hosts = demo_fleet(with_devices=True)
    loaded: dict[str, dict[str, Any]] = {}
    try:
        with progress(len(hosts), "loading demo fleet") as advance:
            for host in hosts:
                loaded[host.name] = load_host(send, host)
                advance()
    except DemoError as exc:
        raise CommandError(str(exc)) from None
    for name, host_ids in loaded.items():
        print(f"{name:18} {host_ids['root']}  cells={len(host_ids['cells'])}")
    return 0


def load_when_up(base_url: str, token: str = "admin") -> threading.Thread:
    """``serve --demo``: in a daemon thread, wait for the server at ``base_url`` and load the
    demo fleet if it has no resource provider yet. Returns the started thread."""
    thread = threading.Thread(
        target=load_demo, args=(base_url, token), name="demo-loader", daemon=True
    )
    thread.start()
    return thread


def load_when_up_apart(base_url: str, token: str = "admin") -> subprocess.Popen[bytes]:
    """``serve --demo --prefork``: ``load_when_up`` in a process of its own, so that the
    supervisor holds no thread when it forks workers (a thread inside a lock at a fork, such
    as a stream's while it logs, leaves the child's copy of that lock held forever: the worker
    hangs on its first log line). The process ends once the fleet is loaded or not (within
    the 60 s wait of ``load_demo`` plus the load); the supervisor may reap it (an unknown
    child to it). Returns the started process; raises ``OSError`` when it cannot start."""
    code = "import sys; from placement_numa.cli.demo import load_demo; load_demo(*sys.argv[1:])"
    return subprocess.Popen([sys.executable, "-c", code, base_url, token])


def load_demo(base_url: str, token: str = "admin") -> None:
    """Wait (60 s at most) for the server at ``base_url`` and load the demo fleet if it has no
    resource provider yet; prints one line: ``demo: loaded N hosts (...)``, or why not (on
    stderr). Raises nothing."""
    send = httpx_sender(base_url, token)
    try:
        wait_until_up(send, seconds=60)
        if fleet_is_empty(send):
            loaded = load_fleet(send, demo_fleet(with_devices=True))
            print(f"demo: loaded {len(loaded)} hosts ({', '.join(loaded)})", flush=True)
        else:
            print("demo: database not empty; demo fleet not loaded", flush=True)
    except Exception as exc:  # noqa: BLE001 - report and let the server run
        print(f"demo: not loaded: {exc}", file=sys.stderr, flush=True)
