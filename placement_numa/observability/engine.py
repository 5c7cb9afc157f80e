"""Candidate-engine and fleet-source wrappers that feed ``Metrics``.

``ObservedEngine`` is a ``CandidateEngine`` (same ``search``/``snapshot``) that times
each search and records the engine's ``SearchStats`` (candidates returned, roots visited, cap
hits). ``ObservedFleetSource`` is a ``FleetSource`` that records each refresh of the snapshot
(incremental or full, from ``SqlFleetSource``'s counters), its duration, the revision lag and
the providers held. Neither changes what the engine answers.
"""

from __future__ import annotations

import time
from typing import Any

from placement_numa.engine import CandidateEngine, CandidateResult, FleetSnapshot
from placement_numa.observability.metrics import Metrics

__all__ = ["ObservedEngine", "ObservedFleetSource"]


class ObservedEngine:
    """``CandidateEngine`` over ``inner``, recording each search in ``metrics``."""

    def __init__(self, inner: CandidateEngine, metrics: Metrics) -> None:
        self.inner = inner
        self.metrics = metrics

    def snapshot(self) -> FleetSnapshot:
        """The inner engine's snapshot."""
        return self.inner.snapshot()

    def search(self, query: Any, **options: Any) -> CandidateResult:
        """The inner engine's ``search`` (same arguments and errors), timed and counted."""
        started = time.perf_counter()
        result = self.inner.search(query, **options)
        seconds = time.perf_counter() - started
        ranked = "true" if options.get("rank") is not None else "false"
        m = self.metrics
        m.searches.labels(ranked).inc()
        m.search_duration.labels(ranked).observe(seconds)
        m.search_candidates.labels(ranked).observe(result.stats.returned)
        m.search_roots.labels(ranked).observe(result.stats.roots_visited)
        if result.stats.cap_hit:
            m.search_cap_hits.labels(ranked).inc()
        return result


class ObservedFleetSource:
    """``FleetSource`` over ``inner`` (a ``SqlFleetSource``: ``full_loads`` and ``patches``
    counters), recording refreshes in ``metrics``."""

    def __init__(self, inner: Any, metrics: Metrics) -> None:
        self.inner = inner
        self.metrics = metrics
        self._held: int | None = None

    def snapshot(self) -> FleetSnapshot:
        """The inner source's snapshot; a refresh it made is counted and timed."""
        full, patches = self.inner.full_loads, self.inner.patches
        started = time.perf_counter()
        fleet: FleetSnapshot = self.inner.snapshot()
        seconds = time.perf_counter() - started
        kind = (
            "full"
            if self.inner.full_loads > full
            else "incremental"
            if self.inner.patches > patches
            else None
        )
        if kind is not None:
            m = self.metrics
            m.fleet_refreshes.labels(kind).inc()
            m.fleet_refresh_duration.labels(kind).observe(seconds)
            lag = 0 if self._held is None else max(0, fleet.revision - self._held)
            m.fleet_revision_lag.set(lag)
            m.fleet_revision.set(fleet.revision)
            m.fleet_providers.set(len(fleet.index_by_uuid))  # live providers, O(1)
        self._held = fleet.revision
        return fleet
