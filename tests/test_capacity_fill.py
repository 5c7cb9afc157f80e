"""The capacity count's fast path (``services.fleet_fill``: one fleet search, the claims
replayed per host) against its reference (``services.host_fill``: the claim's whole search
once per placement on a one-host copy), on random NUMA fleets (``test_numa_bounded``'s: 1-4
cells, PCPU/VCPU, small and 2 MiB pages, usage, SLITs, permuted cell ids, look-alike hosts,
non-NUMA hosts): the same count, cap and ``limited_by`` per host, for every flavor shape.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement_numa.engine import SnapshotEngine, StaticFleetSource
from placement_numa.engine.fleet import FleetSnapshot
from placement_numa.numa.engine_rank import CellIndex
from placement_numa.numa.flavor import Flavor
from placement_numa.numa.request import NumaOptions
from placement_numa.services.capacity import FlavorAsk, fleet_capacity
from tests.test_numa_bounded import numa_fleets

SHAPES: dict[str, dict[str, str]] = {
    "one-cell": {"hw:numa_nodes": "1"},
    "two-cell": {"hw:numa_nodes": "2"},
    "pinned": {"hw:cpu_policy": "dedicated"},
    "pinned-two-cell": {"hw:cpu_policy": "dedicated", "hw:numa_nodes": "2"},
    "2m-pages": {"hw:mem_page_size": "2MB"},
    "mixed": {"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "^0"},
    "no-numa": {},
}


@st.composite
def flavors(draw: Any) -> FlavorAsk:
    name = draw(st.sampled_from(sorted(SHAPES)))
    vcpus = draw(st.sampled_from((2, 4)))
    memory = draw(st.sampled_from((512, 1024, 2048)))
    disk = draw(st.sampled_from((0, 10, 30)))
    return FlavorAsk(name, Flavor(vcpus, memory, disk, extra_specs=SHAPES[name]))


def answers(fleet: FleetSnapshot, index: CellIndex, ask: FlavorAsk, **kw: Any) -> Any:
    engine = SnapshotEngine(StaticFleetSource(fleet))
    (found,) = fleet_capacity(engine=engine, index=index, flavors=[ask], fleet=fleet, **kw)
    return found.total, [(h.uuid, h.count, h.capped, h.limited_by) for h in found.hosts]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(numa_fleets(), flavors(), st.booleans(), st.sampled_from((1, 3, 1000)))
def test_fast_fill_equals_host_by_host(
    drawn: tuple[FleetSnapshot, CellIndex], ask: FlavorAsk, prefer_closest: bool, cap: int
) -> None:
    fleet, index = drawn
    options = NumaOptions(prefer_closest=prefer_closest)
    fast = answers(fleet, index, ask, options=options, cap=cap)
    assert fast == answers(fleet, index, ask, options=options, cap=cap, reference=True)
