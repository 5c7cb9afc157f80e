"""Policy: every route against every identity, under Placement's legacy and new defaults.

The identities are noauth2 tokens with the roles Keystone would put in a token (Keystone
expands implied roles: admin implies member implies reader). A route is "allowed" when the
answer is neither 401 nor 403 (the resources do not exist, so 400/404 are expected answers).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from placement_numa.api.auth import PUBLIC_PATHS
from placement_numa.api.policy import ROUTE_RULES
from placement_numa.app import create_app
from placement_numa.policies import list_rules
from placement_numa.settings import Settings

PROJECT = "6f0c0000-0000-4000-8000-00000000000a"
OTHER_PROJECT = "6f0c0000-0000-4000-8000-00000000000b"
UUID = "6f0c0000-0000-4000-8000-0000000000ff"

# identity name -> request headers (None: no token at all)
IDENTITIES: dict[str, dict[str, str] | None] = {
    "no-token": None,
    "reader": {"x-auth-token": f"alice:{PROJECT}", "x-roles": "reader"},
    "member": {"x-auth-token": f"bob:{PROJECT}", "x-roles": "member,reader"},
    "service": {"x-auth-token": "nova:service-project", "x-roles": "service"},
    "project-admin": {"x-auth-token": "root:admin-project", "x-roles": "admin,member,reader"},
    "system-admin": {
        "x-auth-token": "sysroot",
        "x-roles": "admin,member,reader",
        "openstack-system-scope": "all",
    },
}
ADMIN_OR_SERVICE = {"service", "project-admin"}


def _concrete(path: str) -> str:
    return (
        path.replace("{uuid}", UUID)
        .replace("{consumer_uuid}", UUID)
        .replace("{resource_class}", "VCPU")
        .replace("{name}", "CUSTOM_POLICY_TEST")
    )


def _cases() -> list[tuple[str, str, str, str]]:
    """(method, path template, rule, defaults) for every route with a rule."""
    return [
        (method, path, rule, defaults)
        for (method, path), rule in sorted(ROUTE_RULES.items())
        for defaults in ("legacy", "new")
    ]


def _allowed(rule: str, defaults: str, identity: str, path: str) -> bool:
    """The expected decision, written out from Placement 16's defaults."""
    if identity == "no-token":
        return False
    if rule == "placement:reshaper:reshape":
        return identity == "service" or (defaults == "legacy" and identity == "project-admin")
    if rule == "placement:usages":
        # the query asks for PROJECT: its reader (and member, who is a reader) may read it
        return identity in ADMIN_OR_SERVICE | {"reader", "member"}
    if rule == "placement:metrics":  # the fleet pages: /metrics' rule, admin of any scope
        return identity in {"project-admin", "system-admin"}
    return identity in ADMIN_OR_SERVICE


def _app(tmp_path: Path, conf: str) -> FastAPI:
    conf_file = tmp_path / "placement.conf"
    conf_file.write_text(conf)
    return create_app(
        Settings(
            database_url=f"sqlite:///{tmp_path / 'policy.sqlite'}",
            auth_strategy="noauth2",
            config_file=conf_file,
        )
    )


@pytest.fixture(scope="module")
def clients(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, TestClient]]:
    """One app per default set, on its own SQLite database."""
    built = {}
    for defaults, flag in (("legacy", "false"), ("new", "true")):
        app = _app(
            tmp_path_factory.mktemp(defaults), f"[oslo_policy]\nenforce_new_defaults = {flag}\n"
        )
        built[defaults] = TestClient(app, raise_server_exceptions=False)
    yield built
    for client in built.values():
        client.app.state.database.dispose()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("method", "path", "rule", "defaults"),
    _cases(),
    ids=[f"{d}-{m}-{p}" for m, p, _r, d in _cases()],
)
def test_every_route_every_identity(
    clients: dict[str, TestClient], method: str, path: str, rule: str, defaults: str
) -> None:
    url = _concrete(path)
    params = {"project_id": PROJECT} if rule == "placement:usages" else None
    body = {} if method in ("PUT", "POST") else None
    got: dict[str, int] = {}
    expected: dict[str, str] = {}
    for identity, headers in IDENTITIES.items():
        all_headers = {"openstack-api-version": "placement latest", **(headers or {})}
        response = clients[defaults].request(
            method, url, params=params, json=body, headers=all_headers
        )
        got[identity] = response.status_code
        if identity == "no-token":
            expected[identity] = "401"
        else:
            expected[identity] = "allowed" if _allowed(rule, defaults, identity, path) else "403"
        if response.status_code == 403:
            detail = response.json()["errors"][0]["detail"]
            assert f"Policy does not allow {rule} to be performed." in detail
    decided = {
        identity: (str(status) if status in (401, 403) else "allowed")
        for identity, status in got.items()
    }
    assert decided == expected, got


def test_usages_of_another_project_are_refused_to_its_readers(
    clients: dict[str, TestClient],
) -> None:
    headers = {"openstack-api-version": "placement latest", **(IDENTITIES["reader"] or {})}
    for client in clients.values():
        other = client.get("/usages", params={"project_id": OTHER_PROJECT}, headers=headers)
        assert other.status_code == 403
        own = client.get("/usages", params={"project_id": PROJECT}, headers=headers)
        assert own.status_code == 200
        assert own.json() == {"usages": {}}


def _api_routes(app: FastAPI) -> set[tuple[str, str]]:
    found = set()
    for route in app.routes:
        if isinstance(route, APIRoute) and route.path not in PUBLIC_PATHS:
            found |= {(m, route.path) for m in route.methods if m != "HEAD"}
    for router in app.router.routes:
        for sub in getattr(getattr(router, "original_router", None), "routes", []):
            if isinstance(sub, APIRoute) and sub.path not in PUBLIC_PATHS:
                found |= {(m, sub.path) for m in sub.methods if m != "HEAD"}
    return found


def test_every_route_has_a_rule(clients: dict[str, TestClient]) -> None:
    routes = _api_routes(clients["new"].app)  # type: ignore[arg-type]
    assert len(routes) >= 38
    assert routes == set(ROUTE_RULES)


def test_rules_carry_placement_names_and_scope() -> None:
    rules = {rule.name: rule for rule in list_rules()}
    for name in (
        "placement:resource_providers:list",
        "placement:reshaper:reshape",
        "placement:usages",
        "placement:allocations:update",
        "placement:allocation_candidates:list",
    ):
        assert rules[name].scope_types == ["project"]
    assert rules["placement:reshaper:reshape"].check_str == "rule:service_api"
    assert rules["placement:usages"].check_str == "rule:admin_or_project_reader_or_service_api"
    placement_rules = [n for n in rules if n.startswith("placement:")]
    assert len(placement_rules) == 43  # 33 of Placement 16, 9 extensions, placement:metrics


def test_version_gate_answers_404_before_policy(clients: dict[str, TestClient]) -> None:
    headers = {"openstack-api-version": "placement 1.0", **(IDENTITIES["reader"] or {})}
    assert clients["new"].get("/traits", headers=headers).status_code == 404
    assert clients["new"].get("/no/such/path", headers=headers).status_code == 404


@pytest.mark.parametrize(
    ("rules", "identity", "status"),
    [
        ({"placement:resource_providers:list": "@"}, "reader", 200),
        ({"placement:resource_providers:list": "!"}, "project-admin", 403),
        ({"placement:resource_providers:list": "role:member"}, "member", 200),
        ({"placement:resource_providers:list": "rule:service_api"}, "project-admin", 403),
        (
            {"placement:resource_providers:list": "role:reader and project_id:%(project_id)s"},
            "reader",
            200,
        ),
        ({"placement:resource_providers:list": "not role:reader"}, "reader", 403),
    ],
    ids=["open", "closed", "role", "rule", "project-id", "not"],
)
def test_policy_file_overrides(
    tmp_path: Path, rules: dict[str, str], identity: str, status: int
) -> None:
    policy_file = tmp_path / "policy.json"
    policy_file.write_text(json.dumps(rules))
    app = _app(
        tmp_path,
        f"[oslo_policy]\nenforce_new_defaults = true\npolicy_file = {policy_file}\n",
    )
    headers = {"openstack-api-version": "placement latest", **(IDENTITIES[identity] or {})}
    with TestClient(app, raise_server_exceptions=False) as client:
        assert client.get("/resource_providers", headers=headers).status_code == status
    app.state.database.dispose()


def test_sample_generator_lists_every_rule() -> None:
    generator = Path(sys.executable).with_name("oslopolicy-sample-generator")
    out = subprocess.run(
        [str(generator), "--namespace", "placement-numa"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    for rule in set(ROUTE_RULES.values()):
        assert f'"{rule}"' in out
    assert uuid.UUID(UUID)  # the fixed ids are real UUIDs


def test_noauth2_x_project_id_names_the_project(clients: dict[str, TestClient]) -> None:
    headers = {
        "openstack-api-version": "placement latest",
        "x-auth-token": "alice",
        "x-roles": "reader",
        "x-project-id": PROJECT,
    }
    response = clients["new"].get("/usages", params={"project_id": PROJECT}, headers=headers)
    assert response.status_code == 200


def test_decisions_are_kept_one_second_and_a_changed_file_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``api.policy._Decisions``: the same caller, rule and target reuse oslo.policy's
    decision; a policy file rewritten on disk is seen once ``DECISION_TTL_S`` has passed,
    and another caller (other roles, other project) is decided anew."""
    from placement_numa.api import policy as policy_module

    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text('"placement:resource_providers:list": "@"\n')
    app = _app(tmp_path, f"[oslo_policy]\npolicy_file = {policy_file}\n")
    asked: list[str] = []
    original = policy_module.policy.Enforcer.authorize

    def counted(self: Any, rule: str, *args: Any, **kwargs: Any) -> Any:
        asked.append(rule)
        return original(self, rule, *args, **kwargs)

    monkeypatch.setattr(policy_module.policy.Enforcer, "authorize", counted)
    reader = {"openstack-api-version": "placement latest", **(IDENTITIES["reader"] or {})}
    other = {**reader, "x-auth-token": f"carol:{OTHER_PROJECT}"}
    with TestClient(app, raise_server_exceptions=False) as client:
        assert client.get("/resource_providers", headers=reader).status_code == 200
        assert client.get("/resource_providers", headers=reader).status_code == 200
        assert len(asked) == 1
        assert client.get("/resource_providers", headers=other).status_code == 200
        assert len(asked) == 2
        policy_file.write_text('"placement:resource_providers:list": "!"\n')
        os.utime(policy_file, (time.time() + 5, time.time() + 5))  # a newer mtime, surely
        time.sleep(policy_module.DECISION_TTL_S + 0.1)
        assert client.get("/resource_providers", headers=reader).status_code == 403
        assert client.get("/resource_providers", headers=reader).status_code == 403
        assert len(asked) == 3
    app.state.database.dispose()
