"""Alembic environment for placement-numa (online migrations only)."""

from __future__ import annotations

from alembic import context

from placement_numa.db.database import make_engine
from placement_numa.db.tables import metadata

config = context.config
target_metadata = metadata


def run_migrations_online() -> None:
    url = config.get_main_option("sqlalchemy.url")
    assert url is not None
    engine = make_engine(url)
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=target_metadata)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


run_migrations_online()
