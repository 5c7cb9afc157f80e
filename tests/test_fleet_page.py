# ruff: noqa: F811 (``metrics_app`` is a fixture imported from test_capacity_metrics)
"""The fleet page ``GET /numa/fleet`` and a host's page ``GET /numa/fleet/hosts/{uuid}``
(issue 31, "the fleet in a browser") over HTTP on the real app and a real database, with a
flavor catalogue (``[metrics] flavors_file``) on ``test_capacity_api``'s fleet plus a host
whose name is HTML: cells, bars, flavors and stranded capacity shown, every provider name
escaped, sorting and paging by query parameters, every bad parameter a 400 in Placement's
error format, and the policy of ``/metrics`` (admin by default)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from placement_numa.cli.demo import HostShape, _cells, load_host
from tests.backends import reset_rows
from tests.conftest import PlacementAPI
from tests.test_capacity_api import V, _send, build_fleet

# the app with the catalogue of test_capacity_metrics as [metrics] flavors_file
from tests.test_capacity_metrics import CATALOGUE, metrics_app  # noqa: F401

PINNED_TWO_CELL = {"hw:cpu_policy": "dedicated", "hw:numa_nodes": "2"}
EVIL = "<b>evil</b>&\"'"


@pytest.fixture(scope="module")
def papi(metrics_app: FastAPI) -> Iterator[PlacementAPI]:
    with metrics_app.state.database.write() as conn:
        reset_rows(conn)
    with TestClient(metrics_app, raise_server_exceptions=False) as client:
        api = PlacementAPI(client)
        build_fleet(api)
        load_host(_send(api), HostShape(EVIL, _cells(1, 2, 2, {4: 4096}), None))
        yield api


def _uuid_of(api: PlacementAPI, name: str) -> str:
    found = api.get("/resource_providers", params={"name": name}, version=V).json()
    return str(found["resource_providers"][0]["uuid"])


def _counted(api: PlacementAPI) -> str:
    """The fleet page once the catalogue is counted at the current revision (in the
    background: a page waits for it at most a second)."""
    deadline = time.monotonic() + 60
    while True:
        r = api.get("/numa/fleet")
        assert r.status_code == 200, r.text
        if "Counting the flavors" not in r.text or time.monotonic() > deadline:
            return r.text
        time.sleep(0.2)


def _host_names(html: str) -> list[str]:
    return re.findall(r'class="host">([^<]*)</a>', html)


def test_fleet_page_shows_cells_flavors_and_stranded(papi: PlacementAPI) -> None:
    r = papi.get("/numa/fleet")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/html")
    html = _counted(papi)
    assert "Counting" not in html
    assert "Fleet: 6 hosts" in html
    assert _host_names(html) == [
        "&lt;b&gt;evil&lt;/b&gt;&amp;&quot;&#x27;", "cap-a", "cap-b", "cap-c", "cap-d", "cap-e",
    ]  # fmt: skip
    assert EVIL not in html and "<b>evil" not in html
    for flavor in ("m1.numa", "m1.pinned"):
        assert flavor in html
    assert 'id="stranded"' in html and "<svg" in html
    assert "</span> 2M" in html and "</span> 1G" in html  # page sizes of cap-a, cap-b
    assert "CUSTOM_PCI_8086_1572" in html
    capacity = papi.post(
        "/allocation_candidates/capacity",
        json={"flavors": [{"name": "m1.pinned", "vcpus": 2, "memory_mb": 2048,
                           "extra_specs": {"hw:cpu_policy": "dedicated", "hw:numa_nodes": "2"}}]},
        version=V,
    ).json()  # fmt: skip
    total = capacity["capacity"][0]["total"]
    assert re.search(rf'<td>m1\.pinned</td><td class="n">{total}</td>', html)


def test_stranded_matches_the_capacity_answer(papi: PlacementAPI) -> None:
    html = _counted(papi)
    flavors = [
        {"name": f["name"], "vcpus": f["vcpus"], "memory_mb": f["ram"], "root_gb": f["disk"],
         "extra_specs": f.get("extra_specs") or PINNED_TWO_CELL}
        for f in CATALOGUE["flavors"]
    ]  # fmt: skip
    answer = papi.post(
        "/allocation_candidates/capacity", json={"flavors": flavors, "hosts": False}, version=V
    ).json()["stranded"]
    for rc, free in answer["free"].items():
        lost = answer["stranded"][rc]
        row = re.search(
            rf'<tr[^>]*><td>{rc}</td><td class="n">(\d+)</td><td class="n">(\d+)</td>', html
        )
        assert row is not None and (int(row.group(1)), int(row.group(2))) == (free, lost), rc
    # a host row is highlighted exactly when its stranded column names something
    rows = re.findall(
        r'<tr( class="stranded")?><td><a href="[^"]+" class="host">'
        r'.*?<td class="lost">([^<]*)</td>',
        html,
    )
    assert rows and all(bool(css) == bool(lost) for css, lost in rows), rows
    assert any(answer["stranded"].values()) == any(css for css, _lost in rows)


def test_sorting_and_paging(papi: PlacementAPI) -> None:
    r = papi.get("/numa/fleet", params={"sort": "free_pcpu", "order": "desc", "per_page": 2})
    assert r.status_code == 200, r.text
    assert _host_names(r.text) == ["cap-b", "cap-c"]  # 16 and 14 free PCPU
    assert "page 1 of 3 (6 hosts)" in r.text
    last = papi.get("/numa/fleet", params={"sort": "name", "page": 3, "per_page": 2})
    assert _host_names(last.text) == ["cap-d", "cap-e"]
    assert "previous" in last.text and ">next<" not in last.text
    _counted(papi)
    by_fits = papi.get("/numa/fleet", params={"sort": "fits", "flavor": "m1.numa", "order": "desc"})
    assert by_fits.status_code == 200, by_fits.text
    first_count = r'class="host">[^<]*</a>.*?<td class="own">.*?</td><td class="n">(\d+)</td>'
    counts = re.findall(first_count, by_fits.text)
    assert len(counts) == 6 and counts == sorted(counts, key=int, reverse=True), counts
    assert "sort=name" in by_fits.text  # the other headings drop flavor=
    beyond = papi.get("/numa/fleet", params={"page": 9})
    assert beyond.status_code == 200 and _host_names(beyond.text) == []


def test_grouped_by_aggregate(papi: PlacementAPI) -> None:
    uuid = _uuid_of(papi, "cap-c")
    aggregate = "7d1f5a31-4c5b-4f0e-9b5f-2d3c7f4e8a01"
    body = {"aggregates": [aggregate], "resource_provider_generation": None}
    generation = papi.get(f"/resource_providers/{uuid}", version=V).json()["generation"]
    body["resource_provider_generation"] = generation
    assert (
        papi.put(f"/resource_providers/{uuid}/aggregates", json=body, version=V).status_code == 200
    )
    html = papi.get("/numa/fleet").text
    assert aggregate in html and 'id="aggregates"' in html
    only = papi.get("/numa/fleet", params={"aggregate": aggregate})
    assert _host_names(only.text) == ["cap-c"]
    rest = papi.get("/numa/fleet", params={"aggregate": "none"})
    assert "cap-c" not in _host_names(rest.text) and len(_host_names(rest.text)) == 5


@pytest.mark.parametrize(
    "query",
    [
        "sort=bogus", "order=up", "page=0", "page=x", "per_page=0", "per_page=201",
        "per_page=-1", "colour=red", "sort=name&sort=name", "aggregate=" + "a" * 65,
        "sort=fits", "sort=fits&flavor=m1.nope", "flavor=m1.numa", "sort=name&flavor=m1.numa",
    ],
)  # fmt: skip
def test_bad_query_is_a_400_in_placement_format(papi: PlacementAPI, query: str) -> None:
    r = papi.get("/numa/fleet?" + query)
    assert r.status_code == 400, r.text
    (error,) = r.json()["errors"]
    assert error["code"] == "placement.query.bad_value"
    assert error["status"] == 400 and error["request_id"].startswith("req-")


def test_host_page_shows_guests_cell_by_cell(papi: PlacementAPI) -> None:
    fleet = papi.get("/numa/fleet").text
    link = re.search(r'href="(/numa/fleet/hosts/[0-9a-f-]+)" class="host">cap-a<', fleet)
    assert link is not None
    r = papi.get(link.group(1))
    assert r.status_code == 200, r.text
    html = r.text
    assert '<h1 id="host">cap-a</h1>' in html
    guests = re.findall(r'<tr class="guest"><td>([^<]*)</td>(.*?)</tr>', html)
    assert len(guests) == 1
    cells = re.findall(r"<td>(.*?)</td>", guests[0][1])
    assert "1 PCPU" in cells[0] and "2 VCPU" in cells[0] and "3072 MEMORY_MB 4 KiB" in cells[0]
    assert cells[1] == ""  # nothing on cell 1
    evil = papi.get(f"/numa/fleet/hosts/{_uuid_of(papi, EVIL)}")
    assert evil.status_code == 200 and "<b>evil" not in evil.text


def test_host_page_404_and_400(papi: PlacementAPI) -> None:
    missing = papi.get("/numa/fleet/hosts/00000000-0000-0000-0000-000000000000")
    assert missing.status_code == 404
    assert missing.json()["errors"][0]["code"] == "placement.resource_provider.not_found"
    cell = _uuid_of(papi, "cap-a_NUMA0")
    assert papi.get(f"/numa/fleet/hosts/{cell}").status_code == 404
    uuid = _uuid_of(papi, "cap-a")
    assert papi.get(f"/numa/fleet/hosts/{uuid}?x=1").status_code == 400


@pytest.mark.parametrize("path", ["/numa/fleet", "/numa/fleet/hosts/{uuid}"])
def test_policy_is_the_metrics_rule(papi: PlacementAPI, path: str) -> None:
    url = path.format(uuid=_uuid_of(papi, "cap-a"))
    assert papi.get(url, token=None).status_code == 401
    refused = papi.get(url, token="alice:p", headers={"x-roles": "member,reader"})
    assert refused.status_code == 403
    assert "placement:metrics" in refused.json()["errors"][0]["detail"]
    assert papi.get(url, token="boss:p", headers={"x-roles": "admin"}).status_code == 200
