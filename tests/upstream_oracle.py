"""Upstream Placement 16 as an oracle: replay one script of requests against it and against us.

A *script* is a list of ``Step``s built once (fresh uuids and names, so one upstream database
serves a whole test session); ``replay`` sends every step to a service and returns what each
answered as ``(status, body)``, with the per-request ``request_id`` removed from error bodies.
Tests compare the two lists step by step::

    script = [Step("PUT", f"/resource_providers/{rp}/aggregates", {...}, "1.20"), ...]
    assert replay(api, script) == replay_upstream(upstream, script)

``upstream`` (a session fixture in the test modules that use it) runs upstream Placement on
SQLite through ``benchmarks.upstream``; it is skipped where upstream cannot be installed (no
PyPI) and fails in CI, which installs it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from benchmarks.upstream import ensure_venv, upstream_placement
from tests.backends import in_ci
from tests.conftest import PlacementAPI
from tests.servers import free_port

__all__ = ["Answer", "Step", "replay", "replay_upstream", "require_upstream", "running_upstream"]

PORTS = range(19960, 19990)  # this module's share of the test ports

Answer = tuple[int, Any]


@dataclass(frozen=True)
class Step:
    """One request: method, path (with query), JSON body (``None``: no body), microversion."""

    method: str
    path: str
    body: Any = None
    version: str = "1.39"


def _answer(response: httpx.Response) -> Answer:
    try:
        body = response.json()
    except ValueError:
        body = response.text
    if isinstance(body, dict):
        for error in body.get("errors", []):
            error.pop("request_id", None)
    return response.status_code, body


def replay(api: PlacementAPI, script: Sequence[Step]) -> list[Answer]:
    """The answers of placement-numa (through ``api``) to ``script``, in order."""
    return [_answer(api.request(s.method, s.path, version=s.version, json=s.body)) for s in script]


def replay_upstream(base_url: str, script: Sequence[Step]) -> list[Answer]:
    """The answers of upstream Placement at ``base_url`` to ``script``, in order."""
    answers = []
    with httpx.Client(base_url=base_url, timeout=60) as client:
        for step in script:
            headers = {
                "x-auth-token": "admin",
                "openstack-api-version": f"placement {step.version}",
                "content-type": "application/json",
            }
            content = None if step.body is None else json.dumps(step.body)
            answers.append(
                _answer(client.request(step.method, step.path, headers=headers, content=content))
            )
    return answers


def require_upstream() -> None:
    """Install upstream Placement 16 if needed; skip the test where it cannot be installed (no
    PyPI), fail it in CI (``.ci/run`` installs it)."""
    try:
        ensure_venv()
    except Exception as exc:  # no PyPI here: CI installs it in .ci/run
        if in_ci():
            pytest.fail(f"upstream Placement 16 missing in CI: {exc}")
        pytest.skip(f"upstream Placement 16 not installable here: {exc}")


def running_upstream() -> Iterator[str]:
    """Upstream Placement 16 on a fresh SQLite database (the body of a session fixture);
    skips the test where it cannot be installed, fails in CI."""
    require_upstream()
    with upstream_placement(free_port(random.sample(PORTS, len(PORTS))), workers=1) as base:
        yield base
