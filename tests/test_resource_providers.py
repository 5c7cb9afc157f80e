"""``/resource_providers`` through the real app on every backend: shapes per microversion,
creation, filters, updates with re-parenting, deletion, and every error code produced.

Shapes and messages were checked against OpenStack Placement 16.0.0.
"""

from __future__ import annotations

import uuid as uuidlib
from typing import Any

import pytest

from tests.conftest import PlacementAPI
from tests.factories import (
    create_provider,
    seed_allocation,
    seed_inventory,
    seed_traits,
    set_aggregates,
)


def _uuid() -> str:
    return str(uuidlib.uuid4())


def _error(response: Any, status: int, code: str | None = "placement.undefined_code") -> str:
    assert response.status_code == status, response.text
    error = response.json()["errors"][0]
    assert error["status"] == status
    if code is None:
        assert "code" not in error
    else:
        assert error["code"] == code
    detail: str = error["detail"]
    return detail


def _uuids(response: Any) -> list[str]:
    assert response.status_code == 200, response.text
    return [p["uuid"] for p in response.json()["resource_providers"]]


# --- representation per microversion -----------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "rels", "tree_fields"),
    [
        ("1.0", ["self", "inventories", "usages"], False),
        ("1.1", ["self", "inventories", "usages", "aggregates"], False),
        ("1.6", ["self", "inventories", "usages", "aggregates", "traits"], False),
        ("1.11", ["self", "inventories", "usages", "aggregates", "traits", "allocations"], False),
        ("1.14", ["self", "inventories", "usages", "aggregates", "traits", "allocations"], True),
        ("1.39", ["self", "inventories", "usages", "aggregates", "traits", "allocations"], True),
    ],
    ids=["1.0", "1.1", "1.6", "1.11", "1.14", "1.39"],
)
def test_representation(
    api: PlacementAPI, version: str, rels: list[str], tree_fields: bool
) -> None:
    rp = create_provider(api, name="cn1")
    for response in (
        api.get(f"/resource_providers/{rp['uuid']}", version=version),
        api.get("/resource_providers", version=version),
    ):
        assert response.status_code == 200
        body = response.json()
        shown = body["resource_providers"][0] if "resource_providers" in body else body
        assert [link["rel"] for link in shown["links"]] == rels
        base = f"/resource_providers/{rp['uuid']}"
        assert shown["links"][0]["href"] == base
        assert all(link["href"] == f"{base}/{link['rel']}" for link in shown["links"][1:])
        expected_keys = {"uuid", "name", "generation", "links"}
        if tree_fields:
            expected_keys |= {"parent_provider_uuid", "root_provider_uuid"}
            assert shown["parent_provider_uuid"] is None
            assert shown["root_provider_uuid"] == rp["uuid"]
        assert set(shown) == expected_keys
        assert shown["generation"] == 0
        cached = mv_at_least(version, "1.15")
        assert ("last-modified" in response.headers) is cached
        assert (response.headers.get("cache-control") == "no-cache") is cached


def mv_at_least(version: str, minimum: str) -> bool:
    major, minor = (int(x) for x in version.split("."))
    want_major, want_minor = (int(x) for x in minimum.split("."))
    return (major, minor) >= (want_major, want_minor)


# --- POST ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["1.0", "1.14", "1.19"])
def test_post_before_1_20_is_201_without_body(api: PlacementAPI, version: str) -> None:
    rp = _uuid()
    response = api.post("/resource_providers", json={"name": "a", "uuid": rp}, version=version)
    assert response.status_code == 201
    assert response.content == b""
    assert response.headers["location"].endswith(f"/resource_providers/{rp}")
    assert api.get(f"/resource_providers/{rp}").json()["name"] == "a"


@pytest.mark.parametrize("version", ["1.20", "1.39"])
def test_post_from_1_20_returns_provider(api: PlacementAPI, version: str) -> None:
    response = api.post("/resource_providers", json={"name": "a"}, version=version)
    assert response.status_code == 200
    body = response.json()
    uuidlib.UUID(body["uuid"])
    assert body["name"] == "a" and body["generation"] == 0
    assert body["root_provider_uuid"] == body["uuid"] and body["parent_provider_uuid"] is None
    assert response.headers["location"].endswith(f"/resource_providers/{body['uuid']}")
    assert response.headers["cache-control"] == "no-cache"
    assert "last-modified" in response.headers


def test_post_normalises_uuid(api: PlacementAPI) -> None:
    rp = _uuid()
    body = create_provider(api, uuid=rp.replace("-", "").upper())
    assert body["uuid"] == rp


def test_post_with_parent(api: PlacementAPI) -> None:
    root = create_provider(api, name="root")
    child = create_provider(api, name="child", parent=root["uuid"])
    grandchild = create_provider(api, name="grandchild", parent=child["uuid"])
    assert child["parent_provider_uuid"] == root["uuid"]
    assert grandchild["parent_provider_uuid"] == child["uuid"]
    assert grandchild["root_provider_uuid"] == root["uuid"]


@pytest.mark.parametrize(
    ("version", "body", "message"),
    [
        ("1.39", {"name": ""}, "Object action create failed because: name is required"),
        ("1.39", {"name": "x" * 201}, "JSON does not validate"),
        ("1.39", {"name": 1}, "JSON does not validate"),
        ("1.39", {}, "JSON does not validate"),
        ("1.39", [], "JSON does not validate"),
        ("1.39", {"name": "a", "uuid": "abc"}, "'abc' is not a 'uuid'"),
        ("1.39", {"name": "a", "uuid": None}, "JSON does not validate"),
        ("1.39", {"name": "a", "foo": 1}, "JSON does not validate"),
        ("1.13", {"name": "a", "parent_provider_uuid": None}, "JSON does not validate"),
        ("1.39", {"name": "a", "parent_provider_uuid": "abc"}, "'abc' is not a 'uuid'"),
        (
            "1.39",
            {"name": "a", "parent_provider_uuid": "11111111-1111-1111-1111-111111111111"},
            "Object action create failed because: parent provider UUID does not exist.",
        ),
        (
            "1.39",
            {
                "name": "a",
                "uuid": "11111111-1111-1111-1111-111111111111",
                "parent_provider_uuid": "11111111-1111-1111-1111-111111111111",
            },
            "parent provider UUID cannot be same as UUID.",
        ),
    ],
    ids=[
        "empty-name",
        "long-name",
        "int-name",
        "no-name",
        "list",
        "bad-uuid",
        "null-uuid",
        "extra-key",
        "parent-before-1.14",
        "bad-parent",
        "unknown-parent",
        "self-parent",
    ],
)
def test_post_bad_request(api: PlacementAPI, version: str, body: Any, message: str) -> None:
    response = api.post("/resource_providers", json=body, version=version)
    assert message in _error(
        response, 400, code="placement.undefined_code" if mv_at_least(version, "1.23") else None
    )


def test_post_name_and_uuid_are_unique(api: PlacementAPI) -> None:
    rp = create_provider(api, name="taken")
    duplicate_name = api.post("/resource_providers", json={"name": "taken"})
    assert "Conflicting resource provider name: taken already exists." in _error(
        duplicate_name, 409, "placement.duplicate_name"
    )
    duplicate_uuid = api.post("/resource_providers", json={"name": "other", "uuid": rp["uuid"]})
    assert f"Conflicting resource provider uuid: {rp['uuid']} already exists." in _error(
        duplicate_uuid, 409, "placement.duplicate_name"
    )
    old = api.post("/resource_providers", json={"name": "taken"}, version="1.22")
    _error(old, 409, code=None)


def test_post_needs_json(api: PlacementAPI) -> None:
    response = api.post(
        "/resource_providers", content=b"name=x", headers={"content-type": "text/plain"}
    )
    assert response.status_code == 415


# --- GET one -------------------------------------------------------------------------------------


def test_get_unknown_is_404(api: PlacementAPI) -> None:
    missing = _uuid()
    detail = _error(api.get(f"/resource_providers/{missing}"), 404)
    assert f"No resource provider with uuid {missing} found" in detail
    _error(api.get("/resource_providers/abc"), 404)


# --- GET list and filters ------------------------------------------------------------------------


def test_list_name_and_uuid(api: PlacementAPI) -> None:
    a = create_provider(api, name="a")
    b = create_provider(api, name="b")
    assert _uuids(api.get("/resource_providers")) == [a["uuid"], b["uuid"]]
    assert _uuids(api.get("/resource_providers?name=b")) == [b["uuid"]]
    assert _uuids(api.get(f"/resource_providers?uuid={a['uuid']}")) == [a["uuid"]]
    assert _uuids(api.get(f"/resource_providers?uuid={a['uuid']}&name=b")) == []
    assert _uuids(api.get("/resource_providers?name=")) == [a["uuid"], b["uuid"]]
    empty = api.get("/resource_providers?name=none")
    assert empty.json() == {"resource_providers": []}
    assert "last-modified" in empty.headers


@pytest.mark.parametrize(
    ("version", "query"),
    [
        ("1.0", "foo=1"),
        ("1.2", f"member_of={uuidlib.UUID(int=1)}"),
        ("1.3", "resources=VCPU:1"),
        ("1.13", f"in_tree={uuidlib.UUID(int=1)}"),
        ("1.17", "required=HW_CPU_X86_AVX"),
        ("1.39", "limit=1"),
    ],
    ids=["unknown", "member_of-1.2", "resources-1.3", "in_tree-1.13", "required-1.17", "limit"],
)
def test_list_unknown_params(api: PlacementAPI, version: str, query: str) -> None:
    response = api.get(f"/resource_providers?{query}", version=version)
    name = query.split("=")[0]
    assert (
        f"Invalid query string parameters: Additional properties are not allowed ('{name}' was"
        " unexpected)"
    ) in _error(
        response, 400, code="placement.undefined_code" if mv_at_least(version, "1.23") else None
    )


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("uuid=abc", "Invalid query string parameters: 'abc' is not a 'uuid'"),
        ("in_tree=abc", "Invalid query string parameters: 'abc' is not a 'uuid'"),
        ("member_of=abc", "Expected 'member_of' parameter to contain valid UUID(s). Got: abc"),
        ("resources=VCPU", "Badly formed resources parameter."),
        ("resources=VCPU:0", "Requested resource VCPU requires amount >= 1. Got: 0."),
        (
            "resources=FOO:1",
            "Invalid resource class in resources parameter: No such resource class FOO.",
        ),
        (
            "required=CUSTOM_NOPE",
            'Invalid trait(s) in "required" parameter: No such trait(s): CUSTOM_NOPE.',
        ),
        ("required=!CUSTOM_NOPE", "No such trait(s): CUSTOM_NOPE."),
        ("required=", "Got an empty trait in: "),
    ],
    ids=[
        "uuid",
        "in_tree",
        "member_of",
        "resources-form",
        "resources-zero",
        "resources-class",
        "required-unknown",
        "forbidden-unknown",
        "required-empty",
    ],
)
def test_list_bad_values(api: PlacementAPI, query: str, message: str) -> None:
    assert message in _error(api.get(f"/resource_providers?{query}"), 400)


def test_list_version_gated_forms(api: PlacementAPI) -> None:
    agg1, agg2 = _uuid(), _uuid()
    repeated = f"/resource_providers?member_of={agg1}&member_of={agg2}"
    assert "Multiple member_of parameters are not supported" in _error(
        api.get(repeated, version="1.23"), 400
    )
    assert _uuids(api.get(repeated, version="1.24")) == []
    forbidden = f"/resource_providers?member_of=!{agg1}"
    assert "Forbidden member_of parameters are not supported" in _error(
        api.get(forbidden, version="1.31"), 400
    )
    assert "HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: !HW_CPU_X86_AVX" in _error(
        api.get("/resource_providers?required=!HW_CPU_X86_AVX", version="1.21"), 400, code=None
    )
    assert "only supported since microversion 1.39" in _error(
        api.get("/resource_providers?required=in:HW_CPU_X86_AVX,HW_CPU_X86_SSE", version="1.38"),
        400,
    )


def test_list_member_of(api: PlacementAPI) -> None:
    agg1, agg2, agg3 = _uuid(), _uuid(), _uuid()
    a = create_provider(api, name="a")["uuid"]
    b = create_provider(api, name="b")["uuid"]
    c = create_provider(api, name="c")["uuid"]
    set_aggregates(api, a, [agg1])
    set_aggregates(api, b, [agg1, agg2])
    set_aggregates(api, c, [agg3])
    get = lambda q, v="latest": _uuids(api.get(f"/resource_providers?{q}", version=v))  # noqa: E731
    assert get(f"member_of={agg1}", "1.3") == [a, b]
    assert get(f"member_of=in:{agg2},{agg3}", "1.3") == [b, c]
    assert get(f"member_of={agg1}&member_of={agg2}") == [b]
    assert get(f"member_of=!{agg2}") == [a, c]
    assert get(f"member_of=!in:{agg2},{agg3}") == [a]
    assert get(f"member_of={agg1}&member_of=!{agg2}") == [a]
    assert get(f"member_of={_uuid()}") == []
    assert get(f"member_of=!{_uuid()}") == [a, b, c]
    # Aggregates are matched by the string sent, as Placement does (issue 29).
    assert get(f"member_of={agg1.replace('-', '')}") == []


def test_list_in_tree(api: PlacementAPI) -> None:
    r"""
    ::

        root1          root2
        /   \\            |
      c1     c2         c3
       |
      g1
    """
    root1 = create_provider(api, name="root1")["uuid"]
    c1 = create_provider(api, name="c1", parent=root1)["uuid"]
    c2 = create_provider(api, name="c2", parent=root1)["uuid"]
    g1 = create_provider(api, name="g1", parent=c1)["uuid"]
    root2 = create_provider(api, name="root2")["uuid"]
    c3 = create_provider(api, name="c3", parent=root2)["uuid"]
    for member in (root1, c1, g1):
        assert _uuids(api.get(f"/resource_providers?in_tree={member}")) == [root1, c1, c2, g1]
    assert _uuids(api.get(f"/resource_providers?in_tree={c3}")) == [root2, c3]
    assert _uuids(api.get(f"/resource_providers?in_tree={_uuid()}")) == []


def test_list_resources(api: PlacementAPI) -> None:
    small = create_provider(api, name="small")["uuid"]
    big = create_provider(api, name="big")["uuid"]
    stepped = create_provider(api, name="stepped")["uuid"]
    seed_inventory(
        api,
        small,
        {
            "VCPU": {"total": 4, "reserved": 1, "allocation_ratio": 2.0},
            "MEMORY_MB": {"total": 1024},
        },
    )
    seed_inventory(api, big, {"VCPU": {"total": 64, "max_unit": 16}, "MEMORY_MB": {"total": 65536}})
    seed_inventory(api, stepped, {"DISK_GB": {"total": 100, "min_unit": 10, "step_size": 10}})
    seed_allocation(api, small, "VCPU", 3)
    get = lambda q: _uuids(api.get(f"/resource_providers?resources={q}", version="1.4"))  # noqa: E731
    # small: (4 - 1) * 2.0 - 3 = 3 free VCPU
    assert get("VCPU:3") == [small, big]
    assert get("VCPU:4") == [big]
    assert get("VCPU:17") == []  # above big's max_unit
    assert get("VCPU:1,MEMORY_MB:2048") == [big]
    assert get("DISK_GB:20") == [stepped]
    assert get("DISK_GB:15") == []  # step size
    assert get("DISK_GB:5") == []  # min unit
    assert get("DISK_GB:110") == []
    assert get("VCPU:1,VCPU:4") == [big]  # a repeated class keeps its last amount


def test_list_required(api: PlacementAPI) -> None:
    a = create_provider(api, name="a")["uuid"]
    b = create_provider(api, name="b")["uuid"]
    c = create_provider(api, name="c")["uuid"]
    seed_traits(api, a, ["HW_CPU_X86_AVX", "CUSTOM_GOLD"])
    seed_traits(api, b, ["HW_CPU_X86_AVX", "HW_CPU_X86_SSE"])
    seed_traits(api, c, ["CUSTOM_GOLD"])
    get = lambda q, v="latest": _uuids(api.get(f"/resource_providers?{q}", version=v))  # noqa: E731
    assert get("required=HW_CPU_X86_AVX", "1.18") == [a, b]
    assert get("required=HW_CPU_X86_AVX,CUSTOM_GOLD", "1.18") == [a]
    assert get("required=!CUSTOM_GOLD", "1.22") == [b]
    assert get("required=HW_CPU_X86_AVX,!CUSTOM_GOLD", "1.22") == [b]
    assert get("required=in:CUSTOM_GOLD,HW_CPU_X86_SSE") == [a, b, c]
    assert get("required=in:CUSTOM_GOLD,HW_CPU_X86_SSE&required=HW_CPU_X86_AVX") == [a, b]
    assert get("required=CUSTOM_GOLD&required=!HW_CPU_X86_AVX") == [c]
    # before 1.39 only the last required parameter counts
    assert get("required=CUSTOM_GOLD&required=HW_CPU_X86_SSE", "1.38") == [b]


# --- PUT -----------------------------------------------------------------------------------------


def test_put_rename(api: PlacementAPI) -> None:
    rp = create_provider(api, name="old")["uuid"]
    response = api.put(f"/resource_providers/{rp}", json={"name": "new"}, version="1.0")
    assert response.status_code == 200
    assert response.json()["name"] == "new" and response.json()["generation"] == 0
    assert set(response.json()) == {"uuid", "name", "generation", "links"}
    assert api.get(f"/resource_providers/{rp}").json()["name"] == "new"
    # the same name again is fine; another provider's name is not
    assert api.put(f"/resource_providers/{rp}", json={"name": "new"}).status_code == 200
    other = create_provider(api, name="other")["uuid"]
    detail = _error(
        api.put(f"/resource_providers/{other}", json={"name": "new"}),
        409,
        "placement.duplicate_name",
    )
    assert "Conflicting resource provider new already exists." in detail


@pytest.mark.parametrize(
    ("version", "body", "message"),
    [
        ("1.39", {}, "JSON does not validate"),
        ("1.39", {"name": "x", "uuid": _uuid()}, "JSON does not validate"),
        ("1.13", {"name": "x", "parent_provider_uuid": None}, "JSON does not validate"),
        ("1.39", {"name": "x", "parent_provider_uuid": "abc"}, "'abc' is not a 'uuid'"),
        (
            "1.39",
            {"name": "x", "parent_provider_uuid": "11111111-1111-1111-1111-111111111111"},
            "Object action create failed because: parent provider UUID does not exist.",
        ),
    ],
    ids=["no-name", "uuid", "parent-before-1.14", "bad-parent", "unknown-parent"],
)
def test_put_bad_request(
    api: PlacementAPI, version: str, body: dict[str, Any], message: str
) -> None:
    rp = create_provider(api)["uuid"]
    response = api.put(f"/resource_providers/{rp}", json=body, version=version)
    assert message in _error(
        response, 400, code="placement.undefined_code" if mv_at_least(version, "1.23") else None
    )


def test_put_unknown_is_404(api: PlacementAPI) -> None:
    _error(api.put(f"/resource_providers/{_uuid()}", json={"name": "x"}), 404)


def test_put_parent_before_1_37(api: PlacementAPI) -> None:
    root = create_provider(api, name="root")["uuid"]
    other = create_provider(api, name="other")["uuid"]
    child = create_provider(api, name="child")["uuid"]
    grandchild = create_provider(api, name="grandchild", parent=child)["uuid"]
    # adopting a root (with its subtree) is allowed
    response = api.put(
        f"/resource_providers/{child}",
        json={"name": "child", "parent_provider_uuid": root},
        version="1.14",
    )
    assert response.status_code == 200, response.text
    assert response.json()["root_provider_uuid"] == root
    assert api.get(f"/resource_providers/{grandchild}").json()["root_provider_uuid"] == root
    # repeating the same parent or omitting it is fine
    for body in ({"name": "child", "parent_provider_uuid": root}, {"name": "child"}):
        assert api.put(f"/resource_providers/{child}", json=body, version="1.36").status_code == 200
    moved = api.put(
        f"/resource_providers/{child}",
        json={"name": "child", "parent_provider_uuid": other},
        version="1.36",
    )
    assert "re-parenting a provider is not currently allowed." in _error(moved, 400)
    unparented = api.put(
        f"/resource_providers/{child}",
        json={"name": "child", "parent_provider_uuid": None},
        version="1.36",
    )
    assert "un-parenting a provider is not currently allowed." in _error(unparented, 400)
    loop = api.put(
        f"/resource_providers/{root}",
        json={"name": "root", "parent_provider_uuid": grandchild},
        version="1.36",
    )
    assert "creating loop in the provider tree is not allowed." in _error(loop, 400)


def test_put_reparenting_from_1_37(api: PlacementAPI) -> None:
    r"""
    Before::                       After moving c1 under root2, then un-parenting c2::

        root1        root2          root1      root2       c2
        /   \\                                   |
      c1     c2                                 c1
       |                                        |
      g1                                        g1
    """
    root1 = create_provider(api, name="root1")["uuid"]
    root2 = create_provider(api, name="root2")["uuid"]
    c1 = create_provider(api, name="c1", parent=root1)["uuid"]
    c2 = create_provider(api, name="c2", parent=root1)["uuid"]
    g1 = create_provider(api, name="g1", parent=c1)["uuid"]
    response = api.put(
        f"/resource_providers/{c1}",
        json={"name": "c1", "parent_provider_uuid": root2},
        version="1.37",
    )
    assert response.status_code == 200, response.text
    assert response.json()["parent_provider_uuid"] == root2
    assert response.json()["root_provider_uuid"] == root2
    assert api.get(f"/resource_providers/{g1}").json()["root_provider_uuid"] == root2
    assert _uuids(api.get(f"/resource_providers?in_tree={root2}")) == [root2, c1, g1]
    response = api.put(
        f"/resource_providers/{c2}",
        json={"name": "c2", "parent_provider_uuid": None},
        version="1.39",
    )
    assert response.status_code == 200, response.text
    assert response.json()["parent_provider_uuid"] is None
    assert response.json()["root_provider_uuid"] == c2
    assert _uuids(api.get(f"/resource_providers?in_tree={root1}")) == [root1]
    for target in (g1, c1):
        loop = api.put(
            f"/resource_providers/{c1}",
            json={"name": "c1", "parent_provider_uuid": target},
            version="1.39",
        )
        assert "creating loop in the provider tree is not allowed." in _error(loop, 400)
    # moving within the tree: g1 up to root2
    response = api.put(
        f"/resource_providers/{g1}",
        json={"name": "g1", "parent_provider_uuid": root2},
        version="1.39",
    )
    assert response.json()["parent_provider_uuid"] == root2


# --- DELETE --------------------------------------------------------------------------------------


def test_delete(api: PlacementAPI) -> None:
    rp = create_provider(api)["uuid"]
    seed_inventory(api, rp, {"VCPU": {"total": 4}})
    seed_traits(api, rp, ["HW_CPU_X86_AVX"])
    agg = _uuid()
    set_aggregates(api, rp, [agg])
    response = api.delete(f"/resource_providers/{rp}")
    assert response.status_code == 204 and response.content == b""
    _error(api.get(f"/resource_providers/{rp}"), 404)
    detail = _error(api.delete(f"/resource_providers/{rp}"), 404)
    assert f"No resource provider with uuid {rp} found for delete" in detail
    # its aggregate survives (Placement never deletes aggregates); another provider can join it
    other = create_provider(api)["uuid"]
    assert set_aggregates(api, other, [agg])["aggregates"] == [agg]


def test_delete_parent_and_in_use(api: PlacementAPI) -> None:
    root = create_provider(api, name="root")["uuid"]
    child = create_provider(api, name="child", parent=root)["uuid"]
    detail = _error(
        api.delete(f"/resource_providers/{root}"),
        409,
        "placement.resource_provider.cannot_delete_parent",
    )
    assert (
        f"Unable to delete parent resource provider {root}: It has child resource providers."
        in detail
    )
    seed_inventory(api, child, {"VCPU": {"total": 4}})
    seed_allocation(api, child, "VCPU", 1)
    detail = _error(
        api.delete(f"/resource_providers/{child}"), 409, "placement.resource_provider.inuse"
    )
    assert (
        f"Unable to delete resource provider {child}: Resource provider has allocations." in detail
    )
    _error(api.delete(f"/resource_providers/{child}", version="1.22"), 409, code=None)
    assert api.get(f"/resource_providers/{child}").status_code == 200


def test_concurrent_crossing_moves_never_make_a_loop(api: PlacementAPI) -> None:
    """``a`` moves under ``b`` while ``b`` moves under ``a``: at most one wins, no loop."""
    from concurrent.futures import ThreadPoolExecutor

    for _ in range(3):
        a = create_provider(api)["uuid"]
        b = create_provider(api)["uuid"]

        def move(pair: tuple[str, str]) -> int:
            child, parent = pair
            name = api.get(f"/resource_providers/{child}").json()["name"]
            body = {"name": name, "parent_provider_uuid": parent}
            return api.put(f"/resource_providers/{child}", json=body).status_code

        with ThreadPoolExecutor(max_workers=2) as pool:
            statuses = sorted(pool.map(move, [(a, b), (b, a)]))
        assert statuses in ([200, 400], [400, 200])
        shown = {p: api.get(f"/resource_providers/{p}").json() for p in (a, b)}
        roots = {p["root_provider_uuid"] for p in shown.values()}
        assert len(roots) == 1 and roots <= {a, b}
