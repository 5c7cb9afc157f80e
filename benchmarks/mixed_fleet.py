"""A fleet seeded the way a cloud fills up: hosts of mixed sizes, some with 1 GiB pages, guests.

Issue 21's fleet (``host_specs``, reproducible with ``--seed``): each host has ``cells`` NUMA
cells of one size drawn per host: ``VCPU`` 16, 24 or 32 (allocation ratio 4.0), ``PCPU`` 8 or 16,
4K-page ``MEMORY_MB`` 32-128 GiB, 2M-page ``MEMORY_MB`` 8-32 GiB, and on a quarter of the hosts
1G-page ``MEMORY_MB`` 4-16 GiB; the root has ``DISK_GB`` (500, 1000 or 2000); cells carry
``HW_NUMA_ROOT``, page-size children ``CUSTOM_MEMORY_PAGE_SIZE_<KiB>`` (the traits upstream
Placement knows too). 30% of the hosts carry 1-3 guests: the first takes 50-90% of one cell's 4K
memory, the others 1-4 GiB of 4K or 2M memory; every guest takes ``VCPU`` and ``DISK_GB``.

Seeded over REST the Placement way on both services (``seed_rest``: ``POST
/resource_providers``, ``PUT .../inventories``, ``PUT .../traits`` per provider, then ``PUT
/allocations/{consumer}`` per guest), or for ours alone with ``POST /resource_providers/batch``
(``seed_batch``; the 10,000-host fleet). Then ``main`` times ``QUERIES`` on both services in
alternating rounds (ours, upstream, ours, ...), on one fleet each from the same specs, and
prints per case the p50 of each side, the ratio with its spread over the rounds, and the CPU
seconds per request of each service's processes beside the wall time:

    python benchmarks/mixed_fleet.py --hosts 1000 --cells 2 --rounds 5
    python benchmarks/mixed_fleet.py --hosts 1000 --cells 4 --only two-cell --limits none
    python benchmarks/mixed_fleet.py --hosts 10000 --cells 2 --skip-upstream --ours-seed batch \
        --only two-cell --limits 1000

Both services run on SQLite with 2 workers. Ports ``--port`` (ours) and ``--port + 1``.

Seeded fleets are kept between runs: each side's SQLite file lives in
``~/.cache/placement-numa/fleets/mixed-seed{SEED}-{HOSTS}x{CELLS}/`` (``--workdir`` elsewhere,
``--fresh`` for a new temporary one) and is reused only when its seeding finished there
(``{side}.seeded``), so upstream's slow seeding over REST (14,000 providers: ~40 minutes on a
busy 2-core machine) is paid once per fleet. Timing uses ``http.client`` (see ``time_case``).
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from candidates import HEADERS, create, put  # benchmarks/candidates.py
from proc_cpu import cpu_seconds, descendants  # benchmarks/proc_cpu.py
from side_by_side import SERVER_PIDS, RetryingClient, ours  # benchmarks/side_by_side.py
from upstream import upstream_placement  # benchmarks/upstream.py

GIB = 1024  # MiB
# page size label, trait (KiB), step_size in MiB
PAGES = (("4K", "CUSTOM_MEMORY_PAGE_SIZE_4", 1), ("2M", "CUSTOM_MEMORY_PAGE_SIZE_2048", 2))
PAGE_1G = ("1G", "CUSTOM_MEMORY_PAGE_SIZE_1048576", GIB)


def _cell(n: int, page_trait: str) -> str:
    return (
        f"resources_PROC{n}=VCPU:4&resources_MEM{n}=MEMORY_MB:4096"
        f"&required_MEM{n}={page_trait}&required_NUMA{n}=HW_NUMA_ROOT"
        f"&same_subtree=_PROC{n},_MEM{n},_NUMA{n}"
    )


# issue 21's queries (microversion 1.39), with the page-size traits both services know
QUERIES = {
    "two-cell": "resources=DISK_GB:10&"
    + "&".join(_cell(n, "CUSTOM_MEMORY_PAGE_SIZE_4") for n in (1, 2))
    + "&group_policy=none",
    "flat": "resources=VCPU:2,MEMORY_MB:2048,DISK_GB:10",
    "hugepage": "resources=DISK_GB:10&"
    + "&".join(_cell(n, "CUSTOM_MEMORY_PAGE_SIZE_2048") for n in (1, 2))
    + "&group_policy=none",
}


@dataclass
class Guest:
    """One running instance: ``vcpu`` on cell ``cell``, ``memory_mb`` of ``page`` pages there,
    ``disk_gb`` on the root."""

    cell: int
    vcpu: int
    memory_mb: int
    page: str
    disk_gb: int


@dataclass
class HostSpec:
    """One compute node: per-cell sizes (every cell alike), ``memory_mb[page]`` per cell,
    ``disk_gb`` on the root, and its guests."""

    number: int
    cells: int
    vcpu: int
    pcpu: int
    memory_mb: dict[str, int]
    disk_gb: int
    guests: list[Guest] = field(default_factory=list)


def host_specs(hosts: int, cells: int, seed: int) -> list[HostSpec]:
    """``hosts`` host specs drawn with ``random.Random(seed)`` (see the module docstring)."""
    rng = random.Random(seed)
    specs = []
    for h in range(hosts):
        memory = {
            "4K": rng.randrange(32, 129, 8) * GIB,
            "2M": rng.randrange(8, 33, 4) * GIB,
        }
        if rng.random() < 0.25:
            memory["1G"] = rng.choice((4, 8, 16)) * GIB
        spec = HostSpec(
            h,
            cells,
            rng.choice((16, 24, 32)),
            rng.choice((8, 16)),
            memory,
            rng.choice((500, 1000, 2000)),
        )
        if rng.random() < 0.3:
            spec.guests = _guests(rng, spec, rng.randint(1, 3))
        specs.append(spec)
    return specs


def _guests(rng: random.Random, spec: HostSpec, count: int) -> list[Guest]:
    used: dict[tuple[int, str], int] = {}
    vcpus: dict[int, int] = {}
    guests = []
    for n in range(count):
        cell = rng.randrange(spec.cells)
        if n == 0:
            page = "4K"
            memory = int(spec.memory_mb["4K"] * rng.uniform(0.5, 0.9)) // GIB * GIB
        else:
            page = rng.choice(("4K", "2M"))
            memory = rng.randint(1, 4) * GIB
        vcpu = rng.choice((2, 4, 8))
        if used.get((cell, page), 0) + memory > spec.memory_mb[page]:
            continue
        if vcpus.get(cell, 0) + vcpu > spec.vcpu * 4:
            continue
        used[(cell, page)] = used.get((cell, page), 0) + memory
        vcpus[cell] = vcpus.get(cell, 0) + vcpu
        guests.append(Guest(cell, vcpu, memory, page, rng.choice((20, 40, 80))))
    return guests


def _pages(spec: HostSpec) -> list[tuple[str, str, int]]:
    return [*PAGES, PAGE_1G] if "1G" in spec.memory_mb else list(PAGES)


def _cell_inventory(spec: HostSpec) -> dict[str, Any]:
    return {"VCPU": {"total": spec.vcpu, "allocation_ratio": 4.0}, "PCPU": {"total": spec.pcpu}}


def _page_inventory(spec: HostSpec, page: str, step: int) -> dict[str, Any]:
    return {"MEMORY_MB": {"total": spec.memory_mb[page], "step_size": step}}


def seed_host_rest(client: httpx.Client, spec: HostSpec) -> dict[str, str]:
    """Create ``spec``'s tree the Placement way (three requests per provider); returns uuids
    keyed ``root``, ``cell{c}``, ``cell{c}_{page}``."""
    h = spec.number
    root = create(client, f"cn{h}", None, {"DISK_GB": {"total": spec.disk_gb}}, [])
    found = {"root": root}
    for c in range(spec.cells):
        cell = create(client, f"cn{h}_NUMA{c}", root, _cell_inventory(spec), ["HW_NUMA_ROOT"])
        found[f"cell{c}"] = cell
        for page, trait, step in _pages(spec):
            found[f"cell{c}_{page}"] = create(
                client, f"cn{h}_NUMA{c}_{page}", cell, _page_inventory(spec, page, step), [trait]
            )
    return found


def batch_entries(spec: HostSpec) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """``spec``'s tree as ``POST /resource_providers/batch`` entries (parents first) and its
    uuids keyed as ``seed_host_rest`` returns them."""
    h = spec.number
    root = str(uuid.uuid4())
    entries: list[dict[str, Any]] = [
        {"uuid": root, "name": f"cn{h}", "inventories": {"DISK_GB": {"total": spec.disk_gb}}}
    ]
    found = {"root": root}
    for c in range(spec.cells):
        cell = found[f"cell{c}"] = str(uuid.uuid4())
        entries.append(
            {
                "uuid": cell,
                "name": f"cn{h}_NUMA{c}",
                "parent_provider_uuid": root,
                "inventories": _cell_inventory(spec),
                "traits": ["HW_NUMA_ROOT"],
            }
        )
        for page, trait, step in _pages(spec):
            child = found[f"cell{c}_{page}"] = str(uuid.uuid4())
            entries.append(
                {
                    "uuid": child,
                    "name": f"cn{h}_NUMA{c}_{page}",
                    "parent_provider_uuid": cell,
                    "inventories": _page_inventory(spec, page, step),
                    "traits": [trait],
                }
            )
    return entries, found


def place_guests(client: httpx.Client, spec: HostSpec, tree: dict[str, str]) -> None:
    """``PUT /allocations/{new consumer}`` for each of ``spec``'s guests."""
    for guest in spec.guests:
        body = {
            "allocations": {
                tree["root"]: {"resources": {"DISK_GB": guest.disk_gb}},
                tree[f"cell{guest.cell}"]: {"resources": {"VCPU": guest.vcpu}},
                tree[f"cell{guest.cell}_{guest.page}"]: {
                    "resources": {"MEMORY_MB": guest.memory_mb}
                },
            },
            "project_id": "bench",
            "user_id": "bench",
            "consumer_generation": None,
        }
        put(client, f"/allocations/{uuid.uuid4()}", body, version="1.28")


def seed(base: str, specs: list[HostSpec], way: str = "rest") -> dict[str, float]:
    """Seed ``specs`` into the service at ``base`` (16 client threads), ``way`` "rest" (the
    Placement way) or "batch" (10 host trees per ``POST /resource_providers/batch``), then
    their guests. Returns ``{"wall": s, "providers": n}``."""
    started = time.perf_counter()
    seed_trees(base, specs, way)
    providers = sum(1 + s.cells * (1 + len(_pages(s))) for s in specs)
    return {"wall": time.perf_counter() - started, "providers": providers}


def seed_trees(base: str, specs: list[HostSpec], way: str = "rest") -> list[dict[str, str]]:
    """``seed``'s work; returns each host's provider uuids (``seed_host_rest``'s keys)."""
    limits = httpx.Limits(max_connections=32)
    with RetryingClient(base_url=base, timeout=600, limits=limits) as client:
        for _, trait, _ in (*PAGES, PAGE_1G):
            client.put(f"/traits/{trait}", headers=HEADERS)
        with ThreadPoolExecutor(16) as pool:
            if way == "rest":
                trees = list(pool.map(lambda s: seed_host_rest(client, s), specs))
            else:
                chunks = [specs[i : i + 10] for i in range(0, len(specs), 10)]
                trees = [
                    t for chunk in pool.map(lambda c: _batch(client, c), chunks) for t in chunk
                ]
            list(pool.map(lambda pair: place_guests(client, *pair), zip(specs, trees, strict=True)))
    return trees


def _batch(client: httpx.Client, chunk: list[HostSpec]) -> list[dict[str, str]]:
    entries: list[dict[str, Any]] = []
    found = []
    for spec in chunk:
        tree, uuids = batch_entries(spec)
        entries += tree
        found.append(uuids)
    r = client.post(
        "/resource_providers/batch", json={"resource_providers": entries}, headers=HEADERS
    )
    if r.status_code != 200:
        raise RuntimeError(f"POST /resource_providers/batch: {r.status_code} {r.text[:300]}")
    return found


def snapshot_rows(
    specs: list[HostSpec], *, standard_page_traits: bool = False
) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
    """The fleet of ``specs`` as ``FleetSnapshot.build`` rows (providers, inventories, usages,
    traits), guests' allocations summed into usages, for in-process benchmarks and tests."""
    providers: list[Any] = []
    inventories: list[Any] = []
    usages: list[Any] = []
    traits: list[Any] = []

    def add(parent: int | None, root: int | None, invs: dict[str, Any], names: list[str]) -> int:
        pid = len(providers) + 1
        providers.append((pid, str(uuid.UUID(int=pid)), parent, root or pid))
        for rc, inv in invs.items():
            total = inv["total"]
            ratio = inv.get("allocation_ratio", 1.0)
            inventories.append((pid, rc, total, 0, 1, total, inv.get("step_size", 1), ratio))
        traits.extend((pid, name) for name in names)
        return pid

    for spec in specs:
        root = add(None, None, {"DISK_GB": {"total": spec.disk_gb}}, [])
        tree = {"root": root}
        for c in range(spec.cells):
            cell = tree[f"cell{c}"] = add(root, root, _cell_inventory(spec), ["HW_NUMA_ROOT"])
            for page, trait, step in _pages(spec):
                names = [trait]
                if standard_page_traits:
                    names.append(
                        "MEMORY_PAGE_SIZE_SMALL" if page == "4K" else "MEMORY_PAGE_SIZE_LARGE"
                    )
                tree[f"cell{c}_{page}"] = add(cell, root, _page_inventory(spec, page, step), names)
        for guest in spec.guests:
            usages.append((tree["root"], "DISK_GB", guest.disk_gb))
            usages.append((tree[f"cell{guest.cell}"], "VCPU", guest.vcpu))
            usages.append((tree[f"cell{guest.cell}_{guest.page}"], "MEMORY_MB", guest.memory_mb))
    return providers, inventories, usages, traits


def fleet_cache(seed: int, hosts: int, cells: int) -> Path:
    """Where the SQLite files of the mixed fleet ``(seed, hosts, cells)`` are kept between runs
    (``{side}.db``, and ``{side}.seeded`` once that side's seeding finished)."""
    return (
        Path.home() / ".cache" / "placement-numa" / "fleets" / f"mixed-seed{seed}-{hosts}x{cells}"
    )


def _service_pids(base: str) -> list[int]:
    """The processes of the service at ``base`` (ours: by its recorded pid; upstream: every
    other process this script started)."""
    mine = descendants(os.getpid())[1:]
    if base in SERVER_PIDS:
        return descendants(SERVER_PIDS[base])
    ours_pids = {p for pid in SERVER_PIDS.values() for p in descendants(pid)}
    return [p for p in mine if p not in ours_pids]


def time_case(
    client: http.client.HTTPConnection, base: str, url: str, repeat: int
) -> dict[str, Any]:
    """GET ``url`` ``repeat`` times: wall per request (ms, to the body's last byte), the
    service's CPU ms per request (every process of it, from /proc), the candidate count.

    The client is the standard library's ``http.client`` on one kept-alive connection: it
    reads a body with a few large reads, where httpx's Python-level decoding added ~10-20 ms
    per 4 MB answer to both sides' wall time."""
    pids = _service_pids(base)
    walls = []
    count = -1
    cpu0 = cpu_seconds(pids)
    for _ in range(repeat):
        for attempt in (1, 2):
            t0 = time.perf_counter()
            try:
                client.request("GET", url, headers=HEADERS)
                response = client.getresponse()
                body = response.read()
                break
            except (http.client.RemoteDisconnected, ConnectionError):
                # the service closed the kept-alive connection while the other one was timed
                client.close()
                if attempt == 2:
                    raise
        walls.append((time.perf_counter() - t0) * 1000)
        if response.status != 200:
            raise RuntimeError(f"{url}: {response.status} {body[:300]!r}")
        count = body.count(b'"allocations":')
    cpu = (cpu_seconds(pids) - cpu0) * 1000 / repeat
    return {"walls": walls, "cpu": cpu, "count": count}


def _rounds(
    bases: dict[str, str], cases: list[tuple[str, str]], rounds: int, repeat: dict[str, int]
) -> Iterator[tuple[int, str, tuple[str, str], dict[str, Any]]]:
    clients = {
        side: http.client.HTTPConnection(urlsplit(base).netloc, timeout=1200)
        for side, base in bases.items()
    }
    try:
        for side, client in clients.items():  # warm up every case once
            for name, limit in cases:
                time_case(client, bases[side], _url(name, limit), 1)
        for n in range(rounds):
            for case in cases:
                for side, client in clients.items():
                    yield n, side, case, time_case(client, bases[side], _url(*case), repeat[side])
    finally:
        for client in clients.values():
            client.close()


def _url(name: str, limit: str) -> str:
    return (
        "/allocation_candidates?" + QUERIES[name] + ("" if limit == "none" else f"&limit={limit}")
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--cells", type=int, default=2)
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--port", type=int, default=19410)
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds")
    parser.add_argument("--repeat", type=int, default=5, help="requests per case, side, round")
    parser.add_argument("--upstream-repeat", type=int, default=1)
    parser.add_argument("--only", nargs="*", default=list(QUERIES))
    parser.add_argument("--limits", nargs="*", default=["none", "1000"])
    parser.add_argument("--skip-upstream", action="store_true")
    parser.add_argument("--ours-seed", choices=("rest", "batch"), default="rest")
    parser.add_argument(
        "--workdir",
        type=Path,
        help="keep the SQLite files here (default: ~/.cache/placement-numa/fleets/"
        "mixed-seed{SEED}-{HOSTS}x{CELLS}); a side whose seeding finished there before is not"
        " seeded again",
    )
    parser.add_argument("--fresh", action="store_true", help="seed both sides in a new temp dir")
    args = parser.parse_args()

    specs = host_specs(args.hosts, args.cells, args.seed)
    guests = sum(len(s.guests) for s in specs)
    workdir = args.workdir or fleet_cache(args.seed, args.hosts, args.cells)
    if args.fresh:
        workdir = Path(tempfile.mkdtemp(prefix="pn-mixed-"))
    workdir.mkdir(parents=True, exist_ok=True)
    seeded_before = set()
    for side in ("ours",) if args.skip_upstream else ("ours", "upstream"):
        if (workdir / f"{side}.seeded").exists():
            seeded_before.add(side)
        else:  # never seeded, or a seeding cut short: start over
            for leftover in workdir.glob(f"{side}.db*"):
                leftover.unlink()
    bases: dict[str, str] = {}
    with ExitStack() as stack:
        bases["ours"] = stack.enter_context(ours(args.port, f"sqlite:///{workdir / 'ours.db'}"))
        if not args.skip_upstream:
            bases["upstream"] = stack.enter_context(
                upstream_placement(
                    args.port + 1, database_url=f"sqlite:///{workdir / 'upstream.db'}"
                )
            )
        for side, base in bases.items():
            if side in seeded_before:
                print(f"{side:9} reuses {workdir / side}.db", flush=True)
                continue
            way = args.ours_seed if side == "ours" else "rest"
            seeded = seed(base, specs, way)
            (workdir / f"{side}.seeded").write_text(f"{way} {seeded['wall']:.1f} s\n")
            print(
                f"{side:9} seeded {seeded['providers']:.0f} providers, {guests} guests"
                f" ({way}) in {seeded['wall']:.1f} s",
                flush=True,
            )
        cases = [(name, limit) for name in args.only for limit in args.limits]
        repeat = {"ours": args.repeat, "upstream": args.upstream_repeat}
        samples: dict[tuple[str, tuple[str, str]], list[dict[str, Any]]] = {}
        for n, side, case, figures in _rounds(bases, cases, args.rounds, repeat):
            samples.setdefault((side, case), []).append(figures)
            print(
                f"round {n} {side:9}{case[0]:10}{case[1]:>6}{figures['count']:>7}"
                f"{statistics.median(figures['walls']):10.1f} ms wall"
                f"{figures['cpu']:10.1f} ms CPU",
                flush=True,
            )
    _report(args, specs, guests, cases, samples)
    return 0


def _report(
    args: argparse.Namespace,
    specs: list[HostSpec],
    guests: int,
    cases: list[tuple[str, str]],
    samples: dict[tuple[str, tuple[str, str]], list[dict[str, Any]]],
) -> None:
    providers = sum(1 + s.cells * (1 + len(_pages(s))) for s in specs)
    print()
    print(
        f"mixed fleet --seed {args.seed}: {args.hosts} hosts x {args.cells} cells,"
        f" {providers} providers, {guests} guests; SQLite, 2 workers each;"
        f" {args.rounds} alternating rounds; load average {os.getloadavg()[0]:.1f}"
    )
    print(
        "| case | candidates | ours p50 wall | ours CPU/req | upstream p50 wall"
        " | upstream CPU/req | ratio p50 (rounds min-max) | ratio CPU |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for case in cases:
        mine = samples[("ours", case)]
        walls = [w for s in mine for w in s["walls"]]
        cpu = statistics.median(s["cpu"] for s in mine)
        row = (
            f"| {case[0]}, limit {case[1]} | {mine[0]['count']} |"
            f" {statistics.median(walls):.1f} ms | {cpu:.1f} ms |"
        )
        up = samples.get(("upstream", case))
        if up:
            up_walls = [w for s in up for w in s["walls"]]
            up_cpu = statistics.median(s["cpu"] for s in up)
            per_round = [
                statistics.median(u["walls"]) / statistics.median(o["walls"])
                for o, u in zip(mine, up, strict=True)
            ]
            row += (
                f" {statistics.median(up_walls):.1f} ms | {up_cpu:.1f} ms |"
                f" {statistics.median(up_walls) / statistics.median(walls):.1f}x"
                f" ({min(per_round):.1f}-{max(per_round):.1f}x) |"
                f" {up_cpu / max(cpu, 0.1):.0f}x |"
            )
            if up[0]["count"] != mine[0]["count"]:
                row += f" COUNT MISMATCH upstream {up[0]['count']}"
        else:
            row += " | | | |"
        print(row)


if __name__ == "__main__":
    raise SystemExit(main())
