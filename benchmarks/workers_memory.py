"""Memory of one API node: ``placement-numa serve --workers N`` on a large fleet, PSS per worker.

Starts the service (SQLite, noauth2, ``preload_fleet`` on) on the fleet of
``benchmarks/scale.py`` (``--hosts``, seeded into ``--db`` when missing), in the default mode
(uvicorn's supervisor spawns the workers, each loads its own fleet snapshot) or with
``--prefork`` (one supervisor loads it and forks the workers, which share it copy-on-write:
``placement_numa/cli/prefork.py``). It waits until the node answers and the workers' memory has
settled, then reads ``/proc/<pid>/smaps_rollup`` of the supervisor and of every worker: PSS
(proportional set size: shared pages divided among the processes sharing them), RSS and
private memory, per process and in total.

Copy-on-write erodes as the workers' code touches the inherited objects (CPython writes
reference counts), so the report is printed again after a load: ``--boots`` scheduler boots
(``scheduler_loop.py``'s varied flavors, ``GET /allocation_candidates?limit=1000`` then a claim
of the first candidate) and ``--flavor-posts`` NUMA flavor queries (``POST
/allocation_candidates``, which looks at every host).

Then it kills one worker with SIGKILL, stops the others (SIGSTOP, so that only the
replacement can accept) and times until a query is answered: how long the node runs one
worker short. Every phase prints its wall time, the node's CPU seconds and the load average.

    python benchmarks/workers_memory.py --hosts 10000 --workers 4 --prefork

Issue 30's aim for 100,000 hosts and 8 workers: total PSS <= 1.7 GiB, a replacement answers
within 1 s.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
from proc_cpu import cpu_seconds, descendants  # benchmarks/proc_cpu.py
from scale import seeded  # benchmarks/scale.py
from scheduler_loop import HEADERS, boot, boots  # benchmarks/scheduler_loop.py

FIRST_QUERY = "/allocation_candidates?resources=VCPU:2,MEMORY_MB:2048&limit=10"
FLAVOR = {
    "limit": 10,
    "flavor": {"vcpus": 4, "memory_mb": 4096, "extra_specs": {"hw:numa_nodes": "2"}},
}
SETTLE_POLLS = 4  # memory unchanged (within 1%) this many polls in a row
POLL_S = 0.5


def rollup(pid: int) -> dict[str, int]:
    """``{field: KiB}`` of ``/proc/<pid>/smaps_rollup`` (empty when the process is gone)."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return {}
    found = {}
    for line in text.splitlines()[1:]:
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            found[name] = int(parts[0])
    return found


def workers(supervisor: int) -> list[int]:
    """The supervisor's worker processes: its children (spawned by ``multiprocessing`` or
    forked by ``--prefork``'s supervisor), not multiprocessing's resource tracker."""
    found = []
    for pid in descendants(supervisor):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
            parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if pid != supervisor and parent == supervisor and b"resource_tracker" not in command:
            found.append(pid)
    return found


def settle(supervisor: int, count: int, timeout: float) -> float:
    """Wait until ``count`` workers run and their summed RSS stopped moving; seconds waited."""
    started = time.perf_counter()
    last, still = -1, 0
    while time.perf_counter() - started < timeout:
        pids = workers(supervisor)
        total = sum(rollup(p).get("Rss", 0) for p in pids)
        if len(pids) >= count and last > 0 and abs(total - last) <= last // 100:
            still += 1
            if still >= SETTLE_POLLS:
                return time.perf_counter() - started - SETTLE_POLLS * POLL_S
        else:
            still = 0
        last = total
        time.sleep(POLL_S)
    raise SystemExit(f"workers did not settle within {timeout:.0f} s")


def report(supervisor: int) -> None:
    """PSS, RSS and private MiB per process and in total."""
    print(f"{'process':<12}{'pid':>8}{'PSS MiB':>10}{'RSS MiB':>10}{'private MiB':>13}")
    total = 0
    for role, pid in [("supervisor", supervisor)] + [("worker", p) for p in workers(supervisor)]:
        fields = rollup(pid)
        private = fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)
        total += fields.get("Pss", 0)
        print(
            f"{role:<12}{pid:>8}{fields.get('Pss', 0) / 1024:>10.0f}"
            f"{fields.get('Rss', 0) / 1024:>10.0f}{private / 1024:>13.0f}"
        )
    print(f"{'total PSS':<20}{total / 1024:>10.0f} MiB")


def _node(supervisor: int) -> list[int]:
    return [supervisor, *workers(supervisor)]


def node_cpu(supervisor: int) -> float:
    """CPU seconds of the node: its processes, and the workers it reaped (replaced ones)."""
    try:
        fields = Path(f"/proc/{supervisor}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    reaped = (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")  # cutime, cstime
    return cpu_seconds(_node(supervisor)) + reaped


def phase(name: str, supervisor: int, wall: float, cpu: float) -> None:
    print(
        f"{name}: wall {wall:.1f} s, node CPU {cpu:.1f} s,"
        f" load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )


def load(base: str, count: int, posts: int) -> tuple[int, int]:
    """``count`` scheduler boots (query at ``limit=1000``, claim) and ``posts`` NUMA flavor
    queries, over fresh connections (so every worker takes a share); ``(claims, posts ok)``.

    Prints the p50 and p95 wall ms of the boots' ``GET`` (each a flavor size drawn afresh and,
    after the first, asked right after the previous boot's claim: issue 30's "first-time" and
    "right after a claim" cases at once) and of their claims (``PUT /allocations``)."""
    claimed = done = 0
    gets: list[float] = []
    puts: list[float] = []
    for n, (_, query) in enumerate(boots(count, seed=30)):
        with httpx.Client(base_url=base, headers=HEADERS, timeout=600) as client:
            get_ms, put_ms, ok = boot(client, query, "1000")
            gets.append(get_ms)
            if ok:
                puts.append(put_ms)
            claimed += ok
            if n < posts:
                answer = client.post("/allocation_candidates", json=FLAVOR)
                done += answer.status_code == 200
    for name, timed in (("GET limit=1000 (first-time, after a claim)", gets), ("PUT", puts)):
        if timed:
            ordered = sorted(timed)
            print(
                f"{name}: p50 {statistics.median(ordered):.1f} ms,"
                f" p95 {ordered[int(0.95 * (len(ordered) - 1))]:.1f} ms over {len(ordered)}"
            )
    return claimed, done


def recycled(supervisor: int, limit_mb: int, timeout: float) -> None:
    """Wait until every worker holds at most ``limit_mb`` MiB of its own (the supervisor
    replaces those above: ``serve --prefork-max-private-mb``)."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        held = [
            rollup(pid).get("Private_Clean", 0) + rollup(pid).get("Private_Dirty", 0)
            for pid in workers(supervisor)
        ]
        if held and max(held) <= limit_mb * 1024:
            return
        time.sleep(1)
    raise SystemExit(f"workers still above {limit_mb} MiB after {timeout:.0f} s")


def replacement(base: str, supervisor: int, timeout: float) -> float:
    """Kill a worker (SIGKILL), stop the others (SIGSTOP) and time until a query is answered,
    which only the replacement can do; the others continued after. Seconds."""
    victim, *others = workers(supervisor)
    killed = time.perf_counter()
    os.kill(victim, signal.SIGKILL)
    for pid in others:
        os.kill(pid, signal.SIGSTOP)
    try:
        while time.perf_counter() - killed < timeout:
            try:
                answer = httpx.get(base + FIRST_QUERY, headers=HEADERS, timeout=1)
                if answer.status_code == 200:
                    return time.perf_counter() - killed
            except httpx.HTTPError:
                time.sleep(0.05)
        raise SystemExit(f"no replacement answered within {timeout:.0f} s")
    finally:
        for pid in others:  # uvicorn's supervisor may have replaced a stopped worker meanwhile
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--db", default=None, help="SQLite file (seeded when missing)")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--prefork", action="store_true", help="serve --prefork")
    parser.add_argument(
        "--max-private-mb", type=int, default=0, help="serve --prefork-max-private-mb"
    )
    parser.add_argument("--boots", type=int, default=200, help="scheduler boots of the load")
    parser.add_argument("--flavor-posts", type=int, default=8, help="NUMA flavor queries")
    parser.add_argument("--port", type=int, default=19800)
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    url = seeded(args.hosts, args.db)
    exe = str(Path(sys.executable).with_name("placement-numa"))
    env = dict(
        os.environ,
        PLACEMENT_NUMA_AUTH_STRATEGY="noauth2",
        PLACEMENT_NUMA_LOG_LEVEL="warning",
        PLACEMENT_NUMA_PRELOAD_FLEET="true",
    )
    mode = ["--prefork"] if args.prefork else []
    if args.max_private_mb:
        mode += ["--prefork-max-private-mb", str(args.max_private_mb)]
    started = time.perf_counter()
    proc = subprocess.Popen(
        [exe, "serve", "--port", str(args.port), "--workers", str(args.workers), *mode]
        + ["--database-url", url],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{args.port}"
        while True:
            try:
                if httpx.get(base + "/", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
            if time.perf_counter() - started > args.timeout:
                raise SystemExit("the service did not answer")
        first = time.perf_counter() - started
        waited = settle(proc.pid, args.workers, args.timeout)
        print(
            f"{args.hosts} hosts, {args.workers} workers"
            f" ({' '.join(mode) or 'spawned'}): first answer {first:.1f} s after"
            f" start, workers settled {first + waited:.1f} s after start"
        )
        phase("start", proc.pid, first + waited, node_cpu(proc.pid))
        report(proc.pid)
        cpu = node_cpu(proc.pid)
        began = time.perf_counter()
        claimed, posted = load(base, args.boots, args.flavor_posts)
        print(f"after {args.boots} boots ({claimed} claimed) and {posted} NUMA flavor queries:")
        phase("load", proc.pid, time.perf_counter() - began, node_cpu(proc.pid) - cpu)
        report(proc.pid)
        if args.max_private_mb:
            began = time.perf_counter()
            recycled(proc.pid, args.max_private_mb, args.timeout)
            print(f"every worker under {args.max_private_mb} MiB private (replaced ones forked):")
            phase("recycling", proc.pid, time.perf_counter() - began, node_cpu(proc.pid) - cpu)
            report(proc.pid)
        answered = replacement(base, proc.pid, args.timeout)
        print(f"a worker killed (SIGKILL): its replacement answered {answered:.2f} s later")
        settle(proc.pid, args.workers, args.timeout)
        report(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
