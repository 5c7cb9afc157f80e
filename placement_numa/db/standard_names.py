"""Synchronise standard traits and resource classes into the database at start-up."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import insert, select
from sqlalchemy.engine import Connection

from placement_numa.db.tables import resource_classes, traits
from placement_numa.names import standard_resource_classes, standard_traits

__all__ = ["sync_standard_names"]


def sync_standard_names(conn: Connection) -> tuple[int, int]:
    """Insert missing standard traits and resource classes; return how many of each were added.

    Standard resource class ids are their index in os-resource-classes (as in Placement). Runs in
    the caller's transaction; existing rows are never changed or removed.
    """
    now = datetime.now(UTC).replace(tzinfo=None)
    have_traits = set(conn.scalars(select(traits.c.name)))
    new_traits = [n for n in standard_traits() if n not in have_traits]
    if new_traits:
        conn.execute(insert(traits), [{"name": n, "created_at": now} for n in new_traits])
    have_rcs = set(conn.scalars(select(resource_classes.c.name)))
    new_rcs = [
        {"id": index, "name": name, "created_at": now}
        for index, name in enumerate(standard_resource_classes())
        if name not in have_rcs
    ]
    if new_rcs:
        if conn.dialect.name == "mysql" and any(row["id"] == 0 for row in new_rcs):
            _insert_keeping_id_zero(conn, new_rcs)
        else:
            conn.execute(insert(resource_classes), new_rcs)
    return len(new_traits), len(new_rcs)


def _insert_keeping_id_zero(conn: Connection, rows: list[dict[str, object]]) -> None:
    """MariaDB/MySQL: insert ``rows`` into ``resource_classes`` keeping VCPU's id 0. An adopted
    upstream database declares the id AUTO_INCREMENT, where an explicit 0 takes the next value
    (then 1, CUSTOM... collide) unless the session's ``sql_mode`` has NO_AUTO_VALUE_ON_ZERO; it
    is set for this insert and put back."""
    mode = conn.exec_driver_sql("SELECT @@SESSION.sql_mode").scalar()
    conn.exec_driver_sql(
        "SET SESSION sql_mode = CONCAT_WS(',', NULLIF(@@SESSION.sql_mode, ''),"
        " 'NO_AUTO_VALUE_ON_ZERO')"
    )
    try:
        conn.execute(insert(resource_classes), rows)
    finally:
        conn.exec_driver_sql("SET SESSION sql_mode = %s", (mode or "",))
