"""Follow a Nova flavor through ``POST /allocation_candidates`` and count the module stays and
the returns (issue 27's "follow a flavor" measure), reproducibly.

Set-up: the real application (``placement_numa.app.create_app``) on a fresh SQLite database in
a temporary directory, the demo fleet (``placement_numa.cli.demo.demo_fleet``, the machine
shapes the API tests use) loaded through the HTTP API with FastAPI's ``TestClient``. The flavor
(default: 4 CPUs, 4096 MiB, ``hw:numa_nodes=2``, ``hw:cpu_policy=dedicated``,
``hw:mem_page_size=large``) is posted once to warm the process (imports, the engine's snapshot,
the cell index), then posted again under ``sys.setprofile``; only that second, warm request is
measured, and both answers must be 200.

Method (what is counted):

1. **Events.** Every Python ``call`` event (``threading.setprofile``: the handler runs in
   a worker thread) whose code lives in a ``placement_numa`` module,
   from entering the router's handler (``post_allocation_candidates``) until it returns.
   Generated code (dataclass ``__init__``, ``<string>``), the standard library and third-party
   packages (FastAPI, pydantic, SQLAlchemy) are not ``placement_numa`` and are skipped; their
   callees in ``placement_numa`` are counted.
2. **Read once.** A newcomer reads each function once: only the *first* call of each code
   object counts (the reader does not re-read the rank hook for every candidate). The counted
   calls, in the order they happen, form the path.
3. **Places.** The place of a call is its module, with one collapse: everything under
   ``placement_numa.engine`` and the engine's metrics wrapper (``observability.engine``) is one
   place, ``engine``. The engine is a black box the pipeline hands its queries to: its own
   functions are not followed (one entry per call of an entry point, ``search`` or
   ``snapshot``). The calls it makes out of itself (the rank, bound and accept hooks, the
   fleet source) are its subtree, in the order of their first call: each callback is one
   entry in the module of the function the engine calls, and what that callback calls is read
   there (how a rank key is computed is the ranking's own matter, not the flavor's path), so
   callbacks defined in one module (one hooks object) count as one place. Any other call into
   the engine (a property of a ``Candidate``, ``FleetSnapshot`` or root view) reads an engine
   value: read in place, no entry.
4. **Leaf calls are read in place.** A counted call that enters no other place below it (a
   helper such as ``cpu_spec.parse_cpu_spec``, ``Flavor.spec``, a value type's property, a
   local helper that calls nothing elsewhere) is read where it is called: no entry, so it
   neither starts nor extends a stay (the same as reading on in the caller after a call
   returns, which is no entry either). The places of such calls are listed (``leaves``).
5. **Stays and returns.** The path is the counted calls left after rules 3 and 4, in the order
   they happen, each at its place. A *stay* is a maximal run of consecutive entries in one
   place. A *return* is a stay in a place that already had an earlier stay (the path went back
   to a module it had left): a check module and a settings module calling each other in turn
   are returns, and so is a module that, after handing work to another, runs a function of its
   own that goes elsewhere again. Reading on in a caller after a call returns is no entry.

Prints the stays in order (place, first function), then ``stays=N returns=M``; ``--json``
prints the same as one JSON object. Usage::

    PYTHONPATH=. python tools/flavor_path.py [--flavor JSON] [--json] [--no-fold-leaves]

Exit status 0; 1 when a request does not answer 200.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

DEFAULT_FLAVOR: dict[str, Any] = {
    "vcpus": 4,
    "memory_mb": 4096,
    "root_gb": 10,
    "extra_specs": {
        "hw:numa_nodes": "2",
        "hw:cpu_policy": "dedicated",
        "hw:mem_page_size": "large",
    },
}
HANDLER = "post_allocation_candidates"
VERSION = "placement 1.39"


@dataclass
class Call:
    """One counted (first) call: its place, module, function and the calls it made."""

    place: str
    module: str
    function: str
    children: list[Call] = field(default_factory=list)


ENGINE_MODULES = ("engine", "observability.engine")


def place_of(module: str) -> str:
    """The place of a module (``placement_numa.`` dropped; the engine package and the engine's
    metrics wrapper are one place, ``engine``)."""
    name = module.removeprefix("placement_numa.")
    if any(name == m or name.startswith(m + ".") for m in ENGINE_MODULES):
        return "engine"
    return name


class Tracer:
    """A ``sys.setprofile`` hook that records the first call of each ``placement_numa`` function
    made under the handler, as a tree of ``Call``."""

    def __init__(self) -> None:
        self.seen: set[Any] = set()
        self.root: Call | None = None
        self.stack: list[tuple[FrameType, Call | None]] = []
        self.armed = False

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if not self.armed:
            return
        if event == "call":
            self._call(frame)
        elif event == "return" and self.stack and self.stack[-1][0] is frame:
            self.stack.pop()

    def _call(self, frame: FrameType) -> None:
        module = frame.f_globals.get("__name__", "")
        code = frame.f_code
        if not module.startswith("placement_numa") or code.co_filename.startswith("<"):
            return
        if self.root is None:
            if code.co_name != HANDLER:
                return
            self.root = Call(place_of(module), module, code.co_qualname)
            self.seen.add(code)
            self.stack.append((frame, self.root))
            return
        if not self.stack:
            return  # after the handler returned
        parent = next((c for _, c in reversed(self.stack) if c is not None), None)
        if code in self.seen:
            self.stack.append((frame, None))  # read already: its callees still count
            return
        self.seen.add(code)
        call = Call(place_of(module), module, code.co_qualname)
        if parent is not None:
            parent.children.append(call)
        self.stack.append((frame, call))


ENGINE_ENTRY_POINTS = ("search", "snapshot")


def _entry_point(call: Call) -> bool:
    """Whether ``call`` is one of the engine's entry points (``search``, ``snapshot``)."""
    return call.function.rsplit(".", 1)[-1] in ENGINE_ENTRY_POINTS


def _engine_value(call: Call) -> bool:
    """Whether ``call`` reads an engine value (an engine call other than an entry point)."""
    return call.place == "engine" and not _entry_point(call)


def _moves(call: Call) -> bool:
    """Whether ``call`` (or any call below it) enters a place other than its own (reads of
    engine values excepted: rule 3)."""
    for child in call.children:
        if call.place != "engine" and _engine_value(child):
            continue
        if child.place != call.place or _moves(child):
            return True
    return False


def _label(call: Call) -> str:
    return f"{call.module.removeprefix('placement_numa.')}.{call.function}"


def path(root: Call, fold_leaves: bool) -> tuple[list[tuple[str, str]], set[str]]:
    """The counted calls in order as ``(place, function)``: engine values read in place
    (rule 3), leaf calls read in place when ``fold_leaves`` (rule 4). Also the places of the
    leaf calls left out."""
    out: list[tuple[str, str]] = []
    leaves: set[str] = set()

    def hooks(call: Call) -> list[Call]:
        """The first calls out of the engine below ``call`` (an engine call), in order."""
        found: list[Call] = []
        for child in call.children:
            found.extend(hooks(child) if child.place == "engine" else [child])
        return found

    def walk(call: Call, caller: str | None = None) -> None:
        if caller is not None and _engine_value(call):
            return
        if caller is not None and fold_leaves and not _moves(call):
            leaves.add(call.place)
            return
        out.append((call.place, _label(call)))
        if call.place != "engine":
            for child in call.children:
                walk(child, call.place)
            return
        for hook in hooks(call):  # the black box's callbacks: one entry each (rule 3)
            if fold_leaves and not _moves(hook):
                leaves.add(hook.place)
            else:
                out.append((hook.place, _label(hook)))

    walk(root)
    return out, leaves


def stays(entries: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], int]:
    """The stays (place, first function of the run) and the number of returns."""
    runs: list[tuple[str, str]] = []
    for place, function in entries:
        if not runs or runs[-1][0] != place:
            runs.append((place, function))
    visited: set[str] = set()
    returns = 0
    for place, _ in runs:
        returns += place in visited
        visited.add(place)
    return runs, returns


def _post(client: Any, flavor: dict[str, Any]) -> int:
    response = client.post(
        "/allocation_candidates",
        json={"flavor": flavor, "limit": 5},
        headers={"openstack-api-version": VERSION, "x-auth-token": "admin", "x-roles": "admin"},
    )
    return int(response.status_code)


def measure(flavor: dict[str, Any], fold_leaves: bool = True) -> dict[str, Any]:
    """Run the request (warm-up, then traced) on a fresh demo fleet; the figures as a dict."""
    from fastapi.testclient import TestClient

    from placement_numa.app import create_app, prepare_database
    from placement_numa.cli.demo import demo_fleet, load_fleet
    from placement_numa.settings import Settings

    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'flavor_path.db'}"
        prepare_database(Settings(database_url=url))
        app = create_app(Settings(database_url=url, auto_migrate=False, auth_strategy="noauth2"))
        headers = {"openstack-api-version": VERSION, "x-auth-token": "admin", "x-roles": "admin"}
        tracer = Tracer()
        threading.setprofile(tracer)  # FastAPI runs the handler in a worker thread
        with TestClient(app) as client:

            def send(method: str, url_path: str, body: Any) -> tuple[int, Any]:
                r = client.request(method, url_path, json=body, headers=headers)
                return r.status_code, (r.json() if r.content else None)

            load_fleet(send, demo_fleet(with_devices=True))
            statuses = [_post(client, flavor)]
            tracer.armed = True
            try:
                statuses.append(_post(client, flavor))
            finally:
                tracer.armed = False
                threading.setprofile(None)
        app.state.database.dispose()
    if tracer.root is None:
        raise RuntimeError(f"the handler {HANDLER} was never entered")
    entries, leaves = path(tracer.root, fold_leaves)
    runs, returns = stays(entries)
    return {
        "statuses": statuses,
        "stays": len(runs),
        "returns": returns,
        "path": [f"{p}  ({f})" for p, f in runs],
        "leaves": sorted(leaves),
        "functions": len(entries),
    }


def main(argv: list[str] | None = None) -> int:
    """Command line: print the stays, the leaves folded, and ``stays=N returns=M``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flavor", type=json.loads, default=DEFAULT_FLAVOR, help="flavor JSON")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    parser.add_argument("--no-fold-leaves", action="store_true", help="rule 4 off")
    args = parser.parse_args(argv)
    found = measure(args.flavor, fold_leaves=not args.no_fold_leaves)
    if args.json:
        print(json.dumps(found, indent=1))
    else:
        for n, line in enumerate(found["path"], start=1):
            print(f"{n:3d}  {line}")
        print("read in place (leaf calls):", ", ".join(found["leaves"]) or "-")
        print(f"functions={found['functions']} stays={found['stays']} returns={found['returns']}")
    return 0 if all(s == 200 for s in found["statuses"]) else 1


if __name__ == "__main__":
    sys.exit(main())
