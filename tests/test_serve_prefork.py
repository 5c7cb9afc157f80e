"""``placement-numa serve --prefork --workers 2`` as operators run it: a supervisor loads the
fleet once and forks the workers (``placement_numa/cli/prefork.py``).

Real server on SQLite with the demo fleet. To address one worker, the other is stopped
(SIGSTOP): only a running process accepts on the shared socket. Checked: a write through one
worker is in the next answer of the other (both ways); a worker killed with SIGKILL is replaced,
and the replacement (forked from the supervisor's snapshot, older than those writes) answers
fresh within a bound; SIGTERM stops the node; a supervisor killed with SIGKILL takes its workers
with it; on PostgreSQL and MariaDB a write made around us (SQL) while no worker watched reaches
the replacement; workers over ``--prefork-max-private-mb`` are replaced while every query
succeeds.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.backends import TestDatabase, drop_database, reachable_database
from tests.servers import HEADERS, free_port, running, service_env

pytestmark = pytest.mark.slow

SERVE = str(Path(sys.executable).with_name("placement-numa"))
# Seconds within which a replacement must answer (the benchmark's figure is well under 1 s; a
# shared 2-core CI machine gets slack).
REPLACEMENT_BOUND_S = 10.0


def _workers(supervisor: int) -> list[int]:
    path = Path(f"/proc/{supervisor}/task/{supervisor}/children")
    return [int(pid) for pid in path.read_text().split()]


def _wait_workers(supervisor: int, count: int, timeout: float = 60) -> list[int]:
    deadline = time.monotonic() + timeout
    while len(found := _workers(supervisor)) != count:
        assert time.monotonic() < deadline, found
        time.sleep(0.1)
    return found


@contextmanager
def _only(worker: int, workers: list[int]) -> Iterator[None]:
    """Only ``worker`` accepts connections meanwhile (the others are stopped)."""
    others = [pid for pid in workers if pid != worker]
    for pid in others:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in others:
            os.kill(pid, signal.SIGCONT)


def _client(base_url: str) -> httpx.Client:
    # a fresh connection per block: a kept-alive one would stick to the worker that took it
    return httpx.Client(base_url=base_url, headers=HEADERS, timeout=30)


def _add_host(base_url: str) -> str:
    """A new host with 8 VCPU; its uuid."""
    host = str(uuid.uuid4())
    with _client(base_url) as client:
        made = client.post("/resource_providers", json={"uuid": host, "name": f"h-{host}"})
        assert made.status_code == 200, made.text
        inventory = {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}}
        put = client.put(f"/resource_providers/{host}/inventories", json=inventory)
        assert put.status_code == 200, put.text
    return host


def _candidates(base_url: str, host: str, timeout: float = 30) -> int:
    with httpx.Client(base_url=base_url, headers=HEADERS, timeout=timeout) as client:
        answer = client.get(f"/allocation_candidates?resources=VCPU:2&in_tree={host}")
    assert answer.status_code == 200, answer.text
    return len(answer.json()["allocation_requests"])


def _wait_demo(log: Path) -> None:
    deadline = time.monotonic() + 120
    while "demo: loaded" not in log.read_text(errors="replace"):
        assert time.monotonic() < deadline, log.read_text()[-2000:]
        time.sleep(0.2)


def test_prefork_workers_share_one_fleet_and_stay_fresh(tmp_path: Path) -> None:
    port = free_port(range(19860, 19880))
    log = tmp_path / "serve.log"
    argv = [SERVE, "serve", "--prefork", "--workers", "2", "--port", str(port), "--demo"]
    argv += ["--database-url", f"sqlite:///{tmp_path / 'prefork.sqlite'}"]
    with running(argv, port, log, timeout=120) as service:
        _wait_demo(log)
        base, supervisor = service.base_url, service.process.pid
        first, second = workers = _wait_workers(supervisor, 2)
        # a write through each worker is in the other's next answer
        with _only(first, workers):
            host_a = _add_host(base)
        with _only(second, workers):
            assert _candidates(base, host_a) == 1
            host_b = _add_host(base)
        with _only(first, workers):
            assert _candidates(base, host_b) == 1

        # SIGKILL: the replacement answers (with the writes made since the fork) in time
        os.kill(first, signal.SIGKILL)
        killed = time.monotonic()
        with _only(-1, [second]):  # the survivor stopped: only the replacement can answer
            while True:
                try:
                    answered = _candidates(base, host_b, timeout=2)
                    break
                except httpx.HTTPError:
                    assert time.monotonic() - killed < REPLACEMENT_BOUND_S, log.read_text()[-2000:]
            took = time.monotonic() - killed
        assert answered == 1
        assert took < REPLACEMENT_BOUND_S
        replacement = next(pid for pid in _wait_workers(supervisor, 2) if pid != second)
        with _only(replacement, [replacement, second]):
            host_c = _add_host(base)
        with _only(second, [replacement, second]):
            assert _candidates(base, host_c) == 1
        assert "forking a replacement" in log.read_text()

        service.process.send_signal(signal.SIGTERM)
        assert service.process.wait(timeout=60) == 0
    for pid in (second, replacement):
        assert not Path(f"/proc/{pid}").exists()


def test_workers_exit_when_the_supervisor_dies(tmp_path: Path) -> None:
    port = free_port(range(19880, 19900))
    argv = [SERVE, "serve", "--prefork", "--workers", "2", "--port", str(port)]
    argv += ["--database-url", f"sqlite:///{tmp_path / 'orphans.sqlite'}"]
    with running(argv, port, tmp_path / "serve.log", timeout=120) as service:
        workers = _wait_workers(service.process.pid, 2)
        service.process.kill()
        service.process.wait(timeout=10)
        deadline = time.monotonic() + 30
        while any(Path(f"/proc/{pid}").exists() for pid in workers):
            assert time.monotonic() < deadline, "workers outlived their supervisor"
            time.sleep(0.05)  # orphans now: init reaps them


@pytest.fixture(params=["postgresql", "mysql"])
def shared_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TestDatabase]:
    db = reachable_database(request.param, tmp_path, "prefork")
    yield db
    drop_database(db)


def test_a_write_made_around_us_reaches_a_replacement(
    shared_database: TestDatabase, tmp_path: Path
) -> None:
    """A write by another writer (SQL, as upstream Placement writes) while no worker could see
    it, then a worker replaced: its watcher's baseline comes after that write, so only the
    supervisor's watcher (baseline before its load) can tell; the replacement answers fresh."""
    port = free_port(range(19900, 19920))
    argv = [SERVE, "serve", "--prefork", "--workers", "2", "--port", str(port)]
    argv += ["--database-url", shared_database.url]
    env = service_env(PLACEMENT_NUMA_FOREIGN_WRITE_STALENESS="1")
    with running(argv, port, tmp_path / "seed.log", env=env, timeout=120) as service:
        host = _add_host(service.base_url)  # VCPU 8, in the supervisor's load below
    with running(argv, port, tmp_path / "serve.log", env=env, timeout=120) as service:
        base, supervisor = service.base_url, service.process.pid
        first, second = _wait_workers(supervisor, 2)
        for pid in (first, second):
            with _only(pid, [first, second]):
                assert _candidates(base, host) == 1
        for pid in (first, second):  # neither worker's watcher runs meanwhile
            os.kill(pid, signal.SIGSTOP)
        try:
            engine = create_engine(shared_database.url)
            with engine.begin() as conn:  # an operator raises the inventory by SQL
                conn.execute(
                    text(
                        "UPDATE inventories SET total = 64 WHERE resource_provider_id ="
                        " (SELECT id FROM resource_providers WHERE uuid = :u)"
                    ),
                    {"u": host},
                )
                conn.execute(
                    text(
                        "UPDATE resource_providers SET generation = generation + 1 WHERE uuid = :u"
                    ),
                    {"u": host},
                )
            engine.dispose()
            os.kill(first, signal.SIGKILL)
            deadline = time.monotonic() + REPLACEMENT_BOUND_S
            while True:  # only the replacement can answer
                try:
                    with httpx.Client(base_url=base, headers=HEADERS, timeout=2) as client:
                        answer = client.get(
                            f"/allocation_candidates?resources=VCPU:40&in_tree={host}"
                        )
                    break
                except httpx.HTTPError:
                    assert time.monotonic() < deadline, "no replacement answered"
            assert answer.status_code == 200, answer.text
            assert len(answer.json()["allocation_requests"]) == 1
        finally:
            os.kill(second, signal.SIGCONT)


def test_a_worker_over_its_memory_bound_is_replaced_without_failed_requests(
    tmp_path: Path,
) -> None:
    """``--prefork-max-private-mb 1``: every worker is over it, so once a worker is older than
    ``RECYCLE_MIN_AGE_S`` the supervisor forks its replacement and stops it gracefully, one per
    check; queries answered throughout all succeed."""
    from placement_numa.cli.prefork import RECYCLE_CHECK_S, RECYCLE_MIN_AGE_S

    port = free_port(range(19920, 19940))
    log = tmp_path / "serve.log"
    argv = [SERVE, "serve", "--prefork", "--workers", "2", "--port", str(port)]
    argv += ["--prefork-max-private-mb", "1"]
    argv += ["--database-url", f"sqlite:///{tmp_path / 'recycle.sqlite'}"]
    with running(argv, port, log, timeout=120) as service:
        base, supervisor = service.base_url, service.process.pid
        host = _add_host(base)
        before = set(_wait_workers(supervisor, 2))
        deadline = time.monotonic() + RECYCLE_MIN_AGE_S + 4 * RECYCLE_CHECK_S + 30
        answers = 0
        while before & set(_workers(supervisor)):
            assert time.monotonic() < deadline, log.read_text()[-2000:]
            assert _candidates(base, host) == 1  # fresh connections: any worker answers
            answers += 1
            time.sleep(0.1)
        assert answers > 50
        assert "of its own; replaced" in log.read_text()
        assert len(_wait_workers(supervisor, 2)) == 2
