"""Issue 23: a transaction the server aborts inside a savepoint is retried, never a 500.

A real InnoDB deadlock on the test MariaDB: the write transaction (``Database.write()``) holds
a row lock and waits, inside the savepoint of ``keys.insert_or_find_id``, on a duplicate key
another transaction inserted; that transaction then asks for the row lock. InnoDB picks the
lighter transaction, ours, as the victim and rolls it back whole, so the ``ROLLBACK TO
SAVEPOINT`` that follows fails with 1305 (the same happens on Galera when a replicated write
set brute-force aborts a local transaction). The caller must see the deadlock, retryable,
not the 1305.
"""

from __future__ import annotations

import threading
import time
import uuid as uuidlib

import pytest
from sqlalchemy import create_engine, insert, select, text

from placement_numa.app import database_for
from placement_numa.db import tables as t
from placement_numa.db.repositories.keys import insert_or_find_id
from placement_numa.db.repositories.providers import utcnow
from placement_numa.db.resilience import RetryableDatabaseError, classify
from placement_numa.errors import ServiceUnavailable
from placement_numa.settings import Settings
from tests.backends import TestDatabase

HOLDER_ROWS = 50  # the other transaction's weight: InnoDB rolls back the lighter one


def test_deadlock_inside_savepoint_is_retryable(test_database: TestDatabase) -> None:
    if test_database.backend != "mysql":
        pytest.skip("MariaDB rolls the whole transaction back under the savepoint")
    tag = uuidlib.uuid4().hex[:8]
    anchor, contested = f"anchor-{tag}", f"contested-{tag}"
    database = database_for(Settings(database_url=test_database.url, lock_timeout=20))
    holder = create_engine(test_database.url)
    try:
        with database.write() as conn:
            conn.execute(insert(t.projects).values(external_id=anchor, created_at=utcnow()))
        outcome: list[BaseException | None] = []

        def victim() -> None:
            try:
                with database.write() as conn:
                    conn.execute(
                        select(t.projects.c.id)
                        .where(t.projects.c.external_id == anchor)
                        .with_for_update()
                    )
                    insert_or_find_id(conn, t.users, "external_id", contested, created_at=utcnow())
                outcome.append(None)
            except BaseException as exc:  # noqa: BLE001 - the test inspects it
                outcome.append(exc)

        with holder.connect() as other, other.begin():
            other.execute(
                insert(t.users),
                [
                    {"external_id": f"{contested}{'' if i == 0 else f'-{i}'}", "created_at": None}
                    for i in range(HOLDER_ROWS)
                ],
            )
            thread = threading.Thread(target=victim)
            thread.start()
            time.sleep(1.0)  # the victim now waits on the contested key
            other.execute(
                text("SELECT id FROM projects WHERE external_id = :a FOR UPDATE"), {"a": anchor}
            )
            thread.join(30)
            other.rollback()
        assert outcome, "the write transaction did not finish"
        raised = outcome[0]
        assert isinstance(raised, RetryableDatabaseError), repr(raised)
        assert "1213" in str(raised)
    finally:
        holder.dispose()
        database.dispose()


@pytest.mark.parametrize(
    ("number", "kind"),
    [
        (1213, "retry"),
        (1305, "retry"),
        (1317, "retry"),
        (1180, "retry"),
        (1020, "retry"),
        (1205, "timeout"),
        (1969, "timeout"),
        (2013, "unavailable"),
        (2006, "unavailable"),
        (1047, "unavailable"),
        (1927, "unavailable"),
        (1062, None),
    ],
    ids=str,
)
def test_mariadb_error_numbers(number: int, kind: str | None) -> None:
    """The classification table, by the driver's error number (``pymysql`` errors carry it as
    their first argument)."""
    import pymysql

    assert classify(pymysql.err.OperationalError(number, "message")) == kind


def test_retryable_is_a_503() -> None:
    assert issubclass(RetryableDatabaseError, ServiceUnavailable)
