"""Capacity and consumer generations under concurrency, against the real service.

For each backend (SQLite, PostgreSQL, MariaDB) the real service runs as a subprocess with three
uvicorn workers (``placement-numa serve --workers 3``) on a fresh database; several client
processes, each with a few threads, then fire allocation writes at it:

1. **Capacity**: ``PROCESSES x THREADS x ATTEMPTS`` new consumers each PUT ``AMOUNT`` VCPU on a
   provider with ``CAPACITY`` VCPU. Each write fits alone. Asserted: every failure is a 409,
   ``successes * AMOUNT <= CAPACITY`` (no over-allocation), the final usage equals the sum of
   the successful writes (no lost write) and capacity is used up.
2. **Same consumer**: the clients repeatedly read one consumer's generation and PUT new
   allocations with it. Asserted: every failure is a 409 ``placement.concurrent_update``, and
   the consumer's final generation equals the number of successful writes (no lost update).

The figures (attempts, successes, 409s) are printed per backend (run with ``-s``).
"""

from __future__ import annotations

import os
import shutil
import socket
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
from placement_numa.settings import Settings
from tests.backends import (
    BACKENDS,
    TestDatabase,
    drop_database,
    reachable_database,
)
from tests.servers import stop_process, wait_until_up

pytestmark = pytest.mark.slow

PROCESSES = 3
THREADS = 4
ATTEMPTS = 5  # per thread: 3 x 4 x 5 = 60 writes per scenario
CAPACITY = 20
AMOUNT = 2  # at most CAPACITY / AMOUNT = 10 writes can succeed
HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.38"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _seed_provider(base_url: str) -> str:
    """A root provider with ``CAPACITY`` VCPU, made through the API; returns its uuid."""
    provider_uuid = str(uuid.uuid4())
    with httpx.Client(base_url=base_url, headers=HEADERS, timeout=30) as client:
        r = client.post(
            "/resource_providers", json={"name": f"rp-{provider_uuid}", "uuid": provider_uuid}
        )
        assert r.status_code == 200, r.text
        r = client.put(
            f"/resource_providers/{provider_uuid}/inventories",
            json={"resource_provider_generation": 0, "inventories": {"VCPU": {"total": CAPACITY}}},
        )
        assert r.status_code == 200, r.text
    return provider_uuid


def _allocation(provider: str, amount: int, generation: int | None) -> dict[str, object]:
    return {
        "allocations": {provider: {"resources": {"VCPU": amount}}},
        "project_id": "concurrency",
        "user_id": "tester",
        "consumer_generation": generation,
        "consumer_type": "INSTANCE",
    }


def _new_consumers(base_url: str, provider: str) -> list[tuple[int, str]]:
    """One client process: THREADS threads, each PUTting ATTEMPTS new consumers."""

    def one_thread() -> list[tuple[int, str]]:
        results = []
        with httpx.Client(base_url=base_url, headers=HEADERS, timeout=60) as client:
            for _ in range(ATTEMPTS):
                r = client.put(
                    f"/allocations/{uuid.uuid4()}", json=_allocation(provider, AMOUNT, None)
                )
                code = r.json()["errors"][0].get("code", "") if r.status_code >= 400 else ""
                results.append((r.status_code, code))
        return results

    with ThreadPoolExecutor(THREADS) as pool:
        return [
            item for chunk in pool.map(lambda _: one_thread(), range(THREADS)) for item in chunk
        ]


def _same_consumer(base_url: str, provider: str, consumer: str) -> list[tuple[int, str]]:
    """One client process: THREADS threads re-reading and re-writing one consumer."""

    def one_thread(seed: int) -> list[tuple[int, str]]:
        results = []
        with httpx.Client(base_url=base_url, headers=HEADERS, timeout=60) as client:
            for attempt in range(ATTEMPTS):
                got = client.get(f"/allocations/{consumer}").json()
                generation = got.get("consumer_generation")
                amount = 1 + (seed + attempt) % 3
                r = client.put(
                    f"/allocations/{consumer}", json=_allocation(provider, amount, generation)
                )
                code = r.json()["errors"][0].get("code", "") if r.status_code >= 400 else ""
                results.append((r.status_code, code))
        return results

    with ThreadPoolExecutor(THREADS) as pool:
        chunks = pool.map(one_thread, range(THREADS))
        return [item for chunk in chunks for item in chunk]


@pytest.fixture(scope="module", params=BACKENDS)
def service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str, str]]:
    """``(backend, base_url, database_url)`` of a real 3-worker service on a fresh database."""
    backend: str = request.param
    db: TestDatabase = reachable_database(
        backend, tmp_path_factory.mktemp(f"conc-{backend}"), "conc"
    )
    port = _free_port()
    executable = (
        shutil.which("placement-numa", path=str(Path(sys.executable).parent)) or "placement-numa"
    )
    log = tmp_path_factory.mktemp(f"log-{backend}") / "serve.log"
    prepare_database(Settings(database_url=db.url))
    with open(log, "wb") as log_file:
        process = subprocess.Popen(
            [
                executable,
                "serve",
                "--workers",
                "3",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--database-url",
                db.url,
                "--no-migrate",
                "--auth-strategy",
                "noauth2",
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(process, base_url, log, 120)
        yield backend, base_url, db.url
    finally:
        stop_process(process)
        drop_database(db)


def _report(
    backend: str, scenario: str, results: list[tuple[int, str]], seconds: float
) -> Counter[int]:
    statuses = Counter(status for status, _ in results)
    print(
        f"\n[concurrency] backend={backend} scenario={scenario} attempts={len(results)}"
        f" successes={statuses.get(204, 0)} conflicts_409={statuses.get(409, 0)}"
        f" other={sum(n for s, n in statuses.items() if s not in (204, 409))}"
        f" seconds={seconds:.1f}"
    )
    return statuses


def test_concurrent_writes_never_over_allocate(service: tuple[str, str, str]) -> None:
    backend, base_url, _ = service
    provider = _seed_provider(base_url)
    started = time.monotonic()
    with ProcessPoolExecutor(PROCESSES) as pool:
        futures = [pool.submit(_new_consumers, base_url, provider) for _ in range(PROCESSES)]
        results = [item for future in futures for item in future.result(timeout=120)]
    statuses = _report(backend, "capacity", results, time.monotonic() - started)

    assert set(statuses) <= {204, 409}, statuses
    successes = statuses.get(204, 0)
    assert successes * AMOUNT <= CAPACITY
    assert successes == CAPACITY // AMOUNT  # everything that fits was granted
    usages = httpx.get(f"{base_url}/resource_providers/{provider}/usages", headers=HEADERS).json()
    assert usages["usages"] == {"VCPU": successes * AMOUNT}
    allocations = httpx.get(
        f"{base_url}/resource_providers/{provider}/allocations", headers=HEADERS
    ).json()
    assert len(allocations["allocations"]) == successes
    assert allocations["resource_provider_generation"] == 1 + successes  # inventory, then writes


def test_concurrent_writes_to_one_consumer(service: tuple[str, str, str]) -> None:
    backend, base_url, _ = service
    provider = _seed_provider(base_url)
    consumer = str(uuid.uuid4())
    started = time.monotonic()
    with ProcessPoolExecutor(PROCESSES) as pool:
        futures = [
            pool.submit(_same_consumer, base_url, provider, consumer) for _ in range(PROCESSES)
        ]
        results = [item for future in futures for item in future.result(timeout=120)]
    statuses = _report(backend, "same-consumer", results, time.monotonic() - started)

    assert set(statuses) <= {204, 409}, statuses
    assert all(code == "placement.concurrent_update" for status, code in results if status == 409)
    successes = statuses.get(204, 0)
    assert successes >= 1
    got = httpx.get(f"{base_url}/allocations/{consumer}", headers=HEADERS).json()
    assert got["consumer_generation"] == successes  # no lost update
    usages = httpx.get(f"{base_url}/resource_providers/{provider}/usages", headers=HEADERS).json()
    assert usages["usages"]["VCPU"] == got["allocations"][provider]["resources"]["VCPU"]
