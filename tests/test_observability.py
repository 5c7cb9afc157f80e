"""Metrics and logs of the real service.

``test_metrics_from_two_workers``: ``placement-numa serve --workers 2`` (SQLite; multiprocess
metrics), the demo fleet loaded and candidate queries (GET and NUMA-ranked POST) sent; then
``/metrics`` is scraped and every series the service promises is there with a non-zero value,
counted over both workers (requests are spread over several connections, and the sum of
requests counted equals the requests sent). Log lines: every line of a request carries its
request id, one access line per request, and JSON lines when asked.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import PlacementAPI
from tests.servers import HEADERS, running, service_env

pytestmark = pytest.mark.slow

COMMAND = shutil.which("placement-numa", path=str(Path(sys.executable).parent)) or "placement-numa"
FLAVOR = {"flavor": {"vcpus": 4, "memory_mb": 4096, "extra_specs": {"hw:numa_nodes": "2"}}}


def _samples(text: str) -> dict[str, float]:
    """``{'name{labels}': value}`` of an exposition text (comments skipped)."""
    found = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            found[key] = float(value)
    return found


def _total(samples: dict[str, float], name: str, **labels: str) -> float:
    total = 0.0
    for key, value in samples.items():
        metric, _, rest = key.partition("{")
        if metric != name:
            continue
        if all(f'{k}="{v}"' in rest for k, v in labels.items()):
            total += value
    return total


def test_metrics_from_two_workers(tmp_path: Path) -> None:
    env = service_env(
        PLACEMENT_NUMA_DATABASE_URL=f"sqlite:///{tmp_path / 'm.sqlite'}",
        PLACEMENT_NUMA_MAX_ALLOCATION_CANDIDATES="20",  # some searches hit the cap
    )
    argv = [COMMAND, "serve", "--port", "19220", "--workers", "2"]
    with running(argv, 19220, tmp_path / "serve.log", env=env, cwd=tmp_path) as service:
        url = service.base_url
        loaded = subprocess.run(
            [COMMAND, "demo", "--url", url], env=env, capture_output=True, text=True
        )
        assert loaded.returncode == 0, loaded.stderr
        sent = 0
        for _ in range(8):  # new connections: both workers get some
            with httpx.Client(base_url=url, headers=HEADERS, timeout=60) as client:
                r = client.get("/allocation_candidates?resources=VCPU:1,MEMORY_MB:512&limit=5")
                assert r.status_code == 200 and r.json()["allocation_requests"]
                r = client.post("/allocation_candidates", json=FLAVOR)
                assert r.status_code == 200 and r.json()["allocation_requests"]
                r = client.get(f"/resource_providers/{'0' * 8}-0000-4000-8000-{'0' * 12}")
                assert r.status_code == 404
                # a write, then a query on the same connection (worker): an incremental refresh
                # of a snapshot one revision behind
                r = client.put("/traits/CUSTOM_METRICS_" + str(sent))
                assert r.status_code == 201
                r = client.get("/allocation_candidates?resources=VCPU:1&limit=1")
                assert r.status_code == 200
                sent += 5
        text = httpx.get(url + "/metrics", headers=HEADERS, timeout=30).text
        log = service.log_text()

    samples = _samples(text)
    get_route = {"method": "GET", "route": "/allocation_candidates", "status": "200"}
    assert _total(samples, "placement_numa_http_requests_total", **get_route) == 16
    assert (
        _total(
            samples,
            "placement_numa_http_requests_total",
            method="GET",
            route="/resource_providers/{uuid}",
            status="404",
        )
        == 8
    )
    assert (
        _total(
            samples,
            "placement_numa_http_request_duration_seconds_count",
            method="POST",
            route="/allocation_candidates",
        )
        == 8
    )
    assert (
        _total(
            samples,
            "placement_numa_http_request_duration_seconds_sum",
            method="POST",
            route="/allocation_candidates",
        )
        > 0
    )
    # candidate searches: latency, candidates returned, roots visited
    assert _total(samples, "placement_numa_candidate_searches_total") >= 16
    assert _total(samples, "placement_numa_candidate_search_duration_seconds_sum") > 0
    assert _total(samples, "placement_numa_candidate_search_candidates_sum") > 0
    assert _total(samples, "placement_numa_candidate_search_roots_visited_sum") > 0
    assert _total(samples, "placement_numa_candidate_search_cap_hits_total") > 0
    # fleet snapshot: refreshes (both kinds over both workers), durations, providers, revision
    assert _total(samples, "placement_numa_fleet_refreshes_total", kind="full") >= 1
    assert _total(samples, "placement_numa_fleet_refreshes_total", kind="incremental") >= 1
    assert _total(samples, "placement_numa_fleet_refresh_duration_seconds_sum") > 0
    assert _total(samples, "placement_numa_fleet_providers") > 0
    assert _total(samples, "placement_numa_fleet_revision") > 0
    assert _total(samples, "placement_numa_fleet_revision_lag") > 0
    # database pool
    assert _total(samples, "placement_numa_db_pool_checkouts_total") > 0
    assert "placement_numa_db_pool_checked_out" in text
    # fleet NUMA gauges from the snapshot
    assert _total(samples, "placement_numa_fleet_numa_free", resource_class="PCPU") > 0
    assert _total(samples, "placement_numa_fleet_numa_free", resource_class="VCPU") > 0
    assert _total(samples, "placement_numa_fleet_numa_free_cpu_stddev_mean") > 0  # partly used
    assert "placement_numa_fleet_numa_cells_without_free_cpus" in text
    # per-host and per-cell series are opt-in ([metrics] per_host_series)
    assert "placement_numa_fleet_numa_cell_free" not in text
    # both workers served (two processes wrote metric files)
    pids = set(re.findall(r"Started server process \[(\d+)\]", log))
    assert len(pids) >= 2, log[-2000:]
    # access lines with request ids
    access = [line for line in log.splitlines() if "placement_numa.access" in line]
    assert len(access) >= sent
    # the version document needs no token: no user; every other line names the caller
    ids = r"\[None req-[0-9a-f-]{36} "
    assert all(re.search(ids + r"- - - ", x) for x in access if '"GET /"' in x)
    odd = [x for x in access if '"GET /"' not in x and not re.search(ids + "admin admin ", x)]
    assert not odd, odd[:3]
    assert any('"GET /resource_providers/0000' in line and "status: 404" in line for line in access)
    assert "Traceback" not in log


def test_request_id_on_every_log_line_and_json(
    api: PlacementAPI, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    from oslo_log.formatters import JSONFormatter

    from placement_numa.observability.logs import ContextFilter

    caplog.handler.addFilter(ContextFilter())
    with caplog.at_level(logging.DEBUG, logger="placement_numa"):
        response = api.get("/resource_providers")
    request_id = response.headers["x-openstack-request-id"]
    mine = [r for r in caplog.records if getattr(r, "context", None) is not None]
    mine = [r for r in mine if r.context.request_id == request_id]
    assert mine, [r.getMessage() for r in caplog.records]
    access = [r for r in mine if r.name == "placement_numa.access"]
    assert len(access) == 1
    line = json.loads(JSONFormatter().format(access[0]))
    assert line["context"]["request_id"] == request_id
    assert line["context"]["user"] == "admin"
    assert line["extra"]["method"] == "GET" and line["extra"]["route"] == "/resource_providers"
    assert line["extra"]["status"] == 200
    assert isinstance(line["extra"]["duration_ms"], float)
    # every record logged while the request ran carries its id
    during = [r for r in caplog.records if r.name.startswith("placement_numa")]
    assert all(r.context.request_id == request_id for r in during)


def test_metrics_protected(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from placement_numa.app import create_app
    from placement_numa.settings import Settings

    app = create_app(
        Settings(
            database_url=f"sqlite:///{tmp_path / 't.sqlite'}",
            auth_strategy="noauth2",
            metrics_token="s3cret",
        )
    )
    with TestClient(app) as client:
        assert client.get("/metrics").status_code == 401
        assert client.get("/metrics", headers={"authorization": "Bearer nope"}).status_code == 401
        ok = client.get("/metrics", headers={"authorization": "Bearer s3cret"})
        assert ok.status_code == 200 and "placement_numa_http_requests_total" in ok.text
        # without the token: the caller's own token and the placement:metrics rule (admin)
        admin = client.get("/metrics", headers={"x-auth-token": "admin"})
        assert admin.status_code == 200 and "placement_numa_http_requests_total" in admin.text
        member = client.get("/metrics", headers={"x-auth-token": "alice", "x-roles": "member"})
        assert member.status_code == 403
        error = member.json()["errors"][0]
        assert "Policy does not allow placement:metrics to be performed." in error["detail"]
        assert error["request_id"] == member.headers["x-openstack-request-id"]
    app.state.database.dispose()
