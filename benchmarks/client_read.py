"""What a Python client pays to read a candidates-sized body: the floor under every figure
timed "over HTTP".

An answer at ``limit=1000`` is 0.6-1.4 MB of JSON (``loop_phases.py`` prints the sizes). The
benchmarks time a GET from outside with httpx, and Nova's report client reads it with
requests (keystoneauth); both read the body in Python, a piece at a time. This serves
prebuilt bodies of those sizes from a bare Starlette app under uvicorn (httptools, as
``placement-numa serve``), with a ``content-length`` and streamed in 256 KiB chunks as
``api/responses.py`` streams a large answer, and times the GET with each client, alternating
per round: the wall time that neither placement-numa's engine nor its framework spends, and
that upstream's figures carry too. Also printed: the server's CPU per GET (from ``/proc``).

    python benchmarks/client_read.py --sizes 600000 1200000 --requests 300
"""

from __future__ import annotations

import argparse
import http.client
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from proc_cpu import cpu_seconds  # noqa: E402

_APP = """
import asyncio
from starlette.applications import Starlette
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

CHUNK = 256 * 1024


def body(request):
    size = int(request.query_params["bytes"])
    return b'{"x":"' + b"a" * max(0, size - 8) + b'"}'


async def whole(request):
    return Response(body(request), media_type="application/json")


async def streamed(request):
    data = body(request)

    async def chunks():
        for start in range(0, len(data), CHUNK):
            await asyncio.sleep(0)
            yield data[start : start + CHUNK]

    return StreamingResponse(chunks(), media_type="application/json")


app = Starlette(routes=[Route("/whole", whole), Route("/streamed", streamed)])
"""


def _clients(port: int) -> dict[str, Callable[[str], bytes]]:
    """``{name: get(path) -> body}`` of the clients available here."""
    base = f"http://127.0.0.1:{port}"
    found: dict[str, Callable[[str], bytes]] = {}
    session = httpx.Client(base_url=base)
    found["httpx"] = lambda path: session.get(path).content
    try:
        import requests
    except ImportError:  # not installed: skipped
        pass
    else:
        plain = requests.Session()
        found["requests"] = lambda path: plain.get(base + path).content
    connection = http.client.HTTPConnection("127.0.0.1", port)

    def stdlib(path: str) -> bytes:
        connection.request("GET", path)
        return connection.getresponse().read()

    found["http.client"] = stdlib
    return found


def _wait_up(port: int, proc: subprocess.Popen[bytes]) -> None:
    for _ in range(200):
        if proc.poll() is not None:
            sys.exit("the bare server did not start")
        try:
            httpx.get(f"http://127.0.0.1:{port}/whole?bytes=10", timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    sys.exit("the bare server did not answer")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[600_000, 1_200_000])
    parser.add_argument("--requests", type=int, default=300, help="GETs per case and round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--port", type=int, default=19760)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pn-client-read-") as work:
        (Path(work) / "bare_app.py").write_text(_APP)
        proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "bare_app:app", "--port", str(args.port)]
            + ["--http", "httptools", "--log-level", "warning", "--no-access-log"],
            cwd=work,
        )
        try:
            _wait_up(args.port, proc)
            clients = _clients(args.port)
            timed: dict[tuple[str, int, str], list[float]] = {}
            cpu: dict[tuple[str, int, str], float] = {}
            for _ in range(args.rounds):
                for size in args.sizes:
                    for mode in ("whole", "streamed"):
                        for name, get in clients.items():
                            path = f"/{mode}?bytes={size}"
                            assert len(get(path)) == size
                            before = cpu_seconds([proc.pid])
                            for _ in range(args.requests):
                                started = time.perf_counter()
                                get(path)
                                elapsed = (time.perf_counter() - started) * 1000
                                timed.setdefault((name, size, mode), []).append(elapsed)
                            key = (name, size, mode)
                            spent = cpu_seconds([proc.pid]) - before
                            cpu[key] = cpu.get(key, 0.0) + spent
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print(f"{args.rounds} rounds x {args.requests} GETs per case, one connection per client")
    print("| body | response | client | p50 wall ms | server CPU per GET ms |")
    print("|---|---|---|---|---|")
    for (name, size, mode), values in timed.items():
        per_get = 1000 * cpu[(name, size, mode)] / len(values)
        print(f"| {size:,} B | {mode} | {name} | {statistics.median(values):.2f} | {per_get:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
