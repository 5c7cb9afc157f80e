"""Apply alembic migrations from ``migrations/`` programmatically
(``placement-numa db upgrade``)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

__all__ = ["alembic_config", "upgrade", "downgrade", "DEFAULT_MIGRATIONS_DIR"]

DEFAULT_MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


def alembic_config(database_url: str, migrations_dir: Path | None = None) -> Config:
    """An alembic ``Config`` for ``database_url`` using the repository's ``migrations/``."""
    script_location = migrations_dir or DEFAULT_MIGRATIONS_DIR
    if migrations_dir is None and not (script_location / "env.py").exists():
        script_location = Path.cwd() / "migrations"  # a non-editable install run from the repo
    if not (script_location / "env.py").exists():
        raise FileNotFoundError(f"no alembic env.py in {script_location}")
    config = Config()
    config.set_main_option("script_location", str(script_location))
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def upgrade(database_url: str, revision: str = "head", migrations_dir: Path | None = None) -> None:
    """Upgrade the schema at ``database_url`` to ``revision`` (``head`` by default)."""
    command.upgrade(alembic_config(database_url, migrations_dir), revision)


def downgrade(database_url: str, revision: str, migrations_dir: Path | None = None) -> None:
    """Downgrade the schema at ``database_url`` to ``revision`` (``base`` drops everything)."""
    command.downgrade(alembic_config(database_url, migrations_dir), revision)
