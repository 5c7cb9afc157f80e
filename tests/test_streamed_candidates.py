"""``GET /allocation_candidates`` streams a large body (``api.responses.json_pieces_response``):
written piece by piece while it is sent, in chunks, without ``content-length``; a small answer
is an ordinary response with it. Over a real ``placement-numa serve`` (the framing is uvicorn's)
and in process (the response on its own, errors before and after the first chunk)."""

from __future__ import annotations

import asyncio
import socket
import uuid as uuidlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI, Response
from fastapi.testclient import TestClient

from placement_numa.api import microversion as mv
from placement_numa.api.responses import STREAM_CHUNK_BYTES, json_pieces_response
from tests.live_server import HEADERS, LiveServer

PORT = 19040
HOSTS = 300  # 600 two-cell candidates and 2,100 provider summaries: ~0.8 MB
TWO_CELL = (
    "resources=DISK_GB:10"
    "&resources_A=VCPU:2&required_A=HW_NUMA_ROOT"
    "&resources_B=VCPU:2&required_B=HW_NUMA_ROOT"
    "&same_subtree=_A&same_subtree=_B&group_policy=isolate"
)


def _host(h: int) -> list[dict[str, Any]]:
    root = str(uuidlib.uuid4())
    tree: list[dict[str, Any]] = [
        {"uuid": root, "name": f"cn{h}", "inventories": {"DISK_GB": {"total": 1000}}}
    ]
    for c in range(2):
        cell = str(uuidlib.uuid4())
        tree.append(
            {
                "uuid": cell,
                "name": f"cn{h}_NUMA{c}",
                "parent_provider_uuid": root,
                "inventories": {"VCPU": {"total": 32}, "PCPU": {"total": 16}},
                "traits": ["HW_NUMA_ROOT"],
            }
        )
        for size, trait in (("4K", "MEMORY_PAGE_SIZE_SMALL"), ("2M", "MEMORY_PAGE_SIZE_LARGE")):
            tree.append(
                {
                    "uuid": str(uuidlib.uuid4()),
                    "name": f"cn{h}_NUMA{c}_{size}",
                    "parent_provider_uuid": cell,
                    "inventories": {"MEMORY_MB": {"total": 65536}},
                    "traits": [trait],
                }
            )
    return tree


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    from placement_numa.app import prepare_database
    from placement_numa.settings import Settings

    url = f"sqlite:///{tmp_path_factory.mktemp('streamed') / 'db.sqlite'}"
    prepare_database(Settings(database_url=url))
    log = Path(str(tmp_path_factory.mktemp("streamed-log"))) / "serve.log"
    with LiveServer(url, PORT, log_path=log) as live:
        with httpx.Client(base_url=live.base_url, timeout=60) as client:
            for first in range(0, HOSTS, 20):
                trees = [p for h in range(first, first + 20) for p in _host(h)]
                r = client.post(
                    "/resource_providers/batch",
                    json={"resource_providers": trees},
                    headers=dict(HEADERS, **{"x-roles": "admin,service"}),
                )
                assert r.status_code == 200, r.text
        yield live


def _raw_get(server: LiveServer, target: str) -> tuple[bytes, bytes]:
    """``(head, raw body)`` of ``GET target`` over a plain socket, framing left as sent."""
    request = (
        f"GET {target} HTTP/1.1\r\nhost: 127.0.0.1\r\nx-auth-token: admin\r\n"
        "openstack-api-version: placement 1.39\r\nconnection: close\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
        sock.sendall(request.encode())
        received = bytearray()
        while chunk := sock.recv(1 << 16):
            received += chunk
    head, _, body = bytes(received).partition(b"\r\n\r\n")
    return head.lower(), body


def _dechunk(raw: bytes) -> tuple[bytes, int]:
    """The body of HTTP/1.1 chunked framing ``raw`` and how many chunks carried it."""
    body = bytearray()
    chunks = 0
    while True:
        size_line, _, rest = raw.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            return bytes(body), chunks
        body += rest[:size]
        chunks += 1
        assert rest[size : size + 2] == b"\r\n"
        raw = rest[size + 2 :]


def test_large_answer_is_streamed_in_chunks(server: LiveServer) -> None:
    head, raw = _raw_get(server, "/allocation_candidates?" + TWO_CELL)
    assert head.startswith(b"http/1.1 200")
    assert b"transfer-encoding: chunked" in head
    assert b"content-length" not in head
    assert b"content-type: application/json" in head
    assert b"openstack-api-version: placement 1.39" in head
    assert b"cache-control: no-cache" in head and b"last-modified:" in head
    body, chunks = _dechunk(raw)
    assert len(body) > 2 * STREAM_CHUNK_BYTES
    assert chunks >= 2
    document = orjson.loads(body)
    assert len(document["allocation_requests"]) == 2 * HOSTS  # cells (0, 1) and (1, 0)
    assert len(document["provider_summaries"]) == 7 * HOSTS


def test_streamed_answer_equals_the_paged_answers(server: LiveServer) -> None:
    """The whole streamed answer holds the same candidates as answers small enough to be sent
    with ``content-length``: the first ``limit`` candidates are the streamed answer's first."""
    with httpx.Client(base_url=server.base_url, timeout=60) as client:
        whole = client.get("/allocation_candidates?" + TWO_CELL, headers=HEADERS)
        small = client.get("/allocation_candidates?" + TWO_CELL + "&limit=3", headers=HEADERS)
    assert whole.status_code == small.status_code == 200
    assert "content-length" not in whole.headers
    assert int(small.headers["content-length"]) == len(small.content)
    first = whole.json()["allocation_requests"][:3]
    assert small.json()["allocation_requests"] == first
    summaries = whole.json()["provider_summaries"]
    for provider, summary in small.json()["provider_summaries"].items():
        assert summaries[provider] == summary


def test_keep_alive_connection_serves_streamed_answers_in_turn(server: LiveServer) -> None:
    with httpx.Client(base_url=server.base_url, timeout=60) as client:
        bodies = [
            client.get("/allocation_candidates?" + TWO_CELL, headers=HEADERS).content
            for _ in range(3)
        ]
        assert client.get("/resource_providers?name=cn0", headers=HEADERS).status_code == 200
    assert bodies[0] == bodies[1] == bodies[2]


def test_client_leaving_half_way_leaves_the_server_well(server: LiveServer) -> None:
    request = (
        f"GET /allocation_candidates?{TWO_CELL} HTTP/1.1\r\nhost: 127.0.0.1\r\n"
        "x-auth-token: admin\r\nopenstack-api-version: placement 1.39\r\n\r\n"
    )
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
            sock.sendall(request.encode())
            assert sock.recv(1024).startswith(b"HTTP/1.1 200")
    with httpx.Client(base_url=server.base_url, timeout=60) as client:
        r = client.get("/allocation_candidates?" + TWO_CELL, headers=HEADERS)
    assert r.status_code == 200
    assert len(r.json()["allocation_requests"]) == 2 * HOSTS
    assert "Traceback" not in server.log()


# --- the response in process ------------------------------------------------------------------

VERSION = mv.Microversion(1, 39)


def _app(pieces: Any, chunk_bytes: int) -> TestClient:
    app = FastAPI()

    @app.get("/body")
    def body() -> Response:
        return json_pieces_response(pieces(), VERSION, chunk_bytes=chunk_bytes)

    return TestClient(app, raise_server_exceptions=False)


def test_small_body_has_content_length() -> None:
    client = _app(lambda: iter([b'{"a":', b"[1,2]", b"}"]), chunk_bytes=1024)
    r = client.get("/body")
    assert r.status_code == 200
    assert r.headers["content-length"] == str(len(b'{"a":[1,2]}'))
    assert r.headers["cache-control"] == "no-cache"
    assert r.json() == {"a": [1, 2]}


def test_pieces_gathered_into_chunks_keep_their_order() -> None:
    pieces = [b"["] + [b"%d," % n for n in range(999)] + [b"999]"]
    r = _app(lambda: iter(pieces), chunk_bytes=100).get("/body")
    assert "content-length" not in r.headers
    assert r.headers["content-type"] == "application/json"
    assert r.headers["cache-control"] == "no-cache"
    assert r.json() == list(range(1000))


def test_error_before_the_first_chunk_is_an_error_response() -> None:
    def failing() -> Iterator[bytes]:
        yield b"["
        raise RuntimeError("encoding failed")

    r = _app(failing, chunk_bytes=1024).get("/body")
    assert r.status_code == 500


def test_error_after_the_headers_never_completes_the_body() -> None:
    def failing() -> Iterator[bytes]:
        yield b"[" + b"1," * 100
        raise RuntimeError("encoding failed")

    app = FastAPI()

    @app.get("/body")
    def body() -> Response:
        return json_pieces_response(failing(), VERSION, chunk_bytes=10)

    with pytest.raises(RuntimeError, match="encoding failed"):
        TestClient(app).get("/body")


def test_client_that_leaves_stops_the_encoding() -> None:
    """After ``http.disconnect`` no more pieces are taken from the generator (the ASGI server's
    side played here: a receive that reports the disconnect once the first chunk is sent)."""
    taken = 0

    def pieces() -> Iterator[bytes]:
        nonlocal taken
        for _ in range(1000):
            taken += 1
            yield b"x" * 100

    sent: list[dict[str, Any]] = []
    first_body_sent = asyncio.Event()

    async def receive() -> dict[str, Any]:
        await first_body_sent.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body":
            first_body_sent.set()
            await asyncio.sleep(0)

    response = json_pieces_response(pieces(), VERSION, chunk_bytes=1000)
    asyncio.run(response({"type": "http"}, receive, send))  # type: ignore[arg-type]
    assert sent[0]["type"] == "http.response.start"
    assert taken < 1000
    assert all(m.get("more_body") for m in sent[1:])  # the body never ended
