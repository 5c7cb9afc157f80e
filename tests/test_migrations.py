"""Migrations upgrade to head and downgrade to base on every backend."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect

from placement_numa.db import migrate
from tests.backends import BACKENDS, create_database, drop_database, in_ci


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_upgrade_downgrade_roundtrip(backend_name: str, tmp_path: Path) -> None:
    try:
        db = create_database(backend_name, tmp_path, "mig")
    except Exception as exc:
        if in_ci():
            pytest.fail(f"{backend_name} unreachable in CI: {exc}")
        pytest.skip(f"{backend_name} unreachable: {exc}")
    try:
        migrate.upgrade(db.url)
        engine = create_engine(db.url)
        names = set(inspect(engine).get_table_names())
        assert {"resource_providers", "inventories", "allocations", "consumers"} <= names
        engine.dispose()
        migrate.downgrade(db.url, "base")
        engine = create_engine(db.url)
        assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
        engine.dispose()
        migrate.upgrade(db.url)
    finally:
        drop_database(db)
