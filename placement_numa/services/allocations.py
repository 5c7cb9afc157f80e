"""Use cases of allocations: read by consumer or provider, replace (PUT/POST), delete.

Each function is one transaction. Writes go through ``repositories.allocations
.replace_allocations`` (row locks, capacity checks, generations); any error rolls the whole
write back, so bad input changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from placement_numa.db.database import Database
from placement_numa.db.repositories import allocations as allocation_repo
from placement_numa.db.repositories import consumers as consumer_repo
from placement_numa.db.repositories import providers
from placement_numa.db.repositories.allocations import AllocationRow, ProviderAllocationRow
from placement_numa.db.repositories.consumers import ConsumerRow
from placement_numa.db.repositories.providers import ProviderRow
from placement_numa.domain.allocation import ConsumerAllocation
from placement_numa.errors import NotFound

__all__ = [
    "ConsumerAllocations",
    "ProviderAllocations",
    "get_for_consumer",
    "get_for_provider",
    "replace",
    "delete_for_consumer",
]


@dataclass(frozen=True, slots=True)
class ConsumerAllocations:
    """A consumer's allocations; ``consumer`` is ``None`` when it has no record."""

    consumer: ConsumerRow | None
    allocations: list[AllocationRow]


@dataclass(frozen=True, slots=True)
class ProviderAllocations:
    """A provider and every allocation against it."""

    provider: ProviderRow
    allocations: list[ProviderAllocationRow]


def get_for_consumer(*, database: Database, consumer_uuid: str) -> ConsumerAllocations:
    """The allocations of ``consumer_uuid`` (possibly none; never raises for an unknown one)."""
    with database.read() as conn:
        rows = allocation_repo.get_by_consumer(conn, consumer_uuid)
        consumer = consumer_repo.get_by_uuid(conn, consumer_uuid) if rows else None
    return ConsumerAllocations(consumer, rows)


def get_for_provider(*, database: Database, provider_uuid: str) -> ProviderAllocations:
    """The allocations against provider ``provider_uuid``.

    Raises ``NotFound`` (404) when the provider does not exist.
    """
    with database.read() as conn:
        provider = providers.get_by_uuid(conn, provider_uuid)
        if provider is None:
            raise NotFound(
                f"Resource provider '{provider_uuid}' not found: No resource provider with uuid"
                f" {provider_uuid} found"
            )
        rows = allocation_repo.get_by_provider(conn, provider.id)
    return ProviderAllocations(provider, rows)


def replace(*, database: Database, consumer_allocations: Sequence[ConsumerAllocation]) -> None:
    """Replace the allocations of every consumer named, in one transaction.

    A transaction the database aborts as a deadlock victim (possible on MariaDB when racing
    inserts of the same new project, user or consumer type roll back) raises
    ``RetryableDatabaseError``; the whole request is then re-run (``api/db_retry.py``), as
    Placement's ``wrap_db_retry(retry_on_deadlock=True)`` re-runs ``_set_allocations``.

    Raises ``BadRequest`` (400: unknown provider or resource class), ``ConcurrentUpdate``
    (409: consumer generation mismatch) or ``Conflict`` (409: no such inventory, constraints
    or capacity exceeded); nothing is written then.
    """
    with database.write() as conn:
        allocation_repo.replace_allocations(conn, consumer_allocations)


def delete_for_consumer(*, database: Database, consumer_uuid: str) -> None:
    """Delete every allocation of ``consumer_uuid`` and the consumer.

    Raises ``NotFound`` (404) when it has no allocations.
    """
    with database.write() as conn:
        if not allocation_repo.delete_for_consumer(conn, consumer_uuid):
            raise NotFound(f"No allocations for consumer '{consumer_uuid}'")
