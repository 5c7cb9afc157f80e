"""Start and stop real ``placement-numa serve`` processes for tests and tools (issue 10).

``LiveServer(database_url, port, workers=..., env=...)`` runs the CLI as a subprocess on
``127.0.0.1:port`` with ``PLACEMENT_NUMA_AUTH_STRATEGY=noauth2`` (token ``admin``), waits until
``/`` answers, and stops it with SIGTERM (SIGKILL after 15 s). ``worker_pids()`` lists the uvicorn
worker processes (children of the supervisor) so a test can SIGKILL one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import TracebackType

import httpx

from tests.servers import free_port as servers_free_port
from tests.servers import stop_process, wait_until_up

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}
# The loopback ports these tests may use; several test runs can share a machine.
PORT_RANGE = range(19000, 19100)


def free_port(preferred: int) -> int:
    """``preferred`` if nothing listens there, else the next free port of ``PORT_RANGE``
    (wrapping around), so concurrent test runs on one machine do not collide."""
    later = [p for p in PORT_RANGE if p >= preferred]
    return servers_free_port(later + [p for p in PORT_RANGE if p < preferred])


class LiveServer:
    def __init__(
        self,
        database_url: str,
        port: int,
        *,
        workers: int = 1,
        env: dict[str, str] | None = None,
        log_path: Path | None = None,
    ) -> None:
        self.database_url = database_url
        self.port = port  # the preferred port; start() moves to a free one
        self.workers = workers
        self.env = env or {}
        self.log_path = log_path or Path(f"/tmp/placement-numa-serve-{port}.log")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 120) -> LiveServer:
        """Start the service on a free port (another when a parallel test run took the chosen
        one between the check and the bind); ``RuntimeError`` when it does not come up."""
        for attempt in range(5):
            try:
                return self._start_once(timeout)
            except RuntimeError:
                if attempt == 4 or b"address already in use" not in self._log_bytes().lower():
                    raise
                self.port += 1
        raise AssertionError("unreachable")

    def _start_once(self, timeout: float) -> LiveServer:
        self.port = free_port(self.port)
        executable = (
            shutil.which("placement-numa", path=str(Path(sys.executable).parent))
            or "placement-numa"
        )
        environment = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "PLACEMENT_NUMA_AUTH_STRATEGY": "noauth2",
            **self.env,
        }
        with open(self.log_path, "wb") as log_file:
            self.process = subprocess.Popen(
                [
                    executable,
                    "serve",
                    "--workers",
                    str(self.workers),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--database-url",
                    self.database_url,
                    "--no-migrate",
                ],
                stdout=log_file,
                stderr=subprocess.STDOUT,
                env=environment,
            )
        try:
            wait_until_up(
                self.process,
                self.base_url,
                self.log_path,
                timeout,
                ready=lambda: b"Uvicorn running" in self._log_bytes(),
            )
        except AssertionError as exc:
            self.stop()
            raise RuntimeError(str(exc)) from exc
        return self

    def _log_bytes(self) -> bytes:
        try:
            return self.log_path.read_bytes()
        except OSError:
            return b""

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def worker_pids(self) -> list[int]:
        """The uvicorn worker processes (children of the supervisor)."""
        if self.process is None:
            return []
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        try:
            return [int(pid) for pid in children.read_text().split()]
        except OSError:
            return []

    def client(self, timeout: float = 60) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, headers=HEADERS, timeout=timeout)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            stop_process(process)

    def __enter__(self) -> LiveServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
