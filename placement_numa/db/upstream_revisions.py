"""OpenStack Placement's alembic revisions: how a database of upstream's is recognised.

Both projects keep their schema version in ``alembic_version``, with different chains.
``db.migrate`` refuses to upgrade a database at one of these revisions, and ``db.adopt`` takes
one at ``UPSTREAM_HEAD`` (Placement 16, ``placement-manage db sync``) over and writes it back on
``release``.
"""

from __future__ import annotations

__all__ = ["UPSTREAM_HEAD", "UPSTREAM_REVISIONS"]

UPSTREAM_HEAD = "a082b8bb98d0"
# Placement's alembic chain, oldest first (placement/db/sqlalchemy/alembic/versions).
UPSTREAM_REVISIONS = ("b4ed3a175331", "611cd6dffd7b", "b5c396305c25", "422ece571366", UPSTREAM_HEAD)
