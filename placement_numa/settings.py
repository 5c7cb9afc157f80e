"""Service settings, read from the environment with the prefix ``PLACEMENT_NUMA_``.

Nothing here is instantiated at import time: ``create_app(settings)`` and the CLI build a
``Settings`` object explicitly, so tests can switch backends per test run.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["Settings", "DEFAULT_DATABASE_URL"]

DEFAULT_DATABASE_URL = "sqlite:///placement-numa.sqlite"


class Settings(BaseSettings):
    """Configuration of one placement-numa process.

    Environment variables: ``PLACEMENT_NUMA_DATABASE_URL``, ``PLACEMENT_NUMA_HOST``, ... (one per
    field, upper-cased). ``database_url`` is any SQLAlchemy URL; ``postgresql://`` and ``mysql://``
    URLs are rewritten to the psycopg 3 and PyMySQL drivers.
    """

    model_config = SettingsConfigDict(env_prefix="PLACEMENT_NUMA_", extra="ignore")

    database_url: str = Field(
        default=DEFAULT_DATABASE_URL,
        description="SQLAlchemy URL; SQLite file in the working directory when unset.",
    )
    host: str = Field(default="127.0.0.1", description="Address the HTTP server binds.")
    port: int = Field(default=8778, ge=1, le=65535, description="Placement's port by default.")
    workers: int = Field(default=1, ge=1, le=64, description="uvicorn worker processes.")
    auto_migrate: bool = Field(
        default=True, description="Apply alembic migrations when the service starts."
    )
    sync_standard_names: bool = Field(
        default=True,
        description=(
            "Insert os-traits / os-resource-classes names missing from the database at start."
        ),
    )
    migrations_dir: Path | None = Field(
        default=None,
        description="Alembic script directory; the repository's migrations/ by default.",
    )
    randomize_allocation_candidates: bool = Field(
        default=False,
        description="Shuffle allocation candidates before applying limit (Placement's option).",
    )
    log_level: str = Field(default="info")

    @field_validator("database_url")
    @classmethod
    def _normalise_driver(cls, value: str) -> str:
        """Pick the first-class drivers: psycopg 3 for PostgreSQL, PyMySQL for MariaDB/MySQL."""
        if value.startswith("postgresql://") or value.startswith("postgres://"):
            return "postgresql+psycopg://" + value.split("://", 1)[1]
        if value.startswith("mysql://") or value.startswith("mariadb://"):
            return "mysql+pymysql://" + value.split("://", 1)[1]
        return value
