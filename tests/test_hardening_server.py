"""Issue 10, item 5: the built-in server's read timeouts, against a real ``placement-numa serve``.

Raw sockets play the slow clients: one that connects and sends nothing, one that trickles its
headers a byte at a time, one that promises a body and stops. With ``header_read_timeout`` and
``body_read_timeout`` at 1 s each must be cut off (closed, or 408 for the body) long before the
"did not hang" bound, and the server must still answer afterwards. A promised body larger than
``max_request_body_size`` is refused at once (413), before any of it is read.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.live_server import LiveServer

PORT = 19020
HANG_BOUND_S = 15.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    from placement_numa.app import prepare_database
    from placement_numa.settings import Settings

    url = f"sqlite:///{tmp_path_factory.mktemp('server') / 'db.sqlite'}"
    prepare_database(Settings(database_url=url))
    live = LiveServer(
        url,
        PORT,
        env={
            "PLACEMENT_NUMA_HEADER_READ_TIMEOUT": "1",
            "PLACEMENT_NUMA_BODY_READ_TIMEOUT": "1",
        },
        log_path=Path(str(tmp_path_factory.mktemp("server-log"))) / "serve.log",
    )
    with live:
        yield live


def _closed_within(sock: socket.socket, bound: float) -> tuple[float, bytes]:
    """Seconds until the server closes ``sock`` (reading whatever it sent)."""
    started = time.monotonic()
    sock.settimeout(bound)
    received = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            pytest.fail(f"connection still open after {bound} s")
        except ConnectionResetError:
            break
        if not chunk:
            break
        received += chunk
    return time.monotonic() - started, received


def _healthy(server: LiveServer) -> None:
    with server.client() as client:
        assert client.get("/resource_providers").status_code == 200


def test_idle_connection_closed(server: LiveServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        seconds, _ = _closed_within(sock, HANG_BOUND_S)
    assert seconds < HANG_BOUND_S
    _healthy(server)


def test_slow_headers_closed(server: LiveServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(b"GET /resource_providers HTTP/1.1\r\nHost: x\r\n")
        started = time.monotonic()
        try:
            while time.monotonic() - started < HANG_BOUND_S:
                sock.sendall(b"X")  # one byte of a header every 0.2 s, never finishing
                time.sleep(0.2)
        except (BrokenPipeError, ConnectionResetError):
            pass
        else:
            seconds, _ = _closed_within(sock, 1)
        assert time.monotonic() - started < HANG_BOUND_S
    _healthy(server)


def test_body_that_stops_is_408(server: LiveServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(
            b"POST /resource_providers HTTP/1.1\r\nHost: x\r\nx-auth-token: admin\r\n"
            b'content-type: application/json\r\ncontent-length: 1000\r\n\r\n{"name": '
        )
        seconds, received = _closed_within(sock, HANG_BOUND_S)
    assert received.startswith(b"HTTP/1.1 408"), received[:200]
    assert b"placement.request.timeout" in received or b"Request Timeout" in received
    assert seconds < HANG_BOUND_S
    _healthy(server)


def test_promised_huge_body_refused_at_once(server: LiveServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(
            b"POST /resource_providers HTTP/1.1\r\nHost: x\r\nx-auth-token: admin\r\n"
            b"content-type: application/json\r\ncontent-length: 10485760\r\n\r\n"
        )
        sock.settimeout(HANG_BOUND_S)
        received = sock.recv(65536)
    assert received.startswith(b"HTTP/1.1 413"), received[:200]
    _healthy(server)
