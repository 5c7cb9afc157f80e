"""The interface of a Topology Manager policy as a request option (``topology_policy``).

Kubernetes' Topology Manager (``pkg/kubelet/cm/topologymanager``) keeps one small policy per file
over one merge of hints; we do the same. A policy here says what it does to a flavor's request:

* ``device_policy``: the device affinity it imposes on every device (``required``,
  ``preferred`` or ``none``; it replaces the flavor's, the image's and the aliases' policies);
* ``numa_guest``: whether it makes a guest without any NUMA request a one-cell NUMA guest
  (alignment of CPUs and memory is what the policy asks);
* ``widths``: how the cell count of a guest that does not fix it (no ``hw:numa_nodes``) is
  chosen: ``"flavor"`` (as the flavor and ``distribute_cpus_across_numa`` say), ``"narrowest"``
  (1, 2, ... cells, each host at its narrowest: the Topology Manager's narrowest mask) or
  ``"every"`` (every width a host can give, narrowest first in the ranking);
* ``fallback``: whether hosts without NUMA cells (not reshaped) may answer;
* ``admits(cell_count)``: whether a guest fixed at ``cell_count`` cells (``None``: not fixed)
  can be placed at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["TopologyPolicy", "Widths"]

Widths = Literal["flavor", "narrowest", "every"]


@dataclass(frozen=True)
class TopologyPolicy:
    """One Topology Manager policy (see the module docstring)."""

    name: str
    device_policy: str
    numa_guest: bool
    widths: Widths
    fallback: bool
    max_cells: int | None = None

    def admits(self, cell_count: int | None) -> bool:
        """Whether a guest fixed at ``cell_count`` cells can be placed under this policy."""
        return cell_count is None or self.max_cells is None or cell_count <= self.max_cells
