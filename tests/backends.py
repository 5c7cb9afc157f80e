"""Test databases on SQLite, PostgreSQL and MariaDB: create a fresh one, reset it, drop it.

Server URLs come from ``PLACEMENT_NUMA_TEST_POSTGRESQL_URL`` and ``PLACEMENT_NUMA_TEST_MYSQL_URL``
(defaults: the local servers of the development machine). A backend that cannot be reached is
skipped locally; under CI (``CI=true``) it is a failure.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import create_engine, delete, text, update
from sqlalchemy.engine import Connection, make_url

from placement_numa.db import tables
from placement_numa.settings import Settings

DEFAULT_SERVER_URLS = {
    "postgresql": "postgresql://postgres@127.0.0.1:5432/test",
    "mysql": "mysql://root@127.0.0.1:3306/test",
}
BACKENDS = ("sqlite", "postgresql", "mysql")

# Rows that survive a reset: reference data synced at start and the revision counter.
_KEEP = {"resource_classes", "traits", "placement_revision"}


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def server_url(backend: str) -> str:
    env = f"PLACEMENT_NUMA_TEST_{backend.upper()}_URL"
    return Settings(database_url=os.environ.get(env, DEFAULT_SERVER_URLS[backend])).database_url


@dataclass
class TestDatabase:
    backend: str
    url: str
    admin_url: str | None
    name: str


def create_database(backend: str, tmp_dir: Path, tag: str) -> TestDatabase:
    """Create an empty database for ``backend``; raises on an unreachable server."""
    name = f"pn_{tag}_{uuid.uuid4().hex[:8]}"
    if backend == "sqlite":
        return TestDatabase(backend, f"sqlite:///{tmp_dir / (name + '.sqlite')}", None, name)
    admin = server_url(backend)
    engine = create_engine(admin, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        if backend == "mysql":
            conn.execute(text(f"CREATE DATABASE {name} CHARACTER SET utf8mb4"))
        else:
            conn.execute(text(f"CREATE DATABASE {name}"))
    engine.dispose()
    url = make_url(admin).set(database=name).render_as_string(hide_password=False)
    return TestDatabase(backend, url, admin, name)


def reachable_database(backend: str, tmp_dir: Path, tag: str) -> TestDatabase:
    """``create_database``, or the test skipped when the server is unreachable (failed under
    CI, where every backend must run)."""
    try:
        return create_database(backend, tmp_dir, tag)
    except Exception as exc:  # unreachable server
        if in_ci():
            pytest.fail(f"{backend} is not reachable in CI: {exc}")
        pytest.skip(f"{backend} not reachable: {exc}")


def drop_database(db: TestDatabase) -> None:
    if db.admin_url is None:
        return
    engine = create_engine(db.admin_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        if db.backend == "postgresql":
            conn.execute(text(f"DROP DATABASE IF EXISTS {db.name} WITH (FORCE)"))
        else:
            conn.execute(text(f"DROP DATABASE IF EXISTS {db.name}"))
    engine.dispose()


def reset_rows(conn: Connection) -> None:
    """Delete every row a test may have written, keeping standard names (custom ones go)."""
    conn.execute(
        update(tables.resource_providers).values(parent_provider_id=None, root_provider_id=None)
    )
    for table in reversed(tables.metadata.sorted_tables):
        if table.name not in _KEEP:
            conn.execute(delete(table))
    conn.execute(delete(tables.traits).where(tables.traits.c.name.like("CUSTOM\\_%", escape="\\")))
    conn.execute(
        delete(tables.resource_classes).where(
            tables.resource_classes.c.id >= tables.CUSTOM_RESOURCE_CLASS_START_ID
        )
    )
