"""``/resource_providers/{uuid}/aggregates`` through the real app on every backend: shapes per
microversion (list body before 1.19, generation from 1.19), generation conflicts, validation.

Shapes and messages were checked against OpenStack Placement 16.0.0.
"""

from __future__ import annotations

import uuid as uuidlib
from typing import Any

import pytest

from tests.conftest import PlacementAPI
from tests.factories import create_provider


def _uuid() -> str:
    return str(uuidlib.uuid4())


def _url(rp: str) -> str:
    return f"/resource_providers/{rp}/aggregates"


def _generation(api: PlacementAPI, rp: str) -> int:
    generation: int = api.get(f"/resource_providers/{rp}").json()["generation"]
    return generation


@pytest.mark.parametrize(
    ("version", "with_generation", "cached"),
    [
        ("1.1", False, False),
        ("1.15", False, True),
        ("1.18", False, True),
        ("1.19", True, True),
        ("1.39", True, True),
    ],
    ids=["1.1", "1.15", "1.18", "1.19", "1.39"],
)
def test_get_shape(api: PlacementAPI, version: str, with_generation: bool, cached: bool) -> None:
    rp = create_provider(api)["uuid"]
    response = api.get(_url(rp), version=version)
    assert response.status_code == 200
    expected: dict[str, Any] = {"aggregates": []}
    if with_generation:
        expected["resource_provider_generation"] = 0
    assert response.json() == expected
    assert ("last-modified" in response.headers) is cached
    assert (response.headers.get("cache-control") == "no-cache") is cached


def test_not_before_1_1(api: PlacementAPI) -> None:
    rp = create_provider(api)["uuid"]
    assert api.get(_url(rp), version="1.0").status_code == 404
    assert api.put(_url(rp), json=[], version="1.0").status_code == 404


def test_put_list_before_1_19_keeps_generation(api: PlacementAPI) -> None:
    rp = create_provider(api)["uuid"]
    agg1, agg2 = _uuid(), _uuid()
    response = api.put(_url(rp), json=[agg1, agg2], version="1.1")
    assert response.status_code == 200, response.text
    assert response.json() == {"aggregates": [agg1, agg2]}
    assert _generation(api, rp) == 0
    assert sorted(api.get(_url(rp), version="1.1").json()["aggregates"]) == sorted([agg1, agg2])
    response = api.put(_url(rp), json=[agg2], version="1.18")
    assert response.json() == {"aggregates": [agg2]}
    assert api.get(_url(rp), version="1.18").json() == {"aggregates": [agg2]}
    assert api.put(_url(rp), json=[], version="1.18").json() == {"aggregates": []}
    assert api.get(_url(rp), version="1.18").json() == {"aggregates": []}


def test_put_with_generation_from_1_19(api: PlacementAPI) -> None:
    rp = create_provider(api)["uuid"]
    agg1, agg2 = _uuid(), _uuid()
    response = api.put(
        _url(rp),
        json={"aggregates": [agg1, agg2], "resource_provider_generation": 0},
        version="1.19",
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"aggregates": [agg1, agg2], "resource_provider_generation": 1}
    assert "last-modified" in response.headers
    assert _generation(api, rp) == 1
    stale = api.put(_url(rp), json={"aggregates": [], "resource_provider_generation": 0})
    assert stale.status_code == 409
    error = stale.json()["errors"][0]
    assert error["code"] == "placement.concurrent_update"
    assert "Resource provider's generation already changed." in error["detail"]
    old = api.put(
        _url(rp), json={"aggregates": [], "resource_provider_generation": 0}, version="1.22"
    )
    assert old.status_code == 409 and "code" not in old.json()["errors"][0]
    assert api.get(_url(rp)).json() == {
        "aggregates": [agg1, agg2],
        "resource_provider_generation": 1,
    }
    emptied = api.put(_url(rp), json={"aggregates": [], "resource_provider_generation": 1})
    assert emptied.json() == {"aggregates": [], "resource_provider_generation": 2}


def test_aggregates_shared_between_providers(api: PlacementAPI) -> None:
    a = create_provider(api)["uuid"]
    b = create_provider(api)["uuid"]
    agg = _uuid()
    for rp in (a, b):
        assert api.put(_url(rp), json=[agg], version="1.1").status_code == 200
    api.put(_url(a), json=[], version="1.1")
    assert api.get(_url(b), version="1.1").json() == {"aggregates": [agg]}


@pytest.mark.parametrize(
    ("version", "body", "message"),
    [
        ("1.1", ["abc"], "'abc' is not a 'uuid'"),
        ("1.1", ["11111111-1111-1111-1111-111111111111"] * 2, "has non-unique elements"),
        ("1.1", {"aggregates": []}, "JSON does not validate"),
        ("1.19", [], "JSON does not validate"),
        ("1.19", {"aggregates": []}, "JSON does not validate"),
        ("1.19", {"aggregates": ["abc"], "resource_provider_generation": 0}, "is not a 'uuid'"),
        ("1.19", {"aggregates": [], "resource_provider_generation": "0"}, "JSON does not validate"),
        (
            "1.19",
            {"aggregates": [], "resource_provider_generation": 0, "x": 1},
            "JSON does not validate",
        ),
    ],
    ids=[
        "bad-uuid",
        "duplicate",
        "object-before-1.19",
        "list-from-1.19",
        "no-generation",
        "bad-uuid-1.19",
        "string-generation",
        "extra-key",
    ],
)
def test_put_bad_request(api: PlacementAPI, version: str, body: Any, message: str) -> None:
    rp = create_provider(api)["uuid"]
    response = api.put(_url(rp), json=body, version=version)
    assert response.status_code == 400, response.text
    error = response.json()["errors"][0]
    assert message in error["detail"]
    assert "code" not in error  # all below 1.23
    assert _generation(api, rp) == 0


def test_unknown_provider(api: PlacementAPI) -> None:
    missing = _uuid()
    for response in (
        api.get(_url(missing)),
        api.put(_url(missing), json={"aggregates": [], "resource_provider_generation": 0}),
        api.put(_url(missing), json=["abc"], version="1.1"),
    ):
        assert response.status_code == 404
        assert (
            f"No resource provider with uuid {missing} found"
            in response.json()["errors"][0]["detail"]
        )


def test_concurrent_puts_one_wins(api: PlacementAPI) -> None:
    """Eight writers send the same generation at once: exactly one succeeds, the rest get 409."""
    from concurrent.futures import ThreadPoolExecutor

    rp = create_provider(api)["uuid"]

    def put(_: int) -> int:
        body = {"aggregates": [_uuid()], "resource_provider_generation": 0}
        return api.put(_url(rp), json=body).status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = sorted(pool.map(put, range(8)))
    assert statuses == [200] + [409] * 7
    assert _generation(api, rp) == 1
    assert len(api.get(_url(rp)).json()["aggregates"]) == 1
