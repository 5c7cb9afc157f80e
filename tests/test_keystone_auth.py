"""placement-numa behind a real Keystone, started from an upstream-style placement.conf.

One Keystone (``tests/keystone_service.py``) and one ``placement-numa serve --config-file`` on
PostgreSQL per module (``tests/placement.conf``: keystone auth, Placement's new policy defaults,
CORS on). Identities are real Keystone tokens; osc-placement is driven with password auth.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.backends import TestDatabase, drop_database, reachable_database
from tests.keystone_service import PASSWORD, Keystone, openstack_cli, start_keystone, worker_ports
from tests.servers import running

pytestmark = pytest.mark.slow

VERSION = {"openstack-api-version": "placement 1.39"}
TEMPLATE = Path(__file__).with_name("placement.conf")


@pytest.fixture(scope="module")
def ports() -> tuple[int, int]:
    return worker_ports()


@pytest.fixture(scope="module")
def keystone(
    tmp_path_factory: pytest.TempPathFactory, ports: tuple[int, int]
) -> Iterator[Keystone]:
    with start_keystone(
        tmp_path_factory.mktemp("keystone"), ports[0], f"http://127.0.0.1:{ports[1]}"
    ) as server:
        yield server


@pytest.fixture(scope="module")
def pg_database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestDatabase]:
    db = reachable_database("postgresql", tmp_path_factory.mktemp("pg"), "keystone")
    yield db
    drop_database(db)


@pytest.fixture(scope="module")
def service(
    keystone: Keystone,
    pg_database: TestDatabase,
    ports: tuple[int, int],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    """``placement-numa serve --config-file placement.conf``: nothing else configures it."""
    workdir = tmp_path_factory.mktemp("placement")
    conf = workdir / "placement.conf"
    conf.write_text(
        TEMPLATE.read_text()
        .replace("@DATABASE_URL@", pg_database.url)
        .replace("@KEYSTONE_URL@", keystone.url)
        .replace("@PASSWORD@", PASSWORD)
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLACEMENT_NUMA_")}
    executable = Path(sys.executable).with_name("placement-numa")
    argv = [str(executable), "serve", "--config-file", str(conf), "--port", str(ports[1])]
    with running(argv, ports[1], workdir / "serve.log", env=env, cwd=workdir) as server:
        yield server.base_url


def _get(
    service: str, path: str, token: str | None, extra: dict[str, str] | None = None
) -> httpx.Response:
    headers = {**VERSION, **(extra or {})}
    if token is not None:
        headers["x-auth-token"] = token
    return httpx.get(service + path, headers=headers, timeout=60)


def test_service_user_writes_and_reads(service: str, keystone: Keystone) -> None:
    token = keystone.token("nova")
    headers = {**VERSION, "x-auth-token": token}
    rp = str(uuid.uuid4())
    created = httpx.post(
        f"{service}/resource_providers",
        json={"name": f"cn-{rp[:8]}", "uuid": rp},
        headers=headers,
        timeout=60,
    )
    assert created.status_code == 200, created.text
    inventory = httpx.put(
        f"{service}/resource_providers/{rp}/inventories",
        json={"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}},
        headers=headers,
        timeout=60,
    )
    assert inventory.status_code == 200, inventory.text
    listed = _get(service, "/resource_providers", token).json()["resource_providers"]
    assert rp in {p["uuid"] for p in listed}
    candidates = _get(service, "/allocation_candidates?resources=VCPU:1", token)
    assert candidates.status_code == 200
    assert rp in candidates.json()["provider_summaries"]


def test_identities(service: str, keystone: Keystone) -> None:
    missing = _get(service, "/resource_providers", None)
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"] == f'Keystone uri="{keystone.url}"'
    assert missing.json()["errors"][0]["title"] == "Unauthorized"
    assert _get(service, "/resource_providers", "not-a-token").status_code == 401
    assert _get(service, "/", None).status_code == 200  # the version document is public
    # a member of a project has no Placement role: 403 with Placement's rule name
    refused = _get(service, "/resource_providers", keystone.token("alice"))
    assert refused.status_code == 403
    assert "placement:resource_providers:list" in refused.json()["errors"][0]["detail"]
    # a reader reads its own project's usages, not another's
    demo, other = keystone.ids["project:demo"], keystone.ids["project:service"]
    rita = keystone.token("rita")
    assert _get(service, f"/usages?project_id={demo}", rita).status_code == 200
    assert _get(service, f"/usages?project_id={other}", rita).status_code == 403
    # the project admin reads; a system-scoped admin is refused (scope types are "project")
    assert _get(service, "/resource_providers", keystone.token("admin")).status_code == 200
    system = keystone.token("admin", system=True)
    assert _get(service, "/resource_providers", system).status_code == 403
    # under the new defaults only the service role reshapes
    for user, status in (("admin", 403), ("nova", 400)):
        reshape = httpx.post(
            f"{service}/reshaper",
            json={},
            headers={**VERSION, "x-auth-token": keystone.token(user)},
            timeout=60,
        )
        assert reshape.status_code == status, (user, reshape.text)


def test_noauth2_headers_are_ignored(service: str, keystone: Keystone) -> None:
    extra = {"x-roles": "admin", "x-user-id": "admin", "openstack-system-scope": "all"}
    spoofed = _get(service, "/resource_providers", keystone.token("alice"), extra)
    assert spoofed.status_code == 403


def test_known_tokens_cost_no_keystone_round_trip(service: str, keystone: Keystone) -> None:
    token = keystone.token("nova")
    assert _get(service, "/resource_providers", token).status_code == 200
    before = keystone.token_requests()
    for _ in range(20):
        assert _get(service, "/resource_providers", token).status_code == 200
    assert keystone.token_requests() == before
    # a new token is validated once, then cached too
    fresh = keystone.token("nova")
    before = keystone.token_requests()
    for _ in range(5):
        assert _get(service, "/resource_providers", fresh).status_code == 200
    assert keystone.token_requests() == before + 1


def test_placement_conf_on_postgresql(
    service: str, keystone: Keystone, pg_database: TestDatabase
) -> None:
    """The service's data lives in the PostgreSQL database named by [placement_database]."""
    rp = str(uuid.uuid4())
    created = httpx.post(
        f"{service}/resource_providers",
        json={"name": f"conf-{rp[:8]}", "uuid": rp},
        headers={**VERSION, "x-auth-token": keystone.token("nova")},
        timeout=60,
    )
    assert created.status_code == 200, created.text
    engine = create_engine(pg_database.url)
    try:
        with engine.connect() as conn:
            count = conn.execute(
                text("SELECT count(*) FROM resource_providers WHERE uuid = :u"), {"u": rp}
            ).scalar_one()
    finally:
        engine.dispose()
    assert count == 1
    # [cors] from the same file: a preflight from the allowed origin is answered
    preflight = httpx.options(
        service + "/resource_providers",
        headers={
            "origin": "http://dashboard.example.com",
            "access-control-request-method": "GET",
            "access-control-request-headers": "openstack-api-version",
        },
        timeout=30,
    )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "http://dashboard.example.com"


def _openstack(
    keystone: Keystone, user: str, password: str, *args: str
) -> subprocess.CompletedProcess[str]:
    project = {"nova": "service", "alice": "demo"}[user]
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("OS_")},
        "OS_AUTH_URL": keystone.url + "/v3",
        "OS_AUTH_TYPE": "password",
        "OS_USERNAME": user,
        "OS_PASSWORD": password,
        "OS_PROJECT_NAME": project,
        "OS_USER_DOMAIN_NAME": "Default",
        "OS_PROJECT_DOMAIN_NAME": "Default",
        "OS_REGION_NAME": "RegionOne",
        "OS_IDENTITY_API_VERSION": "3",
        "OS_PLACEMENT_API_VERSION": "1.39",
    }
    return subprocess.run(
        [str(openstack_cli()), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_osc_placement_with_password_auth(service: str, keystone: Keystone) -> None:
    created = _openstack(
        keystone, "nova", PASSWORD, "resource", "provider", "create", "osc-cn", "-f", "value",
        "-c", "uuid",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    rp = created.stdout.strip()
    inventory = _openstack(
        keystone, "nova", PASSWORD, "resource", "provider", "inventory", "set", rp,
        "--resource", "VCPU=16", "--resource", "MEMORY_MB=8192",
    )  # fmt: skip
    assert inventory.returncode == 0, inventory.stderr
    listed = _openstack(
        keystone, "nova", PASSWORD, "resource", "provider", "list", "-f", "value", "-c", "uuid"
    )
    assert listed.returncode == 0, listed.stderr
    assert rp in listed.stdout.split()
    candidates = _openstack(
        keystone, "nova", PASSWORD, "allocation", "candidate", "list",
        "--resource", "VCPU=2", "--resource", "MEMORY_MB=1024", "-f", "value",
    )  # fmt: skip
    assert candidates.returncode == 0, candidates.stderr
    assert rp in candidates.stdout
    wrong = _openstack(keystone, "nova", "wrong-password", "resource", "provider", "list")
    assert wrong.returncode != 0
    assert "401" in wrong.stderr
    member = _openstack(keystone, "alice", PASSWORD, "resource", "provider", "list")
    assert member.returncode != 0
    assert "403" in member.stderr


# --- the compute agent behind Keystone ------------------------------------------------------


def _agent(
    service: str, keystone: Keystone, sysfs: Path, hostname: str, password: str
) -> tuple[int, str]:
    """``placement-numa agent --once`` as nova (Keystone password auth) in a subprocess, as an
    operator runs it: ``(exit code, stderr)``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLACEMENT_NUMA_")}
    env["PLACEMENT_NUMA_AGENT_PASSWORD"] = password
    argv = [
        str(Path(sys.executable).with_name("placement-numa")), "agent", "--once",
        "--sysfs-root", str(sysfs), "--disk-gb", "100", "--hostname", hostname,
        "--placement-url", service, "--auth-url", keystone.url + "/v3",
        "--username", "nova", "--project-name", "service",
    ]  # fmt: skip
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=180)
    return done.returncode, done.stderr


def test_agent_reports_its_tree_with_keystone_password_auth(
    service: str, keystone: Keystone, tmp_path: Path
) -> None:
    from tests.sysfs_fixtures import two_socket_intel

    hostname = f"ks-agent-{uuid.uuid4().hex[:8]}"
    code, stderr = _agent(service, keystone, two_socket_intel(tmp_path), hostname, PASSWORD)
    assert code == 0, stderr
    token = keystone.token("nova")
    found = _get(service, f"/resource_providers?name={hostname}", token).json()
    (root,) = found["resource_providers"]
    tree = _get(service, f"/resource_providers?in_tree={root['uuid']}", token).json()
    names = {p["name"] for p in tree["resource_providers"]}
    assert {hostname, f"{hostname}_NUMA0", f"{hostname}_NUMA1"} <= names


def test_agent_with_a_wrong_password_fails_in_one_line(
    service: str, keystone: Keystone, tmp_path: Path
) -> None:
    from tests.sysfs_fixtures import two_socket_intel

    code, stderr = _agent(service, keystone, two_socket_intel(tmp_path), "ks-wrong", "wrong")
    assert code == 1
    assert "Traceback" not in stderr
    (line,) = [line for line in stderr.splitlines() if "sync failed" in line]
    assert "Keystone" in line and "401" in line


def test_agent_auth_renews_a_token_refused_with_401(service: str, keystone: Keystone) -> None:
    """A token revoked in Keystone before the service ever saw it: the service answers 401,
    the agent's auth drops it and the request succeeds with a new token."""
    from placement_numa.agent.auth import KeystoneTokenAuth

    auth = KeystoneTokenAuth(
        auth_url=keystone.url + "/v3", username="nova", password=PASSWORD, project_name="service"
    )
    first = auth.token()
    revoked = httpx.delete(
        f"{keystone.url}/v3/auth/tokens",
        headers={"x-auth-token": first, "x-subject-token": first},
        timeout=60,
    )
    assert revoked.status_code == 204, revoked.text
    with httpx.Client(base_url=service, auth=auth, timeout=60) as client:
        response = client.get("/resource_providers", headers=VERSION)
    assert response.status_code == 200, response.text
    assert auth.token() != first
