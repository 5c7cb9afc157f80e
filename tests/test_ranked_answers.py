"""Ranked answers kept per process (``api.ranked_answers``): the same ``POST
/allocation_candidates`` body at the same revision is answered from the kept bytes, and any
write (an allocation, a distance matrix, a rename) is seen by the very next POST. Through the
real app on every backend, plus the cache's own bounds."""

from __future__ import annotations

import uuid
from typing import Any

from placement_numa.api.ranked_answers import RankedAnswers, process_answers
from tests.conftest import PlacementAPI
from tests.test_numa_api import V, distances, two_cell_host

FLAVOR = {"vcpus": 2, "memory_mb": 2048, "extra_specs": {"hw:numa_nodes": "2"}}


def _post(api: PlacementAPI, body: dict[str, Any]) -> bytes:
    response = api.post("/allocation_candidates", json=body, version=V)
    assert response.status_code == 200, response.text
    return response.content


def test_same_body_same_revision_is_kept_and_any_write_is_seen(api: PlacementAPI) -> None:
    host = two_cell_host(api)
    answers = process_answers(api.client.app.state)  # type: ignore[attr-defined]
    body = {"flavor": FLAVOR, "limit": 5}
    first = _post(api, body)
    hits = answers.hits
    assert _post(api, dict(reversed(list(body.items())))) == first  # key order is not part
    assert answers.hits == hits + 1
    # a distance matrix moves the revision: the next answer is searched again
    path = f"/resource_providers/{host['root']}/numa_distances"
    put = api.put(path, json={"generation": None, "distances": distances([10, 31], [31, 10])})
    assert put.status_code == 200, put.text
    after = api.post("/allocation_candidates", json=body, version=V).json()
    assert answers.hits == hits + 1
    assert after["allocation_requests"][0]["numa"]["average_distance"] == 20.5
    # an allocation on a cell: the next answer shows it used
    summaries = after["provider_summaries"]
    cell = next(rp for rp, s in summaries.items() if "VCPU" in s["resources"])
    used = summaries[cell]["resources"]["VCPU"]["used"]
    consumer = {
        "allocations": {cell: {"resources": {"VCPU": 1}}},
        "project_id": "p",
        "user_id": "u",
        "consumer_generation": None,
        "consumer_type": "INSTANCE",
    }
    put = api.put(f"/allocations/{uuid.uuid4()}", json=consumer, version=V)
    assert put.status_code == 204, put.text
    again = api.post("/allocation_candidates", json=body, version=V).json()
    assert again["provider_summaries"][cell]["resources"]["VCPU"]["used"] == used + 1
    assert answers.hits == hits + 1


def test_bounds_and_revisions() -> None:
    answers = RankedAnswers(max_answers=2, max_bytes=400)
    keys = [RankedAnswers.key("1.39", {"n": n}) for n in range(4)]
    assert all(k is not None for k in keys)
    a, b, c, d = keys
    assert a and b and c and d
    answers.put(1, a, b"a" * 10)
    answers.put(1, b, b"b" * 10)
    answers.put(1, c, b"c" * 10)  # three answers: the oldest goes
    assert answers.get(1, a) is None and answers.get(1, c) == b"c" * 10
    answers.put(1, d, b"d" * 101)  # over a quarter of the bytes: never kept
    assert answers.get(1, d) is None
    assert answers.get(2, c) is None  # another revision: nothing
    answers.put(0, a, b"old")  # a search that began before the revision kept: not kept
    assert answers.get(1, a) is None and answers.get(0, a) is None
    answers.put(2, a, b"new")  # a newer revision drops the rest
    assert answers.get(2, a) == b"new" and answers.get(1, c) is None and answers.get(2, c) is None
    assert RankedAnswers.key("1.39", {"x": object()}) is None
