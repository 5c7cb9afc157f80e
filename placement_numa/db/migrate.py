"""Apply the alembic migrations shipped inside the package (``placement_numa/migrations``,
found with ``importlib.resources``, so an installed wheel migrates from any directory).

``upgrade`` holds a migration lock (``db.migration_lock``) while it runs, so several processes
starting at once (uvicorn or gunicorn workers, a one-shot migrate job racing a server) migrate
one after the other: the first applies the migrations, the others find the schema at head.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from alembic import command
from alembic.config import Config

from placement_numa.db.migration_lock import migration_lock

__all__ = ["alembic_config", "upgrade", "downgrade", "default_migrations_dir"]


def default_migrations_dir() -> Path:
    """The alembic script directory shipped in the package (``placement_numa/migrations``).

    The wheel installs it as plain files, so the path is a real directory alembic can read.
    """
    return Path(str(files("placement_numa") / "migrations"))


def alembic_config(database_url: str, migrations_dir: Path | None = None) -> Config:
    """An alembic ``Config`` for ``database_url`` using ``migrations_dir`` (default: the
    package's own migrations). Raises ``FileNotFoundError`` when it holds no ``env.py``."""
    script_location = migrations_dir or default_migrations_dir()
    if not (script_location / "env.py").exists():
        raise FileNotFoundError(f"no alembic env.py in {script_location}")
    config = Config()
    config.set_main_option("script_location", str(script_location))
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def upgrade(
    database_url: str,
    revision: str = "head",
    migrations_dir: Path | None = None,
    *,
    lock: bool = True,
) -> None:
    """Upgrade the schema at ``database_url`` to ``revision`` (``head`` by default), under the
    migration lock unless ``lock=False`` (the caller already holds it)."""
    config = alembic_config(database_url, migrations_dir)
    if not lock:
        command.upgrade(config, revision)
        return
    with migration_lock(database_url):
        command.upgrade(config, revision)


def downgrade(database_url: str, revision: str, migrations_dir: Path | None = None) -> None:
    """Downgrade the schema at ``database_url`` to ``revision`` (``base`` drops everything)."""
    config = alembic_config(database_url, migrations_dir)
    with migration_lock(database_url):
        command.downgrade(config, revision)
