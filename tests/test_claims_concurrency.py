"""Racing claimers against the real service: ``placement-numa serve --workers 2`` per backend.

Fleet: ``HOSTS`` compute nodes of two NUMA cells (``PCPU`` 4 and 4096 MB of small pages per
cell). The guest is pinned over two cells (4 PCPU, 2048 MB: 2 PCPU and 1024 MB per cell), so
each host holds two and the fleet ``2 * HOSTS``.

``PROCESSES x THREADS`` claimers call ``POST /allocation_candidates/claim`` until they are told
``placement_numa.claim.no_room``. Thread t of each process walks the same list of consumer
uuids, so every consumer is claimed by two racers (in two processes) at once. Asserted:

* every answer is 200, 409 ``placement_numa.claim.no_room`` or 409
  ``placement.concurrent_update`` (the twin got that consumer first); never a 5xx;
* the fleet is exactly full at the end, and no no_room answer arrived before some successful
  claim was sent (room only shrinks, so that claim proves room remained: a refusal while room
  remained);
* 0 over-commits: for every provider, usage <= (total - reserved) * allocation_ratio, read back
  with ``GET /resource_providers/{uuid}/usages`` and ``/inventories``;
* a consumer is never claimed twice: each claimed consumer has generation 1 and exactly one
  guest's worth of allocations, and the successes equal the consumers with allocations.

Figures (claims, 409s by code, seconds) are printed per backend (``-s``).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from placement_numa.app import prepare_database
from placement_numa.cli.demo import HostShape, _cells, httpx_sender, load_host
from placement_numa.settings import Settings
from tests.backends import (
    BACKENDS,
    TestDatabase,
    drop_database,
    reachable_database,
)
from tests.servers import free_port, stop_process, wait_until_up

pytestmark = pytest.mark.slow

HOSTS = 10
PROCESSES = 2
THREADS = 4  # 8 claimers: thread t of each process walks the same consumers
GUEST_PCPU = 4
FLAVOR = {
    "vcpus": GUEST_PCPU,
    "memory_mb": 2048,
    "extra_specs": {"hw:numa_nodes": "2", "hw:cpu_policy": "dedicated"},
}
HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}
PORTS = range(19440, 19470)  # this suite's share of the 19400-19499 range

Result = tuple[int, str, float, float, str]  # status, code, sent, received, consumer


def _port() -> int:
    """A free port of ``PORTS``, tried in random order (xdist workers start at the same time)."""
    return free_port(random.sample(list(PORTS), len(PORTS)))


@pytest.fixture(scope="module", params=BACKENDS)
def service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    """``(backend, base_url)`` of a real 2-worker service on a fresh database."""
    backend: str = request.param
    db: TestDatabase = reachable_database(
        backend, tmp_path_factory.mktemp(f"claim-{backend}"), "claim"
    )
    executable = (
        shutil.which("placement-numa", path=str(Path(sys.executable).parent)) or "placement-numa"
    )
    log = tmp_path_factory.mktemp(f"claim-log-{backend}") / "serve.log"
    prepare_database(Settings(database_url=db.url))
    port = _port()
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [executable, "serve", "--workers", "2", "--host", "127.0.0.1", "--port", str(port)]
            + ["--database-url", db.url, "--no-migrate"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "PLACEMENT_NUMA_AUTH_STRATEGY": "noauth2"},
        )
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(process, base_url, log, 120)
        yield backend, base_url
    finally:
        stop_process(process)
        drop_database(db)
        if process.returncode not in (0, -15) or "Traceback" in log.read_text():
            print(log.read_text()[-3000:])


def _claimers(base_url: str, lists: list[list[str]]) -> list[Result]:
    """One client process: a thread per consumer list, claiming until no_room."""

    def one(consumers: list[str]) -> list[Result]:
        results: list[Result] = []
        with httpx.Client(base_url=base_url, headers=HEADERS, timeout=120) as client:
            for consumer in consumers:
                sent = time.monotonic()
                r = client.post(
                    "/allocation_candidates/claim",
                    json={
                        "flavor": FLAVOR,
                        "consumer_uuid": consumer,
                        "consumer_generation": None,
                        "project_id": "race",
                        "user_id": "race",
                        "consumer_type": "INSTANCE",
                    },
                )
                received = time.monotonic()
                code = r.json()["errors"][0].get("code", "") if r.status_code >= 400 else ""
                results.append((r.status_code, code, sent, received, consumer))
                if code == "placement_numa.claim.no_room" or r.status_code >= 500:
                    break
        return results

    with ThreadPoolExecutor(len(lists)) as pool:
        return [item for chunk in pool.map(one, lists) for item in chunk]


def test_racing_claimers_fill_the_fleet_exactly(service: tuple[str, str]) -> None:
    backend, base_url = service
    send = httpx_sender(base_url)
    hosts = [
        load_host(send, HostShape(f"h{i:02d}", _cells(2, 4, 0, {4: 4096}))) for i in range(HOSTS)
    ]
    capacity = 2 * HOSTS
    # thread t of every process walks sequences[t]: twins race in different processes
    sequences = [[str(uuid.uuid4()) for _ in range(capacity + 2)] for _ in range(THREADS)]
    per_process = [sequences] * PROCESSES
    started = time.monotonic()
    with ProcessPoolExecutor(PROCESSES) as pool:
        chunks = list(pool.map(_claimers, [base_url] * PROCESSES, per_process))
    seconds = time.monotonic() - started
    results = [item for chunk in chunks for item in chunk]
    kinds = Counter((status, code) for status, code, *_ in results)
    print(
        f"\n[claims] backend={backend} hosts={HOSTS} claimers={PROCESSES * THREADS}"
        f" requests={len(results)} claimed={kinds[(200, '')]}"
        f" no_room={kinds[(409, 'placement_numa.claim.no_room')]}"
        f" consumer_taken={kinds[(409, 'placement.concurrent_update')]} seconds={seconds:.1f}"
    )
    allowed = {
        (200, ""),
        (409, "placement_numa.claim.no_room"),
        (409, "placement.concurrent_update"),
    }
    assert set(kinds) <= allowed, kinds

    # every claimer ended on no_room, and none came while room remained
    successes = [r for r in results if r[0] == 200]
    refusals = [r for r in results if r[1] == "placement_numa.claim.no_room"]
    assert len(refusals) == PROCESSES * THREADS, kinds
    last_success_sent = max(sent for _, _, sent, _, _ in successes)
    early = [received - last_success_sent for _, _, _, received, _ in refusals]
    assert all(delta > 0 for delta in early), f"no_room before a later claim succeeded: {early}"
    assert len(successes) == capacity, kinds

    with httpx.Client(base_url=base_url, headers=HEADERS, timeout=60) as client:
        # 0 over-commits; the fleet is exactly full
        used_pcpu = 0
        for host in hosts:
            providers = [host["root"], *host["cells"].values(), *host["pages"].values()]
            for rp in providers:
                usages = client.get(f"/resource_providers/{rp}/usages").json()["usages"]
                inventories = client.get(f"/resource_providers/{rp}/inventories").json()
                for rc, used in usages.items():
                    inv = inventories["inventories"][rc]
                    limit = int((inv["total"] - inv["reserved"]) * inv["allocation_ratio"])
                    assert used <= limit, (rp, rc, used, limit)
                used_pcpu += usages.get("PCPU", 0)
        assert used_pcpu == capacity * GUEST_PCPU

        # a consumer is claimed at most once
        claimed = {consumer for *_, consumer in successes}
        assert len(claimed) == len(successes)
        for consumer in claimed:
            got = client.get(f"/allocations/{consumer}").json()
            assert got["consumer_generation"] == 1
            pcpu = sum(a["resources"].get("PCPU", 0) for a in got["allocations"].values())
            assert pcpu == GUEST_PCPU
        project = client.get("/usages?project_id=race").json()["usages"]["INSTANCE"]
        assert project["consumer_count"] == capacity
        assert project["PCPU"] == capacity * GUEST_PCPU


def _schedule(base_url: str) -> subprocess.CompletedProcess[str]:
    executable = (
        shutil.which("placement-numa", path=str(Path(sys.executable).parent)) or "placement-numa"
    )
    return subprocess.run(
        [executable, "schedule", "--url", base_url, "--vcpus", str(GUEST_PCPU)]
        + ["--memory-mb", "2048", "--extra-spec", "hw:numa_nodes=2"]
        + ["--extra-spec", "hw:cpu_policy=dedicated", "--project", "cli", "--user", "cli"],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_schedule_cli_claims_then_reports_no_room(service: tuple[str, str]) -> None:
    """A host with room for one guest (whatever else the service holds is full or absent):
    ``schedule`` claims it (exit 0, one line), then reports no room (exit 5, one line, what is
    lacking); no traceback."""
    _, base_url = service
    name = f"cli-{uuid.uuid4().hex[:8]}"
    load_host(httpx_sender(base_url), HostShape(name, _cells(2, GUEST_PCPU // 2, 0, {4: 4096})))
    if not _fleet_full(base_url, exclude=name):
        pytest.skip("the race test did not fill this service's fleet first")

    done = _schedule(base_url)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("claimed "), done.stdout
    assert f" on {name} cells " in lines[0]

    full = _schedule(base_url)
    assert full.returncode == 5, full.stdout + full.stderr
    lines = full.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("schedule: no room:"), full.stderr
    assert f"lacking PCPU {GUEST_PCPU}" in lines[0]
    assert "Traceback" not in full.stderr + done.stderr


def _fleet_full(base_url: str, *, exclude: str) -> bool:
    """Whether every NUMA cell outside host ``exclude`` has no PCPU left for a guest."""
    with httpx.Client(base_url=base_url, headers=HEADERS, timeout=60) as client:
        providers = client.get("/resource_providers").json()["resource_providers"]
        for rp in providers:
            if not rp["name"].endswith(("_NUMA0", "_NUMA1")) or rp["name"].startswith(exclude):
                continue
            inventory = client.get(f"/resource_providers/{rp['uuid']}/inventories").json()
            usages = client.get(f"/resource_providers/{rp['uuid']}/usages").json()["usages"]
            if inventory["inventories"]["PCPU"]["total"] - usages.get("PCPU", 0) >= 2:
                return False
    return True
