"""Bulk creation of resource providers with their inventories and traits (``POST
/resource_providers/batch``): a fixed handful of statements whatever the number of providers.

* ``taken``: which uuids and names already belong to a provider (one query);
* ``insert_providers``: one multi-row ``INSERT ... RETURNING id`` per tree level of the batch
  (a provider's parent is an existing provider or one of an earlier level), then one ``UPDATE``
  pointing each new root at itself;
* ``insert_inventories`` and ``insert_traits``: one multi-row ``INSERT`` each.

Multi-row: ``_insert_many`` sends an executemany with ``RETURNING``, which SQLAlchemy turns into
one ``INSERT ... VALUES (...), (...), ...`` per page of up to 1,000 rows (its "insertmanyvalues"),
on PostgreSQL, SQLite and MariaDB 10.5+; without ``RETURNING`` psycopg would run one statement
per row. Everything runs in the caller's write transaction and ``touch``-es the new providers,
so the change log makes the candidate engine load them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Table, insert, or_, select, update
from sqlalchemy.engine import Connection

from placement_numa.db.repositories import changes
from placement_numa.db.repositories.inventories import inventory_values
from placement_numa.db.repositories.providers import ProviderRow
from placement_numa.db.tables import inventories, resource_provider_traits
from placement_numa.db.tables import resource_providers as rp
from placement_numa.domain.inventory import InventoryFields

__all__ = ["ProviderInsert", "taken", "insert_providers", "insert_inventories", "insert_traits"]


@dataclass(frozen=True, slots=True)
class ProviderInsert:
    """A provider to create (canonical uuid); ``parent_uuid`` names an existing provider or one
    earlier in the batch, or is ``None`` for a new root."""

    uuid: str
    name: str
    parent_uuid: str | None


def taken(
    conn: Connection, uuids: Sequence[str], names: Sequence[str]
) -> tuple[set[str], set[str]]:
    """``(uuids, names)``: those of ``uuids`` and ``names`` that existing providers hold."""
    if not uuids and not names:
        return set(), set()
    rows = conn.execute(
        select(rp.c.uuid, rp.c.name).where(or_(rp.c.uuid.in_(uuids), rp.c.name.in_(names)))
    ).all()
    wanted_uuids, wanted_names = set(uuids), set(names)
    return (
        {u for u, _ in rows if u in wanted_uuids},
        {n for _, n in rows if n in wanted_names},
    )


def _insert_many(
    conn: Connection, table: Table, rows: list[dict[str, Any]], *returning: Any
) -> Any:
    """Insert ``rows`` as multi-row ``INSERT`` statements; returns the ``RETURNING`` rows (none on
    a backend without ``INSERT ... RETURNING``: the driver's executemany then)."""
    if not rows:
        return []
    if conn.dialect.insert_returning:
        columns = returning or tuple(table.primary_key.columns)
        return conn.execute(insert(table).returning(*columns), rows).all()
    conn.execute(insert(table), rows)
    return []


def _levels(new: Sequence[ProviderInsert], parents: Mapping[str, ProviderRow]) -> list[list[int]]:
    """Indexes of ``new`` by depth in the batch: 0 for a root or a child of an existing
    provider, one more than its parent's otherwise (its parent comes earlier)."""
    depth: dict[str, int] = {}
    levels: list[list[int]] = []
    for index, provider in enumerate(new):
        parent = provider.parent_uuid
        level = 0 if parent is None or parent in parents else depth[parent] + 1
        depth[provider.uuid] = level
        if level == len(levels):
            levels.append([])
        levels[level].append(index)
    return levels


def insert_providers(
    conn: Connection,
    new: Sequence[ProviderInsert],
    parents: Mapping[str, ProviderRow],
    now: datetime,
) -> list[ProviderRow]:
    """Insert ``new`` at generation 0, created at ``now``; ``parents`` holds the existing
    providers they name. Returns the rows as ``GET`` reads them, in the order of ``new``.

    The caller checked uuids and names are free and every parent exists or comes earlier; a
    concurrent writer taking one meanwhile makes an ``INSERT`` raise ``IntegrityError``.
    """
    ids: dict[str, int] = {}
    # uuid -> (parent id, parent uuid, root id, root uuid) of every new provider but new roots
    # until their own id is known
    tree: dict[str, tuple[int | None, str | None, int, str]] = {}
    new_roots: list[int] = []
    for level in _levels(new, parents):
        rows = []
        for index in level:
            provider = new[index]
            parent = provider.parent_uuid
            if parent is not None:
                if parent in parents:
                    above = parents[parent]
                    tree[provider.uuid] = (
                        above.id,
                        parent,
                        above.root_provider_id,
                        above.root_provider_uuid,
                    )
                else:  # earlier in the batch: inserted with an earlier level
                    _, _, parent_root_id, root_uuid = tree[parent]
                    tree[provider.uuid] = (ids[parent], parent, parent_root_id, root_uuid)
            known = tree.get(provider.uuid)
            parent_id = known[0] if known else None
            root_id = known[2] if known else None
            rows.append(
                {
                    "uuid": provider.uuid,
                    "name": provider.name,
                    "generation": 0,
                    "parent_provider_id": parent_id,
                    "root_provider_id": root_id,  # a new root: itself, set below
                    "created_at": now,
                    "updated_at": None,
                }
            )
        inserted = _insert_many(conn, rp, rows, rp.c.id, rp.c.uuid)
        if not inserted:  # no RETURNING: read the ids back
            inserted = conn.execute(
                select(rp.c.id, rp.c.uuid).where(rp.c.uuid.in_([r["uuid"] for r in rows]))
            ).all()
        ids.update({str(u): int(i) for i, u in inserted})
        for index in level:
            provider = new[index]
            if provider.parent_uuid is None:
                own = ids[provider.uuid]
                new_roots.append(own)
                tree[provider.uuid] = (None, None, own, provider.uuid)
    if new_roots:
        conn.execute(update(rp).where(rp.c.id.in_(new_roots)).values(root_provider_id=rp.c.id))
    changes.touch(conn, ids.values())
    return [
        ProviderRow(
            id=ids[p.uuid],
            uuid=p.uuid,
            name=p.name,
            generation=0,
            parent_provider_uuid=tree[p.uuid][1],
            root_provider_uuid=tree[p.uuid][3],
            parent_provider_id=tree[p.uuid][0],
            root_provider_id=tree[p.uuid][2],
            created_at=now,
            updated_at=None,
        )
        for p in new
    ]


def insert_inventories(
    conn: Connection, rows: Iterable[tuple[int, int, InventoryFields]], now: datetime
) -> None:
    """Insert ``(provider id, resource class id, fields)`` inventory rows (new providers)."""
    rows = list(rows)
    values = [
        {
            "resource_provider_id": provider_id,
            "resource_class_id": class_id,
            "created_at": now,
            **inventory_values(fields),
        }
        for provider_id, class_id, fields in rows
    ]
    changes.touch(conn, {provider_id for provider_id, _, _ in rows})
    _insert_many(conn, inventories, values, inventories.c.id)


def insert_traits(conn: Connection, rows: Iterable[tuple[int, int]], now: datetime) -> None:
    """Insert ``(provider id, trait id)`` rows (new providers; each pair once)."""
    rpt = resource_provider_traits
    rows = list(rows)
    values = [
        {"resource_provider_id": provider_id, "trait_id": trait_id, "created_at": now}
        for provider_id, trait_id in rows
    ]
    changes.touch(conn, {provider_id for provider_id, _ in rows})
    _insert_many(conn, rpt, values, rpt.c.resource_provider_id)
