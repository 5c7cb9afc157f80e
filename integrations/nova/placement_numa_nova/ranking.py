"""placement-numa's ranked answer, per compute node.

``POST /allocation_candidates`` answers in the shape of ``GET /allocation_candidates`` (1.39):
``allocation_requests`` best first (the best candidate of every host before the second best of
any host), each with ``allocations``, ``mappings`` and a ``numa`` block (host, cells, width,
average distance, spread); ``provider_summaries`` give each provider's root.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Ranking", "scheduler_rank"]


@dataclass
class Ranking:
    """``candidates[root uuid]``: that host's allocation requests in rank order, as Nova claims
    them (``allocations`` and ``mappings`` only); ``rank[root uuid]``: 0 for the host of the best
    candidate, 1 for the next distinct host, ..."""

    candidates: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    rank: dict[str, int] = field(default_factory=dict)
    numa: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_answer(cls, answer: dict[str, Any]) -> Ranking:
        """Group ``answer`` (the POST's JSON) by root provider, keeping the order."""
        summaries = answer.get("provider_summaries", {})
        ranking = cls()
        for request in answer.get("allocation_requests", []):
            roots = {
                summaries.get(rp, {}).get("root_provider_uuid", rp) for rp in request["allocations"]
            }
            claimable = {"allocations": request["allocations"]}
            if "mappings" in request:
                claimable["mappings"] = request["mappings"]
            for root in sorted(roots):
                if root not in ranking.rank:
                    ranking.rank[root] = len(ranking.rank)
                    ranking.numa[root] = request.get("numa", {})
                ranking.candidates.setdefault(root, []).append(claimable)
        return ranking


def scheduler_rank(host_state: Any) -> int | None:
    """The rank of ``host_state``'s first candidate when the scheduler's own query already was
    placement-numa's (the patch series' 0002 keeps ``numa["rank"]``, 0 = best, on each candidate
    until the claim); ``None`` otherwise."""
    candidates = getattr(host_state, "allocation_candidates", None) or []
    numa = candidates[0].get("numa") if candidates else None
    if isinstance(numa, dict) and isinstance(numa.get("rank"), int):
        return int(numa["rank"])
    return None
