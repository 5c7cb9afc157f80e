"""Change log rows carry the generation each write left its provider at (the foreign-write
watcher tells our generation moves from another writer's by it: db/foreign_writes.py).

Revision ID: 0004_change_generations
Revises: 0003_placement_changes
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_change_generations"
down_revision = "0003_placement_changes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("placement_changes", sa.Column("generation", sa.Integer, nullable=True))


def downgrade() -> None:
    op.drop_column("placement_changes", "generation")
