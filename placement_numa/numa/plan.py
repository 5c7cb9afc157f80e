"""Step 2 of the NUMA pipeline: ``NumaRequest`` -> one ``SearchPlan``, built once per request.

The plan holds what the searches of one request run, each translated once:

* ``main``: the request translated as the flavor says (``translate``): its grouped
  ``same_subtree`` query, the folded search form, the guest cells and devices, and the
  ``fallback`` query for hosts not reshaped to NUMA (``None`` when the request allows none);
* ``admitted``: false when the topology policy refuses the guest outright (``single-numa-node``
  and a guest fixed at more than one cell: no candidates);
* ``widen``: the cell count is not fixed and the topology policy or
  ``distribute_cpus_across_numa`` asks the guest at 1, 2, ... cells (KEP-2902; the Topology
  Manager's ``restricted``/``best-effort``); ``every``: every width ranked together
  (``best-effort``);
* ``widths()`` and ``attempts(width)``: the widths to try and, at each, the guest topology of
  every CPU split tried (the even one only, or every split the most even first for
  ``restricted``/``best-effort`` without ``distribute_cpus_across_numa``), each translated on
  first use and kept, so later searches of the same plan (a claim's rounds, the bounded and the
  exhaustive paths) never translate again.

The candidate endpoint (``services.numa_candidates``), the claim endpoint (``services.claims``)
and ``explain`` (``NumaQuery.explain`` of each of its queries) all consume the same plan. What
depends on the fleet (traits and classes the service knows: ``services.numa_search.runnable``)
is checked per snapshot by the searches, not here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from placement_numa.numa.distribute import cpu_splits, widths_to_try
from placement_numa.numa.request import NumaRequest
from placement_numa.numa.translate import NumaQuery, guest_topology, translate, translate_topology

__all__ = ["MAX_DISTRIBUTE_CELLS", "SearchPlan", "search_plan"]

# KEP-2902 tries 1..N cells; hosts rarely have more than 8 cells per socket pair.
MAX_DISTRIBUTE_CELLS = 16


@dataclass(frozen=True)
class SearchPlan:
    """The searches of one ``NumaRequest`` (see the module docstring). Build with
    ``search_plan``; safe to share between threads (a width translated twice by two threads at
    once gives equal values, the second kept)."""

    request: NumaRequest
    main: NumaQuery
    admitted: bool
    widen: bool
    every: bool
    _attempts: dict[int, tuple[NumaQuery, ...]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def widths(self) -> list[int]:
        """The widths (guest cell counts) a widened request tries, narrowest first."""
        return widths_to_try(self.request.vcpus, MAX_DISTRIBUTE_CELLS)

    def splits(self, width: int) -> list[tuple[int, ...]]:
        """The CPU splits tried at ``width`` (``()``: the even split): the even one only
        (KEP-2902, and Nova's flavor semantics), or, for ``restricted``/``best-effort``
        without ``distribute_cpus_across_numa``, every split the most even first
        (``numa.distribute.cpu_splits``)."""
        policy = self.request.topology_policy
        uneven = (
            policy is not None and policy.widths != "flavor" and not self.request.options.distribute
        )
        if width == 1 or not uneven:
            return [()]
        return cpu_splits(self.request.vcpus, width)

    def attempts(self, width: int) -> tuple[NumaQuery, ...]:
        """The translation of the request at ``width`` cells, one per CPU split of
        ``splits(width)`` in that order (translated on first use, then kept)."""
        found = self._attempts.get(width)
        if found is None:
            found = tuple(
                translate(self.request, cell_count=width, cpu_split=split or None)
                for split in self.splits(width)
            )
            self._attempts[width] = found
        return found


def search_plan(request: NumaRequest) -> SearchPlan:
    """The ``SearchPlan`` of ``request`` (translates the main query once; widths on use).
    Raises ``InvalidFlavor`` (400) only for what the translation refuses."""
    policy = request.topology_policy
    admitted = policy is None or policy.admits(request.numa_nodes)
    main = translate_topology(request, guest_topology(request))
    widths = policy.widths if policy is not None else "flavor"
    distribute = request.options.distribute and (policy is None or policy.max_cells != 1)
    widen = (
        main.topology is not None
        and not main.topology.fixed_cell_count
        and (widths != "flavor" or distribute)
    )
    return SearchPlan(
        request=request,
        main=main,
        admitted=admitted,
        widen=widen,
        every=widths == "every",
    )
