"""NUMA distance matrices per compute node (the kernel's SLIT, keyed by NUMA cell id).

Revision ID: 0002_numa_distances
Revises: 0001_initial
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_numa_distances"
down_revision = "0001_initial"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "numa_distances",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("root_provider_id", sa.Integer, nullable=False),
        sa.Column("generation", sa.Integer, nullable=False),
        sa.Column("matrix", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=True),
        sa.Column("updated_at", sa.DateTime, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_numa_distances"),
        sa.UniqueConstraint("root_provider_id", name="uq_numa_distances_root_provider_id"),
        sa.ForeignKeyConstraint(
            ["root_provider_id"],
            ["resource_providers.id"],
            name="fk_numa_distances_root_provider_id",
            ondelete="CASCADE",
        ),
    )


def downgrade() -> None:
    op.drop_table("numa_distances")
