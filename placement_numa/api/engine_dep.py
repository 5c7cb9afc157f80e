"""``EngineDep``: the process's ``CandidateEngine``, created on first use from ``app.state``.

The engine (``SnapshotEngine`` over ``SqlFleetSource``) lives on ``app.state.candidate_engine``;
it keeps the fleet snapshot of this worker process, refreshed by ``placement_revision``.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Annotated, Any

from fastapi import Depends, Request

from placement_numa.db.repositories.fleet import SqlFleetSource
from placement_numa.engine import CandidateEngine, FleetSource, SnapshotEngine
from placement_numa.observability.engine import ObservedEngine, ObservedFleetSource

__all__ = ["get_candidate_engine", "engine_for_state", "preload_fleet", "EngineDep"]

LOG = logging.getLogger(__name__)

_CREATE = threading.Lock()


def get_candidate_engine(request: Request) -> CandidateEngine:
    """The app's candidate engine (created once per app, thread-safe)."""
    return engine_for_state(request.app.state)


def preload_fleet(app: Any) -> float | None:
    """Load the fleet snapshot of ``app``'s engine now (at worker start, so the first query
    does not pay for it); returns the seconds it took, or ``None`` when the database could not
    be read (logged; the first query loads it then)."""
    started = time.perf_counter()
    try:
        engine_for_state(app.state).snapshot()
    except Exception as exc:  # noqa: BLE001 - a worker starts even when the database is down
        LOG.warning("fleet snapshot not preloaded: %s", exc)
        return None
    elapsed = time.perf_counter() - started
    LOG.info("fleet snapshot loaded in %.2f s", elapsed)
    return elapsed


def engine_for_state(state: Any) -> CandidateEngine:
    """The candidate engine on ``state`` (an app's ``app.state``), created on first use; with
    ``state.metrics`` set, its searches and fleet refreshes are recorded there."""
    engine: CandidateEngine | None = getattr(state, "candidate_engine", None)
    if engine is None:
        with _CREATE:
            engine = getattr(state, "candidate_engine", None)
            if engine is None:
                settings = getattr(state, "settings", None)
                metrics = getattr(state, "metrics", None)
                sql_source = SqlFleetSource(state.database)
                state.fleet_source = sql_source  # cli/prefork.py closes its connection
                source: FleetSource = sql_source
                if metrics is not None:
                    source = ObservedFleetSource(source, metrics)
                engine = SnapshotEngine(
                    source,
                    randomize=bool(getattr(settings, "randomize_allocation_candidates", False)),
                    max_candidates=getattr(settings, "max_allocation_candidates", None),
                    strategy=getattr(
                        settings, "allocation_candidates_generation_strategy", "depth-first"
                    ),
                )
                if metrics is not None:
                    engine = ObservedEngine(engine, metrics)
                state.candidate_engine = engine
    return engine


async def _engine_dependency(request: Request) -> CandidateEngine:
    """``get_candidate_engine`` as a dependency (``async``: creating the engine reads nothing,
    so no thread-pool round trip; its snapshot is read by the route, in the pool)."""
    return engine_for_state(request.app.state)


EngineDep = Annotated[CandidateEngine, Depends(_engine_dependency)]
