"""Allocations through the real app on every backend: shapes per microversion, generations,
consumer types, capacity and constraint checks, POST /allocations atomicity.

Providers and inventories are set up through the API (``tests.factories``).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from placement_numa.domain.allocation import InventoryLimits, exceeds_capacity, violates_constraints
from tests.conftest import PlacementAPI
from tests.factories import provider_with_inventory as seed_provider

# A provider made by ``seed_provider`` is at this generation (created, then inventory set).
START = 1


def _uuid() -> str:
    return str(uuid.uuid4())


def _body(
    rp: str, resources: dict[str, int], gen: int | None = None, **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "allocations": {rp: {"resources": resources}},
        "project_id": "proj",
        "user_id": "user",
        "consumer_generation": gen,
        "consumer_type": "INSTANCE",
    }
    body.update(extra)
    return body


def _generation(api: PlacementAPI, rp: str) -> int:
    return api.get(f"/resource_providers/{rp}/allocations").json()["resource_provider_generation"]


def test_put_get_delete_latest(api: PlacementAPI) -> None:
    rp = seed_provider(api, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 1024}})
    consumer = _uuid()
    assert _generation(api, rp) == START
    r = api.put(f"/allocations/{consumer}", json=_body(rp, {"VCPU": 2, "MEMORY_MB": 256}))
    assert r.status_code == 204, r.text
    got = api.get(f"/allocations/{consumer}")
    assert got.status_code == 200
    assert got.json() == {
        "allocations": {rp: {"resources": {"VCPU": 2, "MEMORY_MB": 256}, "generation": START + 1}},
        "project_id": "proj",
        "user_id": "user",
        "consumer_generation": 1,
        "consumer_type": "INSTANCE",
    }
    assert "last-modified" in got.headers and got.headers["cache-control"] == "no-cache"
    by_rp = api.get(f"/resource_providers/{rp}/allocations").json()
    assert by_rp == {
        "allocations": {
            consumer: {"resources": {"VCPU": 2, "MEMORY_MB": 256}, "consumer_generation": 1}
        },
        "resource_provider_generation": START + 1,
    }
    assert api.delete(f"/allocations/{consumer}").status_code == 204
    assert api.get(f"/allocations/{consumer}").json() == {"allocations": {}}
    # As in Placement, deleting allocations does not move the provider generation.
    assert _generation(api, rp) == START + 1
    r = api.delete(f"/allocations/{consumer}")
    assert r.status_code == 404
    assert "No allocations for consumer" in r.json()["errors"][0]["detail"]


@pytest.mark.parametrize(
    ("version", "expected_keys"),
    [
        ("1.0", {"allocations"}),
        ("1.12", {"allocations", "project_id", "user_id"}),
        ("1.28", {"allocations", "project_id", "user_id", "consumer_generation"}),
        ("1.38", {"allocations", "project_id", "user_id", "consumer_generation", "consumer_type"}),
    ],
    ids=["1.0", "1.12", "1.28", "1.38"],
)
def test_get_shape_per_version(api: PlacementAPI, version: str, expected_keys: set[str]) -> None:
    rp = seed_provider(api, {"VCPU": {"total": 8}})
    consumer = _uuid()
    assert api.put(f"/allocations/{consumer}", json=_body(rp, {"VCPU": 1})).status_code == 204
    body = api.get(f"/allocations/{consumer}", version=version).json()
    assert set(body) == expected_keys
    assert body["allocations"][rp]["resources"] == {"VCPU": 1}
    by_rp = api.get(f"/resource_providers/{rp}/allocations", version=version).json()
    has_gen = "consumer_generation" in by_rp["allocations"][consumer]
    assert has_gen == (version >= "1.28")


def test_list_form_before_1_12_and_incomplete_consumer(api: PlacementAPI) -> None:
    rp = seed_provider(api, {"DISK_GB": {"total": 100}})
    consumer = _uuid()
    body = {"allocations": [{"resource_provider": {"uuid": rp}, "resources": {"DISK_GB": 10}}]}
    assert api.put(f"/allocations/{consumer}", json=body, version="1.7").status_code == 204
    got = api.get(f"/allocations/{consumer}", version="1.38").json()
    assert got["project_id"] == got["user_id"] == "00000000-0000-0000-0000-000000000000"
    assert got["consumer_type"] == "unknown"
    # 1.8-1.11 require project and user; the dict form is refused before 1.12.
    assert api.put(f"/allocations/{consumer}", json=body, version="1.8").status_code == 400
    body_18 = dict(body, project_id="p", user_id="u")
    assert api.put(f"/allocations/{consumer}", json=body_18, version="1.8").status_code == 204
    assert api.put(f"/allocations/{consumer}", json=body_18, version="1.12").status_code == 400
    assert api.get(f"/allocations/{consumer}", version="1.12").json()["project_id"] == "p"


def test_consumer_generation(api: PlacementAPI) -> None:
    rp = seed_provider(api, {"VCPU": {"total": 8}})
    consumer = _uuid()
    r = api.put(f"/allocations/{consumer}", json=_body(rp, {"VCPU": 1}, gen=3))
    assert r.status_code == 409 and r.json()["errors"][0]["code"] == "placement.concurrent_update"
    assert api.put(f"/allocations/{consumer}", json=_body(rp, {"VCPU": 1})).status_code == 204
    r = api.put(f"/allocations/{consumer}", json=_body(rp, {"VCPU": 2}))
    assert r.status_code == 409
    assert r.json()["errors"][0]["code"] == "placement.concurrent_update"
    assert "expected 1 but got None" in r.json()["errors"][0]["detail"]
    assert (
        api.put(f"/allocations/{consumer}", json=_body(rp, {"VCPU": 2}, gen=1)).status_code == 204
    )
    assert api.get(f"/allocations/{consumer}").json()["consumer_generation"] == 2
    # Missing consumer_generation at 1.28+ is a schema error.
    body = _body(rp, {"VCPU": 2})
    del body["consumer_generation"]
    assert api.put(f"/allocations/{consumer}", json=body, version="1.28").status_code == 400
    # Empty allocations remove them and the consumer.
    assert (
        api.put(
            f"/allocations/{consumer}", json=_body(rp, {}, gen=2) | {"allocations": {}}
        ).status_code
        == 204
    )
    assert api.get(f"/allocations/{consumer}").json() == {"allocations": {}}
    assert _generation(api, rp) == START + 3
    # The consumer is gone: a new one starts again from null.
    assert api.put(f"/allocations/{consumer}", json=_body(rp, {"VCPU": 1})).status_code == 204


def test_empty_allocations_refused_before_1_28(api: PlacementAPI) -> None:
    consumer = _uuid()
    body = {"allocations": {}, "project_id": "p", "user_id": "u"}
    assert api.put(f"/allocations/{consumer}", json=body, version="1.27").status_code == 400


def test_consumer_type(api: PlacementAPI) -> None:
    rp = seed_provider(api, {"VCPU": {"total": 8}})
    consumer = _uuid()
    body = _body(rp, {"VCPU": 1})
    del body["consumer_type"]
    assert api.put(f"/allocations/{consumer}", json=body, version="1.38").status_code == 400
    assert api.put(f"/allocations/{consumer}", json=body, version="1.37").status_code == 204
    assert api.get(f"/allocations/{consumer}").json()["consumer_type"] == "unknown"
    r = api.put(
        f"/allocations/{consumer}", json=_body(rp, {"VCPU": 1}, gen=1, consumer_type="MIGRATION")
    )
    assert r.status_code == 204
    assert api.get(f"/allocations/{consumer}").json()["consumer_type"] == "MIGRATION"
    bad = _body(rp, {"VCPU": 1}, gen=2, consumer_type="lower-case")
    assert api.put(f"/allocations/{consumer}", json=bad).status_code == 400
    # An older microversion keeps the type.
    body_37 = _body(rp, {"VCPU": 2}, gen=2)
    del body_37["consumer_type"]
    assert api.put(f"/allocations/{consumer}", json=body_37, version="1.37").status_code == 204
    assert api.get(f"/allocations/{consumer}").json()["consumer_type"] == "MIGRATION"


@pytest.mark.parametrize(
    ("inventory", "amount", "status", "fragment"),
    [
        ({"total": 8}, 9, 409, "would exceed the capacity"),
        ({"total": 8, "reserved": 2}, 7, 409, "would exceed the capacity"),
        ({"total": 8, "allocation_ratio": 2.0}, 16, 204, ""),
        ({"total": 8, "allocation_ratio": 2.0}, 17, 409, "would exceed the capacity"),
        ({"total": 8, "max_unit": 4}, 5, 409, "would violate inventory constraints"),
        ({"total": 8, "min_unit": 2}, 1, 409, "would violate inventory constraints"),
        ({"total": 8, "step_size": 2}, 3, 409, "would violate inventory constraints"),
        ({"total": 8, "step_size": 2}, 4, 204, ""),
    ],
    ids=["over", "reserved", "ratio-fits", "ratio-over", "max_unit", "min_unit", "step", "step-ok"],
)
def test_capacity_and_constraints(
    api: PlacementAPI, inventory: dict[str, Any], amount: int, status: int, fragment: str
) -> None:
    rp = seed_provider(api, {"VCPU": inventory})
    consumer = _uuid()
    r = api.put(f"/allocations/{consumer}", json=_body(rp, {"VCPU": amount}))
    assert r.status_code == status, r.text
    if status == 409:
        error = r.json()["errors"][0]
        assert fragment in error["detail"]
        assert error["code"] == "placement.undefined_code"
        assert api.get(f"/allocations/{consumer}").json() == {"allocations": {}}
        assert _generation(api, rp) == START


def test_replacing_subtracts_old_allocations(api: PlacementAPI) -> None:
    rp = seed_provider(api, {"VCPU": {"total": 4}})
    consumer = _uuid()
    assert api.put(f"/allocations/{consumer}", json=_body(rp, {"VCPU": 3})).status_code == 204
    assert (
        api.put(f"/allocations/{consumer}", json=_body(rp, {"VCPU": 4}, gen=1)).status_code == 204
    )
    other = _uuid()
    assert api.put(f"/allocations/{other}", json=_body(rp, {"VCPU": 1})).status_code == 409


def test_bad_input_changes_nothing(api: PlacementAPI) -> None:
    rp = seed_provider(api, {"VCPU": {"total": 4}})
    consumer = _uuid()
    r = api.put(f"/allocations/{consumer}", json=_body(_uuid(), {"VCPU": 1}))
    assert r.status_code == 400 and "that does not exist" in r.text
    r = api.put(f"/allocations/{consumer}", json=_body(rp, {"CUSTOM_NOPE": 1}))
    assert r.status_code == 400 and "No such resource class CUSTOM_NOPE" in r.text
    r = api.put(f"/allocations/{consumer}", json=_body(rp, {"DISK_GB": 1}))
    assert r.status_code == 409 and "Inventory for 'DISK_GB' on resource provider" in r.text
    r = api.put(f"/allocations/{consumer}", json=_body(rp, {"VCPU": "1"}))
    assert r.status_code == 400
    r = api.put(f"/allocations/{consumer}", json=_body(rp, {"VCPU": 0}))
    assert r.status_code == 400
    r = api.put("/allocations/not-a-uuid", json=_body(rp, {"VCPU": 1}))
    assert r.status_code == 400 and "Malformed consumer_uuid" in r.text
    r = api.put(f"/allocations/{consumer}", content=b"{}", headers={"content-type": "text/plain"})
    assert r.status_code == 415
    # None of it left a trace: the consumer can still be created from null.
    assert api.get("/usages?project_id=proj").json() == {"usages": {}}
    assert api.put(f"/allocations/{consumer}", json=_body(rp, {"VCPU": 1})).status_code == 204


def test_moving_allocations_bumps_receiving_provider_only(api: PlacementAPI) -> None:
    a = seed_provider(api, {"VCPU": {"total": 4}})
    b = seed_provider(api, {"VCPU": {"total": 4}})
    consumer = _uuid()
    assert api.put(f"/allocations/{consumer}", json=_body(a, {"VCPU": 1})).status_code == 204
    assert api.put(f"/allocations/{consumer}", json=_body(b, {"VCPU": 1}, gen=1)).status_code == 204
    # Placement bumps the providers named in the new allocations (not the one left behind).
    assert (_generation(api, a), _generation(api, b)) == (START + 1, START + 1)
    assert api.get(f"/resource_providers/{a}/allocations").json()["allocations"] == {}


def test_post_allocations(api: PlacementAPI) -> None:
    rp = seed_provider(api, {"VCPU": {"total": 4}})
    c1, c2 = _uuid(), _uuid()
    entry = {
        "project_id": "p",
        "user_id": "u",
        "consumer_generation": None,
        "consumer_type": "INSTANCE",
    }
    body = {
        c1: {"allocations": {rp: {"resources": {"VCPU": 2}}}, **entry},
        c2: {"allocations": {rp: {"resources": {"VCPU": 2}}}, **entry},
    }
    assert api.post("/allocations", json=body, version="1.12").status_code == 404
    assert api.post("/allocations", json=body).status_code == 204
    assert _generation(api, rp) == START + 1
    # Together over capacity: nothing written.
    c3 = _uuid()
    body = {
        c1: {"allocations": {}, **entry, "consumer_generation": 1},
        c3: {"allocations": {rp: {"resources": {"VCPU": 3}}}, **entry},
    }
    r = api.post("/allocations", json=body)
    assert r.status_code == 409, r.text
    assert api.get(f"/allocations/{c1}").json()["allocations"][rp]["resources"] == {"VCPU": 2}
    # Remove c1 and c2 while adding c3 (frees capacity in the same request).
    body[c2] = {"allocations": {}, **entry, "consumer_generation": 1}
    assert api.post("/allocations", json=body).status_code == 204
    assert api.get(f"/allocations/{c1}").json() == {"allocations": {}}
    assert set(api.get(f"/resource_providers/{rp}/allocations").json()["allocations"]) == {c3}
    # 1.13 form without generations.
    c4 = _uuid()
    body_13 = {
        c4: {"allocations": {rp: {"resources": {"VCPU": 1}}}, "project_id": "p", "user_id": "u"}
    }
    assert api.post("/allocations", json=body_13, version="1.13").status_code == 204
    assert api.post("/allocations", json={}, version="1.13").status_code == 400


def test_provider_allocations_unknown_provider(api: PlacementAPI) -> None:
    r = api.get(f"/resource_providers/{_uuid()}/allocations")
    assert r.status_code == 404
    assert r.json()["errors"][0]["code"] == "placement.undefined_code"


def test_over_capacity_may_shrink_but_not_grow(api: PlacementAPI) -> None:
    """As Placement: once an inventory shrank below its usage, a write that leaves the usage
    no higher than before is accepted; anything that raises it is refused."""
    rp = seed_provider(api, {"VCPU": {"total": 8}})
    consumer = _uuid()
    assert api.put(f"/allocations/{consumer}", json=_body(rp, {"VCPU": 6})).status_code == 204
    inventories = api.get(f"/resource_providers/{rp}/inventories").json()
    r = api.put(
        f"/resource_providers/{rp}/inventories",
        json={
            "resource_provider_generation": inventories["resource_provider_generation"],
            "inventories": {"VCPU": {"total": 4}},
        },
    )
    assert r.status_code == 200, r.text
    assert (
        api.put(f"/allocations/{consumer}", json=_body(rp, {"VCPU": 5}, gen=1)).status_code == 204
    )
    r = api.put(f"/allocations/{consumer}", json=_body(rp, {"VCPU": 6}, gen=2))
    assert r.status_code == 409 and "would exceed the capacity" in r.text
    assert api.put(f"/allocations/{_uuid()}", json=_body(rp, {"VCPU": 1})).status_code == 409


def test_several_providers_and_generation_field_ignored(api: PlacementAPI) -> None:
    compute = seed_provider(api, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 2048}})
    disk = seed_provider(api, {"DISK_GB": {"total": 100}})
    consumer = _uuid().upper()
    body = _body(compute, {"VCPU": 2, "MEMORY_MB": 512})
    body["allocations"][disk] = {"resources": {"DISK_GB": 20}, "generation": 99}
    assert api.put(f"/allocations/{consumer}", json=body).status_code == 204
    # The consumer uuid is stored in canonical (lower-case) form.
    got = api.get(f"/allocations/{consumer.lower()}").json()
    assert got["allocations"] == {
        compute: {"resources": {"VCPU": 2, "MEMORY_MB": 512}, "generation": START + 1},
        disk: {"resources": {"DISK_GB": 20}, "generation": START + 1},
    }
    # One provider failing the check leaves the other untouched.
    body = _body(compute, {"VCPU": 1}, gen=1)
    body["allocations"][disk] = {"resources": {"DISK_GB": 200}}
    assert api.put(f"/allocations/{consumer.lower()}", json=body).status_code == 409
    assert api.get(f"/allocations/{consumer.lower()}").json() == got


# --- The pure capacity rule (no database: runs once) ---


@pytest.mark.parametrize(
    ("limits", "used", "amount", "previous", "expected"),
    [
        (InventoryLimits(8, 0, 1, 8, 1, 1.0), 6, 2, None, False),
        (InventoryLimits(8, 0, 1, 8, 1, 1.0), 6, 3, None, True),
        (InventoryLimits(8, 2, 1, 8, 1, 1.0), 0, 7, None, True),
        (InventoryLimits(3, 0, 1, 8, 1, 1.5), 0, 4, None, False),  # int(4.5) == 4
        (InventoryLimits(3, 0, 1, 8, 1, 1.5), 0, 5, None, True),
        (InventoryLimits(4, 0, 1, 8, 1, 1.0), 0, 5, 6, False),  # over, but no worse than before
        (InventoryLimits(4, 0, 1, 8, 1, 1.0), 0, 7, 6, True),
    ],
    ids=["fits", "over", "reserved", "ratio-truncated-fits", "ratio-over", "shrinks", "grows"],
)
def test_exceeds_capacity(
    limits: InventoryLimits, used: int, amount: int, previous: int | None, expected: bool
) -> None:
    assert exceeds_capacity(limits, used, amount, previous_used=previous) is expected


@pytest.mark.parametrize(
    ("amount", "expected"), [(1, True), (2, False), (6, False), (7, True), (8, True)]
)
def test_violates_constraints(amount: int, expected: bool) -> None:
    limits = InventoryLimits(
        total=8, reserved=0, min_unit=2, max_unit=6, step_size=2, allocation_ratio=1.0
    )
    assert violates_constraints(limits, amount) is expected


def test_generation_conflict_reported_before_bad_provider(api: PlacementAPI) -> None:
    """As Placement: the consumer generation is checked before the providers of the body."""
    rp = seed_provider(api, {"VCPU": {"total": 8}})
    consumer = _uuid()
    assert api.put(f"/allocations/{consumer}", json=_body(rp, {"VCPU": 1})).status_code == 204
    r = api.put(f"/allocations/{consumer}", json=_body(_uuid(), {"VCPU": 1}, gen=7))
    assert r.status_code == 409
    assert "consumer generation conflict - expected 1 but got 7" in r.json()["errors"][0]["detail"]
