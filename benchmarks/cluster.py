"""Writes through 1, 2 and 3 nodes of a MariaDB Galera cluster, ours and upstream Placement 16.

One 3-node Galera cluster on loopback (``tests/galera_cluster.py``: three ``mariadbd`` as user
``mysql``, rsync state transfer). For each service (placement-numa, then upstream Placement 16
through ``benchmarks/upstream.py``) and each number of nodes ``n`` in 1, 2, 3, one service
instance per node (``--workers`` processes each), each on its own node's URL; ``--hosts``
providers with a large ``VCPU`` inventory are seeded once per service. Then ``c`` concurrent
writers (16 and 64) run for ``--seconds``, writer ``i`` through instance ``i % n``: each write
is ``PUT /allocations/{new consumer}`` of 1 VCPU on provider ``i % hosts`` (microversion 1.28,
the body both services take), so writers touch different providers unless there are more
writers than hosts. Each writer makes one write before the clock starts (connections, pools).

Reported per row: writes/s (2xx answers), p50 and p99 latency (ms) of the answers, answers
other than 2xx, and the conflicts the cluster reports per write: the growth of
``wsrep_local_cert_failures`` + ``wsrep_local_bf_aborts`` summed over the nodes (a transaction
that failed certification or was brute-force aborted by a replicated write; each is re-run by
the service: ours counts its re-runs too, ``reruns``, from its log).

    python benchmarks/cluster.py [--seconds 8] [--hosts 64] [--workers 2] [--skip-upstream]

Wall figures on a shared, loaded machine are noisy; the conflict counts are not.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.galera_cluster

from upstream import upstream_placement  # noqa: E402  benchmarks/upstream.py

from placement_numa.app import prepare_database  # noqa: E402
from placement_numa.settings import Settings  # noqa: E402
from tests.galera_cluster import GaleraCluster  # noqa: E402
from tests.servers import free_port, wait_until_up  # noqa: E402

__all__ = ["Row", "measure", "main"]

PORTS = range(19850, 19900)  # this benchmark's services (the cluster takes 19600-19699)

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.28"}
CONFLICT_COUNTERS = ("wsrep_local_cert_failures", "wsrep_local_bf_aborts")


@dataclass(frozen=True)
class Row:
    """One measurement: ``service`` through ``nodes`` nodes with ``writers`` writers."""

    service: str
    nodes: int
    writers: int
    writes: int
    seconds: float
    p50_ms: float
    p99_ms: float
    failed: int
    conflicts: int
    reruns: int | None

    def line(self) -> str:
        """The row as printed (and as copied into the docs)."""
        reruns = "-" if self.reruns is None else f"{self.reruns / max(1, self.writes):.3f}"
        return (
            f"{self.service:<9} nodes={self.nodes} writers={self.writers:>2}"
            f" writes/s={self.writes / self.seconds:7.1f} p50={self.p50_ms:6.1f}ms"
            f" p99={self.p99_ms:7.1f}ms not_2xx={self.failed:>4}"
            f" conflicts/write={self.conflicts / max(1, self.writes):.3f}"
            f" reruns/write={reruns}"
        )


def conflicts(cluster: GaleraCluster) -> int:
    """Certification failures plus brute-force aborts so far, summed over the nodes."""
    total = 0
    for index in range(cluster.size):
        rows = cluster.execute(
            index,
            "SHOW GLOBAL STATUS WHERE Variable_name IN"
            f" ({', '.join(repr(name) for name in CONFLICT_COUNTERS)})",
        )
        total += sum(int(str(value)) for _, value in rows)
    return total


@contextmanager
def ours(port: int, database_url: str, workers: int, log: Path) -> Iterator[str]:
    """``placement-numa serve`` on ``port`` logging to ``log``; yields the base URL."""
    exe = str(Path(sys.executable).with_name("placement-numa"))
    env = dict(os.environ, PLACEMENT_NUMA_AUTH_STRATEGY="noauth2")
    with log.open("ab") as out:
        process = subprocess.Popen(
            [exe, "serve", "--port", str(port), "--workers", str(workers), "--no-migrate"]
            + ["--database-url", database_url],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(process, base, log, 120)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


def seed(base: str, hosts: int) -> list[str]:
    """``hosts`` providers with 10**6 VCPU each; their uuids."""
    uuids = []
    with httpx.Client(base_url=base, headers=HEADERS, timeout=60) as client:
        for i in range(hosts):
            rp = str(uuid.uuid4())
            created = client.post("/resource_providers", json={"name": f"w{i}", "uuid": rp})
            created.raise_for_status()
            client.put(
                f"/resource_providers/{rp}/inventories",
                json={"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 10**6}}},
            ).raise_for_status()
            uuids.append(rp)
    return uuids


def measure(
    service: str,
    cluster: GaleraCluster,
    bases: list[str],
    providers: list[str],
    writers: int,
    seconds: float,
    logs: list[Path],
) -> Row:
    """``writers`` threads writing for ``seconds`` through ``bases`` (writer i: ``bases[i %
    len]``); see the module docstring."""
    latencies: list[float] = []
    failed = [0]
    lock = threading.Lock()
    stop = threading.Event()
    start_gate = threading.Barrier(writers + 1)

    def writer(index: int) -> None:
        provider = providers[index % len(providers)]
        body = {
            "allocations": {provider: {"resources": {"VCPU": 1}}},
            "project_id": "bench",
            "user_id": "bench",
            "consumer_generation": None,
        }
        with httpx.Client(base_url=bases[index % len(bases)], headers=HEADERS, timeout=120) as c:
            c.put(f"/allocations/{uuid.uuid4()}", json=body)  # warm-up: connections, pools
            start_gate.wait()
            while not stop.is_set():
                sent = time.perf_counter()
                response = c.put(f"/allocations/{uuid.uuid4()}", json=body)
                took = time.perf_counter() - sent
                with lock:
                    if response.status_code < 300:
                        latencies.append(took)
                    else:
                        failed[0] += 1

    reruns_before = sum(_reruns(log) for log in logs)
    conflicts_before = conflicts(cluster)
    threads = [threading.Thread(target=writer, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    start_gate.wait()
    started = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    latencies.sort()
    return Row(
        service,
        len(bases),
        writers,
        len(latencies),
        elapsed,
        1000 * statistics.median(latencies) if latencies else 0.0,
        1000 * latencies[int(0.99 * (len(latencies) - 1))] if latencies else 0.0,
        failed[0],
        conflicts(cluster) - conflicts_before,
        sum(_reruns(log) for log in logs) - reruns_before if service == "ours" else None,
    )


def _reruns(log: Path) -> int:
    """Re-runs our service logged (``api/db_retry.py``: "retrying ...")."""
    return log.read_text(errors="replace").count("retrying ") if log.exists() else 0


def run_ours(cluster: GaleraCluster, args: argparse.Namespace, work: Path) -> list[Row]:
    """Our rows: 1, 2 and 3 nodes x 16 and 64 writers."""
    cluster.execute(0, "CREATE DATABASE pn_bench CHARACTER SET utf8mb4")
    prepare_database(Settings(database_url=cluster.url(0, "pn_bench")))
    rows = []
    for nodes in (1, 2, 3):
        logs = [work / f"ours-{nodes}-{i}.log" for i in range(nodes)]
        with ExitStack() as stack:
            bases = [
                stack.enter_context(
                    ours(free_port(PORTS), cluster.url(i, "pn_bench"), args.workers, logs[i])
                )
                for i in range(nodes)
            ]
            if nodes == 1:
                providers = seed(bases[0], args.hosts)
            for writers in (16, 64):
                rows.append(measure("ours", cluster, bases, providers, writers, args.seconds, logs))
                print(rows[-1].line(), flush=True)
    return rows


def run_upstream(cluster: GaleraCluster, args: argparse.Namespace) -> list[Row]:
    """Upstream Placement 16's rows on the same cluster (its own database)."""
    cluster.execute(0, "CREATE DATABASE up_bench CHARACTER SET utf8mb4")
    rows = []
    for nodes in (1, 2, 3):
        with ExitStack() as stack:
            bases = [
                stack.enter_context(
                    upstream_placement(
                        free_port(PORTS),
                        database_url=cluster.url(i, "up_bench").replace(
                            "mysql://", "mysql+pymysql://"
                        ),
                        workers=args.workers,
                    )
                )
                for i in range(nodes)
            ]
            if nodes == 1:
                providers = seed(bases[0], args.hosts)
            for writers in (16, 64):
                rows.append(
                    measure("upstream", cluster, bases, providers, writers, args.seconds, [])
                )
                print(rows[-1].line(), flush=True)
    return rows


def main() -> int:
    """Start the cluster, measure, print the rows, stop everything."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--hosts", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--skip-upstream", action="store_true")
    args = parser.parse_args()
    import tempfile

    with tempfile.TemporaryDirectory(prefix="pn-cluster-bench-") as tmp, GaleraCluster() as cl:
        rows = run_ours(cl, args, Path(tmp))
        if not args.skip_upstream:
            rows += run_upstream(cl, args)
    print("\n".join(["", "summary:"] + [row.line() for row in rows]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
