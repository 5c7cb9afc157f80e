"""A real Keystone for the tests: its own virtualenv, SQLite, fernet tokens, a loopback port.

``.ci/run`` installs Keystone 30.x (with python-openstackclient and osc-placement) into
``.keystone-venv`` at the repository root (``PLACEMENT_NUMA_KEYSTONE_VENV`` overrides the path).
``start_keystone`` runs ``keystone-manage db_sync``, ``fernet_setup``, ``credential_setup`` and
``bootstrap``, serves Keystone with ``tests/keystone_server.py`` and creates, over its REST API:

* project ``service`` with users ``placement`` (the service user of ``[keystone_authtoken]``)
  and ``nova``, both with the ``service`` role;
* project ``demo`` with ``alice`` (``member``, which implies ``reader``) and ``rita``
  (``reader``);
* ``admin`` (bootstrap's user): admin of project ``admin`` and of the system (system scope);
* the ``placement`` service with its public endpoint ``placement_url``.

Without the virtualenv the fixtures skip, and fail under ``CI=true``.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.backends import in_ci
from tests.servers import port_is_free, stop_process

REPO = Path(__file__).resolve().parents[1]
PASSWORD = "secret-Pa55"
DOMAIN = {"id": "default"}

USERS: dict[str, tuple[str, str]] = {
    # user -> (project, role)
    "placement": ("service", "service"),
    "nova": ("service", "service"),
    "alice": ("demo", "member"),
    "rita": ("demo", "reader"),
}


def keystone_venv() -> Path:
    return Path(os.environ.get("PLACEMENT_NUMA_KEYSTONE_VENV", REPO / ".keystone-venv"))


def require_keystone() -> Path:
    """The Keystone virtualenv; skips (fails under CI=true) when it is missing."""
    venv = keystone_venv()
    if not (venv / "bin" / "keystone-manage").exists():
        message = f"Keystone is not installed in {venv} (.ci/run installs it)"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)
    return venv


@dataclass
class Keystone:
    url: str
    log: Path
    placement_url: str
    ids: dict[str, str] = field(default_factory=dict)

    def token(
        self,
        user: str,
        password: str = PASSWORD,
        *,
        project: str | None = None,
        system: bool = False,
    ) -> str:
        """A token for ``user``, scoped to ``project`` (its own by default) or the system."""
        scope: dict[str, Any]
        if system:
            scope = {"system": {"all": True}}
        else:
            name = project or (USERS[user][0] if user in USERS else "admin")
            scope = {"project": {"name": name, "domain": DOMAIN}}
        body = {
            "auth": {
                "identity": {
                    "methods": ["password"],
                    "password": {"user": {"name": user, "domain": DOMAIN, "password": password}},
                },
                "scope": scope,
            }
        }
        response = httpx.post(f"{self.url}/v3/auth/tokens", json=body, timeout=60)
        response.raise_for_status()
        return response.headers["x-subject-token"]

    def validations(self) -> int:
        """How many token validations (``GET /v3/auth/tokens``) Keystone has answered."""
        return sum(
            1
            for line in self.log.read_text(errors="replace").splitlines()
            if '"GET /v3/auth/tokens' in line
        )

    def token_requests(self) -> int:
        """How many requests Keystone has served on /v3/auth/tokens (from its access log),
        once the count has stopped moving for half a second: Keystone writes a request's log
        line after it has answered, so a count read right after an answer can miss it."""
        count = -1
        for _ in range(20):
            latest = sum(
                1
                for line in self.log.read_text(errors="replace").splitlines()
                if "/v3/auth/tokens" in line
            )
            if latest == count:
                break
            count = latest
            time.sleep(0.5)
        return count


def _manage(venv: Path, conf: Path, *args: str) -> None:
    subprocess.run(
        [str(venv / "bin" / "keystone-manage"), "--config-file", str(conf), *args],
        check=True,
        capture_output=True,
        timeout=300,
    )


def _wait(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 90
    while True:
        try:
            if httpx.get(url + "/v3", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"Keystone did not start: {log.read_text()[-3000:]}")
        time.sleep(0.3)


def _populate(keystone: Keystone) -> None:
    admin = httpx.Client(
        base_url=keystone.url + "/v3",
        headers={"x-auth-token": keystone.token("admin", project="admin")},
        timeout=60,
    )
    with admin:
        roles = {r["name"]: r["id"] for r in admin.get("/roles").json()["roles"]}
        for role in ("service", "member", "reader", "admin"):
            if role not in roles:
                roles[role] = admin.post("/roles", json={"role": {"name": role}}).json()["role"][
                    "id"
                ]
        projects = {}
        for project in ("service", "demo"):
            created = admin.post(
                "/projects", json={"project": {"name": project, "domain_id": "default"}}
            )
            created.raise_for_status()
            projects[project] = created.json()["project"]["id"]
        keystone.ids.update({f"project:{k}": v for k, v in projects.items()})
        for user, (project, role) in USERS.items():
            created = admin.post(
                "/users",
                json={"user": {"name": user, "password": PASSWORD, "domain_id": "default"}},
            )
            created.raise_for_status()
            user_id = created.json()["user"]["id"]
            keystone.ids[f"user:{user}"] = user_id
            admin.put(
                f"/projects/{projects[project]}/users/{user_id}/roles/{roles[role]}"
            ).raise_for_status()
        service = admin.post(
            "/services", json={"service": {"name": "placement", "type": "placement"}}
        )
        service.raise_for_status()
        admin.post(
            "/endpoints",
            json={
                "endpoint": {
                    "service_id": service.json()["service"]["id"],
                    "interface": "public",
                    "region_id": "RegionOne",
                    "url": keystone.placement_url,
                }
            },
        ).raise_for_status()


@contextmanager
def start_keystone(workdir: Path, port: int, placement_url: str) -> Iterator[Keystone]:
    """Bootstrap and serve a Keystone on 127.0.0.1:``port`` (see the module docstring)."""
    venv = require_keystone()
    url = f"http://127.0.0.1:{port}"
    conf = workdir / "keystone.conf"
    conf.write_text(
        f"[database]\nconnection = sqlite:///{workdir / 'keystone.sqlite'}\n"
        "[token]\nprovider = fernet\n"
        f"[fernet_tokens]\nkey_repository = {workdir / 'fernet-keys'}\n"
        f"[fernet_receipts]\nkey_repository = {workdir / 'fernet-keys'}\n"
        f"[credential]\nkey_repository = {workdir / 'credential-keys'}\n"
    )
    owner = ["--keystone-user", str(os.getuid()), "--keystone-group", str(os.getgid())]
    _manage(venv, conf, "db_sync")
    _manage(venv, conf, "fernet_setup", *owner)
    _manage(venv, conf, "credential_setup", *owner)
    _manage(
        venv,
        conf,
        "bootstrap",
        "--bootstrap-password",
        PASSWORD,
        "--bootstrap-region-id",
        "RegionOne",
        *(f"--bootstrap-{kind}-url={url}/v3" for kind in ("admin", "internal", "public")),
    )
    log = workdir / "keystone.log"
    env = {**os.environ, "OS_KEYSTONE_CONFIG_FILES": str(conf), "PYTHONUNBUFFERED": "1"}
    with open(log, "wb") as log_file:
        process = subprocess.Popen(
            [str(venv / "bin" / "python"), str(REPO / "tests" / "keystone_server.py"), str(port)],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        keystone = Keystone(url=url, log=log, placement_url=placement_url)
        _wait(url, process, log)
        _populate(keystone)
        yield keystone
    finally:
        stop_process(process)


def worker_ports(first: int = 18910, last: int = 18989) -> tuple[int, int]:
    """Two free ports (Keystone, placement-numa) in ``first``-``last``, starting at a place of
    this xdist worker's own, so that parallel workers and runs do not meet."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    span = last - first + 1
    found: list[int] = []
    for step in range(span):
        port = first + (8 * index + step) % span
        if port_is_free(port):
            found.append(port)
            if len(found) == 2:
                return found[0], found[1]
    raise RuntimeError(f"no two free ports in {first}-{last}")


def openstack_cli() -> Path:
    """The ``openstack`` client of the Keystone virtualenv (python-openstackclient)."""
    return require_keystone() / "bin" / "openstack"


__all__ = ["Keystone", "PASSWORD", "start_keystone", "worker_ports", "openstack_cli"]
