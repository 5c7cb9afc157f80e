"""Usages through the real app on every backend: per provider and per project/user, with the
consumer-type grouping of 1.38."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.conftest import PlacementAPI
from tests.factories import provider_with_inventory as seed_provider


def _put(
    api: PlacementAPI,
    rp: str,
    resources: dict[str, int],
    *,
    project: str = "proj",
    user: str = "user",
    consumer_type: str | None = "INSTANCE",
) -> str:
    consumer = str(uuid.uuid4())
    body: dict[str, Any] = {
        "allocations": {rp: {"resources": resources}},
        "project_id": project,
        "user_id": user,
        "consumer_generation": None,
    }
    version = "1.37"
    if consumer_type is not None:
        body["consumer_type"] = consumer_type
        version = "1.38"
    r = api.put(f"/allocations/{consumer}", json=body, version=version)
    assert r.status_code == 204, r.text
    return consumer


def test_provider_usages(api: PlacementAPI) -> None:
    rp = seed_provider(api, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 1024}})
    r = api.get(f"/resource_providers/{rp}/usages", version="1.0")
    assert r.status_code == 200
    assert r.json() == {"resource_provider_generation": 1, "usages": {"VCPU": 0, "MEMORY_MB": 0}}
    assert "last-modified" not in r.headers
    _put(api, rp, {"VCPU": 2, "MEMORY_MB": 128})
    _put(api, rp, {"VCPU": 1})
    r = api.get(f"/resource_providers/{rp}/usages")
    assert r.json() == {"resource_provider_generation": 3, "usages": {"VCPU": 3, "MEMORY_MB": 128}}
    assert r.headers["cache-control"] == "no-cache" and "last-modified" in r.headers


def test_provider_usages_unknown_provider(api: PlacementAPI) -> None:
    missing = str(uuid.uuid4())
    r = api.get(f"/resource_providers/{missing}/usages")
    assert r.status_code == 404
    assert f"No resource provider with uuid {missing} found" in r.json()["errors"][0]["detail"]


def test_project_usages_before_1_38(api: PlacementAPI) -> None:
    rp = seed_provider(api, {"VCPU": {"total": 8}, "DISK_GB": {"total": 100}})
    _put(api, rp, {"VCPU": 2, "DISK_GB": 10}, user="alice")
    _put(api, rp, {"VCPU": 1}, user="bob")
    _put(api, rp, {"VCPU": 4}, project="other")
    assert api.get("/usages?project_id=proj", version="1.8").status_code == 404
    r = api.get("/usages?project_id=proj", version="1.9")
    assert r.status_code == 200
    assert r.json() == {"usages": {"VCPU": 3, "DISK_GB": 10}}
    assert api.get("/usages?project_id=proj&user_id=bob", version="1.37").json() == {
        "usages": {"VCPU": 1}
    }
    assert api.get("/usages?project_id=nobody", version="1.9").json() == {"usages": {}}


def test_project_usages_by_consumer_type(api: PlacementAPI) -> None:
    rp = seed_provider(api, {"VCPU": {"total": 16}, "MEMORY_MB": {"total": 4096}})
    _put(api, rp, {"VCPU": 2, "MEMORY_MB": 512})
    _put(api, rp, {"VCPU": 1, "MEMORY_MB": 256})
    _put(api, rp, {"VCPU": 4}, consumer_type="MIGRATION")
    _put(api, rp, {"VCPU": 1}, consumer_type=None)
    body = api.get("/usages?project_id=proj").json()
    assert body == {
        "usages": {
            "INSTANCE": {"VCPU": 3, "MEMORY_MB": 768, "consumer_count": 2},
            "MIGRATION": {"VCPU": 4, "consumer_count": 1},
            "unknown": {"VCPU": 1, "consumer_count": 1},
        }
    }
    assert api.get("/usages?project_id=proj&consumer_type=INSTANCE").json() == {
        "usages": {"INSTANCE": {"VCPU": 3, "MEMORY_MB": 768, "consumer_count": 2}}
    }
    assert api.get("/usages?project_id=proj&consumer_type=all").json() == {
        "usages": {"all": {"VCPU": 8, "MEMORY_MB": 768, "consumer_count": 4}}
    }
    assert api.get("/usages?project_id=proj&consumer_type=unknown").json() == {
        "usages": {"unknown": {"VCPU": 1, "consumer_count": 1}}
    }
    assert api.get("/usages?project_id=proj&consumer_type=NOPE").json() == {"usages": {}}


@pytest.mark.parametrize(
    ("query", "version", "fragment"),
    [
        ("", "1.38", "'project_id' is a required property"),
        ("?project_id=p&foo=1", "1.38", "Additional properties are not allowed"),
        ("?project_id=p&consumer_type=bad-1", "1.38", "does not match"),
        ("?project_id=p&consumer_type=INSTANCE", "1.37", "Additional properties are not allowed"),
        ("?project_id=", "1.9", "should be non-empty"),
    ],
    ids=["missing-project", "unknown-key", "bad-type", "type-before-1.38", "empty-project"],
)
def test_project_usages_bad_query(
    api: PlacementAPI, query: str, version: str, fragment: str
) -> None:
    r = api.get(f"/usages{query}", version=version)
    assert r.status_code == 400
    assert fragment in r.json()["errors"][0]["detail"]
