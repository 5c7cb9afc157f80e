"""Database failures as the client should see them: 503 with ``Retry-After``, bounded retries.

``install(engine, options)`` hooks the SQLAlchemy engine so that, whatever code runs SQL:

* every PostgreSQL / MariaDB session gets a statement timeout and a lock timeout
  (PostgreSQL ``statement_timeout`` / ``lock_timeout``; MariaDB ``max_statement_time`` /
  ``innodb_lock_wait_timeout``), so no statement, including one whose client went away,
  runs longer than ``statement_timeout`` seconds;
* driver errors become domain errors (``placement_numa.errors``), classified as oslo.db's
  exception filters do (``oslo_db/sqlalchemy/exc_filters.py``, read for behaviour):

  - PostgreSQL 40001 (serialization failure) and 40P01 (deadlock); MariaDB 1213 (deadlock,
    also a Galera certification failure or brute-force abort, at any statement or at
    ``COMMIT``), 1020 (record changed
    since last read: oslo.db's ``DBConsistencyError``), 1317 (query interrupted: a
    brute-force abort of a running statement), 1180 (error during ``COMMIT``: the write set
    was not committed) and 1305 (a savepoint that no longer exists: the server rolled the
    whole transaction back under it): ``RetryableDatabaseError`` (re-run; 503
    ``placement.db.retries_exhausted`` once the retries are spent);
  - PostgreSQL 57014 (statement timeout) and 55P03 (lock timeout), MariaDB 1969
    (max_statement_time) and 1205 (lock wait timeout), SQLite "database is locked" (busy
    timeout): ``ServiceUnavailable`` 503 ``placement.db.timeout``. oslo.db counts 1205 as a
    deadlock and re-runs it; here the statement already waited ``lock_timeout`` seconds, re-runs
    would multiply that wait, and a client that gave up meanwhile would find its write made
    later (``test_abandoned_request_leaves_no_sql_running``);
  - connection refused or lost, server shutting down or out of connections, a Galera node
    not in the primary component (1047): ``ServiceUnavailable`` 503
    ``placement.db.unavailable``, and the connection is invalidated (the pool reconnects);

* an error while rolling back to a savepoint (``with conn.begin_nested()``) never hides the
  error that made the savepoint roll back: after a deadlock or a Galera brute-force abort
  inside a savepoint, MariaDB has already rolled back the whole transaction and answers the
  ``ROLLBACK TO SAVEPOINT`` with 1305; the caller gets the deadlock (retried), as oslo.db's
  ``exc_filters.register_engine`` keeps it as the "rollback cause";

* a pool checkout that waits more than ``pool_timeout`` seconds raises ``ServiceUnavailable``
  (503 ``placement.db.pool_exhausted``) instead of hanging (``GuardedQueuePool``);
* a pooled connection idle for ``PING_IDLE_AFTER`` seconds or more is pinged when checked out,
  and the pool is recycled when the ping finds it dead (so the first request after a database
  restart or a dropped idle connection gets a fresh connection, as with SQLAlchemy's
  ``pool_pre_ping``); a connection checked in less than that ago is used without the extra
  round trip (under load every checkout: the ping was a sixth of a write's round trips). Should
  such a connection be dead after all, its statement fails with ``placement.db.unavailable``
  and the whole pool is recycled, as for any disconnect.

Why not oslo.db itself: its ``exc_filters`` match driver messages with regular expressions
and know neither PostgreSQL's serialization failure (40001) and administrator shutdown
(57P01) nor MariaDB's 1317 and 1180, and oslo.db 18 brings ``testresources`` and
``testscenarios`` into the service's runtime dependencies. The table below follows its
classes (``DBDeadlock``, ``DBConsistencyError``, ``DBConnectionError``) by error number.

Integrity errors (duplicate names and the like) pass through untouched: services turn them into
409s. ``api/db_retry.py`` re-runs a whole request (one transaction) on
``RetryableDatabaseError``, as oslo.db's ``wrap_db_retry(retry_on_deadlock=True)`` re-runs a DB
API function.
"""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine
from sqlalchemy.pool import QueuePool

from placement_numa.errors import ServiceUnavailable

__all__ = [
    "PING_IDLE_AFTER",
    "DatabaseOptions",
    "RetryableDatabaseError",
    "GuardedQueuePool",
    "classify",
    "install",
    "unavailable",
]

# SQLSTATEs (PostgreSQL) and error numbers (MariaDB/MySQL).
_PG_RETRY = {"40001", "40P01"}
_PG_TIMEOUT = {"57014", "55P03"}
_PG_UNAVAILABLE = {"57P01", "57P02", "57P03", "53300", "08000", "08001", "08003", "08004", "08006"}
_MY_RETRY = {1020, 1180, 1213, 1305, 1317}
_MY_TIMEOUT = {1205, 1969, 3024}
_MY_UNAVAILABLE = {1040, 1047, 1053, 1927, 2002, 2003, 2006, 2013, 2014, 2045, 2055, 4031}


PING_IDLE_AFTER = 1.0  # seconds a pooled connection may idle before it is pinged on checkout
_CHECKED_IN = "placement_numa.checked_in_at"
_ROLLBACK_CAUSE = "placement_numa.savepoint_rollback_cause"


@dataclass(frozen=True, slots=True)
class DatabaseOptions:
    """Timeouts and retry-after of one process (seconds; ``None`` disables a timeout)."""

    statement_timeout: float | None = 30.0
    lock_timeout: float | None = 10.0
    retry_after: int = 2


class RetryableDatabaseError(ServiceUnavailable):
    """A transaction the database rolled back as a deadlock victim or serialization failure:
    retrying the whole transaction is safe. A 503 only when the retries are spent."""

    default_code = "placement.db.retries_exhausted"


def unavailable(detail: str, code: str, retry_after: int) -> ServiceUnavailable:
    """A ``ServiceUnavailable`` (503) with ``Retry-After: retry_after``."""
    return ServiceUnavailable(detail, code=code, headers={"retry-after": str(retry_after)})


def classify(orig: BaseException | None) -> str | None:
    """``"retry"``, ``"timeout"``, ``"unavailable"`` or ``None`` for a DB-API exception."""
    if orig is None:
        return None
    sqlstate = getattr(orig, "sqlstate", None)
    if type(orig).__module__.startswith("psycopg") and isinstance(sqlstate, str):
        if sqlstate in _PG_RETRY:
            return "retry"
        if sqlstate in _PG_TIMEOUT:
            return "timeout"
        if sqlstate in _PG_UNAVAILABLE or sqlstate.startswith("08"):
            return "unavailable"
        return None
    if type(orig).__module__.startswith("sqlite3"):
        return "timeout" if "locked" in str(orig) else None  # busy timeout ran out
    args: tuple[Any, ...] = getattr(orig, "args", ())
    number = args[0] if args and isinstance(args[0], int) else None
    if number in _MY_RETRY:
        return "retry"
    if number in _MY_TIMEOUT:
        return "timeout"
    if number in _MY_UNAVAILABLE:
        return "unavailable"
    return None


class _ResetOnLostConnection(logging.Filter):
    """One warning line, no traceback, when the pool's reset (the rollback on check-in) finds
    the connection already lost: a database node killed or failing over (Galera, a PostgreSQL
    switch-over). SQLAlchemy logs that as an error with the whole traceback, although the pool
    then invalidates the connection and the request that needs it answers 503 or is retried."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Shorten the record in place (always kept)."""
        error = record.exc_info[1] if record.exc_info else None
        if error is not None and str(record.msg).startswith("Exception during reset"):
            record.msg = f"{record.msg}: {type(error).__name__}: {error}"
            record.args = ()
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


class GuardedQueuePool(QueuePool):
    """``QueuePool`` whose checkout timeout is a 503 (``placement.db.pool_exhausted``)."""

    retry_after = 2

    def _do_get(self) -> Any:
        try:
            return super()._do_get()
        except sa_exc.TimeoutError:
            raise unavailable(
                f"All {self.size()} + {self._max_overflow} database connections of this worker"
                f" are busy and none came free within {self._timeout:g} s"
                " ([placement_database] max_pool_size, max_overflow, pool_timeout).",
                "placement.db.pool_exhausted",
                self.retry_after,
            ) from None


# SQLAlchemy's pool logs through the logger named after the pool's class.
logging.getLogger(f"{GuardedQueuePool.__module__}.{GuardedQueuePool.__name__}").addFilter(
    _ResetOnLostConnection()
)


def _session_statements(dialect: str, options: DatabaseOptions) -> list[str]:
    statements: list[str] = []
    if dialect == "postgresql":
        if options.statement_timeout:
            statements.append(f"SET statement_timeout = {int(options.statement_timeout * 1000)}")
        if options.lock_timeout:
            statements.append(f"SET lock_timeout = {int(options.lock_timeout * 1000)}")
    elif dialect == "mysql":
        if options.statement_timeout:  # MariaDB's name; MySQL's differs (set per connection)
            statements.append(f"SET SESSION max_statement_time = {options.statement_timeout:g}")
        if options.lock_timeout:
            seconds = max(1, round(options.lock_timeout))
            statements.append(f"SET SESSION innodb_lock_wait_timeout = {seconds}")
    return statements


def install(engine: Engine, options: DatabaseOptions) -> None:
    """Hook ``engine``: session timeouts on connect, driver errors translated (see the module
    docstring). SQLite gets the translation only (its busy timeout is set by ``make_engine``)."""
    statements = _session_statements(engine.dialect.name, options)
    if isinstance(engine.pool, GuardedQueuePool):
        engine.pool.retry_after = options.retry_after

    if statements:

        @event.listens_for(engine, "connect")
        def _set_timeouts(dbapi_conn: Any, _record: Any) -> None:
            cursor = dbapi_conn.cursor()
            try:
                for statement in statements:
                    if "max_statement_time" in statement and not _is_mariadb(dbapi_conn):
                        millis = int((options.statement_timeout or 0) * 1000)
                        statement = f"SET SESSION max_execution_time = {millis}"
                    cursor.execute(statement)
            finally:
                cursor.close()
            if engine.dialect.name == "postgresql":
                dbapi_conn.commit()  # psycopg opened a transaction for the SETs

    if isinstance(engine.pool, QueuePool):
        _ping_idle_connections(engine)

    _keep_savepoint_rollback_cause(engine)

    @event.listens_for(engine, "handle_error", retval=True)
    def _translate(context: Any) -> BaseException | None:
        if getattr(context, "is_pre_ping", False):
            return None  # let the pool's pre-ping reconnect
        original = context.original_exception
        kind = classify(original)
        if kind is None and context.is_disconnect:
            kind = "unavailable"
        if (
            kind is None
            and context.connection is None
            and isinstance(
                context.sqlalchemy_exception, (sa_exc.OperationalError, sa_exc.InterfaceError)
            )
        ):
            kind = "unavailable"  # failed to connect at all
        if kind == "unavailable":
            context.is_disconnect = True  # invalidate: the pool reconnects (oslo.db does too)
        cause = _rollback_cause(context.connection)
        if isinstance(cause, ServiceUnavailable) and kind in (None, "retry"):
            return cause  # the savepoint's rollback failed because of it (see above)
        return _translated(kind, original, options)


def _translated(
    kind: str | None, original: BaseException | None, options: DatabaseOptions
) -> ServiceUnavailable | None:
    """The domain error of a ``classify`` kind (``None`` for ``None``)."""
    if kind == "retry":
        return RetryableDatabaseError(
            f"The database aborted the transaction ({_short(original)}) and retries were"
            " exhausted.",
            headers={"retry-after": str(options.retry_after), "x-placement-retryable": "1"},
        )
    if kind == "timeout":
        return unavailable(
            "A database statement or lock wait exceeded its timeout"
            " ([placement_database] statement_timeout, lock_timeout).",
            "placement.db.timeout",
            options.retry_after,
        )
    if kind == "unavailable":
        return unavailable(
            "The database is unavailable.", "placement.db.unavailable", options.retry_after
        )
    return None


def _keep_savepoint_rollback_cause(engine: Engine) -> None:
    """Remember, on the connection, the exception that is rolling a savepoint back, until the
    transaction ends or the connection is checked in (oslo.db's ``register_engine`` does the
    same), so that ``_translate`` can raise it again if the ``ROLLBACK TO SAVEPOINT`` fails."""

    @event.listens_for(engine, "rollback_savepoint")
    def _remember(conn: Any, _name: Any, _context: Any) -> None:
        cause = sys.exc_info()[1]
        if cause is not None and not conn.invalidated:
            conn.info[_ROLLBACK_CAUSE] = cause

    @event.listens_for(engine, "rollback")
    @event.listens_for(engine, "commit")
    def _forget(conn: Any) -> None:
        if not conn.invalidated:
            conn.info.pop(_ROLLBACK_CAUSE, None)

    @event.listens_for(engine, "checkin")
    def _forget_on_checkin(_dbapi_conn: Any, record: Any) -> None:
        if record is not None:
            record.info.pop(_ROLLBACK_CAUSE, None)


def _rollback_cause(conn: Any) -> BaseException | None:
    """The exception a savepoint of ``conn`` is being rolled back for (taken off), if any."""
    if conn is None or conn.closed or conn.invalidated:
        return None
    cause: BaseException | None = conn.info.pop(_ROLLBACK_CAUSE, None)
    return cause


def _ping_idle_connections(engine: Engine) -> None:
    """Ping a pooled connection on checkout when it idled ``PING_IDLE_AFTER`` seconds or more;
    a dead one recycles the pool (``InvalidatePoolError``: SQLAlchemy reconnects and checks out
    again, as its ``pool_pre_ping`` does)."""
    dialect = engine.dialect

    @event.listens_for(engine.pool, "checkin")
    def _checked_in(_dbapi_conn: Any, record: Any) -> None:
        if record is not None:
            record.info[_CHECKED_IN] = time.monotonic()

    @event.listens_for(engine.pool, "checkout")
    def _ping_if_idle(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        since = record.info.get(_CHECKED_IN)
        if since is None or time.monotonic() - since < PING_IDLE_AFTER:
            return  # a new connection, or one in use a moment ago
        try:
            dialect.do_ping(dbapi_conn)
        except dialect.loaded_dbapi.Error as exc:
            if dialect.is_disconnect(exc, dbapi_conn, None):
                raise sa_exc.InvalidatePoolError() from exc
            raise


def _is_mariadb(dbapi_conn: Any) -> bool:
    info = getattr(dbapi_conn, "get_server_info", None)
    return bool(info and "mariadb" in str(info()).lower())


def _short(exc: BaseException | None) -> str:
    text = str(exc).splitlines()[0] if exc is not None and str(exc) else type(exc).__name__
    return text[:200]
