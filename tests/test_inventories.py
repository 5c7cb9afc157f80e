"""Inventories of resource providers, as OpenStack Placement 1.0-1.39 answers them.

Every expectation here was checked against the real Placement (16.0.0).
"""

from __future__ import annotations

import uuid as uuidlib
from typing import Any

import pytest

from placement_numa.domain.inventory import MAX_INT, InventoryFields, capacity
from tests.conftest import PlacementAPI
from tests.factories import create_provider

DEFAULTS = {
    "reserved": 0,
    "min_unit": 1,
    "max_unit": MAX_INT,
    "step_size": 1,
    "allocation_ratio": 1.0,
}


def make_provider(api: PlacementAPI, name: str | None = None) -> str:
    """A new root provider, created through the API; returns its uuid."""
    created = create_provider(api, name=name)
    return str(created["uuid"])


def allocate(api: PlacementAPI, rp_uuid: str, resources: dict[str, int]) -> None:
    """Allocate ``resources`` on the provider for a new consumer, through the API (1.28)."""
    response = api.put(
        f"/allocations/{uuidlib.uuid4()}",
        json={
            "allocations": {rp_uuid: {"resources": resources}},
            "project_id": "p",
            "user_id": "u",
            "consumer_generation": None,
        },
        version="1.28",
    )
    assert response.status_code == 204, response.text


def put_all(
    api: PlacementAPI,
    rp: str,
    generation: int,
    inventories: dict[str, Any],
    version: str = "latest",
) -> Any:
    return api.put(
        f"/resource_providers/{rp}/inventories",
        json={"resource_provider_generation": generation, "inventories": inventories},
        version=version,
    )


def error_code(response: Any) -> str | None:
    return response.json()["errors"][0].get("code")


# --- pure ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("total", "reserved", "ratio", "expected"),
    [
        (8, 0, 1.0, 8),
        (8, 2, 16.0, 96),
        (3, 0, 1.5, 4),
        (1, 0, 0.5, 0),
        (8, 8, 1.0, 0),
        (4, 5, 1.0, -1),
    ],
    ids=["plain", "overcommit", "truncates", "rounds-down-to-zero", "all-reserved", "negative"],
)
def test_capacity_rule(total: int, reserved: int, ratio: float, expected: int) -> None:
    assert capacity(total, reserved, ratio) == expected
    assert InventoryFields(total, reserved, allocation_ratio=ratio).capacity == expected


# --- reads --------------------------------------------------------------------------------------


def test_empty_collection(api: PlacementAPI) -> None:
    rp = make_provider(api)
    response = api.get(f"/resource_providers/{rp}/inventories")
    assert response.status_code == 200
    assert response.json() == {"resource_provider_generation": 0, "inventories": {}}
    assert response.headers["cache-control"] == "no-cache"
    assert "last-modified" not in response.headers
    old = api.get(f"/resource_providers/{rp}/inventories", version="1.14")
    assert "cache-control" not in old.headers


@pytest.mark.parametrize(
    ("method", "suffix", "body"),
    [
        ("GET", "", None),
        ("PUT", "", {"resource_provider_generation": 0, "inventories": {}}),
        ("POST", "", {"resource_class": "VCPU", "total": 1}),
        ("DELETE", "", None),
        ("GET", "/VCPU", None),
        ("PUT", "/VCPU", {"resource_provider_generation": 0, "total": 1}),
        ("DELETE", "/VCPU", None),
    ],
    ids=["get-all", "put-all", "post", "delete-all", "get-one", "put-one", "delete-one"],
)
def test_unknown_provider_is_404(
    api: PlacementAPI, method: str, suffix: str, body: dict[str, Any] | None
) -> None:
    response = api.request(
        method, f"/resource_providers/{uuidlib.uuid4()}/inventories{suffix}", json=body
    )
    assert response.status_code == 404
    assert error_code(response) == "placement.undefined_code"


def test_get_one_without_inventory_is_404(api: PlacementAPI) -> None:
    rp = make_provider(api)
    assert api.get(f"/resource_providers/{rp}/inventories/VCPU").status_code == 404
    assert api.get(f"/resource_providers/{rp}/inventories/NO_SUCH_CLASS").status_code == 404


# --- PUT the collection -------------------------------------------------------------------------


def test_put_collection_applies_defaults_and_bumps_generation(api: PlacementAPI) -> None:
    rp = make_provider(api)
    response = put_all(
        api,
        rp,
        0,
        {
            "VCPU": {"total": 8, "allocation_ratio": 16},
            "MEMORY_MB": {"total": 2048, "reserved": 512},
        },
    )
    assert response.status_code == 200, response.text
    assert response.json() == {
        "resource_provider_generation": 1,
        "inventories": {
            "VCPU": {**DEFAULTS, "total": 8, "allocation_ratio": 16.0},
            "MEMORY_MB": {**DEFAULTS, "total": 2048, "reserved": 512},
        },
    }
    assert "last-modified" in response.headers
    listed = api.get(f"/resource_providers/{rp}/inventories")
    assert listed.json() == response.json()
    assert "last-modified" in listed.headers
    one = api.get(f"/resource_providers/{rp}/inventories/MEMORY_MB")
    assert one.status_code == 200
    assert one.json() == {
        **DEFAULTS,
        "total": 2048,
        "reserved": 512,
        "resource_provider_generation": 1,
    }
    assert one.headers["cache-control"] == "no-cache"
    assert "last-modified" in one.headers

    # Replace: MEMORY_MB goes, DISK_GB comes, VCPU changes.
    again = put_all(api, rp, 1, {"VCPU": {"total": 4}, "DISK_GB": {"total": 100, "step_size": 10}})
    assert again.status_code == 200
    assert again.json()["resource_provider_generation"] == 2
    assert set(api.get(f"/resource_providers/{rp}/inventories").json()["inventories"]) == {
        "VCPU",
        "DISK_GB",
    }


def test_put_empty_collection_still_bumps_generation(api: PlacementAPI) -> None:
    rp = make_provider(api)
    response = put_all(api, rp, 0, {})
    assert response.status_code == 200
    assert response.json() == {"resource_provider_generation": 1, "inventories": {}}
    assert "last-modified" not in response.headers


def test_stale_generation_is_409(api: PlacementAPI) -> None:
    rp = make_provider(api)
    assert put_all(api, rp, 0, {"VCPU": {"total": 8}}).status_code == 200
    response = put_all(api, rp, 0, {"VCPU": {"total": 4}})
    assert response.status_code == 409
    assert error_code(response) == "placement.concurrent_update"
    stale_one = api.put(
        f"/resource_providers/{rp}/inventories/VCPU",
        json={"resource_provider_generation": 0, "total": 4},
    )
    assert stale_one.status_code == 409
    assert error_code(stale_one) == "placement.concurrent_update"
    # Nothing changed.
    assert api.get(f"/resource_providers/{rp}/inventories/VCPU").json()["total"] == 8


@pytest.mark.parametrize(
    "record",
    [
        {"total": 0},
        {"total": -1},
        {"total": MAX_INT + 1},
        {"total": "8"},
        {"total": True},
        {"total": 8.5},
        {"total": 8, "reserved": -1},
        {"total": 8, "min_unit": 0},
        {"total": 8, "max_unit": 0},
        {"total": 8, "step_size": 0},
        {"total": 8, "allocation_ratio": "1.0"},
        {"total": 8, "bogus": 1},
        {"reserved": 1},
    ],
    ids=[
        "total-zero",
        "total-negative",
        "total-too-big",
        "total-string",
        "total-bool",
        "total-fraction",
        "reserved-negative",
        "min-unit-zero",
        "max-unit-zero",
        "step-size-zero",
        "ratio-string",
        "extra-key",
        "no-total",
    ],
)
def test_put_collection_schema_errors(api: PlacementAPI, record: dict[str, Any]) -> None:
    rp = make_provider(api)
    response = put_all(api, rp, 0, {"VCPU": record})
    assert response.status_code == 400, response.text
    assert error_code(response) == "placement.undefined_code"


@pytest.mark.parametrize(
    "body",
    [
        {"resource_provider_generation": 0},
        {"inventories": {}},
        {"resource_provider_generation": "0", "inventories": {}},
        {"resource_provider_generation": 0, "inventories": {}, "extra": 1},
        [],
    ],
    ids=["no-inventories", "no-generation", "string-generation", "extra-key", "not-an-object"],
)
def test_put_collection_body_errors(api: PlacementAPI, body: Any) -> None:
    rp = make_provider(api)
    response = api.put(f"/resource_providers/{rp}/inventories", json=body)
    assert response.status_code == 400


def test_integral_float_counts_as_integer(api: PlacementAPI) -> None:
    rp = make_provider(api)
    response = put_all(api, rp, 0, {"VCPU": {"total": 8.0}})
    assert response.status_code == 200
    assert response.json()["inventories"]["VCPU"]["total"] == 8


def test_wrong_media_type_is_415(api: PlacementAPI) -> None:
    rp = make_provider(api)
    response = api.put(
        f"/resource_providers/{rp}/inventories",
        content=b"{}",
        headers={"content-type": "text/plain"},
    )
    assert response.status_code == 415


@pytest.mark.parametrize(
    ("version", "record", "status"),
    [
        ("1.25", {"total": 8, "reserved": 8}, 400),
        ("1.26", {"total": 8, "reserved": 8}, 200),
        ("1.26", {"total": 8, "reserved": 9}, 400),
        ("1.25", {"total": 8, "allocation_ratio": 0}, 400),
        ("1.26", {"total": 8, "allocation_ratio": 0}, 200),
        ("1.26", {"total": 8, "allocation_ratio": -1}, 400),
        ("1.39", {"total": 8, "min_unit": 5, "max_unit": 2}, 200),
        ("1.39", {"total": 8, "max_unit": 64}, 200),
    ],
    ids=[
        "reserved-equals-total-1.25",
        "reserved-equals-total-1.26",
        "reserved-above-total",
        "ratio-zero-1.25",
        "ratio-zero-1.26",
        "ratio-negative",
        "min-above-max-allowed",
        "max-above-total-allowed",
    ],
)
def test_capacity_validation(
    api: PlacementAPI, version: str, record: dict[str, Any], status: int
) -> None:
    rp = make_provider(api)
    assert put_all(api, rp, 0, {"VCPU": record}, version=version).status_code == status
    post = api.post(
        f"/resource_providers/{rp}/inventories",
        json={"resource_class": "MEMORY_MB", **record},
        version=version,
    )
    assert post.status_code == (201 if status == 200 else 400)


@pytest.mark.parametrize("name", ["CUSTOM_NOT_THERE", "lowercase"], ids=["custom", "malformed"])
def test_unknown_resource_class(api: PlacementAPI, name: str) -> None:
    rp = make_provider(api)
    response = put_all(api, rp, 0, {name: {"total": 8}})
    assert response.status_code == 400
    assert f"No such resource class {name}" in response.json()["errors"][0]["detail"]
    assert (
        api.put(
            f"/resource_providers/{rp}/inventories/{name}",
            json={"resource_provider_generation": 0, "total": 1},
        ).status_code
        == 404
    )
    assert api.delete(f"/resource_providers/{rp}/inventories/{name}").status_code == 404
    # The generation did not move.
    assert (
        api.get(f"/resource_providers/{rp}/inventories").json()["resource_provider_generation"] == 0
    )


# --- POST one -----------------------------------------------------------------------------------


def test_post_creates_one(api: PlacementAPI) -> None:
    rp = make_provider(api)
    response = api.post(
        f"/resource_providers/{rp}/inventories",
        json={"resource_class": "VCPU", "total": 8, "resource_provider_generation": 99},
    )
    assert response.status_code == 201, response.text
    assert response.headers["location"].endswith(f"/resource_providers/{rp}/inventories/VCPU")
    assert response.json() == {**DEFAULTS, "total": 8, "resource_provider_generation": 1}
    duplicate = api.post(
        f"/resource_providers/{rp}/inventories", json={"resource_class": "VCPU", "total": 8}
    )
    assert duplicate.status_code == 409
    assert error_code(duplicate) == "placement.concurrent_update"
    unknown = api.post(
        f"/resource_providers/{rp}/inventories", json={"resource_class": "CUSTOM_NO", "total": 8}
    )
    assert unknown.status_code == 400
    malformed = api.post(
        f"/resource_providers/{rp}/inventories", json={"resource_class": "vcpu", "total": 8}
    )
    assert malformed.status_code == 400


# --- PUT one ------------------------------------------------------------------------------------


def test_put_one(api: PlacementAPI) -> None:
    rp = make_provider(api)
    put_all(api, rp, 0, {"VCPU": {"total": 8}})
    response = api.put(
        f"/resource_providers/{rp}/inventories/VCPU",
        json={"resource_provider_generation": 1, "total": 4, "reserved": 1},
    )
    assert response.status_code == 200
    assert response.json() == {
        **DEFAULTS,
        "total": 4,
        "reserved": 1,
        "resource_provider_generation": 2,
    }
    missing = api.put(
        f"/resource_providers/{rp}/inventories/DISK_GB",
        json={"resource_provider_generation": 2, "total": 4},
    )
    assert missing.status_code == 400
    no_generation = api.put(f"/resource_providers/{rp}/inventories/VCPU", json={"total": 4})
    assert no_generation.status_code == 400


# --- DELETE -------------------------------------------------------------------------------------


def test_delete_one_and_all(api: PlacementAPI) -> None:
    rp = make_provider(api)
    put_all(
        api, rp, 0, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 512}, "DISK_GB": {"total": 9}}
    )
    assert api.delete(f"/resource_providers/{rp}/inventories/VCPU").status_code == 204
    assert api.delete(f"/resource_providers/{rp}/inventories/VCPU").status_code == 404
    after_one = api.get(f"/resource_providers/{rp}/inventories").json()
    assert after_one["resource_provider_generation"] == 2
    assert set(after_one["inventories"]) == {"MEMORY_MB", "DISK_GB"}

    old = api.delete(f"/resource_providers/{rp}/inventories", version="1.4")
    assert old.status_code == 405
    assert api.delete(f"/resource_providers/{rp}/inventories", version="1.5").status_code == 204
    assert api.get(f"/resource_providers/{rp}/inventories").json() == {
        "resource_provider_generation": 3,
        "inventories": {},
    }
    # Deleting nothing still bumps the generation, as Placement does.
    assert api.delete(f"/resource_providers/{rp}/inventories").status_code == 204
    assert (
        api.get(f"/resource_providers/{rp}/inventories").json()["resource_provider_generation"] == 4
    )


# --- inventories with allocations ----------------------------------------------------------------


def test_inventory_in_use(api: PlacementAPI) -> None:
    rp = make_provider(api)
    put_all(
        api, rp, 0, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 1024}, "DISK_GB": {"total": 10}}
    )
    allocate(api, rp, {"VCPU": 4, "MEMORY_MB": 512})  # bumps the generation to 2

    removing = put_all(api, rp, 2, {"VCPU": {"total": 8}})
    assert removing.status_code == 409
    assert error_code(removing) == "placement.inventory.inuse"
    assert "MEMORY_MB" in removing.json()["errors"][0]["detail"]

    everything = api.delete(f"/resource_providers/{rp}/inventories")
    assert everything.status_code == 409
    assert error_code(everything) == "placement.inventory.inuse"

    # Placement answers the single-class delete with placement.concurrent_update.
    one = api.delete(f"/resource_providers/{rp}/inventories/VCPU")
    assert one.status_code == 409
    assert error_code(one) == "placement.concurrent_update"

    # Removing an unused class works; shrinking below usage is allowed (Placement only warns).
    shrink = put_all(api, rp, 2, {"VCPU": {"total": 2}, "MEMORY_MB": {"total": 100}})
    assert shrink.status_code == 200
    assert shrink.json()["resource_provider_generation"] == 3
    single = api.put(
        f"/resource_providers/{rp}/inventories/VCPU",
        json={"resource_provider_generation": 3, "total": 1},
    )
    assert single.status_code == 200


def test_error_codes_only_from_1_23(api: PlacementAPI) -> None:
    rp = make_provider(api)
    put_all(api, rp, 0, {"VCPU": {"total": 8}})
    response = put_all(api, rp, 0, {"VCPU": {"total": 8}}, version="1.22")
    assert response.status_code == 409
    assert "code" not in response.json()["errors"][0]


# --- concurrency --------------------------------------------------------------------------------


def test_concurrent_writers_at_one_generation(api: PlacementAPI) -> None:
    """Eight clients replace the inventory (or traits) of one provider at the generation they
    all read: exactly one wins, the others get 409 placement.concurrent_update, none a 500."""
    from concurrent.futures import ThreadPoolExecutor

    rp = make_provider(api)

    def write(i: int) -> int:
        if i % 2:
            response = put_all(api, rp, 0, {"VCPU": {"total": 8 + i}, "DISK_GB": {"total": 10}})
        else:
            response = api.put(
                f"/resource_providers/{rp}/traits",
                json={"traits": ["HW_CPU_X86_AVX"], "resource_provider_generation": 0},
            )
        if response.status_code == 409:
            assert error_code(response) == "placement.concurrent_update"
        return response.status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(write, range(8)))
    assert sorted(statuses) == [200] + [409] * 7, statuses
    assert (
        api.get(f"/resource_providers/{rp}/inventories").json()["resource_provider_generation"] == 1
    )


@pytest.mark.parametrize("ratio", [0.9, 1.1, 16.0, 1.5], ids=["0.9", "1.1", "16", "1.5"])
def test_allocation_ratio_round_trips(api: PlacementAPI, ratio: float) -> None:
    """MariaDB stores allocation_ratio as a single-precision FLOAT; it reads back as sent."""
    rp = make_provider(api)
    put_all(api, rp, 0, {"VCPU": {"total": 10, "allocation_ratio": ratio}})
    shown = api.get(f"/resource_providers/{rp}/inventories/VCPU").json()
    assert shown["allocation_ratio"] == ratio
