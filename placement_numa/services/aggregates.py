"""Provider aggregate use cases: read and replace the aggregates of one provider (1.1+)."""

from __future__ import annotations

from collections.abc import Sequence

from placement_numa.db.database import Database
from placement_numa.db.repositories import aggregates as repo
from placement_numa.db.repositories import providers
from placement_numa.db.repositories.providers import ProviderRow
from placement_numa.domain.aggregates import kept_aggregate_uuid
from placement_numa.errors import ConcurrentUpdate

__all__ = ["get_aggregates", "set_aggregates"]


def get_aggregates(database: Database, *, uuid: str) -> tuple[ProviderRow, list[str]]:
    """The provider ``uuid`` and the uuids of its aggregates. Raises ``NotFound`` (404)."""
    with database.read() as conn:
        provider = providers.require_by_uuid(conn, uuid)
        return provider, repo.provider_aggregates(conn, provider.id)


def set_aggregates(
    database: Database, *, uuid: str, aggregates: Sequence[str], generation: int | None = None
) -> ProviderRow:
    """Make ``aggregates`` (uuids; unknown ones are created) exactly the provider's aggregates.

    With ``generation`` (1.19+) it must equal the provider's generation, which is then
    incremented (compare-and-swap); without it (1.1-1.18) the generation is left alone, as in
    Placement. Aggregate uuids are kept as sent (``domain.aggregates``: openstacksdk sends them
    without dashes and compares what comes back). Returns the provider as it is after the
    change. Raises ``NotFound`` (404) and ``ConcurrentUpdate`` (409,
    ``placement.concurrent_update``).
    """
    kept = [kept_aggregate_uuid(value) for value in aggregates]
    with database.write() as conn:
        # Lock the provider row first: writers of one provider queue here (and MariaDB does not
        # deadlock upgrading the shared locks its foreign-key checks take), then re-read it.
        providers.lock_providers(conn, [providers.require_by_uuid(conn, uuid).id])
        provider = providers.require_by_uuid(conn, uuid)
        if generation is not None and generation != provider.generation:
            raise ConcurrentUpdate(
                "Resource provider's generation already changed. Please update the generation"
                " and try again."
            )
        repo.set_provider_aggregates(conn, provider.id, kept)
        if generation is not None:
            providers.increment_generation(conn, provider, expected=generation)
        updated = providers.get_by_id(conn, provider.id)
        assert updated is not None
        return updated
