"""The ``explain`` of a NUMA candidate: the query the search ran, as a ``GET
/allocation_candidates`` query string, then the constraints the search enforces on each
candidate beyond that query, after a ``#`` (a URL fragment: ``GET
/allocation_candidates?<explain>`` still runs the query, clients drop the fragment)::

    resources_MEM1=...&resources_PCI1=CUSTOM_PCI_8086_1572:1&same_subtree=...&group_policy=none
    #device_affinity=_PCI1:required&guest_cells=_NUMA1,_NUMA2&distinct_cells=_NUMA1,_NUMA2

Constraints (each present only when the search applies it):

* ``device_affinity=<suffix>:<policy>,...``: the device groups whose NUMA affinity the search
  checks (``numa.device_affinity``: ``required``, ``legacy``, ``socket``) or ranks
  (``preferred``), and ``guest_cells``: the anchor groups whose host cells count as the guest's;
  a ``required`` device of a one-cell guest is in the query's ``same_subtree`` instead;
* ``distinct_cells=<suffix>,...``: guest cells on distinct host cells, when the query itself
  (``group_policy=isolate``) does not enforce it;
* ``memory=free_pages``: Nova's rule for pinned or explicit-page-size guests
  (``numa.memory_rule``).
"""

from __future__ import annotations

from placement_numa.numa.query_string import to_query_string
from placement_numa.numa.translate import NumaQuery

__all__ = ["explain"]


def _constraints(numa: NumaQuery) -> list[str]:
    """``name=value`` of each constraint the search adds to ``numa``'s query."""
    found: list[str] = []
    devices = [d for d in numa.devices if not d.in_subtree and d.policy != "none"]
    if devices:
        found.append("device_affinity=" + ",".join(f"{d.suffix}:{d.policy}" for d in devices))
        anchors = numa.search_cells or numa.cells
        found.append("guest_cells=" + ",".join(c.anchor for c in anchors))
    if numa.filter_anchors:
        found.append("distinct_cells=" + ",".join(numa.anchors))
    if numa.topology is not None and numa.topology.memory_not_overcommitted:
        found.append("memory=free_pages")
    return found


def explain(numa: NumaQuery) -> str:
    """``numa``'s search query as a GET query string, plus ``#`` and its search constraints
    (``&``-separated) when there are any (see the module docstring)."""
    query = to_query_string(numa.search_query)
    constraints = _constraints(numa)
    return query + ("#" + "&".join(constraints) if constraints else "")
