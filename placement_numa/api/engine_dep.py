"""``EngineDep``: the process's ``CandidateEngine``, created on first use from ``app.state``.

The engine (``SnapshotEngine`` over ``SqlFleetSource``) lives on ``app.state.candidate_engine``;
it keeps the fleet snapshot of this worker process, refreshed by ``placement_revision``.
"""

from __future__ import annotations

import threading
from typing import Annotated, Any

from fastapi import Depends, Request

from placement_numa.db.repositories.fleet import SqlFleetSource
from placement_numa.engine import CandidateEngine, FleetSource, SnapshotEngine
from placement_numa.observability.engine import ObservedEngine, ObservedFleetSource

__all__ = ["get_candidate_engine", "engine_for_state", "EngineDep"]

_CREATE = threading.Lock()


def get_candidate_engine(request: Request) -> CandidateEngine:
    """The app's candidate engine (created once per app, thread-safe)."""
    return engine_for_state(request.app.state)


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
                source: FleetSource = SqlFleetSource(state.database)
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


EngineDep = Annotated[CandidateEngine, Depends(get_candidate_engine)]
