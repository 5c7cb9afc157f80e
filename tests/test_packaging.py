"""Installable and runnable anywhere: the wheel, and the ASGI app under process managers.

1. ``test_wheel_serves_from_an_empty_directory``: build the wheel from a copy of the source,
   install it into a fresh virtualenv, and from an empty directory run ``db upgrade``,
   ``serve`` (SQLite, then PostgreSQL) and ``export-openapi``; the migrations come from the
   package (``importlib.resources``), not from a checkout.
2. ``test_asgi_app_path``: the documented app path with two workers on a fresh database,
   ``uvicorn --factory placement_numa.app:app_from_env --workers 2`` and
   ``gunicorn -k uvicorn.workers.UvicornWorker -w 2 'placement_numa.app:app_from_env()'``: both
   workers migrate at start under the migration lock, so both come up and serve.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.backends import TestDatabase, drop_database, reachable_database
from tests.servers import running, service_env

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", "*.sqlite*"
)


@pytest.fixture
def postgresql(tmp_path: Path) -> Iterator[TestDatabase]:
    db = reachable_database("postgresql", tmp_path, "pkg")
    yield db
    drop_database(db)


def _exercise(base_url: str) -> None:
    """A provider written and read back through the service."""
    import httpx

    from tests.servers import HEADERS

    rp = str(uuid.uuid4())
    with httpx.Client(base_url=base_url, headers=HEADERS, timeout=30) as client:
        r = client.post("/resource_providers", json={"name": f"pkg-{rp}", "uuid": rp})
        assert r.status_code == 200, r.text
        assert client.get(f"/resource_providers/{rp}").json()["uuid"] == rp


def test_wheel_serves_from_an_empty_directory(tmp_path: Path, postgresql: TestDatabase) -> None:
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=_IGNORE)
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(source)],
        check=True,
    )
    (wheel,) = wheels.glob("placement_numa-*.whl")
    # The top-level migrations/ folder ships inside the package (setup.py's package_dir).
    import zipfile

    names = set(zipfile.ZipFile(wheel).namelist())
    assert "placement_numa/migrations/env.py" in names
    assert "placement_numa/migrations/versions/0001_initial.py" in names
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)], check=True)
    command = str(venv / "bin" / "placement-numa")
    empty = tmp_path / "empty"
    empty.mkdir()
    env = service_env(PATH=f"{venv / 'bin'}:/usr/bin:/bin")

    # The console script and --version work without a checkout.
    version = subprocess.run([command, "--version"], cwd=empty, env=env, capture_output=True)
    assert version.returncode == 0 and version.stdout.decode().startswith("placement-numa ")

    # SQLite: db upgrade, then serve without migrating, from the empty directory.
    upgrade = subprocess.run([command, "db", "upgrade"], cwd=empty, env=env, capture_output=True)
    assert upgrade.returncode == 0, upgrade.stderr.decode()
    assert (empty / "placement-numa.sqlite").exists()
    with running(
        [command, "serve", "--port", "19201", "--no-migrate"],
        19201,
        tmp_path / "sqlite.log",
        env=env,
        cwd=empty,
    ) as service:
        _exercise(service.base_url)

    # PostgreSQL: serve migrates a fresh database itself.
    pg_env = {**env, "PLACEMENT_NUMA_DATABASE_URL": postgresql.url}
    with running(
        [command, "serve", "--port", "19202"], 19202, tmp_path / "pg.log", env=pg_env, cwd=empty
    ) as service:
        _exercise(service.base_url)
        assert "Traceback" not in service.log_text()

    # export-openapi: standard output in an installed copy; --check needs an explicit file.
    exported = subprocess.run(
        [command, "export-openapi"], cwd=empty, env=env, capture_output=True, check=True
    )
    assert "/resource_providers" in json.loads(exported.stdout)["paths"]
    check = subprocess.run(
        [command, "export-openapi", "--check"], cwd=empty, env=env, capture_output=True
    )
    assert check.returncode == 2 and len(check.stderr.decode().strip().splitlines()) == 1
    written = subprocess.run(
        [command, "export-openapi", "--output", "spec.json"], cwd=empty, env=env, check=True
    )
    assert written.returncode == 0 and (empty / "spec.json").exists()
    assert not (venv / "lib" / "api-spec").exists()


SERVERS = {
    "uvicorn": lambda port: [
        sys.executable,
        "-m",
        "uvicorn",
        "--factory",
        "placement_numa.app:app_from_env",
        "--workers",
        "2",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ],
    "gunicorn": lambda port: [
        sys.executable,
        "-m",
        "gunicorn",
        "-k",
        "uvicorn.workers.UvicornWorker",
        "-w",
        "2",
        "-b",
        f"127.0.0.1:{port}",
        "placement_numa.app:app_from_env()",
    ],
}
PORTS = {
    ("uvicorn", "sqlite"): 19203,
    ("uvicorn", "postgresql"): 19204,
    ("gunicorn", "sqlite"): 19205,
    ("gunicorn", "postgresql"): 19206,
}


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@pytest.mark.parametrize("server", sorted(SERVERS))
def test_asgi_app_path(server: str, backend: str, tmp_path: Path) -> None:
    db = reachable_database(backend, tmp_path, "pkg")
    port = PORTS[(server, backend)]
    env = service_env(PLACEMENT_NUMA_DATABASE_URL=db.url)
    try:
        with running(
            SERVERS[server](port), port, tmp_path / "server.log", env=env, cwd=tmp_path
        ) as service:
            for _ in range(6):
                _exercise(service.base_url)
            # Both workers finish their start-up (each migrated under the lock); on a loaded
            # machine the second may still be starting when the first has served these requests.
            deadline = time.monotonic() + 120
            while service.log_text().count("Application startup complete") < 2:
                assert time.monotonic() < deadline, service.log_text()
                time.sleep(0.5)
            server_log = service.log_text()
            assert server_log.count("Application startup complete") == 2, server_log
            assert "database is locked" not in server_log
            assert "Traceback" not in server_log
    finally:
        drop_database(db)
