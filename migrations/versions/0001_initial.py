"""Initial Placement schema: providers, classes, inventories, consumers, allocations, traits,
aggregates, and the fleet revision counter.

Revision ID: 0001_initial
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001_initial"
down_revision = None
branch_labels = None
depends_on = None


def _ts() -> list[sa.Column]:
    return [
        sa.Column("created_at", sa.DateTime, nullable=True),
        sa.Column("updated_at", sa.DateTime, nullable=True),
    ]


def upgrade() -> None:
    op.create_table(
        "resource_providers",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("generation", sa.Integer, nullable=False),
        sa.Column("root_provider_id", sa.Integer, nullable=True),
        sa.Column("parent_provider_id", sa.Integer, nullable=True),
        *_ts(),
        sa.PrimaryKeyConstraint("id", name="pk_resource_providers"),
        sa.UniqueConstraint("uuid", name="uq_resource_providers_uuid"),
        sa.UniqueConstraint("name", name="uq_resource_providers_name"),
        sa.ForeignKeyConstraint(
            ["root_provider_id"],
            ["resource_providers.id"],
            name="fk_resource_providers_root_provider_id",
        ),
        sa.ForeignKeyConstraint(
            ["parent_provider_id"],
            ["resource_providers.id"],
            name="fk_resource_providers_parent_provider_id",
        ),
    )
    op.create_index(
        "ix_resource_providers_root_provider_id", "resource_providers", ["root_provider_id"]
    )
    op.create_index(
        "ix_resource_providers_parent_provider_id", "resource_providers", ["parent_provider_id"]
    )

    op.create_table(
        "resource_classes",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("name", sa.String(255), nullable=False),
        *_ts(),
        sa.PrimaryKeyConstraint("id", name="pk_resource_classes"),
        sa.UniqueConstraint("name", name="uq_resource_classes_name"),
    )

    op.create_table(
        "inventories",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("resource_provider_id", sa.Integer, nullable=False),
        sa.Column("resource_class_id", sa.Integer, nullable=False),
        sa.Column("total", sa.BigInteger, nullable=False),
        sa.Column("reserved", sa.BigInteger, nullable=False),
        sa.Column("min_unit", sa.BigInteger, nullable=False),
        sa.Column("max_unit", sa.BigInteger, nullable=False),
        sa.Column("step_size", sa.BigInteger, nullable=False),
        sa.Column("allocation_ratio", sa.Double, nullable=False),
        *_ts(),
        sa.PrimaryKeyConstraint("id", name="pk_inventories"),
        sa.UniqueConstraint(
            "resource_provider_id",
            "resource_class_id",
            name="uq_inventories_resource_provider_id_resource_class_id",
        ),
        sa.ForeignKeyConstraint(
            ["resource_provider_id"],
            ["resource_providers.id"],
            name="fk_inventories_resource_provider_id",
        ),
        sa.ForeignKeyConstraint(
            ["resource_class_id"], ["resource_classes.id"], name="fk_inventories_resource_class_id"
        ),
    )
    op.create_index("ix_inventories_resource_class_id", "inventories", ["resource_class_id"])

    for name in ("projects", "users"):
        op.create_table(
            name,
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
            sa.Column("external_id", sa.String(255), nullable=False),
            *_ts(),
            sa.PrimaryKeyConstraint("id", name=f"pk_{name}"),
            sa.UniqueConstraint("external_id", name=f"uq_{name}_external_id"),
        )

    op.create_table(
        "consumer_types",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(255), nullable=False),
        *_ts(),
        sa.PrimaryKeyConstraint("id", name="pk_consumer_types"),
        sa.UniqueConstraint("name", name="uq_consumer_types_name"),
    )

    op.create_table(
        "consumers",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("project_id", sa.Integer, nullable=False),
        sa.Column("user_id", sa.Integer, nullable=False),
        sa.Column("generation", sa.Integer, nullable=False),
        sa.Column("consumer_type_id", sa.Integer, nullable=True),
        *_ts(),
        sa.PrimaryKeyConstraint("id", name="pk_consumers"),
        sa.UniqueConstraint("uuid", name="uq_consumers_uuid"),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], name="fk_consumers_project_id"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name="fk_consumers_user_id"),
        sa.ForeignKeyConstraint(
            ["consumer_type_id"], ["consumer_types.id"], name="fk_consumers_consumer_type_id"
        ),
    )
    op.create_index("ix_consumers_project_id_user_id", "consumers", ["project_id", "user_id"])
    op.create_index("ix_consumers_user_id", "consumers", ["user_id"])
    op.create_index("ix_consumers_consumer_type_id", "consumers", ["consumer_type_id"])

    op.create_table(
        "allocations",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("resource_provider_id", sa.Integer, nullable=False),
        sa.Column("consumer_id", sa.String(36), nullable=False),
        sa.Column("resource_class_id", sa.Integer, nullable=False),
        sa.Column("used", sa.BigInteger, nullable=False),
        *_ts(),
        sa.PrimaryKeyConstraint("id", name="pk_allocations"),
        sa.ForeignKeyConstraint(
            ["resource_provider_id"],
            ["resource_providers.id"],
            name="fk_allocations_resource_provider_id",
        ),
        sa.ForeignKeyConstraint(
            ["resource_class_id"], ["resource_classes.id"], name="fk_allocations_resource_class_id"
        ),
    )
    op.create_index(
        "ix_allocations_resource_provider_id_resource_class_id_used",
        "allocations",
        ["resource_provider_id", "resource_class_id", "used"],
    )
    op.create_index("ix_allocations_consumer_id", "allocations", ["consumer_id"])
    op.create_index("ix_allocations_resource_class_id", "allocations", ["resource_class_id"])

    op.create_table(
        "traits",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(255), nullable=False),
        *_ts(),
        sa.PrimaryKeyConstraint("id", name="pk_traits"),
        sa.UniqueConstraint("name", name="uq_traits_name"),
    )

    op.create_table(
        "resource_provider_traits",
        sa.Column("trait_id", sa.Integer, nullable=False),
        sa.Column("resource_provider_id", sa.Integer, nullable=False),
        *_ts(),
        sa.PrimaryKeyConstraint(
            "trait_id", "resource_provider_id", name="pk_resource_provider_traits"
        ),
        sa.ForeignKeyConstraint(
            ["trait_id"], ["traits.id"], name="fk_resource_provider_traits_trait_id"
        ),
        sa.ForeignKeyConstraint(
            ["resource_provider_id"],
            ["resource_providers.id"],
            name="fk_resource_provider_traits_resource_provider_id",
        ),
    )
    op.create_index(
        "ix_resource_provider_traits_resource_provider_id",
        "resource_provider_traits",
        ["resource_provider_id"],
    )

    op.create_table(
        "placement_aggregates",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uuid", sa.String(36), nullable=False),
        *_ts(),
        sa.PrimaryKeyConstraint("id", name="pk_placement_aggregates"),
        sa.UniqueConstraint("uuid", name="uq_placement_aggregates_uuid"),
    )

    op.create_table(
        "resource_provider_aggregates",
        sa.Column("resource_provider_id", sa.Integer, nullable=False),
        sa.Column("aggregate_id", sa.Integer, nullable=False),
        *_ts(),
        sa.PrimaryKeyConstraint(
            "resource_provider_id", "aggregate_id", name="pk_resource_provider_aggregates"
        ),
        sa.ForeignKeyConstraint(
            ["resource_provider_id"],
            ["resource_providers.id"],
            name="fk_resource_provider_aggregates_resource_provider_id",
        ),
        sa.ForeignKeyConstraint(
            ["aggregate_id"],
            ["placement_aggregates.id"],
            name="fk_resource_provider_aggregates_aggregate_id",
        ),
    )
    op.create_index(
        "ix_resource_provider_aggregates_aggregate_id",
        "resource_provider_aggregates",
        ["aggregate_id"],
    )

    revision_table = op.create_table(
        "placement_revision",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("revision", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_placement_revision"),
    )
    op.bulk_insert(revision_table, [{"id": 1, "revision": 0}])


def downgrade() -> None:
    for name in (
        "placement_revision",
        "resource_provider_aggregates",
        "placement_aggregates",
        "resource_provider_traits",
        "traits",
        "allocations",
        "consumers",
        "consumer_types",
        "users",
        "projects",
        "inventories",
        "resource_classes",
        "resource_providers",
    ):
        op.drop_table(name)
