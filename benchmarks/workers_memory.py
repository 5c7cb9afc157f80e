"""Memory of one API node: ``placement-numa serve --workers N`` on a large fleet, PSS per worker.

Starts the service (SQLite, noauth2, ``preload_fleet`` on: each worker loads its fleet snapshot
before it serves) on the fleet of ``benchmarks/scale.py`` (``--hosts``, seeded into ``--db``
when missing), waits until the node answers and the workers' memory has settled, then reads
``/proc/<pid>/smaps_rollup`` of the supervisor and of every worker: PSS (proportional set size:
shared pages divided among the processes sharing them), RSS and private memory, per process and
in total. Then kills one worker with SIGKILL and times until its replacement has loaded (its
memory settled), which is how long the node runs one worker short.

    python benchmarks/workers_memory.py --hosts 10000 --workers 4

Issue 30's aim for 100,000 hosts and 8 workers: total PSS <= 1.5 x one worker's today.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from proc_cpu import descendants  # benchmarks/proc_cpu.py
from scale import seeded  # benchmarks/scale.py

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
    """The supervisor's worker processes (descendants started by ``multiprocessing.spawn``;
    not its resource tracker)."""
    found = []
    for pid in descendants(supervisor):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if pid != supervisor and b"spawn_main" in command:
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--db", default=None, help="SQLite file (seeded when missing)")
    parser.add_argument("--workers", type=int, default=4)
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
    started = time.perf_counter()
    proc = subprocess.Popen(
        [exe, "serve", "--port", str(args.port), "--workers", str(args.workers)]
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
            f"{args.hosts} hosts, {args.workers} workers: first answer {first:.1f} s after start,"
            f" workers settled {first + waited:.1f} s after start;"
            f" load average {os.getloadavg()[0]:.1f}"
        )
        report(proc.pid)
        victim = workers(proc.pid)[0]
        killed = time.perf_counter()
        os.kill(victim, signal.SIGKILL)
        time.sleep(POLL_S)
        settle(proc.pid, args.workers, args.timeout)
        print(
            f"a worker killed (SIGKILL): replacement loaded {time.perf_counter() - killed:.1f} s"
            " later"
        )
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
