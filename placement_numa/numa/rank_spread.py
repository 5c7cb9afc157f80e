"""Ranking rule 3: the more even CPU spread wins (KEP-2902's balance score).

The score is the population standard deviation of the free CPUs left on each NUMA cell of the
host after the candidate's allocation (Kubernetes' ``distribute-cpus-across-numa`` balance: the
allocation that leaves the cells most evenly loaded). Lower is better; a host with one cell
scores 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["spread"]


def spread(free_after: Sequence[int]) -> float:
    """Population standard deviation of ``free_after`` (free CPUs per host cell)."""
    if not free_after:
        return 0.0
    mean = sum(free_after) / len(free_after)
    return math.sqrt(sum((x - mean) ** 2 for x in free_after) / len(free_after))
