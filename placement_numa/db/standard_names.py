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
        conn.execute(insert(resource_classes), new_rcs)
    return len(new_traits), len(new_rcs)
