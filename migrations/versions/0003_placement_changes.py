"""Fleet change log: which providers each write transaction touched, by revision.

Revision ID: 0003_placement_changes
Revises: 0002_numa_distances
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_placement_changes"
down_revision = "0002_numa_distances"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "placement_changes",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("revision", sa.BigInteger, nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("provider_id", sa.Integer, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_placement_changes"),
    )
    op.create_index("ix_placement_changes_revision", "placement_changes", ["revision"])


def downgrade() -> None:
    op.drop_index("ix_placement_changes_revision", table_name="placement_changes")
    op.drop_table("placement_changes")
