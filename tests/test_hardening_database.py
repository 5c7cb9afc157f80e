"""Issue 10, items 5, 7 and 8: database outages, timeouts, pool exhaustion, bounded retries.

Real databases throughout. An outage is made with a loopback TCP proxy between the app and the
real PostgreSQL / MariaDB server (``tests/tcp_proxy.py``, ports 19010-19019), cut and restored;
deadlocks and serialization failures are raised by the real server from a trigger (a sequence,
which transactions do not roll back, counts the attempts), so the whole request path, the
driver's error and the retry are real.
"""

from __future__ import annotations

import time
import uuid as uuidlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from placement_numa.app import create_app, database_for
from placement_numa.db import resilience
from placement_numa.errors import ServiceUnavailable
from placement_numa.settings import Settings
from tests.backends import TestDatabase
from tests.conftest import PlacementAPI
from tests.factories import create_provider
from tests.live_server import free_port
from tests.tcp_proxy import TcpProxy

HANG_BOUND_S = 30.0
_PORTS = {"postgresql": 19010, "mysql": 19011}


def _server_only(test_database: TestDatabase) -> None:
    if test_database.backend == "sqlite":
        pytest.skip("needs a database server")


def _client(settings: Settings) -> Iterator[tuple[PlacementAPI, Any]]:
    app = create_app(settings)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield PlacementAPI(client), app
    app.state.database.dispose()


def _error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text[:500]
    error: dict[str, Any] = response.json()["errors"][0]
    assert error["code"] == code
    return error


@pytest.fixture
def proxied(test_database: TestDatabase) -> Iterator[tuple[PlacementAPI, TcpProxy]]:
    """The app on ``test_database`` through a proxy the test can cut."""
    _server_only(test_database)
    url = make_url(test_database.url)
    port = free_port(_PORTS[test_database.backend])
    proxy = TcpProxy(port, url.port or (5432 if test_database.backend == "postgresql" else 3306))
    proxied_url = url.set(port=port).render_as_string(hide_password=False)
    settings = Settings(
        database_url=proxied_url, auto_migrate=False, retry_after=3, auth_strategy="noauth2"
    )
    try:
        for api, _app in _client(settings):
            yield api, proxy
    finally:
        proxy.close()


def test_outage_is_503_with_retry_after_and_recovers(
    proxied: tuple[PlacementAPI, TcpProxy],
) -> None:
    api, proxy = proxied
    assert api.get("/resource_providers").status_code == 200
    assert api.get("/healthcheck").text == "OK"
    proxy.cut()
    started = time.monotonic()
    for response in (
        api.get("/resource_providers"),
        api.post("/resource_providers", json={"name": "during-outage"}),
        api.get("/allocation_candidates?resources=VCPU:1"),
    ):
        error = _error(response, 503, "placement.db.unavailable")
        assert response.headers["retry-after"] == "3"
        assert error["status"] == 503
    health = api.get("/healthcheck", token=None)
    assert health.status_code == 503
    assert health.headers["retry-after"] == "3"
    assert "database: unavailable" in health.text
    assert api.get("/", token=None).status_code == 200  # the version document needs no database
    assert time.monotonic() - started < HANG_BOUND_S
    proxy.restore()
    assert api.get("/resource_providers").status_code == 200
    assert api.post("/resource_providers", json={"name": "after-outage"}).status_code == 200
    assert api.get("/healthcheck").status_code == 200


def test_idle_connection_killed_meanwhile_is_replaced_before_use(
    proxied: tuple[PlacementAPI, TcpProxy], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database dropped the pooled connections while the worker was idle (a restart, an
    idle timeout): the next request is still served, because an idle connection is pinged on
    checkout and a dead one recycles the pool."""
    monkeypatch.setattr(resilience, "PING_IDLE_AFTER", 0.2)
    api, proxy = proxied
    assert api.get("/resource_providers").status_code == 200
    proxy.cut()  # closes every connection
    proxy.restore()
    time.sleep(0.3)
    assert api.get("/resource_providers").status_code == 200
    assert api.post("/resource_providers", json={"name": "after-drop"}).status_code == 200


def test_healthcheck_shape(api: PlacementAPI) -> None:
    """oslo.middleware's convention: unauthenticated, ``OK`` in plain text, reasons in JSON."""
    create_provider(api, name="cn1")
    plain = api.get("/healthcheck", token=None)
    assert plain.status_code == 200
    assert plain.text == "OK"
    detailed = api.get("/healthcheck", token=None, headers={"accept": "application/json"})
    assert detailed.status_code == 200
    body = detailed.json()
    assert body["detailed"] is False
    assert body["reasons"][0] == "database: ok"
    assert body["reasons"][1].startswith("fleet snapshot: revision ")
    assert body["reasons"][1].endswith(" 1 providers")
    assert api.request("HEAD", "/healthcheck", token=None).status_code == 200
    assert api.post("/healthcheck", token=None).status_code == 405


def test_pool_exhausted_is_503(test_database: TestDatabase) -> None:
    _server_only(test_database)
    settings = Settings(
        database_url=test_database.url,
        auto_migrate=False,
        auth_strategy="noauth2",
        max_pool_size=1,
        max_overflow=0,
        pool_timeout=0.5,
    )
    for api, app in _client(settings):
        assert api.get("/resource_providers").status_code == 200
        with app.state.database.engine.connect():  # the worker's only connection, held
            started = time.monotonic()
            response = api.get("/resource_providers")
            assert time.monotonic() - started < HANG_BOUND_S
            _error(response, 503, "placement.db.pool_exhausted")
            assert "retry-after" in response.headers
        assert api.get("/resource_providers").status_code == 200


def test_lock_timeout_is_503(test_database: TestDatabase) -> None:
    """A request that waits on a row another transaction holds gives up after lock_timeout."""
    _server_only(test_database)
    settings = Settings(
        database_url=test_database.url, auto_migrate=False, lock_timeout=1, auth_strategy="noauth2"
    )
    for api, _app in _client(settings):
        rp = create_provider(api, name=f"locked-{uuidlib.uuid4().hex[:6]}")
        holder = create_engine(test_database.url)
        try:
            with holder.connect() as conn, conn.begin():
                conn.execute(
                    text("SELECT id FROM resource_providers WHERE uuid = :u FOR UPDATE"),
                    {"u": rp["uuid"]},
                )
                started = time.monotonic()
                response = api.put(
                    f"/resource_providers/{rp['uuid']}",
                    json={"name": "renamed"},
                )
                assert time.monotonic() - started < HANG_BOUND_S
                _error(response, 503, "placement.db.timeout")
        finally:
            holder.dispose()
        assert (
            api.put(f"/resource_providers/{rp['uuid']}", json={"name": "renamed"}).status_code
            == 200
        )


def test_statement_timeout_is_503(test_database: TestDatabase) -> None:
    """No statement runs longer than statement_timeout (also when its client went away)."""
    _server_only(test_database)
    settings = Settings(database_url=test_database.url, auto_migrate=False, statement_timeout=1)
    database = database_for(settings)
    sleep = "SELECT pg_sleep(5)" if test_database.backend == "postgresql" else "SELECT SLEEP(5)"
    try:
        started = time.monotonic()
        with pytest.raises(ServiceUnavailable) as raised, database.read() as conn:
            conn.execute(text(sleep))
        assert raised.value.code == "placement.db.timeout"
        assert time.monotonic() - started < 4.5
        with database.read() as conn:
            assert conn.execute(text("SELECT 1")).scalar() == 1
    finally:
        database.dispose()


# --- 8. bounded retries on deadlocks and serialization failures ------------------------------


_PG_TRIGGER = """
CREATE SEQUENCE {name}_seq;
CREATE FUNCTION {name}_fn() RETURNS trigger AS $$
BEGIN
  IF nextval('{name}_seq') <= {failures} THEN
    RAISE EXCEPTION 'could not serialize access (test)' USING ERRCODE = '{sqlstate}';
  END IF;
  RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER {name} BEFORE INSERT ON allocations FOR EACH ROW EXECUTE FUNCTION {name}_fn();
"""
_PG_DROP = """
DROP TRIGGER IF EXISTS {name} ON allocations;
DROP FUNCTION IF EXISTS {name}_fn();
DROP SEQUENCE IF EXISTS {name}_seq;
"""
_MY_TRIGGER = [
    "CREATE SEQUENCE {name}_seq NOCACHE",
    "CREATE TRIGGER {name} BEFORE INSERT ON allocations FOR EACH ROW BEGIN"
    " IF NEXTVAL({name}_seq) <= {failures} THEN"
    " SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213,"
    " MESSAGE_TEXT = 'Deadlock found when trying to get lock; try restarting transaction';"
    " END IF; END",
]
_MY_DROP = ["DROP TRIGGER IF EXISTS {name}", "DROP SEQUENCE IF EXISTS {name}_seq"]


def _install_failures(db: TestDatabase, failures: int, sqlstate: str) -> tuple[Any, str]:
    name = f"fail_{uuidlib.uuid4().hex[:8]}"
    engine = create_engine(db.url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        if db.backend == "postgresql":
            conn.exec_driver_sql(
                _PG_TRIGGER.format(name=name, failures=failures, sqlstate=sqlstate)
            )
        else:
            for statement in _MY_TRIGGER:
                conn.exec_driver_sql(statement.format(name=name, failures=failures))
    return engine, name


def _remove_failures(db: TestDatabase, engine: Any, name: str) -> None:
    with engine.connect() as conn:
        if db.backend == "postgresql":
            conn.exec_driver_sql(_PG_DROP.format(name=name))
        else:
            for statement in _MY_DROP:
                conn.exec_driver_sql(statement.format(name=name))
    engine.dispose()


def _claim(api: PlacementAPI, rp: str) -> Any:
    return api.put(
        f"/allocations/{uuidlib.uuid4()}",
        json={
            "allocations": {rp: {"resources": {"VCPU": 1}}},
            "project_id": "p",
            "user_id": "u",
            "consumer_generation": None,
            "consumer_type": "INSTANCE",
        },
    )


def _seeded(api: PlacementAPI) -> str:
    rp = create_provider(api, name=f"cn-{uuidlib.uuid4().hex[:6]}")["uuid"]
    response = api.put(
        f"/resource_providers/{rp}/inventories",
        json={"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}},
    )
    assert response.status_code == 200, response.text
    return rp


@pytest.mark.parametrize("sqlstate", ["40001", "40P01"], ids=["serialization", "deadlock"])
def test_retryable_failures_are_retried(
    api: PlacementAPI, test_database: TestDatabase, sqlstate: str
) -> None:
    """Two aborted attempts, then success: the client sees one 204 and one allocation."""
    _server_only(test_database)
    if test_database.backend == "mysql" and sqlstate != "40001":
        pytest.skip("MariaDB has one error for both (1213)")
    rp = _seeded(api)
    engine, name = _install_failures(test_database, 2, sqlstate)
    try:
        response = _claim(api, rp)
    finally:
        _remove_failures(test_database, engine, name)
    assert response.status_code == 204, response.text
    assert "x-placement-retryable" not in response.headers
    usages = api.get(f"/resource_providers/{rp}/usages").json()["usages"]
    assert usages == {"VCPU": 1}


def test_retries_are_bounded(api: PlacementAPI, test_database: TestDatabase) -> None:
    """A failure that never clears: 1 + db_max_retries (5) attempts, then 503 with
    Retry-After; nothing written."""
    _server_only(test_database)
    rp = _seeded(api)
    engine, name = _install_failures(test_database, 1000, "40001")
    try:
        started = time.monotonic()
        response = _claim(api, rp)
        assert time.monotonic() - started < HANG_BOUND_S
        with engine.connect() as conn:
            if test_database.backend == "postgresql":
                attempts = conn.exec_driver_sql(f"SELECT last_value FROM {name}_seq").scalar()
            else:
                attempts = (
                    conn.exec_driver_sql(f"SELECT next_not_cached_value FROM {name}_seq").scalar()
                    - 1
                )
    finally:
        _remove_failures(test_database, engine, name)
    _error(response, 503, "placement.db.retries_exhausted")
    assert "retry-after" in response.headers
    assert "x-placement-retryable" not in response.headers
    assert attempts == 6
    assert api.get(f"/resource_providers/{rp}/usages").json()["usages"] == {"VCPU": 0}


# --- 5. a client that gives up does not leave its SQL running ----------------------------------


def _running_queries(conn: Any, backend: str) -> int:
    if backend == "postgresql":
        sql = (
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND state = 'active' AND pid <> pg_backend_pid()"
            " AND query ILIKE '%resource_providers%'"
        )
    else:
        sql = (
            "SELECT count(*) FROM information_schema.processlist WHERE db = DATABASE()"
            " AND command = 'Query' AND id <> CONNECTION_ID()"
            " AND info LIKE '%resource_providers%'"
        )
    return int(conn.execute(text(sql)).scalar())


def _activity(conn: Any, backend: str) -> str:
    if backend != "postgresql":
        return "abandoned statement still running"
    rows = conn.execute(
        text(
            "SELECT state, wait_event_type, now() - query_start, query FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    ).all()
    return "abandoned statement still running: " + repr(rows)


def test_abandoned_request_leaves_no_sql_running(
    test_database: TestDatabase, tmp_path: Any
) -> None:
    """A client gives up on a write stuck behind a row lock: its statement is ended by
    lock_timeout (2 s here), not left waiting, and the write does not happen later."""
    from tests.live_server import LiveServer

    _server_only(test_database)
    port = 19021
    server = LiveServer(
        test_database.url,
        port,
        env={"PLACEMENT_NUMA_LOCK_TIMEOUT": "2", "PLACEMENT_NUMA_STATEMENT_TIMEOUT": "5"},
        log_path=tmp_path / "serve.log",
    )
    holder = create_engine(test_database.url)
    try:
        with server:
            with server.client() as client:
                name = f"abandoned-{uuidlib.uuid4().hex[:6]}"
                rp = client.post("/resource_providers", json={"name": name}).json()["uuid"]
            with holder.connect() as conn, conn.begin():
                conn.execute(
                    text("SELECT id FROM resource_providers WHERE uuid = :u FOR UPDATE"),
                    {"u": rp},
                )
                with server.client(timeout=0.5) as impatient, pytest.raises(httpx.ReadTimeout):
                    impatient.put(f"/resource_providers/{rp}", json={"name": "late"})
                # Autocommit: PostgreSQL keeps one pg_stat_activity snapshot per transaction.
                with holder.connect().execution_options(isolation_level="AUTOCOMMIT") as watcher:
                    assert _running_queries(watcher, test_database.backend) >= 1
                    deadline = time.monotonic() + 8
                    while _running_queries(watcher, test_database.backend):
                        assert time.monotonic() < deadline, _activity(
                            watcher, test_database.backend
                        )
                        time.sleep(0.2)
                time.sleep(1)  # keep the lock past the abandoned request's lock timeout
            with server.client() as client:
                assert client.get(f"/resource_providers/{rp}").json()["name"] == name
                assert client.get("/healthcheck").status_code == 200
    finally:
        holder.dispose()
