"""The service's Prometheus metrics (prometheus-client), one ``Metrics`` object per app.

Series (all prefixed ``placement_numa_``)::

    http_requests_total{method,route,status}          counter; route = the route template
    http_request_duration_seconds{method,route}       histogram
    candidate_searches_total{ranked}                  counter (ranked: "true" for NUMA searches)
    candidate_search_duration_seconds{ranked}         histogram
    candidate_search_candidates{ranked}               histogram of candidates returned
    candidate_search_roots_visited{ranked}            histogram of anchor roots searched
    candidate_search_cap_hits_total{ranked}           counter: answers cut by the candidate cap
    fleet_refreshes_total{kind}                       counter; kind = incremental | full
    fleet_refresh_duration_seconds{kind}              histogram
    fleet_revision_lag                                gauge: revisions the snapshot was behind
                                                      when last refreshed (0: it was current)
    fleet_revision                                    gauge: revision of the snapshot held
    fleet_providers                                   gauge: providers in the snapshot
    db_pool_checked_out                               gauge: connections in use
    db_pool_checkouts_total                           counter
    fleet_numa_cell_free{compute_node,cell,resource_class}   gauge (PCPU, VCPU free per cell)
    fleet_numa_free_cpu_stddev{compute_node}           gauge: population std-dev of free CPUs
                                                      across the node's cells (KEP-2902)
    fleet_numa_cells_without_free_cpus                 gauge

Several worker processes: with ``PROMETHEUS_MULTIPROC_DIR`` set (``placement-numa serve`` sets
it), values live in files there and a scrape of any worker sums every worker
(prometheus-client's multiprocess mode). It must be set before the worker imports
prometheus-client, and be an empty directory when the service starts.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.multiprocess import MultiProcessCollector

__all__ = ["Metrics", "CONTENT_TYPE_LATEST", "multiprocess_mode"]

PREFIX = "placement_numa_"
DURATION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
COUNT_BUCKETS = (0, 1, 5, 10, 50, 100, 500, 1000, 5000, 10000, 100000)


def multiprocess_mode() -> bool:
    """Whether prometheus-client runs in multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``)."""
    return bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))


class Metrics:
    """The metric objects of one app, and ``render()`` for ``/metrics``.

    ``collectors``: extra collectors read at scrape time in the scraping process (the fleet
    NUMA gauges), registered with ``add_collector``.
    """

    def __init__(self) -> None:
        self.multiprocess = multiprocess_mode()
        self.registry = CollectorRegistry()
        self._collectors: list[Any] = []
        registry = None if self.multiprocess else self.registry
        kw: dict[str, Any] = {"registry": registry}
        self._add_http_metrics(kw)
        self._add_search_metrics(kw)
        self._add_fleet_metrics(kw)
        for ranked in ("true", "false"):  # every search series exists from the start
            self.search_cap_hits.labels(ranked)
        self._add_pool_metrics(kw)

    def _add_http_metrics(self, kw: dict[str, Any]) -> None:
        """The request series (``http_*``); ``kw`` holds the registry (None: multiprocess)."""
        self.http_requests = Counter(
            PREFIX + "http_requests_total",
            "HTTP requests by route template, method and status.",
            ["method", "route", "status"],
            **kw,
        )
        self.http_duration = Histogram(
            PREFIX + "http_request_duration_seconds",
            "HTTP request latency by route template and method.",
            ["method", "route"],
            buckets=DURATION_BUCKETS,
            **kw,
        )

    def _add_search_metrics(self, kw: dict[str, Any]) -> None:
        """The candidate search series (``candidate_search*``, labelled ``ranked``)."""
        self.searches = Counter(
            PREFIX + "candidate_searches_total", "Candidate searches.", ["ranked"], **kw
        )
        self.search_duration = Histogram(
            PREFIX + "candidate_search_duration_seconds",
            "Candidate search latency (one engine search).",
            ["ranked"],
            buckets=DURATION_BUCKETS,
            **kw,
        )
        self.search_candidates = Histogram(
            PREFIX + "candidate_search_candidates",
            "Candidates returned by one search.",
            ["ranked"],
            buckets=COUNT_BUCKETS,
            **kw,
        )
        self.search_roots = Histogram(
            PREFIX + "candidate_search_roots_visited",
            "Anchor roots whose trees one search visited.",
            ["ranked"],
            buckets=COUNT_BUCKETS,
            **kw,
        )
        self.search_cap_hits = Counter(
            PREFIX + "candidate_search_cap_hits_total",
            "Searches whose answer the candidate cap (max_allocation_candidates) cut.",
            ["ranked"],
            **kw,
        )

    def _add_fleet_metrics(self, kw: dict[str, Any]) -> None:
        """The fleet snapshot series (``fleet_refresh*``, ``fleet_revision*``, providers)."""
        self.fleet_refreshes = Counter(
            PREFIX + "fleet_refreshes_total",
            "Fleet snapshot refreshes (incremental: patched from the change log; full: loaded).",
            ["kind"],
            **kw,
        )
        self.fleet_refresh_duration = Histogram(
            PREFIX + "fleet_refresh_duration_seconds",
            "Fleet snapshot refresh latency.",
            ["kind"],
            buckets=DURATION_BUCKETS,
            **kw,
        )
        self.fleet_revision_lag = Gauge(
            PREFIX + "fleet_revision_lag",
            "Revisions the fleet snapshot was behind the database at its last refresh.",
            multiprocess_mode="livemax",
            **kw,
        )
        self.fleet_revision = Gauge(
            PREFIX + "fleet_revision",
            "placement_revision of the fleet snapshot held.",
            multiprocess_mode="livemax",
            **kw,
        )
        self.fleet_providers = Gauge(
            PREFIX + "fleet_providers",
            "Resource providers in the fleet snapshot held.",
            multiprocess_mode="livemax",
            **kw,
        )

    def _add_pool_metrics(self, kw: dict[str, Any]) -> None:
        """The database connection pool series (``db_pool_*``)."""
        self.pool_checked_out = Gauge(
            PREFIX + "db_pool_checked_out",
            "Database connections checked out of the pool (in use).",
            multiprocess_mode="livesum",
            **kw,
        )
        self.pool_checkouts = Counter(
            PREFIX + "db_pool_checkouts_total", "Database connection checkouts.", **kw
        )

    def add_collector(self, collector: Any) -> None:
        """Add a collector read at scrape time, in the scraping process only."""
        self._collectors.append(collector)
        if not self.multiprocess:
            self.registry.register(collector)

    def render(self) -> bytes:
        """The exposition text of every series (every worker's, in multiprocess mode)."""
        if not self.multiprocess:
            return generate_latest(self.registry)
        registry = CollectorRegistry()
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        for collector in self._collectors:
            registry.register(collector)
        return generate_latest(registry)

    def timer(self) -> Callable[[], float]:
        """A stopwatch: ``elapsed = metrics.timer(); ...; seconds = elapsed()``."""
        import time

        started = time.perf_counter()
        return lambda: time.perf_counter() - started
