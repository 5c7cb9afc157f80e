"""The pieces of a reshape plan both directions build alike (``reshape.planner`` to NUMA,
``reshape.collapse`` back to flat): a consumer's entry of the ``POST /reshaper`` body and the
usage totals of the summary."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from placement_numa.reshape.model import ConsumerState

__all__ = ["consumer_entry", "all_typed", "numa_usages", "usages_text"]


def consumer_entry(
    consumer: ConsumerState, allocations: Mapping[str, Mapping[str, int]], typed: bool
) -> dict[str, Any]:
    """``consumer``'s entry of a ``POST /reshaper`` body: its new ``allocations`` (provider uuid
    -> {class: amount}, empty providers left out), project, user, generation and, with
    ``typed`` (microversion 1.38), its consumer type."""
    entry: dict[str, Any] = {
        "allocations": {
            rp: {"resources": dict(sorted(res.items()))}
            for rp, res in sorted(allocations.items())
            if any(res.values())
        },
        "project_id": consumer.project_id,
        "user_id": consumer.user_id,
        "consumer_generation": consumer.generation,
    }
    if typed:
        entry["consumer_type"] = consumer.consumer_type
    return entry


def all_typed(consumers: list[ConsumerState]) -> bool:
    """Whether every consumer's type is known (the body can then use microversion 1.38)."""
    return all(c.consumer_type not in (None, "unknown") for c in consumers)


def usages_text(usages: Mapping[str, int]) -> str:
    """``{"DISK_GB": 100, "VCPU": 12}`` as ``DISK_GB 100, VCPU 12`` (no Python reprs in output)."""
    return ", ".join(f"{rc} {amount}" for rc, amount in sorted(usages.items())) or "none"


def numa_usages(
    consumers: list[ConsumerState],
    allocations: Mapping[str, Mapping[str, Mapping[str, int]]],
    tree: set[str],
) -> dict[str, int]:
    """The consumers' total amounts by class on the providers of ``tree`` (uuids), read from
    ``allocations`` (consumer uuid -> provider uuid -> {class: amount}), classes sorted."""
    totals: dict[str, int] = {}
    for consumer in consumers:
        for rp, resources in allocations[consumer.uuid].items():
            if rp in tree:
                for rc, amount in resources.items():
                    totals[rc] = totals.get(rc, 0) + amount
    return dict(sorted(totals.items()))
