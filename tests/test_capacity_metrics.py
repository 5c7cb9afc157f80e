"""``[metrics] flavors_file`` (issue 31): a catalogue in Nova's flavor format read into
flavors, and ``/metrics`` exporting ``placement_numa_flavor_capacity{flavor}`` equal to ``POST
/allocation_candidates/capacity``'s totals, with the stranded capacity of the fleet, on the
real app over a real database (the fleet of ``test_capacity_api``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from placement_numa.app import create_app
from placement_numa.services.flavor_catalogue import CatalogueError, load_catalogue
from placement_numa.settings import Settings
from tests.backends import TestDatabase, reset_rows
from tests.conftest import PlacementAPI
from tests.test_capacity_api import V, build_fleet

CATALOGUE = {
    "flavors": [
        {"name": "m1.numa", "vcpus": 2, "ram": 2048, "disk": 5, "OS-FLV-EXT-DATA:ephemeral": 0,
         "swap": "", "extra_specs": {"hw:numa_nodes": "1"}},
        {"name": "m1.pinned", "vcpus": 2, "ram": 2048, "disk": 0, "swap": 0,
         "properties": "hw:cpu_policy='dedicated', hw:numa_nodes='2'"},
    ]
}  # fmt: skip


@pytest.fixture(scope="module")
def metrics_app(
    test_database: TestDatabase, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FastAPI]:
    path = tmp_path_factory.mktemp("catalogue") / "flavors.json"
    path.write_text(json.dumps(CATALOGUE))
    application = create_app(
        Settings(
            database_url=test_database.url,
            auto_migrate=False,
            auth_strategy="noauth2",
            metrics_flavors_file=path,
        )
    )
    yield application
    application.state.database.dispose()


@pytest.fixture
def mapi(metrics_app: FastAPI) -> Iterator[PlacementAPI]:
    with metrics_app.state.database.write() as conn:
        reset_rows(conn)
    with TestClient(metrics_app, raise_server_exceptions=False) as client:
        yield PlacementAPI(client)


def _gauges(text: str, name: str) -> dict[str, float]:
    found = {}
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            key, value = line.rsplit(" ", 1)
            found[key[len(name) :]] = float(value)
    return found


def test_flavor_capacity_gauges_match_the_capacity_answer(
    mapi: PlacementAPI, metrics_app: FastAPI
) -> None:
    build_fleet(mapi)
    body = {
        "flavors": [
            {"name": "m1.numa", "vcpus": 2, "memory_mb": 2048, "root_gb": 5,
             "extra_specs": {"hw:numa_nodes": "1"}},
            {"name": "m1.pinned", "vcpus": 2, "memory_mb": 2048,
             "extra_specs": {"hw:cpu_policy": "dedicated", "hw:numa_nodes": "2"}},
        ]
    }  # fmt: skip
    answer = mapi.post("/allocation_candidates/capacity", json=body, version=V).json()
    mapi.get("/metrics")  # the first scrape starts the computation
    metrics_app.state.catalogue_collector.refresh(wait=True)
    text = mapi.get("/metrics").text
    capacity = _gauges(text, "placement_numa_flavor_capacity")
    assert capacity == {f'{{flavor="{c["flavor"]}"}}': c["total"] for c in answer["capacity"]}
    assert all(total > 0 for total in capacity.values())
    stranded = _gauges(text, "placement_numa_fleet_stranded")
    assert stranded['{resource_class="PCPU"}'] == answer["stranded"]["stranded"]["PCPU"]
    fragmentation = _gauges(text, "placement_numa_fleet_fragmentation")
    assert 0 <= fragmentation['{resource_class="PCPU"}'] <= 1


def test_catalogue_reads_nova_format_and_refuses_garbage(tmp_path: Path) -> None:
    path = tmp_path / "flavors.yaml"
    path.write_text(
        "- {name: m1.a, vcpus: 4, ram: 4096, disk: 20, swap: 512,"
        " properties: {'hw:cpu_policy': dedicated}}\n"
    )
    (ask,) = load_catalogue(path)
    assert ask.name == "m1.a" and ask.flavor.disk_gb == 21
    assert ask.flavor.extra_specs == {"hw:cpu_policy": "dedicated"}
    path.write_text(json.dumps(CATALOGUE))
    pinned = load_catalogue(path)[1].flavor
    assert pinned.extra_specs == {"hw:cpu_policy": "dedicated", "hw:numa_nodes": "2"}
    for bad in ("[]", "{flavors: 3}", "- {name: x, vcpus: two, ram: 1}", "- {name: x}"):
        path.write_text(bad)
        with pytest.raises(CatalogueError, match=str(path)):
            load_catalogue(path)
    with pytest.raises(CatalogueError, match="No such file"):
        load_catalogue(tmp_path / "absent.json")
