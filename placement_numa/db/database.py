"""Engine and transaction factory: one ``Database`` per process, hung off ``app.state``.

``Database.write()`` is the only way services open a write transaction: it runs the caller's
statements, bumps ``placement_revision`` last, writes the fleet change log rows of the providers
the transaction touched (``repositories.changes``), and commits, or rolls everything back on any
exception. ``Database.read()`` opens a read-only snapshot-free connection (READ COMMITTED on
PostgreSQL and MariaDB; SQLite reads see the last committed state).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import QueuePool

from placement_numa.db import resilience
from placement_numa.db.repositories import changes
from placement_numa.db.resilience import DatabaseOptions, GuardedQueuePool

__all__ = ["Database", "make_engine", "normalise_url", "SQLITE_KEPT_CONNECTIONS"]

# SQLite connections a process keeps open between uses (more are opened when more threads need
# one at once, and closed when returned)
SQLITE_KEPT_CONNECTIONS = 4

# Driver spellings found in placement.conf files (oslo.db URLs) -> the drivers we ship.
_DRIVERS = {
    "postgresql": "postgresql+psycopg",
    "postgres": "postgresql+psycopg",
    "postgresql+psycopg2": "postgresql+psycopg",
    "postgresql+psycopg2cffi": "postgresql+psycopg",
    "postgresql+pg8000": "postgresql+psycopg",
    "mysql": "mysql+pymysql",
    "mariadb": "mysql+pymysql",
    "mysql+mysqldb": "mysql+pymysql",
    "mysql+mysqlconnector": "mysql+pymysql",
    "mariadb+pymysql": "mysql+pymysql",
    "mariadb+mysqldb": "mysql+pymysql",
}


def normalise_url(url: str) -> str:
    """``url`` with its driver replaced by the one we ship: PostgreSQL URLs (``postgresql://``,
    ``postgresql+psycopg2://`` as upstream Placement's placement.conf writes them, ...) use
    psycopg 3, MariaDB/MySQL URLs (``mysql://``, ``mysql+pymysql://``, ``mysql+mysqldb://``)
    use PyMySQL. Everything after ``://`` (credentials, host, query such as ``charset=utf8``)
    is kept. Other URLs (SQLite) are returned unchanged."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    return f"{_DRIVERS.get(scheme.lower(), scheme)}://{rest}"


def make_engine(url: str, **kwargs: Any) -> Engine:
    """Create the SQLAlchemy engine for ``url`` with backend-specific settings.

    SQLite: foreign keys on, WAL journal, a 30 s busy timeout, and write transactions that begin
    with ``BEGIN IMMEDIATE`` (so two writers queue instead of deadlocking on lock upgrade);
    ``SQLITE_KEPT_CONNECTIONS`` kept open between uses, any number more while threads need them
    (never a wait for a connection). A process that forks disposes of the engine first, as for
    the other databases (``cli.prefork.release_connections``).
    PostgreSQL and MariaDB: READ COMMITTED, so a capacity check after ``FOR UPDATE`` sees the
    latest committed allocations; a ``GuardedQueuePool`` (``pool_size``, ``max_overflow``,
    ``pool_timeout`` in ``kwargs``) whose exhaustion is a 503 and whose idle connections are
    pinged on checkout (``db.resilience``).
    """
    if url.startswith("sqlite"):
        pool: dict[str, Any] = {}
        if ":memory:" not in url:
            # a few connections kept open (each open costs ~0.5 ms: the file, three PRAGMAs);
            # past them a connection per use, closed on return, as without a pool
            pool = {"poolclass": QueuePool, "pool_size": SQLITE_KEPT_CONNECTIONS}
            pool["max_overflow"] = -1
        engine = create_engine(
            url, connect_args={"check_same_thread": False, "timeout": 30}, **pool, **kwargs
        )

        @event.listens_for(engine, "connect")
        def _sqlite_connect(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # we emit BEGIN ourselves
            cursor = dbapi_conn.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            if ":memory:" not in url:
                cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _sqlite_begin(conn: Connection) -> None:
            mode = conn.get_execution_options().get("sqlite_begin", "DEFERRED")
            conn.exec_driver_sql(f"BEGIN {mode}")

        return engine
    kwargs.setdefault("pool_size", 10)
    kwargs.setdefault("max_overflow", 20)
    return create_engine(
        url,
        isolation_level="READ COMMITTED",
        pool_pre_ping=False,  # idle connections are pinged on checkout (db.resilience)
        poolclass=GuardedQueuePool,
        **kwargs,
    )


class Database:
    """Owns the engine; hands out read connections and write transactions."""

    def __init__(
        self,
        url: str,
        *,
        options: DatabaseOptions | None = None,
        pool_size: int = 10,
        max_overflow: int = 20,
        pool_timeout: float = 30.0,
        pool_recycle: int = 3600,
    ) -> None:
        """``options``: statement/lock timeouts and Retry-After (``db.resilience``); the pool
        sizes apply per process to PostgreSQL and MariaDB (SQLite keeps
        ``SQLITE_KEPT_CONNECTIONS``); ``pool_recycle``: seconds after which a pooled
        connection is replaced (oslo.db's ``connection_recycle_time``; ``-1`` never).
        """
        self.url = url
        pool: dict[str, Any] = {}
        if not url.startswith("sqlite"):
            pool = {
                "pool_size": pool_size,
                "max_overflow": max_overflow,
                "pool_timeout": pool_timeout,
                "pool_recycle": pool_recycle,
            }
        self.engine = make_engine(url, **pool)
        self.dialect = self.engine.dialect.name  # "sqlite" | "postgresql" | "mysql"
        self.options = options or DatabaseOptions()
        resilience.install(self.engine, self.options)
        changes.install(self.engine)

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A connection for reads; its implicit transaction is rolled back on exit."""
        with self.engine.connect() as conn:
            yield conn

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """One write transaction: commit on success (after bumping the revision and writing the
        change log rows of the providers it touched), else roll back."""
        options = {"sqlite_begin": "IMMEDIATE"} if self.dialect == "sqlite" else {}
        with self.engine.connect() as conn:
            conn = conn.execution_options(**options)
            try:
                with conn.begin():
                    changes.begin(conn)
                    yield conn
                    if self.dialect == "postgresql":  # one round trip under the counter's lock
                        changes.bump_record_and_commit(conn)
                    else:
                        changes.bump_and_record(conn)
            finally:
                changes.end(conn)

    def dispose(self) -> None:
        """Close the engine's pooled connections (at shutdown)."""
        self.engine.dispose()
