"""Resource provider rows: lookup by uuid, generation compare-and-swap, row locks, and the
create / update / delete statements of ``/resource_providers`` (the filtered list:
``provider_filters``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Select,
    bindparam,
    delete,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Connection
from sqlalchemy.orm import aliased

from placement_numa.db.repositories import changes
from placement_numa.db.repositories.keys import inserted_id
from placement_numa.db.tables import (
    allocations,
    inventories,
    resource_provider_aggregates,
    resource_provider_traits,
)
from placement_numa.db.tables import resource_providers as rp
from placement_numa.errors import ConcurrentUpdate, NotFound

__all__ = [
    "ProviderRow",
    "PROVIDERS_SELECT",
    "utcnow",
    "get_by_uuid",
    "require_by_uuid",
    "get_by_id",
    "increment_generation",
    "lock_providers",
    "lock_generations",
    "bump_generations",
    "get_by_uuids",
    "try_lock_providers",
    "insert_provider",
    "update_provider",
    "set_root",
    "subtree_ids",
    "tree_ids",
    "has_children",
    "has_allocations",
    "delete_provider",
    "uuid_or_name_taken",
]


def utcnow() -> datetime:
    """Naive UTC now, as stored in ``created_at``/``updated_at``."""
    return datetime.now(UTC).replace(tzinfo=None, microsecond=0)


@dataclass(frozen=True, slots=True)
class ProviderRow:
    """One resource provider with its parent and root uuids (``None`` for a root's parent)."""

    id: int
    uuid: str
    name: str
    generation: int
    parent_provider_uuid: str | None
    root_provider_uuid: str
    parent_provider_id: int | None
    root_provider_id: int
    created_at: datetime | None
    updated_at: datetime | None


def _build_select_providers() -> Select[Any]:
    """The provider columns with parent and root uuids; built once (``PROVIDERS_SELECT``: a
    ``Select`` is immutable, and building the aliases took a fifth of a provider creation's
    CPU)."""
    parent = aliased(rp, name="parent")
    root = aliased(rp, name="root")
    return (
        select(
            rp.c.id,
            rp.c.uuid,
            rp.c.name,
            rp.c.generation,
            parent.c.uuid.label("parent_provider_uuid"),
            root.c.uuid.label("root_provider_uuid"),
            rp.c.parent_provider_id,
            rp.c.root_provider_id,
            rp.c.created_at,
            rp.c.updated_at,
        )
        .select_from(rp)
        .outerjoin(parent, parent.c.id == rp.c.parent_provider_id)
        .outerjoin(root, root.c.id == rp.c.root_provider_id)
    )


# Every provider column in ProviderRow's field order (also the base of ``provider_filters``).
PROVIDERS_SELECT = _build_select_providers()
# The statements of the write paths, built once (building a statement and computing its cache
# key on every execution cost about as much CPU as running it); values are bind parameters.
_BY_UUID = PROVIDERS_SELECT.where(rp.c.uuid == bindparam("uuid"))
_BY_UUIDS = PROVIDERS_SELECT.where(rp.c.uuid.in_(bindparam("uuids", expanding=True)))
_BY_ID = PROVIDERS_SELECT.where(rp.c.id == bindparam("id"))
_CAS_GENERATION = (
    update(rp)
    .where(rp.c.id == bindparam("b_id"), rp.c.generation == bindparam("b_seen"))
    .values(generation=bindparam("b_new"), updated_at=bindparam("b_now"))
)
_IDS_IN = rp.c.id.in_(bindparam("ids", expanding=True))
_LOCK = select(rp.c.id).where(_IDS_IN).order_by(rp.c.id).with_for_update()
_TRY_LOCK = select(rp.c.id).where(_IDS_IN).order_by(rp.c.id).with_for_update(skip_locked=True)
_GENERATIONS = select(rp.c.id, rp.c.uuid, rp.c.generation).where(_IDS_IN)
_LOCK_GENERATIONS = _GENERATIONS.order_by(rp.c.id).with_for_update()
_BUMP_GENERATIONS = (
    update(rp).where(_IDS_IN).values(generation=rp.c.generation + 1, updated_at=bindparam("b_now"))
)


def get_by_uuid(conn: Connection, uuid: str) -> ProviderRow | None:
    """The provider with ``uuid``, or ``None``."""
    row = conn.execute(_BY_UUID, {"uuid": uuid}).first()
    return ProviderRow(*row) if row else None


def require_by_uuid(
    conn: Connection, uuid: str, *, suffix: str = "", error: type[NotFound] = NotFound
) -> ProviderRow:
    """The provider with ``uuid``.

    Raises ``error`` (404) with Placement's "No resource provider with uuid ... found"
    (+ ``suffix``) when absent: plain ``NotFound`` (``placement.undefined_code``) as on
    Placement's provider routes; callers pass ``ResourceProviderNotFound`` where the specific
    code applies.
    """
    provider = get_by_uuid(conn, uuid)
    if provider is None:
        raise error(f"No resource provider with uuid {uuid} found{suffix}")
    return provider


def get_by_uuids(conn: Connection, uuids: Iterable[str]) -> dict[str, ProviderRow]:
    """``{uuid: ProviderRow}`` of the providers among ``uuids`` that exist (one query)."""
    wanted = sorted(set(uuids))
    if not wanted:
        return {}
    rows = conn.execute(_BY_UUIDS, {"uuids": wanted})
    return {row[1]: ProviderRow(*row) for row in rows}


def get_by_id(conn: Connection, provider_id: int) -> ProviderRow | None:
    """The provider with internal id ``provider_id``, or ``None``."""
    row = conn.execute(_BY_ID, {"id": provider_id}).first()
    return ProviderRow(*row) if row else None


def increment_generation(
    conn: Connection, provider: ProviderRow, expected: int | None = None
) -> int:
    """Compare-and-swap the provider's generation: ``expected`` (default: the generation read)
    must still be current. Returns the new generation; raises ``ConcurrentUpdate`` (409,
    ``placement.concurrent_update``) when another writer moved it."""
    seen = provider.generation if expected is None else expected
    result = conn.execute(
        _CAS_GENERATION,
        {"b_id": provider.id, "b_seen": seen, "b_new": seen + 1, "b_now": utcnow()},
    )
    if result.rowcount != 1:
        raise ConcurrentUpdate(
            f"resource provider generation conflict: {provider.uuid} is no longer at generation"
            f" {seen}. Please update the generation and try again."
        )
    return seen + 1


def lock_providers(conn: Connection, provider_ids: list[int]) -> None:
    """``SELECT ... FOR UPDATE`` the provider rows (sorted, to avoid deadlocks).

    PostgreSQL and MariaDB hold the locks until commit, which serialises concurrent capacity
    checks on the same providers; SQLite's ``BEGIN IMMEDIATE`` already serialises writers.
    """
    if not provider_ids or conn.dialect.name == "sqlite":
        return
    conn.execute(_LOCK, {"ids": sorted(set(provider_ids))}).all()


def lock_generations(
    conn: Connection,
    provider_ids: Iterable[int],
    read: Mapping[int, ProviderRow] | None = None,
) -> dict[int, tuple[str, int]]:
    """Lock the provider rows as ``lock_providers`` does and read them in the same statement:
    ``{id: (uuid, generation)}`` of those that exist. The generations stay current until the
    transaction ends (SQLite: its writers are serialised by ``BEGIN IMMEDIATE``). ``read``:
    providers this transaction read already, by id; on SQLite, where no other writer can commit
    once the transaction began, their generations are current and are not read again."""
    wanted = sorted(set(provider_ids))
    if not wanted:
        return {}
    if read is not None and conn.dialect.name == "sqlite" and all(i in read for i in wanted):
        return {i: (read[i].uuid, read[i].generation) for i in wanted}
    statement = _GENERATIONS if conn.dialect.name == "sqlite" else _LOCK_GENERATIONS
    return {int(i): (str(u), int(g)) for i, u, g in conn.execute(statement, {"ids": wanted})}


def bump_generations(conn: Connection, locked: dict[int, tuple[str, int]]) -> dict[str, int]:
    """Increment the generation of every provider in ``locked`` (``lock_generations``'s answer,
    read under the row locks this transaction still holds) in one ``UPDATE``; returns
    ``{uuid: new_generation}``. Raises ``ConcurrentUpdate`` (409) if a row moved anyway."""
    if not locked:
        return {}
    result = conn.execute(_BUMP_GENERATIONS, {"ids": sorted(locked), "b_now": utcnow()})
    if result.rowcount != len(locked):
        raise ConcurrentUpdate(
            "resource provider generation conflict: a provider changed while locked."
            " Please update the generation and try again."
        )
    changes.note_generations(conn, {i: generation + 1 for i, (_, generation) in locked.items()})
    return {uuid: generation + 1 for uuid, generation in locked.values()}


def try_lock_providers(conn: Connection, provider_ids: list[int]) -> bool:
    """Lock the provider rows like ``lock_providers`` without waiting: ``SELECT ... FOR UPDATE
    SKIP LOCKED`` (PostgreSQL, MariaDB 10.6+). True when every row is now locked by this
    transaction; False when another transaction holds some of them (the rows that were free stay
    locked until this transaction or its savepoint ends). SQLite: always True (its writers are
    serialised by ``BEGIN IMMEDIATE``)."""
    wanted = sorted(set(provider_ids))
    if not wanted or conn.dialect.name == "sqlite":
        return True
    got = conn.execute(_TRY_LOCK, {"ids": wanted}).all()
    return len(got) == len(wanted)


def uuid_or_name_taken(conn: Connection, *, uuid: str | None, name: str | None) -> list[str]:
    """Which of ``uuid`` / ``name`` already belong to a provider: ``["uuid: ...", "name: ..."]``
    (Placement's wording in its duplicate message), empty when neither."""
    conditions = []
    if uuid is not None:
        conditions.append(rp.c.uuid == uuid)
    if name is not None:
        conditions.append(rp.c.name == name)
    if not conditions:
        return []
    found = conn.execute(select(rp.c.uuid, rp.c.name).where(or_(*conditions)).limit(2)).all()
    taken = []
    if uuid is not None and any(row_uuid == uuid for row_uuid, _ in found):
        taken.append(f"uuid: {uuid}")
    if name is not None and any(row_name == name for _, row_name in found):
        taken.append(f"name: {name}")
    return taken


def insert_provider(
    conn: Connection, *, uuid: str, name: str, parent: ProviderRow | None
) -> ProviderRow:
    """Insert a provider at generation 0 under ``parent`` (its root is the parent's root) or as a
    new root. Raises ``IntegrityError`` on a duplicate uuid or name (the caller translates it);
    the statement runs in a savepoint so the caller's transaction stays usable."""
    now = utcnow()
    with conn.begin_nested():
        result = conn.execute(
            insert(rp).values(
                uuid=uuid,
                name=name,
                generation=0,
                parent_provider_id=parent.id if parent else None,
                root_provider_id=parent.root_provider_id if parent else None,
                created_at=now,
                updated_at=None,
            )
        )
        new_id = inserted_id(result)
        if parent is None:
            conn.execute(update(rp).where(rp.c.id == new_id).values(root_provider_id=new_id))
    changes.touch(conn, [new_id])
    created = get_by_id(conn, new_id)
    assert created is not None
    return created


def update_provider(
    conn: Connection, provider_id: int, *, name: str, parent_id: int | None, root_id: int
) -> None:
    """Set name, parent and root of one provider (not its generation, as Placement).
    Raises ``IntegrityError`` on a duplicate name (run in a savepoint)."""
    changes.touch(conn, [provider_id])
    with conn.begin_nested():
        conn.execute(
            update(rp)
            .where(rp.c.id == provider_id)
            .values(
                name=name,
                parent_provider_id=parent_id,
                root_provider_id=root_id,
                updated_at=utcnow(),
            )
        )


def set_root(conn: Connection, provider_ids: Iterable[int], root_id: int) -> None:
    """Point ``root_provider_id`` of ``provider_ids`` at ``root_id`` (a moved subtree)."""
    ids = sorted(set(provider_ids))
    changes.touch(conn, ids)
    if ids:
        conn.execute(
            update(rp).where(rp.c.id.in_(ids)).values(root_provider_id=root_id, updated_at=utcnow())
        )


def subtree_ids(conn: Connection, provider: ProviderRow) -> set[int]:
    """Internal ids of ``provider`` and all its descendants (walked within its tree)."""
    rows = conn.execute(
        select(rp.c.id, rp.c.parent_provider_id).where(
            rp.c.root_provider_id == provider.root_provider_id
        )
    ).all()
    children: dict[int, list[int]] = {}
    for child_id, parent_id in rows:
        if parent_id is not None:
            children.setdefault(int(parent_id), []).append(int(child_id))
    found = {provider.id}
    stack = [provider.id]
    while stack:
        for child_id in children.get(stack.pop(), ()):
            if child_id not in found:
                found.add(child_id)
                stack.append(child_id)
    return found


def tree_ids(conn: Connection, root_ids: Iterable[int]) -> list[int]:
    """Internal ids of every provider in the trees rooted at ``root_ids``."""
    roots = sorted(set(root_ids))
    if not roots:
        return []
    rows = conn.execute(select(rp.c.id).where(rp.c.root_provider_id.in_(roots)))
    return [int(id_) for (id_,) in rows]


def has_children(conn: Connection, provider_id: int) -> bool:
    """True when some provider names ``provider_id`` as its parent."""
    found = conn.execute(
        select(rp.c.id).where(rp.c.parent_provider_id == provider_id).limit(1)
    ).first()
    return found is not None


def has_allocations(conn: Connection, provider_id: int) -> bool:
    """True when any allocation is made against ``provider_id``."""
    found = conn.execute(
        select(allocations.c.id).where(allocations.c.resource_provider_id == provider_id).limit(1)
    ).first()
    return found is not None


def delete_provider(conn: Connection, provider_id: int) -> None:
    """Delete a provider row with its inventories, trait and aggregate links.

    The caller checks children and allocations first; a child inserted meanwhile makes the final
    ``DELETE`` fail with ``IntegrityError`` (foreign key)."""
    changes.touch(conn, [provider_id])
    conn.execute(delete(inventories).where(inventories.c.resource_provider_id == provider_id))
    conn.execute(
        delete(resource_provider_aggregates).where(
            resource_provider_aggregates.c.resource_provider_id == provider_id
        )
    )
    conn.execute(
        delete(resource_provider_traits).where(
            resource_provider_traits.c.resource_provider_id == provider_id
        )
    )
    conn.execute(
        update(rp)
        .where(rp.c.id == provider_id, rp.c.root_provider_id == provider_id)
        .values(root_provider_id=None)
    )
    with conn.begin_nested():
        conn.execute(delete(rp).where(rp.c.id == provider_id))
