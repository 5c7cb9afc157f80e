"""``POST /resource_providers/batch`` (extension) through the real app on every backend: shape,
every error, all-or-nothing, the candidate engine seeing the batch, the count cap, the policy rule
and a statement count that does not grow with the batch."""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event

from placement_numa.app import create_app
from placement_numa.settings import Settings
from tests.backends import TestDatabase
from tests.conftest import PlacementAPI
from tests.factories import create_provider

BATCH = "/resource_providers/batch"


def _uuid() -> str:
    return str(uuidlib.uuid4())


def _error(response: Any, status: int, code: str | None = "placement.undefined_code") -> str:
    """The detail of a Placement error; ``code`` None: before 1.23, errors carry none."""
    assert response.status_code == status, response.text
    error = response.json()["errors"][0]
    assert error.get("code") == code
    detail: str = error["detail"]
    return detail


def _host(name: str, cells: int = 2) -> list[dict[str, Any]]:
    """A compute node as the benchmarks seed it: root with DISK_GB; cells with VCPU, PCPU and
    HW_NUMA_ROOT; a 4K page-size child with MEMORY_MB under each cell."""
    root = _uuid()
    tree: list[dict[str, Any]] = [
        {"uuid": root, "name": name, "inventories": {"DISK_GB": {"total": 1000}}}
    ]
    for c in range(cells):
        cell = _uuid()
        tree.append(
            {
                "uuid": cell,
                "name": f"{name}_NUMA{c}",
                "parent_provider_uuid": root,
                "inventories": {
                    "VCPU": {"total": 32, "allocation_ratio": 4.0},
                    "PCPU": {"total": 16},
                },
                "traits": ["HW_NUMA_ROOT"],
            }
        )
        tree.append(
            {
                "uuid": _uuid(),
                "name": f"{name}_NUMA{c}_4K",
                "parent_provider_uuid": cell,
                "inventories": {"MEMORY_MB": {"total": 65536, "step_size": 1}},
                "traits": ["MEMORY_PAGE_SIZE_SMALL"],
            }
        )
    return tree


def _provider_count(api: PlacementAPI) -> int:
    response = api.get("/resource_providers")
    assert response.status_code == 200, response.text
    return len(response.json()["resource_providers"])


# --- shape ---------------------------------------------------------------------------------


def test_batch_creates_trees_as_get_shows_them(api: PlacementAPI) -> None:
    existing = create_provider(api, name="existing")
    tree = _host("cn0")
    tree.append({"name": "under-existing", "parent_provider_uuid": existing["uuid"]})
    response = api.post(BATCH, json={"resource_providers": tree})
    assert response.status_code == 200, response.text
    created = response.json()["resource_providers"]
    assert [p["name"] for p in created] == [p["name"] for p in tree]
    for entry, provider in zip(tree, created, strict=True):
        shown = api.get(f"/resource_providers/{provider['uuid']}")
        assert shown.status_code == 200
        assert provider == shown.json()
        assert provider["generation"] == 0
        if "uuid" in entry:
            assert provider["uuid"] == entry["uuid"]
        assert provider["parent_provider_uuid"] == entry.get("parent_provider_uuid")
    root = tree[0]["uuid"]
    assert [p["root_provider_uuid"] for p in created[:-1]] == [root] * (len(tree) - 1)
    assert created[-1]["root_provider_uuid"] == existing["uuid"]
    uuidlib.UUID(created[-1]["uuid"])  # generated

    cell = api.get(f"/resource_providers/{tree[1]['uuid']}/inventories").json()
    assert cell == {
        "resource_provider_generation": 0,
        "inventories": {
            "VCPU": {
                "total": 32,
                "reserved": 0,
                "min_unit": 1,
                "max_unit": 2**31 - 1,
                "step_size": 1,
                "allocation_ratio": 4.0,
            },
            "PCPU": {
                "total": 16,
                "reserved": 0,
                "min_unit": 1,
                "max_unit": 2**31 - 1,
                "step_size": 1,
                "allocation_ratio": 1.0,
            },
        },
    }
    assert api.get(f"/resource_providers/{tree[1]['uuid']}/traits").json() == {
        "traits": ["HW_NUMA_ROOT"],
        "resource_provider_generation": 0,
    }
    empty = created[-1]["uuid"]
    assert api.get(f"/resource_providers/{empty}/inventories").json()["inventories"] == {}
    assert api.get(f"/resource_providers/{empty}/traits").json()["traits"] == []
    in_tree = api.get(f"/resource_providers?in_tree={root}").json()["resource_providers"]
    assert sorted(p["uuid"] for p in in_tree) == sorted(p["uuid"] for p in created[:-1])


def test_generation_zero_guards_the_next_write(api: PlacementAPI) -> None:
    (provider,) = api.post(
        BATCH,
        json={"resource_providers": [{"name": "one", "inventories": {"VCPU": {"total": 4}}}]},
    ).json()["resource_providers"]
    stale = api.put(
        f"/resource_providers/{provider['uuid']}/traits",
        json={"resource_provider_generation": 1, "traits": []},
    )
    _error(stale, 409, "placement.concurrent_update")
    fresh = api.put(
        f"/resource_providers/{provider['uuid']}/inventories",
        json={"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}},
    )
    assert fresh.status_code == 200, fresh.text
    assert fresh.json()["resource_provider_generation"] == 1


def test_uuids_are_canonical_and_duplicated_traits_count_once(api: PlacementAPI) -> None:
    plain = uuidlib.uuid4().hex.upper()
    body = {
        "resource_providers": [
            {"uuid": plain, "name": "a", "traits": ["HW_NUMA_ROOT", "HW_NUMA_ROOT"]},
            {"name": "b", "parent_provider_uuid": plain},
        ]
    }
    created = api.post(BATCH, json=body).json()["resource_providers"]
    assert created[0]["uuid"] == str(uuidlib.UUID(plain))
    assert created[1]["parent_provider_uuid"] == created[0]["uuid"]
    traits = api.get(f"/resource_providers/{created[0]['uuid']}/traits").json()["traits"]
    assert traits == ["HW_NUMA_ROOT"]


def test_an_empty_batch_creates_nothing(api: PlacementAPI) -> None:
    response = api.post(BATCH, json={"resource_providers": []})
    assert response.status_code == 200, response.text
    assert response.json() == {"resource_providers": []}


def test_older_microversions_do_not_have_it(api: PlacementAPI) -> None:
    body = {"resource_providers": [{"name": "old"}]}
    _error(api.post(BATCH, json=body, version="1.19"), 404, None)
    assert api.post(BATCH, json=body, version="1.20").status_code == 200
    assert _provider_count(api) == 1


# --- errors: every one leaves the database as it was -----------------------------------------


def _errors() -> list[tuple[str, Any, int, str, str]]:
    """(case id, body builder, status, code, fragment of the detail)."""
    bad_uuid_parent = _uuid()
    return [
        (
            "taken-uuid",
            lambda known: [{"uuid": known["uuid"], "name": "fresh"}],
            409,
            "placement.duplicate_name",
            "Conflicting resource provider uuid: {uuid} already exists.",
        ),
        (
            "taken-name",
            lambda known: [{"name": "known"}],
            409,
            "placement.duplicate_name",
            "Conflicting resource provider name: known already exists.",
        ),
        (
            "uuid-twice-in-batch",
            lambda known: [
                {"uuid": "6f0c0000-0000-4000-8000-000000000001", "name": "x"},
                {"uuid": "6f0c0000-0000-4000-8000-000000000001", "name": "y"},
            ],
            409,
            "placement.duplicate_name",
            "Conflicting resource provider uuid: 6f0c0000-0000-4000-8000-000000000001 already",
        ),
        (
            "name-twice-in-batch",
            lambda known: [{"name": "twice"}, {"name": "twice"}],
            409,
            "placement.duplicate_name",
            "Conflicting resource provider name: twice already exists.",
        ),
        (
            "unknown-parent",
            lambda known: [{"name": "orphan", "parent_provider_uuid": bad_uuid_parent}],
            400,
            "placement.undefined_code",
            "Object action create failed because: parent provider UUID does not exist.",
        ),
        (
            "parent-later-in-batch",
            lambda known: [
                {"name": "child", "parent_provider_uuid": "6f0c0000-0000-4000-8000-000000000002"},
                {"name": "parent", "uuid": "6f0c0000-0000-4000-8000-000000000002"},
            ],
            400,
            "placement.undefined_code",
            "must come before its children",
        ),
        (
            "parent-is-self",
            lambda known: [
                {
                    "name": "self",
                    "uuid": "6f0c0000-0000-4000-8000-000000000003",
                    "parent_provider_uuid": "6f0c0000-0000-4000-8000-000000000003",
                }
            ],
            400,
            "placement.undefined_code",
            "parent provider UUID cannot be same as UUID",
        ),
        (
            "empty-name",
            lambda known: [{"name": ""}],
            400,
            "placement.undefined_code",
            "Object action create failed because: name is required",
        ),
        (
            "unknown-resource-class",
            lambda known: [{"name": "odd", "inventories": {"CUSTOM_NOPE": {"total": 1}}}],
            400,
            "placement.undefined_code",
            "No such resource class CUSTOM_NOPE.",
        ),
        (
            "reserved-above-total",
            lambda known: [{"name": "r", "inventories": {"VCPU": {"total": 4, "reserved": 5}}}],
            400,
            "placement.undefined_code",
            "Unable to create inventory for resource provider",
        ),
        (
            "capacity-too-large",
            lambda known: [
                {
                    "name": "huge",
                    "inventories": {"VCPU": {"total": 2**31 - 1, "allocation_ratio": 1e30}},
                }
            ],
            400,
            "placement.inventory.capacity_too_large",
            "exceeds",
        ),
        (
            "total-zero",
            lambda known: [{"name": "z", "inventories": {"VCPU": {"total": 0}}}],
            400,
            "placement.undefined_code",
            "JSON does not validate",
        ),
        (
            "unknown-traits",
            lambda known: [
                {"name": "t1", "traits": ["CUSTOM_NOPE_B"]},
                {"name": "t2", "traits": ["CUSTOM_NOPE_A", "HW_NUMA_ROOT"]},
            ],
            400,
            "placement.undefined_code",
            "No such trait CUSTOM_NOPE_A, CUSTOM_NOPE_B",
        ),
        (
            "not-a-uuid",
            lambda known: [{"name": "u", "uuid": "not-a-uuid"}],
            400,
            "placement.undefined_code",
            "'not-a-uuid' is not a 'uuid'",
        ),
        (
            "unknown-key",
            lambda known: [{"name": "k", "aggregates": []}],
            400,
            "placement.undefined_code",
            "Additional properties are not allowed",
        ),
        (
            "name-too-long",
            lambda known: [{"name": "n" * 201}],
            400,
            "placement.undefined_code",
            "JSON does not validate",
        ),
    ]


@pytest.mark.parametrize(
    ("builder", "status", "code", "fragment"),
    [case[1:] for case in _errors()],
    ids=[case[0] for case in _errors()],
)
def test_errors_write_nothing(
    api: PlacementAPI, builder: Any, status: int, code: str, fragment: str
) -> None:
    """Each bad provider comes last, after a valid host tree: nothing of the batch is written."""
    known = create_provider(api, name="known")
    body = {"resource_providers": _host("good") + builder(known)}
    detail = _error(api.post(BATCH, json=body), status, code)
    assert fragment.format(uuid=known["uuid"]) in detail
    assert _provider_count(api) == 1
    assert api.get("/resource_providers?name=good").json()["resource_providers"] == []


def test_bodies_that_are_not_a_batch(api: PlacementAPI) -> None:
    for body in ({}, {"resource_providers": {}}, [], {"resource_providers": [], "x": 1}):
        _error(api.post(BATCH, json=body), 400)
    assert _provider_count(api) == 0


# --- the candidate engine sees the batch at once ----------------------------------------------

TWO_CELL = (
    "resources_PROC1=VCPU:4&resources_MEM1=MEMORY_MB:4096&required_NUMA1=HW_NUMA_ROOT"
    "&same_subtree=_PROC1,_MEM1,_NUMA1"
    "&resources_PROC2=VCPU:4&resources_MEM2=MEMORY_MB:4096&required_NUMA2=HW_NUMA_ROOT"
    "&same_subtree=_PROC2,_MEM2,_NUMA2&group_policy=none"
)


def _roots(body: dict[str, Any]) -> set[str]:
    summaries = body["provider_summaries"]
    return {
        summaries[u]["root_provider_uuid"]
        for request in body["allocation_requests"]
        for u in request["allocations"]
    }


def test_allocation_candidates_see_the_batch_right_after(api: PlacementAPI) -> None:
    first = _host("cn-a")
    assert api.post(BATCH, json={"resource_providers": first}).status_code == 200
    before = api.get(f"/allocation_candidates?{TWO_CELL}")
    assert before.status_code == 200, before.text
    assert _roots(before.json()) == {first[0]["uuid"]}  # the snapshot is loaded now

    second = _host("cn-b") + _host("cn-c")
    assert api.post(BATCH, json={"resource_providers": second}).status_code == 200
    after = api.get(f"/allocation_candidates?{TWO_CELL}")
    assert _roots(after.json()) == {first[0]["uuid"], second[0]["uuid"], second[5]["uuid"]}
    flat = api.get("/allocation_candidates?resources=DISK_GB:10").json()
    assert len(flat["allocation_requests"]) == 3
    summary = flat["provider_summaries"][second[1]["uuid"]]
    assert summary["traits"] == ["HW_NUMA_ROOT"]
    assert summary["resources"]["VCPU"] == {"capacity": 128, "used": 0}


# --- bulk: the statement count does not grow with the batch ------------------------------------


def _statements(api: PlacementAPI, body: dict[str, Any]) -> int:
    engine = api.client.app.state.database.engine  # type: ignore[attr-defined]
    seen: list[str] = []

    def count(*args: Any) -> None:
        statement = " ".join(str(args[2]).split())
        # not the batch's: the change log's periodic prune, the pool's pre-ping
        if not statement.startswith(("DELETE FROM placement_changes", "SELECT 1")):
            seen.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    try:
        response = api.post(BATCH, json=body)
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert response.status_code == 200, response.text
    return len(seen)


def test_statements_do_not_grow_with_the_batch(api: PlacementAPI) -> None:
    one = _statements(api, {"resource_providers": _host("s0")})
    many = [p for h in range(1, 21) for p in _host(f"s{h}")]
    assert _statements(api, {"resource_providers": many}) == one
    assert one <= 14, one
    assert _provider_count(api) == 21 * 5


# --- caps and policy ------------------------------------------------------------------------


@pytest.fixture
def capped(test_database: TestDatabase) -> Iterator[PlacementAPI]:
    """The app with ``max_batch_providers=3`` and a 4 KiB body limit, on the test database."""
    app = create_app(
        Settings(
            database_url=test_database.url,
            auto_migrate=False,
            auth_strategy="noauth2",
            max_batch_providers=3,
            max_request_body_size=4096,
        )
    )
    try:
        with TestClient(app, raise_server_exceptions=False) as client:
            yield PlacementAPI(client)
    finally:
        app.state.database.dispose()


def test_count_cap_is_checked_before_anything_else(api: PlacementAPI, capped: PlacementAPI) -> None:
    invalid = {"resource_providers": [{"uuid": "bad"}] * 4}
    detail = _error(capped.post(BATCH, json=invalid), 400, "placement.limit.batch_providers")
    assert "4 resource providers; at most 3" in detail
    assert "[api] max_batch_providers" in detail
    fits = {"resource_providers": [{"name": f"p{i}"} for i in range(3)]}
    assert capped.post(BATCH, json=fits).status_code == 200
    assert _provider_count(api) == 3


def test_body_size_limit_applies(api: PlacementAPI, capped: PlacementAPI) -> None:
    big = {
        "resource_providers": [
            {"name": f"p{i}", "traits": ["HW_NUMA_ROOT"] * 100} for i in range(3)
        ]
    }
    _error(capped.post(BATCH, json=big), 413, "placement.limit.body_size")
    assert _provider_count(api) == 0


@pytest.mark.parametrize(
    ("roles", "allowed"),
    [("reader", False), ("member,reader", False), ("service", True), ("admin", True)],
)
def test_policy_rule(api: PlacementAPI, roles: str, allowed: bool) -> None:
    body = {"resource_providers": [{"name": f"by-{roles}"}]}
    response = api.post(BATCH, json=body, token="someone:project", headers={"x-roles": roles})
    if allowed:
        assert response.status_code == 200, response.text
    else:
        detail = _error(response, 403, "placement.undefined_code")
        assert "placement:resource_providers:batch_create" in detail
        assert _provider_count(api) == 0
