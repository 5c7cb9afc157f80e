"""One lock per database for schema migrations, so concurrent starters migrate one at a time.

- PostgreSQL: a session advisory lock (``pg_advisory_lock(MIGRATION_LOCK_KEY)``), held on its
  own connection while the migrations run on another.
- MariaDB/MySQL: a named lock (``GET_LOCK('placement_numa_migrate', timeout)``), likewise.
- SQLite: an exclusive ``flock`` on ``<database file>-migrate-lock`` beside the database (SQLite
  is local to one host, so a file lock covers every process that can open it); an in-memory
  database needs none.

A process waits up to ``timeout`` seconds; then ``MigrationLockTimeout`` is raised.
"""

from __future__ import annotations

import fcntl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

__all__ = ["migration_lock", "MigrationLockTimeout", "MIGRATION_LOCK_KEY"]

# An arbitrary 63-bit key for pg_advisory_lock ("placement-numa migrate").
MIGRATION_LOCK_KEY = 0x706E_6D69_6772_6174
_MYSQL_LOCK_NAME = "placement_numa_migrate"


class MigrationLockTimeout(RuntimeError):
    """Another process held the migration lock for longer than the timeout."""


@contextmanager
def migration_lock(database_url: str, timeout: float = 600.0) -> Iterator[None]:
    """Hold the migration lock of ``database_url`` for the body of the ``with`` block.

    Raises ``MigrationLockTimeout`` after ``timeout`` seconds of waiting, and the driver's
    errors when the database cannot be reached.
    """
    url = make_url(database_url)
    backend = url.get_backend_name()
    if backend == "sqlite":
        database = url.database
        if not database or database == ":memory:" or database.startswith("file::memory:"):
            yield
            return
        with _file_lock(Path(database).with_name(Path(database).name + "-migrate-lock"), timeout):
            yield
        return
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            conn = conn.execution_options(isolation_level="AUTOCOMMIT")
            if backend == "postgresql":
                conn.execute(text(f"SET lock_timeout = '{int(timeout * 1000)}ms'"))
                try:
                    conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
                except Exception as exc:
                    raise MigrationLockTimeout(f"migration lock not granted: {exc}") from exc
                try:
                    yield
                finally:
                    conn.execute(
                        text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK_KEY}
                    )
            elif backend in ("mysql", "mariadb"):
                got = conn.execute(
                    text("SELECT GET_LOCK(:name, :timeout)"),
                    {"name": _MYSQL_LOCK_NAME, "timeout": int(timeout)},
                ).scalar()
                if got != 1:
                    raise MigrationLockTimeout(f"migration lock not granted within {timeout} s")
                try:
                    yield
                finally:
                    conn.execute(text("SELECT RELEASE_LOCK(:name)"), {"name": _MYSQL_LOCK_NAME})
            else:
                yield
    finally:
        engine.dispose()


@contextmanager
def _file_lock(path: Path, timeout: float) -> Iterator[None]:
    deadline = time.monotonic() + timeout
    with open(path, "a") as handle:
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise MigrationLockTimeout(
                        f"migration lock {path} not granted within {timeout} s"
                    ) from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
