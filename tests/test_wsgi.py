"""``placement_numa.wsgi:application`` under a real WSGI server (gunicorn's sync worker: plain
WSGI, one request at a time per process, as under mod_wsgi or uWSGI), configured the way
upstream Placement's WSGI script is: a placement.conf in ``OS_PLACEMENT_CONFIG_DIR``, nothing in
``PLACEMENT_NUMA_*``. (uWSGI is not tested: ``pip install uwsgi`` compiles it from source and
could not be fetched and built here in reasonable time.)"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from placement_numa.wsgi import config_file_from_environment
from tests.backends import drop_database, reachable_database
from tests.servers import HEADERS, free_port, running, service_env


def _gunicorn(port: int) -> list[str]:
    return [
        sys.executable, "-m", "gunicorn", "-k", "sync", "-w", "2", "--timeout", "120",
        "-b", f"127.0.0.1:{port}", "placement_numa.wsgi:application",
    ]  # fmt: skip


SERVERS: dict[str, Callable[[int], list[str]]] = {"gunicorn-sync": _gunicorn}


def _env(config_dir: Path) -> dict[str, str]:
    """No PLACEMENT_NUMA_* at all: everything comes from OS_PLACEMENT_CONFIG_DIR's file."""
    env = {k: v for k, v in service_env().items() if not k.startswith("PLACEMENT_NUMA_")}
    env["OS_PLACEMENT_CONFIG_DIR"] = str(config_dir)
    return env


def _write_conf(directory: Path, url: str) -> None:
    directory.mkdir(exist_ok=True)
    (directory / "placement.conf").write_text(
        f"[placement_database]\nconnection = {url}\n[api]\nauth_strategy = noauth2\n"
    )


def _exercise(client: httpx.Client) -> None:
    """Writes, a candidates query, an error body: the API as Placement's clients use it."""
    rp = str(uuid.uuid4())
    created = client.post("/resource_providers", json={"name": f"wsgi-{rp}", "uuid": rp})
    assert created.status_code == 200, created.text
    inventory = {
        "resource_provider_generation": created.json()["generation"],
        "inventories": {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096}},
    }
    assert client.put(f"/resource_providers/{rp}/inventories", json=inventory).status_code == 200
    found = client.get("/allocation_candidates", params={"resources": "VCPU:2,MEMORY_MB:512"})
    assert found.status_code == 200, found.text
    assert rp in found.json()["provider_summaries"]
    missing = client.get(f"/resource_providers/{uuid.uuid4()}")
    assert missing.status_code == 404
    (error,) = missing.json()["errors"]
    assert error["code"] == "placement.undefined_code" and error["request_id"].startswith("req-")
    assert missing.headers["x-openstack-request-id"] == error["request_id"]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@pytest.mark.parametrize("server", sorted(SERVERS))
def test_wsgi_server_serves_the_api(server: str, backend: str, tmp_path: Path) -> None:
    db = reachable_database(backend, tmp_path, "wsgi")
    _write_conf(tmp_path / "etc", db.url)
    port = free_port(range(19710, 19760))
    try:
        with running(
            SERVERS[server](port), port, tmp_path / "server.log", env=_env(tmp_path / "etc"),
            cwd=tmp_path, timeout=120,
        ) as service:  # fmt: skip
            with service.client() as client:
                _exercise(client)
            # Both processes, many requests at once: each answered, none failed.
            with ThreadPoolExecutor(8) as pool:
                codes = list(pool.map(lambda _: _get(service.base_url), range(48)))
            assert codes == [200] * 48
            log = service.log_text()
            assert "Traceback" not in log, log[-3000:]
    finally:
        drop_database(db)


def _get(base_url: str) -> int:
    with httpx.Client(base_url=base_url, headers=HEADERS, timeout=60) as client:
        return client.get("/resource_providers").status_code


def test_a_missing_config_stops_the_wsgi_server_naming_the_file(tmp_path: Path) -> None:
    port = free_port(range(19760, 19780))
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        done = subprocess.run(
            _gunicorn(port), stdout=out, stderr=subprocess.STDOUT,
            env=_env(tmp_path / "nowhere"), cwd=tmp_path, timeout=120,
        )  # fmt: skip
    assert done.returncode != 0
    text = log.read_text()
    assert f"configuration file not found: {tmp_path / 'nowhere' / 'placement.conf'}" in text


def test_config_lookup_follows_upstream(tmp_path: Path) -> None:
    assert config_file_from_environment({"OS_PLACEMENT_CONFIG_DIR": "/etc/p"}) == Path(
        "/etc/p/placement.conf"
    )
    home = tmp_path / "home"
    (home / ".placement").mkdir(parents=True)
    (home / ".placement" / "placement.conf").write_text("[DEFAULT]\n")
    found = subprocess.run(
        [sys.executable, "-c",
         "from placement_numa.wsgi import config_file_from_environment as f; print(f({}))"],
        env={**_env(tmp_path), "HOME": str(home), "OS_PLACEMENT_CONFIG_DIR": ""},
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert found.stdout.strip() == str(home / ".placement" / "placement.conf")
