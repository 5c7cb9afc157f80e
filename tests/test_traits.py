"""Traits (1.6+), as OpenStack Placement answers them (checked against Placement 16.0.0)."""

from __future__ import annotations

import uuid as uuidlib
from typing import Any

import os_traits
import pytest

from placement_numa.names import EXTENSION_TRAITS
from tests.conftest import PlacementAPI
from tests.factories import create_provider


def make_provider(api: PlacementAPI) -> str:
    return str(create_provider(api)["uuid"])


def set_traits(api: PlacementAPI, rp: str, generation: int, traits: list[str]) -> Any:
    return api.put(
        f"/resource_providers/{rp}/traits",
        json={"traits": traits, "resource_provider_generation": generation},
    )


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/traits"),
        ("GET", "/traits/HW_CPU_X86_AVX"),
        ("PUT", "/traits/CUSTOM_A"),
        ("DELETE", "/traits/CUSTOM_A"),
        ("GET", "/resource_providers/{rp}/traits"),
        ("DELETE", "/resource_providers/{rp}/traits"),
    ],
    ids=["list", "show", "create", "delete", "provider-list", "provider-delete"],
)
def test_absent_before_1_6(api: PlacementAPI, method: str, path: str) -> None:
    rp = make_provider(api)
    assert api.request(method, path.format(rp=rp), version="1.5").status_code == 404


def test_list_all_has_standard_and_extension_traits(api: PlacementAPI) -> None:
    response = api.get("/traits", version="1.6")
    assert response.status_code == 200
    names = response.json()["traits"]
    assert names == sorted(names)
    assert set(os_traits.get_traits()) <= set(names)
    assert set(EXTENSION_TRAITS) <= set(names)
    assert "last-modified" not in response.headers
    assert "last-modified" in api.get("/traits", version="1.15").headers


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("name=in:HW_CPU_X86_AVX,HW_CPU_X86_SSE,NOPE", ["HW_CPU_X86_AVX", "HW_CPU_X86_SSE"]),
        ("name=in:", []),
        ("name=startswith:CUSTOM_", ["CUSTOM_A_B", "CUSTOM_AXB"]),
        ("name=startswith:CUSTOM_A_", ["CUSTOM_A_B"]),
        ("associated=true", ["CUSTOM_AXB", "HW_CPU_X86_AVX"]),
        ("name=startswith:CUSTOM&associated=false", ["CUSTOM_A_B"]),
        ("name=in:HW_CPU_X86_AVX,HW_CPU_X86_SSE&associated=TRUE", ["HW_CPU_X86_AVX"]),
    ],
    ids=[
        "in",
        "in-empty",
        "startswith",
        "underscore-is-literal",
        "associated",
        "not-associated",
        "in-and-associated",
    ],
)
def test_list_filters(api: PlacementAPI, query: str, expected: list[str]) -> None:
    api.put("/traits/CUSTOM_A_B")
    api.put("/traits/CUSTOM_AXB")
    rp = make_provider(api)
    assert set_traits(api, rp, 0, ["CUSTOM_AXB", "HW_CPU_X86_AVX"]).status_code == 200
    response = api.get(f"/traits?{query}")
    assert response.status_code == 200
    assert response.json()["traits"] == sorted(expected)


def test_unknown_operator_is_ignored(api: PlacementAPI) -> None:
    everything = api.get("/traits").json()["traits"]
    assert api.get("/traits?name=foo:bar").json()["traits"] == everything


@pytest.mark.parametrize(
    "query",
    ["name=HW_CPU_X86_AVX", "associated=maybe", "other=1"],
    ids=["no-operator", "bad-associated", "unknown-parameter"],
)
def test_list_bad_queries(api: PlacementAPI, query: str) -> None:
    assert api.get(f"/traits?{query}").status_code == 400


def test_create_show_delete_custom_trait(api: PlacementAPI) -> None:
    created = api.put("/traits/CUSTOM_RAID")
    assert created.status_code == 201
    assert created.headers["location"].endswith("/traits/CUSTOM_RAID")
    assert "last-modified" in created.headers
    again = api.put("/traits/CUSTOM_RAID", version="1.14")
    assert again.status_code == 204
    assert "last-modified" not in again.headers
    assert again.headers["location"].endswith("/traits/CUSTOM_RAID")
    shown = api.get("/traits/CUSTOM_RAID")
    assert shown.status_code == 204
    assert shown.headers["cache-control"] == "no-cache"
    assert api.delete("/traits/CUSTOM_RAID").status_code == 204
    missing = api.get("/traits/CUSTOM_RAID")
    assert missing.status_code == 404
    assert "No such trait(s): CUSTOM_RAID." in missing.json()["errors"][0]["detail"]
    assert api.delete("/traits/CUSTOM_RAID").status_code == 404


@pytest.mark.parametrize(
    "name",
    ["HW_CPU_X86_AVX", "lower", "CUSTOM_lower", "CUSTOM_" + "A" * 250],
    ids=["standard", "lowercase", "custom-lowercase", "too-long"],
)
def test_create_only_custom_traits(api: PlacementAPI, name: str) -> None:
    response = api.put(f"/traits/{name}")
    assert response.status_code == 400
    assert 'start with the prefix "CUSTOM_"' in response.json()["errors"][0]["detail"]


@pytest.mark.parametrize("name", ["HW_CPU_X86_AVX", "HW_NON_NUMA"], ids=["os-traits", "extension"])
def test_standard_traits_cannot_be_deleted(api: PlacementAPI, name: str) -> None:
    response = api.delete(f"/traits/{name}")
    assert response.status_code == 400
    assert api.get(f"/traits/{name}").status_code == 204


def test_trait_in_use_cannot_be_deleted(api: PlacementAPI) -> None:
    api.put("/traits/CUSTOM_USED")
    rp = make_provider(api)
    set_traits(api, rp, 0, ["CUSTOM_USED"])
    response = api.delete("/traits/CUSTOM_USED")
    assert response.status_code == 409
    assert response.json()["errors"][0]["code"] == "placement.undefined_code"


def test_provider_traits(api: PlacementAPI) -> None:
    rp = make_provider(api)
    api.put("/traits/CUSTOM_GOLD")
    empty = api.get(f"/resource_providers/{rp}/traits")
    assert empty.status_code == 200
    assert empty.json() == {"traits": [], "resource_provider_generation": 0}
    assert "last-modified" in empty.headers

    response = set_traits(api, rp, 0, ["HW_CPU_X86_AVX", "CUSTOM_GOLD", "CUSTOM_GOLD"])
    assert response.status_code == 200, response.text
    assert response.json() == {
        "traits": ["CUSTOM_GOLD", "HW_CPU_X86_AVX"],
        "resource_provider_generation": 1,
    }
    assert api.get(f"/resource_providers/{rp}/traits").json() == response.json()

    # The same set again changes nothing, so the generation stays (as Placement).
    same = set_traits(api, rp, 1, ["CUSTOM_GOLD", "HW_CPU_X86_AVX"])
    assert same.json()["resource_provider_generation"] == 1

    stale = set_traits(api, rp, 0, ["CUSTOM_GOLD"])
    assert stale.status_code == 409
    assert stale.json()["errors"][0]["code"] == "placement.concurrent_update"

    unknown = set_traits(api, rp, 1, ["CUSTOM_GOLD", "CUSTOM_NOPE_B", "CUSTOM_NOPE_A"])
    assert unknown.status_code == 400
    assert "No such trait CUSTOM_NOPE_A, CUSTOM_NOPE_B" in unknown.json()["errors"][0]["detail"]

    fewer = set_traits(api, rp, 1, ["CUSTOM_GOLD"])
    assert fewer.json() == {"traits": ["CUSTOM_GOLD"], "resource_provider_generation": 2}

    assert api.delete(f"/resource_providers/{rp}/traits").status_code == 204
    after = api.get(f"/resource_providers/{rp}/traits").json()
    assert after == {"traits": [], "resource_provider_generation": 3}
    # Deleting no traits leaves the generation alone.
    assert api.delete(f"/resource_providers/{rp}/traits").status_code == 204
    assert api.get(f"/resource_providers/{rp}/traits").json()["resource_provider_generation"] == 3


@pytest.mark.parametrize(
    "body",
    [
        {"traits": ["CUSTOM_A"]},
        {"resource_provider_generation": 0},
        {"traits": "CUSTOM_A", "resource_provider_generation": 0},
        {"traits": [""], "resource_provider_generation": 0},
        {"traits": [], "resource_provider_generation": 0, "extra": True},
    ],
    ids=["no-generation", "no-traits", "traits-not-a-list", "empty-name", "extra-key"],
)
def test_provider_traits_schema(api: PlacementAPI, body: dict[str, Any]) -> None:
    rp = make_provider(api)
    assert api.put(f"/resource_providers/{rp}/traits", json=body).status_code == 400


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_provider_traits_unknown_provider(api: PlacementAPI, method: str) -> None:
    body = {"traits": [], "resource_provider_generation": 0} if method == "PUT" else None
    response = api.request(method, f"/resource_providers/{uuidlib.uuid4()}/traits", json=body)
    assert response.status_code == 404
