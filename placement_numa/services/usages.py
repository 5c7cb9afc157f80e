"""Use cases of usages: per provider, and totals per project/user (grouped by consumer type)."""

from __future__ import annotations

from placement_numa.db.database import Database
from placement_numa.db.repositories import providers
from placement_numa.db.repositories import usages as usage_repo

__all__ = ["for_provider", "for_project", "for_project_by_consumer_type"]


def for_provider(*, database: Database, provider_uuid: str) -> tuple[int, dict[str, int]]:
    """``(provider generation, {resource_class: used})`` over every inventoried class.

    Raises ``NotFound`` (404) for an unknown provider.
    """
    with database.read() as conn:
        message = f"No resource provider with uuid {provider_uuid} found"
        provider = providers.require_by_uuid(conn, provider_uuid, suffix=f": {message}")
        return provider.generation, usage_repo.for_provider(conn, provider.id)


def for_project(*, database: Database, project_id: str, user_id: str | None) -> dict[str, int]:
    """``{resource_class: used}`` summed over the consumers of the project (and user)."""
    with database.read() as conn:
        return usage_repo.for_project(conn, project_id, user_id)


def for_project_by_consumer_type(
    *, database: Database, project_id: str, user_id: str | None, consumer_type: str | None
) -> dict[str, dict[str, int]]:
    """``{consumer_type: {resource_class: used, "consumer_count": n}}`` (microversion 1.38)."""
    with database.read() as conn:
        return usage_repo.for_project_by_consumer_type(conn, project_id, user_id, consumer_type)
