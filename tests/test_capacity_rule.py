"""Issue 10, item 9: the allocation capacity rule is Placement 16's ``_check_capacity_exceeded``.

Placement (``placement/objects/allocation.py``, 16.0.0, read for behaviour) refuses an
allocation when ``used + amount`` exceeds ``(total - reserved) * allocation_ratio``, *unless* the
provider had usage before the write and the result is no more than that usage ("the situation is
no worse than it was"). These tests show the case through the API on every backend: an
inventory shrunk below its usage, then writes that shrink, keep, or grow the overage.
"""

from __future__ import annotations

import uuid as uuidlib
from typing import Any

from tests.conftest import PlacementAPI
from tests.factories import create_provider


def _uuid() -> str:
    return str(uuidlib.uuid4())


def _put(api: PlacementAPI, consumer: str, rp: str, vcpu: int, generation: int | None) -> Any:
    return api.put(
        f"/allocations/{consumer}",
        json={
            "allocations": {rp: {"resources": {"VCPU": vcpu}}},
            "project_id": "p",
            "user_id": "u",
            "consumer_type": "INSTANCE",
            "consumer_generation": generation,
        },
    )


def _inventory(api: PlacementAPI, rp: str, total: int) -> None:
    generation = api.get(f"/resource_providers/{rp}").json()["generation"]
    response = api.put(
        f"/resource_providers/{rp}/inventories",
        json={
            "resource_provider_generation": generation,
            "inventories": {"VCPU": {"total": total}},
        },
    )
    assert response.status_code == 200, response.text


def _usage(api: PlacementAPI, rp: str) -> int:
    usages: dict[str, int] = api.get(f"/resource_providers/{rp}/usages").json()["usages"]
    return usages.get("VCPU", 0)


def test_over_capacity_allowed_only_when_no_worse(api: PlacementAPI) -> None:
    """capacity 8, consumer A takes 6; the operator shrinks the inventory to 4 (allowed, usage
    6 > capacity 4). Then, as in Placement:

    * A shrinking to 5 is accepted (over capacity, but 5 <= 6 used before);
    * A growing back to 6 is refused (6 > 5 used before);
    * A keeping 5 (rewrite) is accepted (5 <= 5);
    * a new consumer B taking 1 is refused (5 + 1 > 5);
    * A shrinking to 4 brings the provider back within capacity; B's 1 is then refused as
      plain over capacity, and fits once A shrinks to 3.
    """
    rp = create_provider(api, name="cn1")["uuid"]
    _inventory(api, rp, 8)
    a, b = _uuid(), _uuid()
    assert _put(api, a, rp, 6, None).status_code == 204
    _inventory(api, rp, 4)
    assert _usage(api, rp) == 6

    assert _put(api, a, rp, 5, 1).status_code == 204
    assert _usage(api, rp) == 5
    refused = _put(api, a, rp, 6, 2)
    assert refused.status_code == 409, refused.text
    assert "exceed the capacity" in refused.json()["errors"][0]["detail"]
    assert _put(api, a, rp, 5, 2).status_code == 204
    assert _put(api, b, rp, 1, None).status_code == 409
    assert _put(api, a, rp, 4, 3).status_code == 204
    assert _put(api, b, rp, 1, None).status_code == 409
    assert _put(api, a, rp, 3, 4).status_code == 204
    assert _put(api, b, rp, 1, None).status_code == 204
    assert _usage(api, rp) == 4


def test_no_usage_before_means_no_exception(api: PlacementAPI) -> None:
    """With no allocations on the provider before the write, over capacity is always refused
    (Placement's ``prev_used is None``)."""
    rp = create_provider(api, name="cn1")["uuid"]
    _inventory(api, rp, 4)
    assert _put(api, _uuid(), rp, 5, None).status_code == 409
    assert _usage(api, rp) == 0


def test_running_sum_over_consumers_in_one_post(api: PlacementAPI) -> None:
    """POST /allocations with two consumers on one provider: the sum is checked, and the
    no-worse exception uses the whole sum (over capacity 4, usage before 6: 3 + 3 = 6 is
    accepted, 3 + 4 = 7 refused)."""
    rp = create_provider(api, name="cn1")["uuid"]
    _inventory(api, rp, 8)
    a, b = _uuid(), _uuid()
    assert _put(api, a, rp, 6, None).status_code == 204
    _inventory(api, rp, 4)

    def body(amount_a: int, amount_b: int) -> dict[str, Any]:
        return {
            a: {
                "allocations": {rp: {"resources": {"VCPU": amount_a}}},
                "project_id": "p",
                "user_id": "u",
                "consumer_type": "INSTANCE",
                "consumer_generation": 1,
            },
            b: {
                "allocations": {rp: {"resources": {"VCPU": amount_b}}},
                "project_id": "p",
                "user_id": "u",
                "consumer_type": "INSTANCE",
                "consumer_generation": None,
            },
        }

    assert api.post("/allocations", json=body(3, 4)).status_code == 409
    assert _usage(api, rp) == 6
    assert api.post("/allocations", json=body(3, 3)).status_code == 204
    assert _usage(api, rp) == 6
