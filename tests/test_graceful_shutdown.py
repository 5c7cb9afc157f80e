"""A worker that stops gracefully answers the next request on an idle kept-alive connection.

uvicorn closes idle keep-alive connections as soon as its server stops; a client sending its
next request on one at that moment reads a connection reset (seen once in CI, in
``tests/test_sighup.py``'s two-worker case, while uvicorn's supervisor replaced a worker).
``cli/http_timeouts.GuardedHttpToolsProtocol.shutdown`` keeps such a connection for the
keep-alive timeout and answers its next request with ``Connection: close``. The proof, against a
real ``placement-numa serve``: one request, SIGTERM, wait until the listening socket refuses new
connections (the server has begun to stop: it closes its listener and then shuts its
connections down in the same step), then a second request on the same connection.
"""

from __future__ import annotations

import signal
import socket
import sys
import time
from pathlib import Path

from tests.servers import free_port, running

SERVE = str(Path(sys.executable).with_name("placement-numa"))


def _wait_until_refused(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except ConnectionRefusedError:
            return
        assert time.monotonic() < deadline, "the server still accepts connections"
        time.sleep(0.02)


def test_a_stopping_server_answers_the_next_request_on_an_idle_connection(tmp_path: Path) -> None:
    port = free_port(range(19940, 19960))
    argv = [SERVE, "serve", "--port", str(port)]
    argv += ["--database-url", f"sqlite:///{tmp_path / 'db.sqlite'}"]
    with running(argv, port, tmp_path / "serve.log", timeout=120) as service:
        with service.client() as client:
            first = client.get("/resource_providers")
            assert first.status_code == 200
            assert first.headers.get("connection") != "close"
            service.process.send_signal(signal.SIGTERM)
            _wait_until_refused(port, timeout=30)
            second = client.get("/resource_providers")
            assert second.status_code == 200
            assert second.headers.get("connection") == "close"
        # uvicorn raises the signal again once it has stopped: the exit status says SIGTERM
        assert service.process.wait(timeout=30) in (0, -signal.SIGTERM)
