"""Resource classes (1.2+), as OpenStack Placement answers them (checked against Placement
16.0.0)."""

from __future__ import annotations

import os_resource_classes
import pytest

from placement_numa.db.tables import CUSTOM_RESOURCE_CLASS_START_ID
from tests.conftest import PlacementAPI
from tests.factories import create_provider, set_inventories


def _names(api: PlacementAPI) -> list[str]:
    return [rc["name"] for rc in api.get("/resource_classes").json()["resource_classes"]]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/resource_classes"),
        ("GET", "/resource_classes/VCPU"),
        ("DELETE", "/resource_classes/CUSTOM_X"),
        ("PUT", "/resource_classes/CUSTOM_X"),
    ],
    ids=["list", "show", "delete", "put"],
)
def test_absent_before_1_2(api: PlacementAPI, method: str, path: str) -> None:
    assert api.request(method, path, version="1.1").status_code == 404


def test_list_has_standard_classes_in_order_with_links(api: PlacementAPI) -> None:
    response = api.get("/resource_classes", version="1.2")
    assert response.status_code == 200
    classes = response.json()["resource_classes"]
    assert [rc["name"] for rc in classes] == list(os_resource_classes.STANDARDS)
    assert classes[0] == {
        "name": "VCPU",
        "links": [{"rel": "self", "href": "/resource_classes/VCPU"}],
    }
    assert "last-modified" not in response.headers
    newer = api.get("/resource_classes", version="1.15")
    assert "last-modified" in newer.headers
    assert newer.headers["cache-control"] == "no-cache"


def test_show(api: PlacementAPI) -> None:
    response = api.get("/resource_classes/MEMORY_MB")
    assert response.status_code == 200
    assert response.json() == {
        "name": "MEMORY_MB",
        "links": [{"rel": "self", "href": "/resource_classes/MEMORY_MB"}],
    }
    assert "last-modified" in response.headers
    missing = api.get("/resource_classes/CUSTOM_MISSING")
    assert missing.status_code == 404
    assert "No such resource class CUSTOM_MISSING" in missing.json()["errors"][0]["detail"]


def test_post_creates_custom_class(api: PlacementAPI) -> None:
    response = api.post("/resource_classes", json={"name": "CUSTOM_GOLD"}, version="1.2")
    assert response.status_code == 201
    assert response.headers["location"].endswith("/resource_classes/CUSTOM_GOLD")
    assert response.content == b""
    assert _names(api)[-1] == "CUSTOM_GOLD"
    again = api.post("/resource_classes", json={"name": "CUSTOM_GOLD"})
    assert again.status_code == 409
    assert again.json()["errors"][0]["code"] == "placement.undefined_code"


@pytest.mark.parametrize(
    "body",
    [
        {"name": "VCPU"},
        {"name": "CUSTOM_lower"},
        {"name": "CUSTOM_" + "A" * 250},
        {},
        {"name": "CUSTOM_X", "extra": 1},
        {"name": 1},
    ],
    ids=["standard", "lowercase", "too-long", "no-name", "extra-key", "not-a-string"],
)
def test_post_invalid_name_is_400(api: PlacementAPI, body: dict[str, object]) -> None:
    assert api.post("/resource_classes", json=body).status_code == 400


def test_custom_ids_start_at_10000(api: PlacementAPI) -> None:
    api.post("/resource_classes", json={"name": "CUSTOM_A"})
    api.post("/resource_classes", json={"name": "CUSTOM_B"})
    database = api.client.app.state.database  # type: ignore[attr-defined]
    from placement_numa.db.repositories import names

    with database.read() as conn:
        ids = names.resource_class_ids(conn, ["CUSTOM_A", "CUSTOM_B"])
    assert ids == {
        "CUSTOM_A": CUSTOM_RESOURCE_CLASS_START_ID,
        "CUSTOM_B": CUSTOM_RESOURCE_CLASS_START_ID + 1,
    }


def test_put_creates_from_1_7(api: PlacementAPI) -> None:
    created = api.put("/resource_classes/CUSTOM_SILVER", version="1.7")
    assert created.status_code == 201
    assert created.headers["location"].endswith("/resource_classes/CUSTOM_SILVER")
    exists = api.put("/resource_classes/CUSTOM_SILVER", version="1.7")
    assert exists.status_code == 204
    # A body is ignored from 1.7.
    with_body = api.put("/resource_classes/CUSTOM_SILVER", json={"name": "CUSTOM_X"})
    assert with_body.status_code == 204
    assert api.put("/resource_classes/VCPU", version="1.7").status_code == 400
    assert api.put("/resource_classes/lower", version="1.7").status_code == 400


def test_put_renames_before_1_7(api: PlacementAPI) -> None:
    api.post("/resource_classes", json={"name": "CUSTOM_OLD"})
    api.post("/resource_classes", json={"name": "CUSTOM_TAKEN"})
    renamed = api.put("/resource_classes/CUSTOM_OLD", json={"name": "CUSTOM_NEW"}, version="1.6")
    assert renamed.status_code == 200
    assert renamed.json() == {
        "name": "CUSTOM_NEW",
        "links": [{"rel": "self", "href": "/resource_classes/CUSTOM_NEW"}],
    }
    assert api.get("/resource_classes/CUSTOM_OLD").status_code == 404
    same = api.put("/resource_classes/CUSTOM_NEW", json={"name": "CUSTOM_NEW"}, version="1.6")
    assert same.status_code == 200
    taken = api.put("/resource_classes/CUSTOM_NEW", json={"name": "CUSTOM_TAKEN"}, version="1.6")
    assert taken.status_code == 409
    standard = api.put("/resource_classes/VCPU", json={"name": "CUSTOM_V"}, version="1.6")
    assert standard.status_code == 400
    missing = api.put("/resource_classes/CUSTOM_NOPE", json={"name": "CUSTOM_V"}, version="1.6")
    assert missing.status_code == 404
    to_standard = api.put("/resource_classes/CUSTOM_NEW", json={"name": "VCPU"}, version="1.6")
    assert to_standard.status_code == 400
    no_body = api.put("/resource_classes/CUSTOM_NEW", version="1.6")
    assert no_body.status_code == 415


def test_delete(api: PlacementAPI) -> None:
    api.put("/resource_classes/CUSTOM_FPGA", version="1.7")
    rp = str(create_provider(api)["uuid"])
    set_inventories(api, rp, {"CUSTOM_FPGA": {"total": 2}})
    in_use = api.delete("/resource_classes/CUSTOM_FPGA")
    assert in_use.status_code == 409
    assert api.delete(f"/resource_providers/{rp}/inventories").status_code == 204
    assert api.delete("/resource_classes/CUSTOM_FPGA").status_code == 204
    assert api.delete("/resource_classes/CUSTOM_FPGA").status_code == 404
    standard = api.delete("/resource_classes/VCPU")
    assert standard.status_code == 400
    assert "Cannot delete standard resource class VCPU" in standard.json()["errors"][0]["detail"]
