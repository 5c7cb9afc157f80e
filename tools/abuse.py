"""Run every abuse case of issue 10 against a live placement-numa and print one line per case.

Each case is one bounded request from the issue's probe (and the engine cases the candidate
engine bounds): the request, the statuses that count as handled, and what it cost the worker.
By default the script starts its own service (``placement-numa serve``, one worker, noauth2,
default caps) on ``127.0.0.1:19040`` over a fresh SQLite file, or over ``--database-url``
(e.g. a PostgreSQL database), so it can read the worker's CPU time and memory from ``/proc``;
``--url`` points it at a running service instead (no worker figures then).

Per case it prints: name, HTTP status, error code, handled (status among the expected ones,
answered within the client timeout and the worker still answering ``/healthcheck``), wall
milliseconds, the worker's CPU seconds spent, its RSS after, and its peak RSS so far (VmHWM).
The budget per request at default caps is 2 s of CPU and 512 MiB RSS; the last line says
whether every case held it.

    python tools/abuse.py                                   # SQLite, own service
    python tools/abuse.py --database-url postgresql://postgres@127.0.0.1:5432/abuse
    python tools/abuse.py --slow                            # also the 30 s slow-client cases

Loopback only; every request is bounded (client timeout 120 s).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}
CPU_BUDGET_S = 2.0
RSS_BUDGET_MB = 512.0
# The watchdog kills a worker past this (a case that would take the machine down otherwise).
KILL_RSS_MB = 2048.0
PORT = 19040


@dataclass
class Case:
    name: str
    call: Callable[[httpx.Client], httpx.Response | None]
    expected: tuple[int, ...]
    note: str = ""


def _proc(pid: int) -> tuple[float, float, float]:
    """(cpu seconds, rss MiB, peak rss MiB) of ``pid``."""
    ticks = os.sysconf("SC_CLK_TCK")
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    rss = peak = 0.0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) / 1024
        elif line.startswith("VmHWM:"):
            peak = int(line.split()[1]) / 1024
    return cpu, rss, peak


# --- fleet for the cases ---------------------------------------------------------------------


def _rp(client: httpx.Client, name: str, parent: str | None = None) -> str:
    rp = str(uuid.uuid4())
    body: dict[str, Any] = {"name": name, "uuid": rp}
    if parent:
        body["parent_provider_uuid"] = parent
    r = client.post("/resource_providers", json=body)
    r.raise_for_status()
    return rp


def _inventory(client: httpx.Client, rp: str, inventories: dict[str, Any]) -> None:
    generation = client.get(f"/resource_providers/{rp}").json()["generation"]
    r = client.put(
        f"/resource_providers/{rp}/inventories",
        json={"resource_provider_generation": generation, "inventories": inventories},
    )
    r.raise_for_status()


def seed(client: httpx.Client, classes: int) -> dict[str, str]:
    """A root with two VCPU children, a host with four, a provider with ``classes`` custom
    classes. Returns their uuids."""
    tag = uuid.uuid4().hex[:6]
    two = _rp(client, f"abuse-two-{tag}")
    for i in range(2):
        _inventory(client, _rp(client, f"abuse-two-{tag}-c{i}", two), {"VCPU": {"total": 64}})
    four = _rp(client, f"abuse-four-{tag}")
    for i in range(4):
        _inventory(client, _rp(client, f"abuse-four-{tag}-c{i}", four), {"VCPU": {"total": 64}})
    many = _rp(client, f"abuse-many-{tag}")
    names = [f"CUSTOM_ABUSE_{i}" for i in range(classes)]
    for name in names:
        client.put(f"/resource_classes/{name}")
    _inventory(client, many, {name: {"total": 8} for name in names})
    return {"two": two, "four": four, "many": many}


# --- the cases ---------------------------------------------------------------------------------


def _groups(n: int, tree: str) -> str:
    parts = [f"resources{i}=VCPU:1&in_tree{i}={tree}" for i in range(1, n + 1)]
    return "/allocation_candidates?" + "&".join(parts) + "&group_policy=none"


def _raw_post(path: str, body: bytes) -> Callable[[httpx.Client], httpx.Response]:
    return lambda c: c.post(path, content=body, headers={"content-type": "application/json"})


def cases(fleet: dict[str, str], slow: bool, base_url: str) -> list[Case]:
    two, four = fleet["two"], fleet["four"]
    classes_1000 = ",".join(f"CUSTOM_ABUSE_{i}:1" for i in range(1000))
    classes_160 = ",".join(f"CUSTOM_ABUSE_{i}:1" for i in range(160))
    classes_64 = ",".join(f"CUSTOM_ABUSE_{i}:1" for i in range(64))
    ranked = {
        "query": {
            **{f"resources{i}": "VCPU:1" for i in range(1, 10)},
            **{f"in_tree{i}": four for i in range(1, 10)},
            "group_policy": "none",
        },
        "limit": 1,
    }
    flavor = {"vcpus": 4, "memory_mb": 1024, "extra_specs": {"hw:numa_nodes": "1"}}
    result = [
        Case("1.groups-16-no-limit", lambda c: c.get(_groups(16, two)), (200, 400)),
        Case("1.groups-18-no-limit", lambda c: c.get(_groups(18, two)), (200, 400)),
        Case("1.groups-64-no-limit", lambda c: c.get(_groups(64, two)), (200, 400)),
        Case(
            "1.groups-500",
            lambda c: c.get(
                "/allocation_candidates?"
                + "&".join(f"resources{i}=VCPU:1" for i in range(1, 501))
                + "&group_policy=none"
            ),
            (400,),
        ),
        Case(
            "1.ranked-9-groups-limit-1",
            lambda c: c.post("/allocation_candidates", json=ranked),
            (200, 400),
        ),
        Case(
            "1.classes-1000-per-group",
            lambda c: c.get(f"/allocation_candidates?resources={classes_1000}"),
            (400,),
        ),
        Case(
            "1.body-10MB",
            _raw_post("/resource_providers", b'{"name": "' + b"x" * 10_000_000 + b'"}'),
            (413,),
        ),
        Case(
            "1.query-string-40KB",
            lambda c: c.get("/resource_providers?name=" + "x" * 40_000),
            (400,),
        ),
        Case(
            "2.flavor-numa-cpus-0-99999999",
            lambda c: c.post(
                "/allocation_candidates",
                json={
                    "flavor": {
                        **flavor,
                        "extra_specs": {
                            "hw:numa_nodes": "1",
                            "hw:numa_cpus.0": "0-99999999",
                            "hw:numa_mem.0": "1024",
                        },
                    }
                },
            ),
            (400,),
        ),
        Case(
            "2.flavor-numa-cpus-0-4000000000",
            lambda c: c.post(
                "/allocation_candidates",
                json={
                    "flavor": {
                        **flavor,
                        "extra_specs": {
                            "hw:numa_nodes": "1",
                            "hw:numa_cpus.0": "0-4000000000",
                            "hw:numa_mem.0": "1024",
                        },
                    }
                },
            ),
            (400,),
        ),
        Case(
            "2.flavor-vcpus-huge",
            lambda c: c.post("/allocation_candidates", json={"flavor": {**flavor, "vcpus": 10**9}}),
            (200, 400),
        ),
        Case(
            "2.flavor-numa-nodes-huge",
            lambda c: c.post(
                "/allocation_candidates",
                json={"flavor": {**flavor, "extra_specs": {"hw:numa_nodes": "100000"}}},
            ),
            (400,),
        ),
        Case(
            "3.json-depth-1000", _raw_post("/resource_providers", b"[" * 1000 + b"]" * 1000), (400,)
        ),
        Case(
            "3.json-depth-1023-object",
            _raw_post("/resource_providers", b'{"a":' * 1023 + b"1" + b"}" * 1023),
            (400,),
        ),
        Case(
            "3.nul-in-name",
            lambda c: c.post("/resource_providers", json={"name": "a\x00b"}),
            (400,),
        ),
        Case("3.nul-in-query-name", lambda c: c.get("/resource_providers?name=a%00b"), (400,)),
        Case("3.nul-in-project-id", lambda c: c.get("/usages?project_id=a%00b"), (400,)),
        Case(
            "3.amount-2**63",
            lambda c: c.get("/resource_providers?resources=VCPU:9223372036854775808"),
            (400,),
        ),
        Case(
            "3.limit-5000-digits",
            lambda c: c.get("/allocation_candidates?resources=VCPU:1&limit=" + "9" * 5000),
            (400,),
        ),
        Case(
            "3.resources-1000-classes-rp",
            lambda c: c.get(f"/resource_providers?resources={classes_1000}"),
            (400,),
        ),
        Case(
            "4.inventory-ratio-3e38",
            lambda c: c.put(
                f"/resource_providers/{two}/inventories",
                json={
                    "resource_provider_generation": c.get(f"/resource_providers/{two}").json()[
                        "generation"
                    ],
                    "inventories": {"VCPU": {"total": 2147483647, "allocation_ratio": 3e38}},
                },
            ),
            (400,),
        ),
        Case(
            "4.candidates-after-bad-inventory",
            lambda c: c.get("/allocation_candidates?resources=VCPU:1&limit=5"),
            (200,),
        ),
        Case(
            "6.resources-64-classes-rp",
            lambda c: c.get(f"/resource_providers?resources={classes_64}"),
            (200,),
        ),
        Case(
            "6.resources-160-classes-rp",
            lambda c: c.get(f"/resource_providers?resources={classes_160}"),
            (400,),
        ),
        Case(
            "10.error-body-900KB-value",
            lambda c: c.post("/resource_providers", json={"name": "x" * 900_000}),
            (400,),
            note="body<4KB",
        ),
        Case("7.healthcheck", lambda c: c.get("/healthcheck"), (200,)),
    ]
    if slow:
        result += [
            Case("5.idle-connection", lambda c: _idle(base_url), (0,), note="closed by server"),
            Case("5.body-never-arrives", lambda c: _stalled_body(base_url), (408,)),
        ]
    return result


def _address(base_url: str) -> tuple[str, int]:
    host, port = base_url.split("//", 1)[1].rsplit(":", 1)
    return host, int(port)


def _idle(base_url: str) -> None:
    with socket.create_connection(_address(base_url)) as sock:
        sock.settimeout(120)
        while sock.recv(1024):
            pass
    return None


def _stalled_body(base_url: str) -> httpx.Response:
    with socket.create_connection(_address(base_url)) as sock:
        sock.settimeout(120)
        sock.sendall(
            b"POST /resource_providers HTTP/1.1\r\nHost: x\r\nx-auth-token: admin\r\n"
            b"content-type: application/json\r\ncontent-length: 1000\r\n\r\n{"
        )
        data = sock.recv(65536)
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0
    return httpx.Response(status)


# --- running -----------------------------------------------------------------------------------


class Watchdog:
    """Polls the worker's RSS while a case runs; SIGKILLs it past ``KILL_RSS_MB``."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.killed = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            try:
                rss = _proc(self.pid)[1]
            except OSError:
                return
            if rss > KILL_RSS_MB:
                self.killed = True
                os.kill(self.pid, 9)
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _start(database_url: str) -> tuple[subprocess.Popen[bytes], str]:
    executable = Path(sys.executable).parent / "placement-numa"
    env = {**os.environ, "PLACEMENT_NUMA_AUTH_STRATEGY": "noauth2", "PYTHONUNBUFFERED": "1"}
    log = open(Path(tempfile.gettempdir()) / f"abuse-serve-{PORT}.log", "wb")  # noqa: SIM115
    process = subprocess.Popen(
        [str(executable), "serve", "--port", str(PORT), "--database-url", database_url],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    base = f"http://127.0.0.1:{PORT}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + "/", timeout=1).status_code == 200:
                return process, base
        except httpx.HTTPError:
            time.sleep(0.3)
    process.kill()
    raise SystemExit("placement-numa serve did not start")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running service (no worker figures)")
    parser.add_argument("--database-url", help="database for the script's own service")
    parser.add_argument("--slow", action="store_true", help="also the slow-client cases")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    args = parser.parse_args()

    process = None
    database_url = ""
    if args.url:
        base = args.url.rstrip("/")
    else:
        database_url = args.database_url or (
            f"sqlite:///{tempfile.mkdtemp(prefix='abuse-')}/placement.sqlite"
        )
        process, base = _start(database_url)
    pid = process.pid if process else None
    worst_cpu = worst_peak = 0.0
    all_handled = True
    try:
        with httpx.Client(base_url=base, headers=HEADERS, timeout=120) as client:
            fleet = seed(client, 1000)
            client.get("/allocation_candidates?resources=VCPU:1&limit=1")  # warm the snapshot
            for case in cases(fleet, args.slow, base):
                if process is not None and process.poll() is not None:  # killed: restart
                    process, base = _start(database_url)
                    pid = process.pid
                before = _proc(pid) if pid else (0.0, 0.0, 0.0)
                watchdog = Watchdog(pid) if pid else None
                started = time.monotonic()
                try:
                    response = case.call(client)
                    status = response.status_code if response is not None else 0
                    code = ""
                    size = len(response.content) if response is not None else 0
                    if status >= 400 and response is not None and response.content:
                        try:
                            code = response.json()["errors"][0].get("code", "")
                        except (ValueError, KeyError, IndexError):
                            code = ""
                except httpx.HTTPError as exc:
                    status, code, size = -1, type(exc).__name__, 0
                millis = (time.monotonic() - started) * 1000
                if watchdog is not None:
                    watchdog.stop()
                if watchdog is not None and watchdog.killed:
                    process.wait() if process is not None else None
                    status, code = -9, f"worker killed past {KILL_RSS_MB:.0f} MiB RSS"
                    after = (before[0], KILL_RSS_MB, KILL_RSS_MB)
                else:
                    after = _proc(pid) if pid else (0.0, 0.0, 0.0)
                try:
                    alive = client.get("/healthcheck", timeout=30).status_code == 200
                except httpx.HTTPError:
                    alive = False
                if watchdog is not None and watchdog.killed:
                    alive = False
                cpu = after[0] - before[0]
                handled = status in case.expected and alive
                if case.note == "body<4KB":
                    handled = handled and size < 4096
                within = cpu <= CPU_BUDGET_S and after[2] <= RSS_BUDGET_MB
                all_handled = all_handled and handled and (within or not pid)
                worst_cpu, worst_peak = max(worst_cpu, cpu), max(worst_peak, after[2])
                row = {
                    "case": case.name,
                    "status": status,
                    "code": code,
                    "handled": handled,
                    "ms": round(millis, 1),
                    "cpu_s": round(cpu, 3),
                    "rss_mb": round(after[1], 1),
                    "peak_mb": round(after[2], 1),
                    "within_budget": within if pid else None,
                }
                if args.json:
                    print(json.dumps(row), flush=True)
                else:
                    print(
                        f"{case.name:34} status={status:<4} code={code or '-':38}"
                        f" handled={'yes' if handled else 'NO ':3} ms={millis:8.1f}"
                        + (
                            f" cpu_s={cpu:6.3f} rss_mb={after[1]:6.1f} peak_mb={after[2]:6.1f}"
                            if pid
                            else ""
                        ),
                        flush=True,
                    )
    finally:
        if process is not None:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
    verdict = "all cases handled" if all_handled else "SOME CASES NOT HANDLED"
    budget = (
        f"; worst worker CPU per request {worst_cpu:.3f} s (budget {CPU_BUDGET_S} s), peak RSS"
        f" {worst_peak:.1f} MiB (budget {RSS_BUDGET_MB:.0f} MiB)"
        if pid
        else ""
    )
    print(f"== {verdict}{budget}")
    return 0 if all_handled else 1


if __name__ == "__main__":
    sys.exit(main())
