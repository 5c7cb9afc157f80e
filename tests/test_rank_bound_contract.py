"""The NUMA rank bound works through the engine's public contract alone.

``numa.rank_bound`` and ``NumaRanker.bound`` read a root through ``engine.protocol``'s
``RootBoundView`` / ``PlanShape`` / ``SlotShape``. A second engine provides its own views; here
"the second engine" is plain frozen dataclasses holding copies of what the snapshot engine's
``RootView`` shows (no engine object behind them), and the bound must come out the same for
every root of a two-cell host fleet, for NUMA flavors of one and two cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from placement_numa.domain.request_groups import RequestGroup
from placement_numa.engine import FleetSnapshot, PlanShape, RootBoundView, SlotShape
from placement_numa.engine.options import candidate_roots
from placement_numa.engine.plan import plan_query
from placement_numa.engine.replay import RootSearch, RootView
from placement_numa.numa.engine_rank import NumaRanker
from placement_numa.numa.flavor import Flavor
from placement_numa.numa.translate import translate
from tests.test_numa_bounded import _uniform_fleet


@dataclass(frozen=True)
class PlainSlot:
    group: int
    resources: tuple[tuple[str, int], ...]
    suffixed: bool


@dataclass(frozen=True)
class PlainPlan:
    groups: tuple[RequestGroup, ...]
    slots: tuple[PlainSlot, ...]
    subtree_sets: tuple[frozenset[int], ...]
    isolate: bool


@dataclass(frozen=True)
class PlainView:
    root: int
    profile: int | None
    fleet: FleetSnapshot
    plan: PlainPlan
    slot_options: tuple[tuple[int, ...], ...] | None
    cache: dict[object, object] = field(default_factory=dict)

    def options(self) -> Sequence[Sequence[int]] | None:
        return self.slot_options


def plain(view: RootView) -> PlainView:
    """A copy of ``view`` made only of what the contract names."""
    plan: PlanShape = view.plan
    slots: tuple[SlotShape, ...] = tuple(plan.slots)
    shape = PlainPlan(
        plan.groups,
        tuple(PlainSlot(s.group, s.resources, s.suffixed) for s in slots),
        tuple(plan.subtree_sets),
        plan.isolate,
    )
    options = view.options()
    copied = None if options is None else tuple(tuple(o) for o in options)
    return PlainView(view.root, view.profile, view.fleet, shape, copied)


@pytest.mark.parametrize(
    "extra_specs",
    [
        {"hw:numa_nodes": "1", "hw:cpu_policy": "dedicated"},
        {"hw:numa_nodes": "2", "hw:cpu_policy": "dedicated"},
    ],
    ids=["one-cell", "two-cell"],
)
def test_a_second_engines_views_give_the_same_bound(extra_specs: dict[str, str]) -> None:
    fleet, index = _uniform_fleet(hosts=6)
    numa = translate(Flavor(4, 2048, extra_specs=extra_specs))
    distinct = numa.anchors if numa.filter_anchors else ()
    ranker = NumaRanker(index, numa.cpu_classes, distinct=distinct)
    plan = plan_query(fleet, numa.search_query)
    searcher = RootSearch(plan)
    roots = list(candidate_roots(plan))
    assert roots
    for root in roots:
        ours = RootView(searcher, root)
        theirs: RootBoundView = plain(ours)
        assert len(theirs.plan.slots) == len(plan.slots)
        assert ranker.bound(theirs) == ranker.bound(ours) is not None
