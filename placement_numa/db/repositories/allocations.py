"""Allocation rows: read by consumer or provider, replace atomically with capacity checks, delete.

All functions run inside the caller's transaction (``Database.write()``), so the reshaper can
compose ``replace_allocations`` with inventory changes in one transaction.

``replace_allocations`` follows Placement's ``replace_all`` (``objects/allocation.py``):

1. resolve provider uuids and resource class names (400 when unknown);
2. lock the touched provider rows (``SELECT ... FOR UPDATE``, sorted ids), then each consumer
   in uuid order: create it on first use, check and bump its generation (409
   ``placement.concurrent_update``), update project/user/consumer type;
3. delete the consumers' old allocations, then check every new amount against the inventory
   (``domain.allocation``: min_unit/max_unit/step_size and
   ``used + amount <= (total - reserved) * allocation_ratio``; 409 otherwise;
   ``allocation_capacity``);
4. insert the new rows, bump the generation of every provider that receives allocations (and,
   for a consumer whose allocations are emptied, of the providers it had), delete consumers
   left without allocations.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, delete, insert, select
from sqlalchemy.engine import Connection

from placement_numa.db.repositories import changes, names, providers
from placement_numa.db.repositories import consumers as consumer_repo
from placement_numa.db.repositories.allocation_capacity import Single, check_fits, limits_and_usage
from placement_numa.db.repositories.providers import ProviderRow, utcnow
from placement_numa.db.tables import allocations, consumers, resource_classes
from placement_numa.db.tables import resource_providers as rp
from placement_numa.domain.allocation import (
    INCOMPLETE_CONSUMER_ID,
    ConsumerAllocation,
)
from placement_numa.errors import BadRequest, ConcurrentUpdate

__all__ = [
    "AllocationRow",
    "ProviderAllocationRow",
    "get_by_consumer",
    "get_by_provider",
    "get_by_providers",
    "replace_allocations",
    "delete_for_consumer",
    "check_consumer_generation",
]


@dataclass(frozen=True, slots=True)
class AllocationRow:
    """One allocation of a consumer: provider (uuid, generation), class name, amount."""

    resource_provider_uuid: str
    resource_provider_generation: int
    resource_class: str
    used: int
    created_at: datetime | None
    updated_at: datetime | None


@dataclass(frozen=True, slots=True)
class ProviderAllocationRow:
    """One allocation against a provider: consumer (uuid, generation), class name, amount."""

    consumer_uuid: str
    consumer_generation: int | None
    resource_class: str
    used: int
    created_at: datetime | None
    updated_at: datetime | None


def get_by_consumer(conn: Connection, consumer_uuid: str) -> list[AllocationRow]:
    """Every allocation of ``consumer_uuid`` (empty when it has none)."""
    rows = conn.execute(
        select(
            rp.c.uuid,
            rp.c.generation,
            resource_classes.c.name,
            allocations.c.used,
            allocations.c.created_at,
            allocations.c.updated_at,
        )
        .select_from(allocations)
        .join(rp, rp.c.id == allocations.c.resource_provider_id)
        .join(resource_classes, resource_classes.c.id == allocations.c.resource_class_id)
        .where(allocations.c.consumer_id == consumer_uuid)
        .order_by(allocations.c.id)
    )
    return [AllocationRow(*row) for row in rows]


def get_by_provider(conn: Connection, provider_id: int) -> list[ProviderAllocationRow]:
    """Every allocation against provider ``provider_id`` with its consumer's generation."""
    rows = conn.execute(
        select(
            allocations.c.consumer_id,
            consumers.c.generation,
            resource_classes.c.name,
            allocations.c.used,
            allocations.c.created_at,
            allocations.c.updated_at,
        )
        .select_from(allocations)
        .join(resource_classes, resource_classes.c.id == allocations.c.resource_class_id)
        .outerjoin(consumers, consumers.c.uuid == allocations.c.consumer_id)
        .where(allocations.c.resource_provider_id == provider_id)
        .order_by(allocations.c.id)
    )
    return [ProviderAllocationRow(*row) for row in rows]


def get_by_providers(
    conn: Connection, provider_ids: Sequence[int]
) -> list[tuple[int, str, str, int]]:
    """Every allocation against the providers ``provider_ids``, in one query, as ``(provider
    id, consumer uuid, resource class name, amount)``."""
    if not provider_ids:
        return []
    rows = conn.execute(
        select(
            allocations.c.resource_provider_id,
            allocations.c.consumer_id,
            resource_classes.c.name,
            allocations.c.used,
        )
        .select_from(allocations)
        .join(resource_classes, resource_classes.c.id == allocations.c.resource_class_id)
        .where(allocations.c.resource_provider_id.in_(list(provider_ids)))
        .order_by(allocations.c.id)
    )
    return [(int(p), str(c), str(rc), int(used)) for p, c, rc, used in rows]


# The statements of ``replace_allocations``, built once (building a statement and computing
# its cache key on every execution cost about as much CPU as running it).
_OF_CONSUMERS = allocations.c.consumer_id.in_(bindparam("uuids", expanding=True))
_OLD_PROVIDER_IDS = select(allocations.c.resource_provider_id).where(_OF_CONSUMERS).distinct()
_OLD_ROWS = (
    allocations.c.resource_provider_id,
    allocations.c.resource_class_id,
    allocations.c.used,
    allocations.c.consumer_id,
)
_SELECT_OLD = select(*_OLD_ROWS).where(_OF_CONSUMERS)
_DELETE = delete(allocations).where(_OF_CONSUMERS)
_DELETE_RETURNING = _DELETE.returning(*_OLD_ROWS)
_INSERT = insert(allocations)


def _old_provider_ids(conn: Connection, consumer_uuids: Sequence[str]) -> set[int]:
    if not consumer_uuids:
        return set()
    return set(conn.execute(_OLD_PROVIDER_IDS, {"uuids": list(consumer_uuids)}).scalars())


def _resolve(
    conn: Connection, items: Sequence[ConsumerAllocation]
) -> tuple[dict[str, ProviderRow], dict[str, int]]:
    """Providers by uuid and class ids by name (one query each); 400 ``BadRequest`` for the
    first unknown one in request order."""
    found = providers.get_by_uuids(conn, (u for item in items for u in item.resources))
    by_uuid: dict[str, ProviderRow] = {}
    for item in items:
        for provider_uuid in item.resources:
            provider = found.get(provider_uuid)
            if provider is None:
                raise BadRequest(
                    f"Allocation for resource provider '{provider_uuid}' that does not exist."
                )
            by_uuid[provider_uuid] = provider
    wanted = {rc for item in items for res in item.resources.values() for rc in res}
    class_ids = names.resource_class_ids(conn, wanted)
    for item in items:
        for res in item.resources.values():
            for rc in res:
                if rc not in class_ids:
                    prefix = (
                        f"Unable to allocate inventory for consumer {item.consumer_uuid}: "
                        if len(items) == 1
                        else "Unable to allocate inventory "
                    )
                    raise BadRequest(f"{prefix}No such resource class {rc}.")
    return by_uuid, class_ids


def check_consumer_generation(conn: Connection, item: ConsumerAllocation) -> None:
    """Raise ``ConcurrentUpdate`` (409) when ``item`` expects another generation than the
    consumer's current one (the check ``replace_allocations`` starts with)."""
    _check_generation(item, consumer_repo.get_by_uuid(conn, item.consumer_uuid))


def _check_generation(item: ConsumerAllocation, consumer: consumer_repo.ConsumerRow | None) -> None:
    """Raise ``ConcurrentUpdate`` (409) when ``item`` expects another consumer generation."""
    if not item.check_generation:
        return
    if consumer is None and item.consumer_generation is not None:
        raise ConcurrentUpdate(
            f"consumer generation conflict - expected null but got {item.consumer_generation}"
        )
    if consumer is not None and consumer.generation != item.consumer_generation:
        raise ConcurrentUpdate(
            f"consumer generation conflict - expected {consumer.generation} but got"
            f" {item.consumer_generation}"
        )


def _prepare_consumer(
    conn: Connection, item: ConsumerAllocation, checked: consumer_repo.ConsumerRow | None
) -> consumer_repo.ConsumerRow | None:
    """Create or update the consumer of ``item`` and bump its generation (409 on mismatch); a
    consumer this write creates is inserted at generation 1 (one statement, not two).

    ``checked``: the consumer as read when its generation was checked. When ``item`` names a
    generation, that read is enough: the compare-and-swap of ``increment_generation`` (or the
    unique key on creation) catches any writer that came in between. Otherwise the consumer is
    read again, under the provider locks.

    A write of no allocations leaves the generation where it is (compare-and-swap to the same
    value) and creates a new consumer at generation 0, which is kept: as in Placement, sending
    the same empty write again with ``consumer_generation: null`` is then a 409.
    """
    project = item.project_id or INCOMPLETE_CONSUMER_ID
    user = item.user_id or INCOMPLETE_CONSUMER_ID
    project_id, user_id = names.ensure_owner_ids(conn, project, user)
    type_id = (
        consumer_repo.ensure_consumer_type(conn, item.consumer_type)
        if item.consumer_type is not None
        else None
    )
    if item.check_generation:
        consumer = checked
    else:
        consumer = consumer_repo.get_by_uuid(conn, item.consumer_uuid)
    if consumer is None:
        created = consumer_repo.create(
            conn,
            item.consumer_uuid,
            project_id=project_id,
            user_id=user_id,
            consumer_type_id=type_id,
            names=(project, user, item.consumer_type),
            # Its generation after this write: written once, or not at all when empty.
            generation=1 if item.resources else 0,
        )
        if created is not None:
            return created
        consumer = consumer_repo.get_by_uuid(conn, item.consumer_uuid)  # a concurrent writer's
        if consumer is None or item.check_generation:
            raise ConcurrentUpdate(
                "consumer generation conflict - expected"
                f" {consumer.generation if consumer else None} but got"
                f" {item.consumer_generation}"
            )
    consumer_repo.update_owner(
        conn, consumer, project_id=project_id, user_id=user_id, consumer_type_id=type_id
    )
    expected = item.consumer_generation if item.check_generation else consumer.generation
    consumer_repo.increment_generation(
        conn, consumer, expected if expected is not None else 0, by=1 if item.resources else 0
    )
    return consumer


def replace_allocations(
    conn: Connection,
    consumer_allocations: Sequence[ConsumerAllocation],
    *,
    check_capacity: bool = True,
) -> dict[str, int]:
    """Replace all allocations of each consumer named in ``consumer_allocations``, atomically.

    Amounts are in each resource class's unit. With ``check_capacity`` false (for callers that
    checked already) min/max/step and capacity are not checked; inventory must still exist.
    Returns ``{provider_uuid: new_generation}`` of the providers whose generation was bumped.

    Raises ``BadRequest`` (400) for an unknown provider or resource class,
    ``ConcurrentUpdate`` (409, ``placement.concurrent_update``) on a consumer generation
    mismatch, ``Conflict`` (409) when a provider lacks inventory of a class or the amounts do
    not fit. The caller's transaction must be rolled back on any of them.
    """
    items = sorted(consumer_allocations, key=lambda item: item.consumer_uuid)
    uuids = [item.consumer_uuid for item in items]
    known = consumer_repo.get_by_uuids(conn, uuids)
    for item in items:  # Placement reports a generation conflict before a bad provider or class
        _check_generation(item, known.get(item.consumer_uuid))
    by_uuid, class_ids = _resolve(conn, items)

    # Locks: providers receiving allocations, plus providers of consumers being emptied; their
    # generations are read under the locks, in the same statement.
    emptied = [item.consumer_uuid for item in items if not item.resources]
    emptied_provider_ids = _old_provider_ids(conn, emptied)
    locked = providers.lock_generations(
        conn,
        {p.id for p in by_uuid.values()} | emptied_provider_ids,
        read={p.id: p for p in by_uuid.values()},
    )

    for item in items:
        _prepare_consumer(conn, item, known.get(item.consumer_uuid))

    singles = [
        Single(item, provider_uuid, rc, amount, (by_uuid[provider_uuid].id, class_ids[rc]))
        for item in items
        for provider_uuid, resources in item.resources.items()
        for rc, amount in resources.items()
    ]
    wanted: dict[tuple[int, int], int] = defaultdict(int)  # new amounts per (provider, class)
    for single in singles:
        wanted[single.key] += single.amount
    provider_ids = {p for p, _ in wanted}
    rc_ids = {c for _, c in wanted}
    old_rows, had_allocations = _delete_returning(conn, uuids)
    changes.touch_usage(conn, {p for p, _, _ in old_rows} | provider_ids)
    limits, used = limits_and_usage(conn, provider_ids, rc_ids)
    # The usage before the write: what is left plus what this write deleted (None: no usage).
    previous: dict[tuple[int, int], int] = dict(used)
    for p, c, amount in old_rows:
        if (p, c) in wanted:
            previous[(p, c)] = previous.get((p, c), 0) + amount
    check_fits(by_uuid, singles, limits, used if check_capacity else None, previous)

    now = utcnow()
    rows = [
        {
            "resource_provider_id": single.key[0],
            "consumer_id": single.item.consumer_uuid,
            "resource_class_id": single.key[1],
            "used": single.amount,
            "created_at": now,
        }
        for single in singles
    ]
    if rows:
        conn.execute(_INSERT, rows)

    # Every provider locked above receives allocations or lost a consumer being emptied.
    generations = providers.bump_generations(conn, locked)
    # A consumer this write emptied goes; one that had none before stays (Placement).
    with_rows = {row["consumer_id"] for row in rows}
    consumer_repo.delete_if_no_allocations(conn, sorted(had_allocations - with_rows))
    return generations


def _delete_returning(
    conn: Connection, uuids: Sequence[str]
) -> tuple[list[tuple[int, int, int]], set[str]]:
    """Delete the allocations of ``uuids``; returns them as ``(provider_id, class_id, used)``
    and the consumers that had any (``DELETE ... RETURNING`` where the database has it: one
    round trip)."""
    params = {"uuids": list(uuids)}
    if conn.dialect.delete_returning:
        found = conn.execute(_DELETE_RETURNING, params).all()
    else:
        found = conn.execute(_SELECT_OLD, params).all()
        conn.execute(_DELETE, params)
    return [(int(p), int(c), int(u)) for p, c, u, _ in found], {str(row[3]) for row in found}


def delete_for_consumer(conn: Connection, consumer_uuid: str) -> bool:
    """Delete every allocation of ``consumer_uuid`` and the consumer record.

    Returns ``False`` when the consumer had no allocations (the caller answers 404). As in
    Placement, provider generations are not changed by this deletion.
    """
    changes.touch_usage(conn, _old_provider_ids(conn, [consumer_uuid]))
    result = conn.execute(delete(allocations).where(allocations.c.consumer_id == consumer_uuid))
    if not result.rowcount:
        return False  # a consumer kept without allocations stays, as in Placement
    consumer_repo.delete_if_no_allocations(conn, [consumer_uuid])
    return True
