"""Database pool use as metrics: SQLAlchemy pool events update ``Metrics`` (connections in use,
checkouts). Works for every pool class (SQLite's ``NullPool`` included)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

from placement_numa.observability.metrics import Metrics

__all__ = ["observe_pool"]


def observe_pool(engine: Engine, metrics: Metrics) -> None:
    """Listen to ``engine``'s pool checkouts and checkins."""

    @event.listens_for(engine, "checkout")
    def _checkout(*_args: Any) -> None:
        metrics.pool_checked_out.inc()
        metrics.pool_checkouts.inc()

    @event.listens_for(engine, "checkin")
    def _checkin(*_args: Any) -> None:
        metrics.pool_checked_out.dec()
