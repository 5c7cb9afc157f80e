"""Test suites that others wrote, run against a live placement-numa behind a real Keystone
(issue 29), as upstream Placement's own gabbi files are run against it.

openstacksdk ships its functional tests (``openstack/tests/functional/placement/v1``: resource
providers and their aggregates, inventories, traits, allocations, usages, candidates: 8
tests), osc-placement-tree its own (``openstack resource provider tree ...``: 9 tests). They run
with pytest in a virtualenv of their own (``.sdk-venv`` at the repository root, or
``PLACEMENT_NUMA_SDK_VENV``; ``.ci/run`` makes it with ``pip install openstacksdk fixtures
oslotest pytest python-openstackclient osc-placement osc-placement-tree graphviz`` and installs
Graphviz's ``dot``), against one Keystone
(``tests/keystone_service.py``) and one ``placement-numa serve --config-file`` on SQLite
(``tests/placement.conf``), through a ``clouds.yaml`` naming the clouds those tests use
(``devstack-admin`` is Keystone's bootstrap admin). Without that virtualenv (or ``dot``) a
test skips; without Keystone's it skips locally and fails under ``CI=true``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.keystone_service import PASSWORD, Keystone, start_keystone, worker_ports
from tests.servers import running

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = Path(__file__).with_name("placement.conf")
SUITE = "openstack/tests/functional/placement/v1"


def _sdk_python() -> Path:
    venv = Path(os.environ.get("PLACEMENT_NUMA_SDK_VENV", REPO / ".sdk-venv"))
    python = venv / "bin" / "python"
    # The functional base module reads clouds.yaml when imported: look for the files only.
    probe = (
        "import fixtures, oslotest, pytest, openstack.tests.functional.placement.v1 as suite;"
        "print(suite.__path__[0])"
    )
    if not python.exists() or subprocess.run([str(python), "-c", probe]).returncode != 0:
        pytest.skip(f"no openstacksdk with its functional tests in {venv}")
    return python


@pytest.fixture(scope="module")
def sdk_python() -> Path:
    return _sdk_python()


@pytest.fixture(scope="module")
def placement(
    sdk_python: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Keystone, Path]]:
    """Keystone and placement-numa (keystone auth, SQLite), both on loopback ports."""
    keystone_port, placement_port = worker_ports()
    placement_url = f"http://127.0.0.1:{placement_port}"
    with start_keystone(
        tmp_path_factory.mktemp("keystone"), keystone_port, placement_url
    ) as keystone:
        workdir = tmp_path_factory.mktemp("placement")
        conf = workdir / "placement.conf"
        conf.write_text(
            TEMPLATE.read_text()
            .replace("@DATABASE_URL@", f"sqlite:///{workdir / 'placement.sqlite'}")
            .replace("@KEYSTONE_URL@", keystone.url)
            .replace("@PASSWORD@", PASSWORD)
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("PLACEMENT_NUMA_")}
        executable = Path(sys.executable).with_name("placement-numa")
        argv = [str(executable), "serve", "--config-file", str(conf), "--port"]
        with running(
            [*argv, str(placement_port)], placement_port, workdir / "serve.log", env=env
        ) as server:
            _seed_like_devstack(keystone, server.base_url)
            yield keystone, server.log


def _seed_like_devstack(keystone: Keystone, placement_url: str) -> None:
    """What a devstack the suite expects holds: a compute node with ``VCPU``, ``MEMORY_MB`` and
    ``DISK_GB`` (``test_allocation_candidate`` asks for ``VCPU:1``) and one server of the admin
    project on it (``test_usage`` reads the project's usage at 1.38, by consumer type)."""
    token = keystone.token("admin", project="admin")
    with httpx.Client(base_url=keystone.url + "/v3", headers={"x-auth-token": token}) as ks:
        project = ks.get("/projects", params={"name": "admin"}).json()["projects"][0]["id"]
        user = ks.get("/users", params={"name": "admin"}).json()["users"][0]["id"]
    headers = {"x-auth-token": token, "openstack-api-version": "placement 1.39"}
    node, server = str(uuid.uuid4()), str(uuid.uuid4())
    inventories = {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 16384}, "DISK_GB": {"total": 100}}
    with httpx.Client(base_url=placement_url, headers=headers, timeout=60) as placement:
        steps = [
            ("POST", "/resource_providers", {"name": "devstack-compute", "uuid": node}),
            (
                "PUT",
                f"/resource_providers/{node}/inventories",
                {"inventories": inventories, "resource_provider_generation": 0},
            ),
            (
                "PUT",
                f"/allocations/{server}",
                {
                    "allocations": {node: {"resources": {"VCPU": 1, "MEMORY_MB": 512}}},
                    "project_id": project,
                    "user_id": user,
                    "consumer_generation": None,
                    "consumer_type": "INSTANCE",
                },
            ),
        ]
        for method, path, body in steps:
            response = placement.request(method, path, json=body)
            assert response.status_code < 300, response.text


def _clouds(keystone: Keystone) -> dict[str, object]:
    """``clouds.yaml`` (JSON is YAML) for the clouds openstacksdk's functional base class opens:
    the operator and system admin are Keystone's bootstrap admin, the demo users alice and
    rita; only placement is in the catalog."""

    def cloud(user: str, project: str | None) -> dict[str, object]:
        auth: dict[str, object] = {
            "auth_url": keystone.url + "/v3",
            "username": user,
            "password": PASSWORD,
            "user_domain_name": "Default",
        }
        if project is None:
            auth["system_scope"] = "all"
        else:
            auth.update(project_name=project, project_domain_name="Default")
        absent = {f"has_{name}": False for name in ("compute", "image", "network")}
        return {"auth": auth, "region_name": "RegionOne", "identity_api_version": 3, **absent}

    return {
        "clouds": {
            "devstack-admin": cloud("admin", "admin"),
            "devstack-system-admin": cloud("admin", None),
            "devstack": cloud("alice", "demo"),
            "devstack-alt": cloud("rita", "demo"),
        }
    }


def _own_pytest(python: Path, tmp_path: Path) -> list[str]:
    """The external suite's pytest command line with an empty configuration of its own: a
    virtualenv inside our checkout (``.ci/run`` puts ``.sdk-venv`` there) would otherwise make
    that pytest read our pyproject.toml (``-n auto``, markers) and stop on the unknown ``-n``."""
    ini = tmp_path / "pytest.ini"
    ini.write_text("[pytest]\n")
    return [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", str(ini)]


def test_openstacksdk_placement_functional_suite(
    sdk_python: Path, placement: tuple[Keystone, Path], tmp_path: Path
) -> None:
    keystone, log = placement
    clouds = tmp_path / "clouds.yaml"
    clouds.write_text(json.dumps(_clouds(keystone)))
    package = subprocess.run(
        [str(sdk_python), "-c", "import openstack, os; print(os.path.dirname(openstack.__file__))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OS_", "OPENSTACKSDK_"))}
    env["OS_CLIENT_CONFIG_FILE"] = str(clouds)
    suite = str(Path(package).parent / SUITE)
    done = subprocess.run(
        [*_own_pytest(sdk_python, tmp_path), suite],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    served = [line for line in log.read_text().splitlines() if "placement_numa.access" in line]
    assert done.returncode == 0, done.stdout[-6000:] + "\n".join(served[-40:])
    assert "8 passed" in summary, summary


def test_osc_placement_tree_functional_suite(
    sdk_python: Path, placement: tuple[Keystone, Path], tmp_path: Path
) -> None:
    """osc-placement-tree's functional tests (9: ``openstack resource provider tree ...`` with
    Keystone's admin) through the ``openstack`` client of the same virtualenv; they render
    each tree with Graphviz's ``dot``."""
    keystone, log = placement
    probe = "import osc_placement_tree.tests.functional as suite; print(suite.__path__[0])"
    found = subprocess.run([str(sdk_python), "-c", probe], capture_output=True, text=True)
    if found.returncode != 0 or shutil.which("dot") is None:
        pytest.skip("osc-placement-tree or Graphviz's dot is not installed")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OS_", "OPENSTACKSDK_"))}
    env.update(
        PATH=f"{sdk_python.parent}:{env.get('PATH', '')}",
        OS_AUTH_URL=keystone.url + "/v3",
        OS_AUTH_TYPE="password",
        OS_USERNAME="admin",
        OS_PASSWORD=PASSWORD,
        OS_PROJECT_NAME="admin",
        OS_USER_DOMAIN_NAME="Default",
        OS_PROJECT_DOMAIN_NAME="Default",
        OS_REGION_NAME="RegionOne",
        OS_IDENTITY_API_VERSION="3",
    )
    done = subprocess.run(
        [*_own_pytest(sdk_python, tmp_path), found.stdout.strip()],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=900,
    )
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    served = [line for line in log.read_text().splitlines() if "placement_numa.access" in line]
    assert done.returncode == 0, done.stdout[-6000:] + "\n".join(served[-40:])
    assert "9 passed" in summary, summary
