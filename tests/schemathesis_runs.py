"""Schemathesis over the served ``/openapi.json``, as issue 29 asks: the real service (SQLite, the
demo fleet loaded) is fuzzed three times, with ``OpenStack-API-Version`` pinned to the newest
microversion, absent (served at 1.0) and ``latest``, with every check but those in
``EXCLUDED_CHECKS``, a fixed seed and a bounded number of examples per operation.

``run_all`` returns one ``ModeResult`` per mode: operations, requests, and the distinct failures
(check code, operation, title) that are not in ``KNOWN`` (the classes that OpenAPI cannot
express, each with its reason; ``doc/source/reference/api.rst`` names them). Run it by hand to
print the figures::

    python -m tests.schemathesis_runs [--max-examples N] [--port P]
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tests.servers import running, service_env, unexpected_tracebacks

__all__ = ["MODES", "SEED", "EXCLUDED_CHECKS", "KNOWN", "ModeResult", "run_all"]

BIN = Path(sys.executable).parent
SEED = 29
MODES: dict[str, str | None] = {
    "pinned": "placement 1.39",
    "absent": None,
    "latest": "placement latest",
}
# Checks left out, with the reason (they test the deployment, not the document).
EXCLUDED_CHECKS = {
    # The test service runs with auth_strategy = noauth2, Placement's development mode: any
    # token is trusted and x-roles names the caller's roles, so "invalid credentials" are
    # valid by design. Keystone's validation is tested by tests/test_keystone_auth.py.
    "ignored_auth": "noauth2 trusts every token",
}


@dataclass(frozen=True)
class Known:
    """A failure class OpenAPI cannot express: schemathesis's ``code`` on ``operation`` in
    ``mode`` ("*": any) whose answer matches ``answer`` (a regular expression)."""

    mode: str
    code: str
    operation: str
    answer: str
    reason: str

    def matches(self, mode: str, code: str, operation: str, answer: str) -> bool:
        """Whether a failure falls in this class."""
        return (
            self.mode in ("*", mode)
            and self.code in ("*", code)
            and self.operation in ("*", operation)
            and re.search(self.answer, answer) is not None
        )


KNOWN: tuple[Known, ...] = (
    Known(
        "*",
        "ST202",
        "*",
        r"No such (trait|resource class)|Cannot delete standard|Invalid resource class",
        "Existence: a trait or resource class name of the right form that the service does not"
        " know (or a standard one, which cannot be deleted). The names are data, not schema.",
    ),
    Known(
        "*",
        "ST202",
        "*",
        r"parent provider UUID does not exist|in (inventories|allocations) not found"
        r"|No resource provider with (uuid|name)|resource provider '[^']*' that does not exist",
        "Existence: a body that names a provider (a parent, a reshaped provider, a host) that"
        " does not exist is a 400, as in Placement. Which providers exist is data.",
    ),
    Known(
        "*",
        "ST202",
        "*",
        r"capacity_too_large|Real suffixes should be specified|numa_distances\.invalid"
        r"|There must be at least one resources|Resourceless suffixed group"
        # the same without the error code (before 1.23):
        r"|The capacity \(total - reserved\)|rows are for NUMA cells|NUMA cell ids are"
        r"|is not a compute node \(root provider\)|Invalid flavor \("
        r"|max_unit|min_unit|step_size|reserved",
        "Rules between values: an inventory's capacity ((total - reserved) * allocation_ratio"
        " <= 2**53) and its unit rules, same_subtree naming suffixes that the query's groups"
        " use (and a suffixed group without resources in same_subtree), a distance matrix"
        " over the NUMA cells of the provider's tree, a JSON query with"
        " at least one resources or resources<suffix> parameter (JSON Schema could only say"
        " it as not/propertyNames/not, which generators and generated clients cannot use).",
    ),
    Known(
        "*",
        "ST202",
        "*",
        r"does not match '\^CUSTOM_\[A-Z0-9_\]\+\$'|The trait is invalid",
        "Linked values: the stateful phase feeds names that GET /resource_classes and GET"
        " /traits list (standard ones, such as VCPU) into PUT and DELETE paths as valid data,"
        " although the document gives those path parameters the pattern ^CUSTOM_[A-Z0-9_]+$.",
    ),
    Known(
        "*",
        "ST202",
        "*",
        r"placement_numa\.flavor\.invalid|placement_numa\.image\.invalid",
        "Nova's flavor extra specs and image properties: the document gives them as maps of"
        " strings, numbers and booleans; which keys exist (hw:*, pci_passthrough:*, ...), the"
        " form of each value and the rules between them (hw:cpu_dedicated_mask with"
        " hw:cpu_policy=mixed, hw:numa_cpus.N covering vcpus, ...) are Nova's, checked in code.",
    ),
    Known(
        "*",
        "ST202",
        "*",
        r"already has NUMA cell providers|has no NUMA cell providers|cannot collapse it"
        r"|on both the compute node and its cells|creating loop in the provider tree",
        "State of the data: a reshape of a host already reshaped that way (to_numa of a NUMA"
        " tree, to_flat of a flat host) or whose tree cannot be collapsed (a class inventoried"
        " on both the compute node and its cells, a cell with children or other classes), and a"
        " parent that is the provider itself or one of its descendants (a loop, 400 as in"
        " Placement). The stateful phase links real host names and provider uuids from earlier"
        " answers; which tree a host has is data.",
    ),
    Known(
        "*",
        "ST202",
        "*",
        r"requires amount <= \d+",
        "A number inside a string: the amounts of RC:amount query values go up to 2**63 - 1"
        " (Placement's bound); the document's pattern gives their digits, and a pattern that"
        " bounds a number's value would be an unreadable alternation.",
    ),
    Known(
        "*",
        "ST301",
        "*",
        r'^\{"(traits|inventories|allocations)":(\[\]|\{\})',
        "A DELETE that empties a collection (a provider's traits or inventories, a consumer's"
        " allocations): Placement answers the next GET with the empty collection (200), not"
        " 404, since the provider or consumer path still names a collection.",
    ),
    Known(
        "absent",
        "ST202",
        "*",
        r"Additional properties are not allowed|is not of type 'array'"
        r"|The method DELETE is not allowed",
        "Shapes per microversion: without OpenStack-API-Version a request is served at 1.0,"
        " where newer body fields and query parameters are refused and some bodies have their"
        " old shape (a list of allocations before 1.12). OpenAPI cannot make a body, a query"
        " parameter or a method depend on a header's value; the document gives the newest"
        " shape and x-min-microversion on each operation, field and parameter.",
    ),
)


@dataclass
class ModeResult:
    """One schemathesis run: its figures and the failures outside ``KNOWN``."""

    mode: str
    operations: int = 0
    requests: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    failures: dict[tuple[str, str, str], str] = field(default_factory=dict)
    known: set[tuple[str, str, str]] = field(default_factory=set)
    seconds: float = 0.0
    exit_code: int = 0

    def line(self) -> str:
        """The figures on one line."""
        server_errors = sum(n for status, n in self.statuses.items() if status >= 500)
        return (
            f"{self.mode}: {self.operations} operations, {self.requests} requests,"
            f" {server_errors} 5xx, {len(self.failures)} distinct failures"
            f" ({len(self.known)} known classes) in {self.seconds:.0f} s"
        )


def _answer(interaction: dict[str, object] | None) -> str:
    """The response body of a recorded interaction ("" without one)."""
    response = interaction.get("response") if interaction else None
    if not isinstance(response, dict):
        return ""
    content = response.get("content") or {}
    return base64.b64decode(content.get("$base64", "")).decode(errors="replace")


def _is_known(mode: str, code: str, operation: str, answer: str) -> bool:
    return any(known.matches(mode, code, operation, answer) for known in KNOWN)


def _example(interaction: dict[str, object]) -> str:
    """``METHOD uri [version header] body -> status`` of one recorded interaction."""
    request = interaction["request"]
    assert isinstance(request, dict)
    headers = request.get("headers", {})
    version = [v for k, v in headers.items() if k.lower() == "openstack-api-version"]
    body = request.get("body")
    text = base64.b64decode(body["$base64"]).decode(errors="replace")[:300] if body else ""
    response = interaction.get("response")
    status = response.get("status_code") if isinstance(response, dict) else None
    answer = _answer(interaction)[-300:]
    return f"{request['method']} {request['uri']} {version} {text} -> {status} {answer}"


def summarize(mode: str, report: Path) -> ModeResult:
    """Read schemathesis's NDJSON event stream ``report`` into a ``ModeResult``."""
    result = ModeResult(mode)
    for line in report.read_text().splitlines():
        event = json.loads(line)
        if "LoadingFinished" in event:
            result.operations = event["LoadingFinished"]["statistic"]["operations"]["selected"]
        scenario = event.get("ScenarioFinished")
        if scenario is None:
            continue
        recorder = scenario["recorder"]
        interactions = recorder.get("interactions", {})
        result.requests += len(interactions)
        for interaction in interactions.values():
            if interaction.get("response"):
                result.statuses[interaction["response"]["status_code"]] += 1
        for case_id, checks in recorder.get("checks", {}).items():
            for check in checks:
                if check["status"] != "failure":
                    continue
                failure = check["failure_info"]["failure"]
                key = (failure["code"], failure["operation"] or recorder["label"], failure["title"])
                where = interactions.get(case_id)
                if _is_known(mode, key[0], key[1], _answer(where)):
                    result.known.add(key)
                elif key not in result.failures:
                    message = failure["message"].replace("\n", " | ")[:300]
                    result.failures[key] = message + ("\n      " + _example(where) if where else "")
    return result


def run_mode(
    schemathesis: str, base_url: str, mode: str, workdir: Path, max_examples: int
) -> ModeResult:
    """One schemathesis run over ``base_url``'s document with ``mode``'s version header."""
    report = workdir / f"{mode}.ndjson"
    header = MODES[mode]
    argv = [
        schemathesis,
        "run",
        f"{base_url}/openapi.json",
        "--checks",
        "all",
        "--exclude-checks",
        ",".join(EXCLUDED_CHECKS),
        "--max-examples",
        str(max_examples),
        "--phases",
        "examples,coverage,fuzzing,stateful",
        "--seed",
        str(SEED),
        "--generation-deterministic",
        # The service refuses NUL in every JSON string (api/limits.py): a rule over all
        # strings, which OpenAPI could only say with a pattern on each (docs: openapi.rst).
        "--generation-allow-x00",
        "false",
        "--request-timeout",
        "30",
        "--workers",
        "1",
        "-H",
        "x-auth-token: admin",
        "-H",
        "x-roles: admin,service",
        *(["-H", f"openstack-api-version: {header}"] if header else []),
        "--no-color",
        "--report",
        "ndjson",
        "--report-ndjson-path",
        str(report),
    ]
    started = time.monotonic()
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        cwd=workdir,
        timeout=600,
        env={**service_env(), "SCHEMATHESIS_HOOKS": ""},
    )
    (workdir / f"{mode}.txt").write_text(done.stdout + done.stderr)
    result = summarize(mode, report)
    result.seconds = time.monotonic() - started
    result.exit_code = done.returncode
    return result


def run_all(
    workdir: Path, port: int, max_examples: int, modes: tuple[str, ...] = tuple(MODES)
) -> tuple[list[ModeResult], list[str]]:
    """Serve the demo fleet on SQLite at ``port``, run every mode; the results and the
    unexpected tracebacks in the service log."""
    command = shutil.which("placement-numa", path=str(BIN)) or "placement-numa"
    schemathesis = shutil.which("schemathesis", path=str(BIN)) or shutil.which("schemathesis")
    assert schemathesis, "schemathesis is a test dependency (pip install -e '.[test]')"
    env = service_env(
        PLACEMENT_NUMA_DATABASE_URL=f"sqlite:///{workdir / 'st.sqlite'}",
        PLACEMENT_NUMA_ACCESS_LOG="false",
    )
    log = workdir / "serve.log"
    with running(
        [command, "serve", "--port", str(port)], port, log, env=env, cwd=workdir
    ) as service:
        demo = subprocess.run(
            [command, "demo", "--url", service.base_url], env=env, capture_output=True, text=True
        )
        assert demo.returncode == 0, demo.stderr
        results = [
            run_mode(schemathesis, service.base_url, mode, workdir, max_examples) for mode in modes
        ]
        tracebacks = unexpected_tracebacks(service.log_text())
    return results, tracebacks


def main() -> None:
    """Print the figures of every mode and each distinct failure with one example."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=10)
    parser.add_argument("--port", type=int, default=19291)
    parser.add_argument("--mode", action="append", choices=list(MODES))
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="schemathesis-"))
    workdir.mkdir(parents=True, exist_ok=True)
    modes = tuple(args.mode or MODES)
    results, tracebacks = run_all(workdir, args.port, args.max_examples, modes)
    for result in results:
        print(result.line())
        for (code, operation, title), example in sorted(result.failures.items()):
            print(f"  {code} {operation}: {title}\n      {example}")
    print(f"tracebacks in the service log: {len(tracebacks)}; reports in {workdir}")


if __name__ == "__main__":
    main()
