"""``NUMARankWeigher``: order hosts by placement-numa's rank (set by the filter).

Enable in ``nova.conf``::

    [filter_scheduler]
    weight_classes = nova.scheduler.weights.all_weighers
    weight_classes = placement_numa_nova.weights.NUMARankWeigher
    placement_numa_weight_multiplier = 10.0

The weight of a host is ``1 / (1 + rank)`` (rank 0 is placement-numa's best host: narrowest set
of cells, then closest, then the best CPU spread); Nova normalises weights to 0..1 across the
hosts and multiplies them by ``placement_numa_weight_multiplier`` (default 10.0, so the rank
outweighs the default RAM/CPU/disk weighers at 1.0; 0 turns it off). The rank is the filter's,
or, without the filter, the one the patch series' scheduler keeps on the host's first candidate
(``numa["rank"]``); a host with neither weighs 0.
"""

from __future__ import annotations

from typing import Any

from nova.scheduler import weights
from oslo_config import cfg

from placement_numa_nova.ranking import scheduler_rank

__all__ = ["NUMARankWeigher"]

OPTION = cfg.FloatOpt(
    "placement_numa_weight_multiplier",
    default=10.0,
    help="Multiplier of placement-numa's host rank (NUMARankWeigher); 0 turns it off.",
)
cfg.CONF.register_opt(OPTION, group="filter_scheduler")


class NUMARankWeigher(weights.BaseHostWeigher):
    """Higher weight for a better placement-numa rank."""

    def weight_multiplier(self, host_state: Any) -> float:
        """``[filter_scheduler] placement_numa_weight_multiplier``."""
        return float(cfg.CONF.filter_scheduler.placement_numa_weight_multiplier)

    def _weigh_object(self, host_state: Any, weight_properties: Any) -> float:
        rank = getattr(host_state, "placement_numa_rank", None)
        if rank is None:
            rank = scheduler_rank(host_state)
        return 0.0 if rank is None else 1.0 / (1 + rank)
