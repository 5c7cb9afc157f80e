"""Aggregates and provider-aggregate links: aggregates are created on first use, never deleted
(as in Placement)."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from placement_numa.db.repositories import changes
from placement_numa.db.repositories.keys import insert_or_find_id
from placement_numa.db.repositories.providers import utcnow
from placement_numa.db.tables import placement_aggregates as aggs
from placement_numa.db.tables import resource_provider_aggregates as rpa

__all__ = ["aggregate_ids", "ensure_aggregates", "provider_aggregates", "set_provider_aggregates"]


def aggregate_ids(conn: Connection, uuids: Iterable[str]) -> dict[str, int]:
    """``{uuid: id}`` for the aggregates among ``uuids`` that exist (unknown ones absent)."""
    wanted = sorted(set(uuids))
    if not wanted:
        return {}
    rows = conn.execute(select(aggs.c.uuid, aggs.c.id).where(aggs.c.uuid.in_(wanted)))
    return {uuid: int(id_) for uuid, id_ in rows}


def ensure_aggregates(conn: Connection, uuids: Iterable[str]) -> dict[str, int]:
    """``{uuid: id}`` for ``uuids``, creating the aggregates that do not exist yet (safe against
    a concurrent creation of the same uuid). New aggregates are created in the given order."""
    wanted = list(dict.fromkeys(uuids))
    found = aggregate_ids(conn, wanted)
    for uuid in wanted:
        if uuid in found:
            continue
        found[uuid] = insert_or_find_id(conn, aggs, "uuid", uuid, created_at=utcnow())
    return found


def provider_aggregates(conn: Connection, provider_id: int) -> list[str]:
    """Uuids of the aggregates ``provider_id`` is a member of, in the order they were created."""
    rows = conn.execute(
        select(aggs.c.uuid)
        .select_from(aggs.join(rpa, rpa.c.aggregate_id == aggs.c.id))
        .where(rpa.c.resource_provider_id == provider_id)
        .order_by(aggs.c.id)
    )
    return [uuid for (uuid,) in rows]


def set_provider_aggregates(conn: Connection, provider_id: int, uuids: Iterable[str]) -> None:
    """Make ``uuids`` exactly the aggregates of ``provider_id`` (creating unknown ones). Does not
    touch the provider generation (the service decides)."""
    changes.touch(conn, [provider_id])
    wanted = ensure_aggregates(conn, uuids)
    current = {
        int(agg_id)
        for (agg_id,) in conn.execute(
            select(rpa.c.aggregate_id).where(rpa.c.resource_provider_id == provider_id)
        )
    }
    target = set(wanted.values())
    stale = sorted(current - target)
    if stale:
        conn.execute(
            delete(rpa).where(
                rpa.c.resource_provider_id == provider_id, rpa.c.aggregate_id.in_(stale)
            )
        )
    now = utcnow()
    for agg_id in sorted(target - current):
        try:
            with conn.begin_nested():
                conn.execute(
                    insert(rpa).values(
                        resource_provider_id=provider_id, aggregate_id=agg_id, created_at=now
                    )
                )
        except IntegrityError:
            pass  # another writer linked it meanwhile: the link is there, as wanted
