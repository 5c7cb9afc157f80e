"""Run a real service as a subprocess for a test: start it, wait until ``/`` answers, stop it.

Ports: tests of issue 12 use 19200-19299 only (``PORTS``), one fixed port per test so parallel
workers do not collide. The service runs with ``PLACEMENT_NUMA_AUTH_STRATEGY=noauth2`` unless
the caller's environment says otherwise.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}


@dataclass
class RunningService:
    process: subprocess.Popen[bytes]
    base_url: str
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, headers=HEADERS, timeout=30)


def service_env(**extra: str) -> dict[str, str]:
    """This process's environment minus any PLACEMENT_NUMA_* setting, plus noauth2 and
    ``extra`` (names without the prefix are taken as-is)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLACEMENT_NUMA_")}
    env["PLACEMENT_NUMA_AUTH_STRATEGY"] = "noauth2"
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


@contextmanager
def running(
    argv: Sequence[str],
    port: int,
    log: Path,
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 60.0,
) -> Iterator[RunningService]:
    """Start ``argv`` (a server listening on 127.0.0.1:``port``), yield once ``/`` answers 200,
    then terminate it (SIGTERM, SIGKILL after 15 s). Fails with the log tail if it dies."""
    with open(log, "wb") as log_file:
        process = subprocess.Popen(
            list(argv),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=env if env is not None else service_env(),
            cwd=cwd,
        )
    base_url = f"http://127.0.0.1:{port}"
    service = RunningService(process, base_url, log)
    try:
        wait_until_up(process, base_url, log, timeout)
        yield service
    finally:
        stop_process(process)


def wait_until_up(
    process: subprocess.Popen[bytes],
    base_url: str,
    log: Path,
    timeout: float = 120.0,
    ready: Callable[[], bool] | None = None,
) -> None:
    """Poll ``base_url + "/"`` until it answers 200 (and ``ready()`` holds, when given).
    Raises ``AssertionError`` with the log's tail if ``process`` exits or ``timeout`` (s) passes;
    the default is generous because a loaded 2-core machine starts several workers slowly."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(base_url + "/", timeout=5).status_code == 200 and (
                ready is None or ready()
            ):
                return
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
            raise AssertionError(f"service did not start: {tail}")
        time.sleep(0.2)


def port_is_free(port: int) -> bool:
    """True when nothing holds ``port`` on 127.0.0.1 (a bind succeeds)."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(ports: Iterable[int]) -> int:
    """The first of ``ports`` nothing holds on 127.0.0.1; ``RuntimeError`` when none is free.
    Callers order ``ports`` (a preferred port first, a random order for xdist workers that
    start together) so that concurrent test runs on one machine do not collide."""
    tried = list(ports)
    for port in tried:
        if port_is_free(port):
            return port
    raise RuntimeError(f"no free port among {tried[:1]}..{tried[-1:]} ({len(tried)} tried)")


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 15 s; waits for the exit either way."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def unexpected_tracebacks(log: str) -> list[str]:
    """Tracebacks in a service log other than SQLAlchemy's pool giving up a dead connection
    ("Exception during reset or similar": logged and handled, the client sees nothing)."""
    blocks = log.split("Traceback (most recent call last):")
    return [
        block[-300:]
        for before, block in zip(blocks, blocks[1:], strict=False)
        if "reset or similar" not in before[-300:]
    ]
