"""Usage sums: per provider (every inventoried class) and per project/user (and consumer type).

Amounts are sums of ``allocations.used`` in each resource class's unit.
"""

from __future__ import annotations

from collections import defaultdict

from sqlalchemy import and_, func, select
from sqlalchemy.engine import Connection
from sqlalchemy.sql import Select

from placement_numa.db.tables import (
    allocations,
    consumer_types,
    consumers,
    inventories,
    projects,
    resource_classes,
    users,
)
from placement_numa.domain.allocation import UNKNOWN_CONSUMER_TYPE

__all__ = ["for_provider", "for_project", "for_project_by_consumer_type"]

ALL_CONSUMER_TYPES = "all"


def for_provider(conn: Connection, provider_id: int) -> dict[str, int]:
    """``{resource_class: used}`` for every class the provider has inventory of (0 if unused)."""
    rows = conn.execute(
        select(resource_classes.c.name, func.coalesce(func.sum(allocations.c.used), 0))
        .select_from(inventories)
        .join(resource_classes, resource_classes.c.id == inventories.c.resource_class_id)
        .outerjoin(
            allocations,
            and_(
                allocations.c.resource_provider_id == inventories.c.resource_provider_id,
                allocations.c.resource_class_id == inventories.c.resource_class_id,
            ),
        )
        .where(inventories.c.resource_provider_id == provider_id)
        .group_by(resource_classes.c.name)
    )
    return {name: int(used) for name, used in rows}


def _owned(query: Select, project_id: str, user_id: str | None) -> Select:  # type: ignore[type-arg]
    query = query.join(consumers, consumers.c.uuid == allocations.c.consumer_id).join(
        projects, projects.c.id == consumers.c.project_id
    )
    query = query.where(projects.c.external_id == project_id)
    if user_id:
        query = query.join(users, users.c.id == consumers.c.user_id).where(
            users.c.external_id == user_id
        )
    return query


def for_project(conn: Connection, project_id: str, user_id: str | None = None) -> dict[str, int]:
    """``{resource_class: used}`` over the consumers of project (and user) external ids."""
    query = _owned(
        select(resource_classes.c.name, func.sum(allocations.c.used))
        .select_from(allocations)
        .join(resource_classes, resource_classes.c.id == allocations.c.resource_class_id),
        project_id,
        user_id,
    ).group_by(resource_classes.c.name)
    return {name: int(used or 0) for name, used in conn.execute(query)}


def for_project_by_consumer_type(
    conn: Connection, project_id: str, user_id: str | None = None, consumer_type: str | None = None
) -> dict[str, dict[str, int]]:
    """``{consumer_type: {resource_class: used, ..., "consumer_count": n}}`` (Placement 1.38).

    ``consumer_type`` filters: a type name, ``"unknown"`` (consumers without a type) or
    ``"all"`` (everything under one ``"all"`` key); ``None`` groups by every type. Consumers
    without a type are grouped under ``"unknown"``.
    """
    type_name = consumer_types.c.name
    base = _owned(
        select(
            type_name,
            resource_classes.c.name,
            func.sum(allocations.c.used),
        )
        .select_from(allocations)
        .join(resource_classes, resource_classes.c.id == allocations.c.resource_class_id),
        project_id,
        user_id,
    ).outerjoin(consumer_types, consumer_types.c.id == consumers.c.consumer_type_id)
    counts = _owned(
        select(type_name, func.count(func.distinct(allocations.c.consumer_id))).select_from(
            allocations
        ),
        project_id,
        user_id,
    ).outerjoin(consumer_types, consumer_types.c.id == consumers.c.consumer_type_id)

    if consumer_type == UNKNOWN_CONSUMER_TYPE:
        base = base.where(consumers.c.consumer_type_id.is_(None))
        counts = counts.where(consumers.c.consumer_type_id.is_(None))
    elif consumer_type and consumer_type != ALL_CONSUMER_TYPES:
        base = base.where(type_name == consumer_type)
        counts = counts.where(type_name == consumer_type)

    result: dict[str, dict[str, int]] = defaultdict(dict)
    if consumer_type == ALL_CONSUMER_TYPES:
        total = conn.execute(counts.with_only_columns(counts.selected_columns[1])).scalar() or 0
        for _, rc, used in conn.execute(base.group_by(type_name, resource_classes.c.name)):
            entry = result[ALL_CONSUMER_TYPES]
            entry[rc] = entry.get(rc, 0) + int(used or 0)
            entry["consumer_count"] = int(total)
        return dict(result)

    per_type = {
        name or UNKNOWN_CONSUMER_TYPE: int(n)
        for name, n in conn.execute(counts.group_by(type_name))
    }
    for name, rc, used in conn.execute(base.group_by(type_name, resource_classes.c.name)):
        key = name or UNKNOWN_CONSUMER_TYPE
        result[key][rc] = int(used or 0)
        result[key]["consumer_count"] = per_type.get(key, 0)
    return dict(result)
