"""Flavor capacity and stranded capacity gauges for a flavor catalogue (issue 31).

Series (a fixed count: per flavor, per flavor and aggregate, per resource class):

* ``placement_numa_flavor_capacity{flavor}``: how many more instances of each catalogue
  flavor fit (``POST /allocation_candidates/capacity``'s ``total``);
* ``placement_numa_flavor_capacity_aggregate{flavor,aggregate}``: the same over the compute
  nodes in each aggregate (where aggregates exist);
* ``placement_numa_fleet_free{resource_class}``, ``placement_numa_fleet_stranded{resource_class}``
  and ``placement_numa_fleet_fragmentation{resource_class}`` (PCPU, VCPU, MEMORY_MB, DISK_GB):
  free capacity, the part no catalogue flavor can use, and their ratio
  (``services.stranded``);
* ``placement_numa_flavor_capacity_revision``: the fleet revision the figures are of;
  ``placement_numa_flavor_capacity_seconds``: the CPU-bound time their computation took.

Bounded cost: the figures are computed off the scrape, in one background thread, at most once
per ``min_interval`` seconds and only when the fleet revision moved; a scrape reads the last
figures (none until the first computation ends), so it costs the same at any fleet size.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.core import GaugeMetricFamily

__all__ = ["CatalogueFigures", "CatalogueCollector"]

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class CatalogueFigures:
    """One computation's figures (see the module docstring)."""

    revision: int
    capacity: Mapping[str, int]
    per_aggregate: Mapping[tuple[str, str], int] = field(default_factory=dict)
    free: Mapping[str, int] = field(default_factory=dict)
    stranded: Mapping[str, int] = field(default_factory=dict)
    fragmentation: Mapping[str, float] = field(default_factory=dict)
    seconds: float = 0.0


class CatalogueCollector:
    """A prometheus-client collector: ``revision()`` is the fleet's current revision (``None``
    before the engine exists), ``compute()`` the figures for the current fleet."""

    def __init__(
        self,
        revision: Callable[[], int | None],
        compute: Callable[[], CatalogueFigures],
        *,
        min_interval: float = 10.0,
    ) -> None:
        self.revision = revision
        self.compute = compute
        self.min_interval = min_interval
        self.figures: CatalogueFigures | None = None
        self._thread: threading.Thread | None = None
        self._started = float("-inf")
        self._lock = threading.Lock()

    def describe(self) -> list[Any]:
        """No description up front (the series depend on the catalogue)."""
        return []

    def _run(self) -> None:
        try:
            started = time.perf_counter()
            figures = self.compute()
            seconds = time.perf_counter() - started
            self.figures = CatalogueFigures(**{**figures.__dict__, "seconds": seconds})
        except Exception as exc:  # a failing computation keeps the last figures
            LOG.warning("flavor catalogue figures not computed: %s", exc)

    def refresh(self, *, wait: bool = False) -> None:
        """Start a computation when the revision moved and none ran in ``min_interval``
        seconds (``wait``: also wait for it; tests and the first scrape of a test)."""
        current = self.revision()
        with self._lock:
            running = self._thread is not None and self._thread.is_alive()
            stale = current is not None and (
                self.figures is None or self.figures.revision != current
            )
            due = time.monotonic() - self._started >= self.min_interval
            if stale and not running and (due or self.figures is None):
                self._started = time.monotonic()
                self._thread = threading.Thread(
                    target=self._run, name="flavor-capacity", daemon=True
                )
                self._thread.start()
            thread = self._thread
        if wait and thread is not None:
            thread.join()

    def collect(self) -> Iterator[Any]:
        """The last figures' gauges (and a computation started if they are stale)."""
        self.refresh()
        figures = self.figures
        if figures is None:
            return iter(())
        return iter(_families(figures))


def _families(figures: CatalogueFigures) -> list[Any]:
    capacity = GaugeMetricFamily(
        "placement_numa_flavor_capacity",
        "Instances of each catalogue flavor that still fit (POST .../capacity's total).",
        labels=["flavor"],
    )
    for flavor, total in figures.capacity.items():
        capacity.add_metric([flavor], total)
    per_aggregate = GaugeMetricFamily(
        "placement_numa_flavor_capacity_aggregate",
        "Instances of each catalogue flavor that still fit on the compute nodes of an aggregate.",
        labels=["flavor", "aggregate"],
    )
    for (flavor, aggregate), total in sorted(figures.per_aggregate.items()):
        per_aggregate.add_metric([flavor, aggregate], total)
    found = [capacity, per_aggregate]
    for name, values, text in (
        ("fleet_free", figures.free, "Free capacity of the fleet per resource class."),
        ("fleet_stranded", figures.stranded, "Free capacity no catalogue flavor can use."),
        ("fleet_fragmentation", figures.fragmentation, "Stranded free / free per class."),
    ):
        family = GaugeMetricFamily("placement_numa_" + name, text, labels=["resource_class"])
        for rc, value in values.items():
            family.add_metric([rc], value)
        found.append(family)
    found.append(
        GaugeMetricFamily(
            "placement_numa_flavor_capacity_revision",
            "Fleet revision the flavor capacity figures are of.",
            value=figures.revision,
        )
    )
    found.append(
        GaugeMetricFamily(
            "placement_numa_flavor_capacity_seconds",
            "Seconds the last flavor capacity computation took.",
            value=figures.seconds,
        )
    )
    return found
