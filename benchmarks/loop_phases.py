"""Where a scheduler loop's GET spends its time, in process: refresh, search, body.

``scheduler_loop.py`` times each boot from outside (HTTP, two workers). This splits the
server's part of the same boots, in one process, so the figures say what a faster GET must
cut: for each flavor kind of ``scheduler_loop.CATALOGUE`` and each limit, ``--boots`` boots
with sizes drawn per boot (first-time queries), each timed in phases:

* **refresh**: the snapshot brought up to date after the previous boot's claim
  (``engine.snapshot()``: the change log read, the claimed tree's usage patched in);
* **parse**: the query string to a ``CandidateQuery``;
* **search**: ``engine.search`` on that snapshot;
* **body**: the response body written (``candidate_body_pieces``, joined), with its size;

then the first candidate is claimed through the app (``PUT /allocations``, not timed; the
request is read from the engine's first candidate, not parsed back from the body). What
is left of the GET's wall time over HTTP is the framework, sending the bytes and the client
reading them.

On a copy of the mixed fleet ``mixed_fleet.py`` seeded and cached (run it first with these
sizes), or with ``--db`` on a copy of another database, such as ``scale.py``'s 100,000 hosts:

    python benchmarks/loop_phases.py --hosts 1000 --cells 2 --boots 40
    python benchmarks/loop_phases.py --db /tmp/pn-scale-100000.sqlite --boots 40 --limits 1000
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from fastapi import FastAPI
from fastapi.testclient import TestClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mixed_fleet import fleet_cache  # noqa: E402
from scheduler_loop import CATALOGUE, HEADERS, boots, claim_body  # noqa: E402

from placement_numa.api import microversion as mv  # noqa: E402
from placement_numa.api.candidate_query import parse_candidate_query  # noqa: E402
from placement_numa.api.engine_dep import engine_for_state  # noqa: E402
from placement_numa.api.schemas.candidate_pieces import (  # noqa: E402
    candidate_body_pieces,
    process_fragments,
)
from placement_numa.app import create_app  # noqa: E402
from placement_numa.engine.candidates import CandidateResult  # noqa: E402
from placement_numa.settings import Settings  # noqa: E402

VERSION = mv.Microversion(1, 39)
PHASES = ("refresh", "parse", "search", "body")


def run_boots(
    client: TestClient, app: FastAPI, plan: list[tuple[str, str]], limit: str
) -> dict[str, list[float]]:
    """Each boot of ``plan`` in phases (see the module docstring): ``{phase: [ms]}`` and
    ``"bytes"``."""
    engine = engine_for_state(app.state)
    fragments = process_fragments(app.state)
    suffix = "" if limit == "none" else f"&limit={limit}"
    timed: dict[str, list[float]] = {phase: [] for phase in (*PHASES, "bytes")}
    for _kind, query_string in plan:
        started = time.perf_counter()
        engine.snapshot()
        refreshed = time.perf_counter()
        query = parse_candidate_query(parse_qsl(query_string + suffix), VERSION)
        parsed = time.perf_counter()
        result = engine.search(query, nested_aware=True)
        searched = time.perf_counter()
        body = b"".join(
            candidate_body_pieces(result, query, VERSION, nested_aware=True, fragments=fragments)
        )
        written = time.perf_counter()
        claim = first_request(result)
        del result  # as a finished response: the next refresh may patch the snapshot in place
        for phase, (a, b) in zip(
            PHASES,
            ((started, refreshed), (refreshed, parsed), (parsed, searched), (searched, written)),
            strict=True,
        ):
            timed[phase].append((b - a) * 1000)
        timed["bytes"].append(len(body))
        del body
        if claim is not None:
            answer = client.put(
                f"/allocations/{uuid.uuid4()}", json=claim_body(claim), headers=HEADERS
            )
            assert answer.status_code == 204, answer.text[:300]
    return timed


def first_request(result: CandidateResult) -> dict[str, Any] | None:
    """The first allocation request of ``result`` as the body renders it (``{"allocations":
    {uuid: {"resources": {class: amount}}}}``), or ``None`` when there is none: read from the
    engine's first candidate, not parsed back from the body. A client parses the body in its
    own process; parsing 0.6-1.4 MB here, in the service's, cooled the caches that the next
    boot's phases read (0.3-0.4 ms more body time on the 1,000-host fleet)."""
    if not result.candidates:
        return None
    uuids = result.fleet.uuids
    allocations: dict[str, dict[str, dict[str, int]]] = {}
    for provider, resource_class, amount in result.candidates[0].allocations:
        resources = allocations.setdefault(uuids[provider], {"resources": {}})["resources"]
        resources[resource_class] = amount
    return {"allocations": allocations}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--cells", type=int, default=2)
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--boots", type=int, default=40, help="boots per flavor kind and limit")
    parser.add_argument("--limits", nargs="*", default=["1000", "none"])
    parser.add_argument(
        "--db", type=Path, help="a SQLite database to copy instead of the cached mixed fleet"
    )
    args = parser.parse_args()
    if args.db is not None:
        if not args.db.exists():
            sys.exit(f"no database at {args.db}")
        database = args.db
        label = args.db.name
    else:
        cached = fleet_cache(args.seed, args.hosts, args.cells)
        if not (cached / "ours.seeded").exists():
            sys.exit(f"no seeded fleet in {cached}: run benchmarks/mixed_fleet.py with these sizes")
        database = cached / "ours.db"
        label = f"{args.hosts} hosts x {args.cells} cells"
    work = Path(tempfile.mkdtemp(prefix="pn-phases-"))
    try:
        with sqlite3.connect(database) as source:
            with sqlite3.connect(work / "ours.db") as copy:
                source.backup(copy)
        settings = Settings(database_url=f"sqlite:///{work / 'ours.db'}", auth_strategy="noauth2")
        app = create_app(settings)
        with TestClient(app) as client:
            for _kind, query in boots(len(CATALOGUE) * 2, args.seed - 1):  # fleet loaded
                client.get(f"/allocation_candidates?{query}&limit=1", headers=HEADERS)
            print(f"{label}, {args.boots} boots per row (p50)")
            print("| flavor | limit | refresh ms | parse ms | search ms | body ms | body bytes |")
            print("|---|---|---|---|---|---|---|")
            for n, limit in enumerate(args.limits):
                drawn = boots(args.boots * len(CATALOGUE) * 3, args.seed + 100 + n)
                for kind in CATALOGUE:
                    plan = [boot for boot in drawn if boot[0] == kind][: args.boots]
                    timed = run_boots(client, app, plan, limit)
                    p50 = {phase: statistics.median(values) for phase, values in timed.items()}
                    print(
                        f"| {kind} | {limit} | "
                        + " | ".join(f"{p50[phase]:.2f}" for phase in PHASES)
                        + f" | {p50['bytes']:,.0f} |",
                        flush=True,
                    )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
