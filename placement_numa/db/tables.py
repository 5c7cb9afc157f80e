"""SQLAlchemy Core tables of the Placement data model (the schema of migration 0001 onwards).

Ids are internal integers; the API speaks uuids and names. Constraint and index names are stable
(``NAMING_CONVENTION``) so migrations can refer to them on every backend.

Indexes exist for what a candidate search over 100,000 providers touches: providers by root and
parent, inventories and allocations by (provider, class), traits and aggregates by provider and by
trait/aggregate, consumers by project and user.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Double,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

__all__ = [
    "metadata",
    "resource_providers",
    "resource_classes",
    "inventories",
    "allocations",
    "consumers",
    "consumer_types",
    "projects",
    "users",
    "traits",
    "resource_provider_traits",
    "placement_aggregates",
    "resource_provider_aggregates",
    "placement_revision",
    "numa_distances",
    "placement_changes",
    "CUSTOM_RESOURCE_CLASS_START_ID",
]

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING_CONVENTION)

# Standard resource classes get ids from their position in os-resource-classes; custom ones start
# here (as in Placement), so the two ranges never collide.
CUSTOM_RESOURCE_CLASS_START_ID = 10000


def _timestamps() -> list[Column[object]]:
    return [
        Column("created_at", DateTime, nullable=True),
        Column("updated_at", DateTime, nullable=True),
    ]


resource_providers = Table(
    "resource_providers",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("uuid", String(36), nullable=False),
    Column("name", String(200), nullable=False),
    Column("generation", Integer, nullable=False, default=0),
    Column("root_provider_id", Integer, ForeignKey("resource_providers.id"), nullable=True),
    Column("parent_provider_id", Integer, ForeignKey("resource_providers.id"), nullable=True),
    *_timestamps(),
    UniqueConstraint("uuid"),
    UniqueConstraint("name"),
    Index(None, "root_provider_id"),
    Index(None, "parent_provider_id"),
)

resource_classes = Table(
    "resource_classes",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("name", String(255), nullable=False),
    *_timestamps(),
    UniqueConstraint("name"),
)

inventories = Table(
    "inventories",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("resource_provider_id", Integer, ForeignKey("resource_providers.id"), nullable=False),
    Column("resource_class_id", Integer, ForeignKey("resource_classes.id"), nullable=False),
    Column("total", BigInteger, nullable=False),
    Column("reserved", BigInteger, nullable=False),
    Column("min_unit", BigInteger, nullable=False),
    Column("max_unit", BigInteger, nullable=False),
    Column("step_size", BigInteger, nullable=False),
    Column("allocation_ratio", Double, nullable=False),
    *_timestamps(),
    UniqueConstraint("resource_provider_id", "resource_class_id"),
    Index(None, "resource_class_id"),
)

projects = Table(
    "projects",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("external_id", String(255), nullable=False),
    *_timestamps(),
    UniqueConstraint("external_id"),
)

users = Table(
    "users",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("external_id", String(255), nullable=False),
    *_timestamps(),
    UniqueConstraint("external_id"),
)

consumer_types = Table(
    "consumer_types",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(255), nullable=False),
    *_timestamps(),
    UniqueConstraint("name"),
)

consumers = Table(
    "consumers",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("uuid", String(36), nullable=False),
    Column("project_id", Integer, ForeignKey("projects.id"), nullable=False),
    Column("user_id", Integer, ForeignKey("users.id"), nullable=False),
    Column("generation", Integer, nullable=False, default=0),
    Column("consumer_type_id", Integer, ForeignKey("consumer_types.id"), nullable=True),
    *_timestamps(),
    UniqueConstraint("uuid"),
    Index(None, "project_id", "user_id"),
    Index(None, "user_id"),
    Index(None, "consumer_type_id"),
)

allocations = Table(
    "allocations",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("resource_provider_id", Integer, ForeignKey("resource_providers.id"), nullable=False),
    Column("consumer_id", String(36), nullable=False),
    Column("resource_class_id", Integer, ForeignKey("resource_classes.id"), nullable=False),
    Column("used", BigInteger, nullable=False),
    *_timestamps(),
    Index(None, "resource_provider_id", "resource_class_id", "used"),
    Index(None, "consumer_id"),
    Index(None, "resource_class_id"),
)

traits = Table(
    "traits",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(255), nullable=False),
    *_timestamps(),
    UniqueConstraint("name"),
)

resource_provider_traits = Table(
    "resource_provider_traits",
    metadata,
    Column("trait_id", Integer, ForeignKey("traits.id"), primary_key=True),
    Column("resource_provider_id", Integer, ForeignKey("resource_providers.id"), primary_key=True),
    *_timestamps(),
    Index(None, "resource_provider_id"),
)

placement_aggregates = Table(
    "placement_aggregates",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("uuid", String(36), nullable=False),
    *_timestamps(),
    UniqueConstraint("uuid"),
)

resource_provider_aggregates = Table(
    "resource_provider_aggregates",
    metadata,
    Column("resource_provider_id", Integer, ForeignKey("resource_providers.id"), primary_key=True),
    Column("aggregate_id", Integer, ForeignKey("placement_aggregates.id"), primary_key=True),
    *_timestamps(),
    Index(None, "aggregate_id"),
)

# One row (id = 1). Every write transaction increments ``revision`` as its last statement, so a
# reader that keeps fleet state in memory knows, with one tiny query, whether anything committed
# since it last looked (see design notes: "fleet state in memory, always fresh").
placement_revision = Table(
    "placement_revision",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("revision", BigInteger, nullable=False),
)


# --- NUMA distances (migration 0002_numa_distances; owned by the NUMA layer) -----------------
# One row per compute node (root provider): the kernel's SLIT matrix keyed by NUMA cell id, as
# JSON text ``{"0": {"0": 10, "1": 21}, "1": {...}}``. ``generation`` is the matrix's own
# generation (compare-and-swap on every PUT/DELETE), independent of the provider's generation so
# that uploading distances never makes an agent's provider update conflict.
numa_distances = Table(
    "numa_distances",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column(
        "root_provider_id",
        Integer,
        ForeignKey("resource_providers.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("generation", Integer, nullable=False, default=0),
    Column("matrix", Text, nullable=False),
    *_timestamps(),
    UniqueConstraint("root_provider_id"),
)


# --- Fleet change log (migration 0003_placement_changes; owned by the candidate engine) --------
# Written by ``Database.write()`` in the same transaction as the writes it describes: one row per
# resource provider the transaction touched (``kind`` "provider"), or one row "names" (no provider
# touched; resource class or trait names may have changed) or "all" (something changed that the
# transaction did not describe: reload everything), all carrying the transaction's new
# ``placement_revision``. Every revision has at least one row, so a reader holding revision ``r``
# can tell whether the rows after ``r`` are complete. Old rows are pruned.
placement_changes = Table(
    "placement_changes",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("revision", BigInteger, nullable=False),
    Column("kind", String(8), nullable=False),
    Column("provider_id", Integer, nullable=True),  # no foreign key: the provider may be gone
    # The provider's generation as the transaction left it (NULL: gone, or no provider row);
    # migration 0004_change_generations.
    Column("generation", Integer, nullable=True),
    Index(None, "revision"),
)
