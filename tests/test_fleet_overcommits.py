"""``FleetSnapshot.overcommits``: whether a resource class may be allocated above its total
somewhere in the fleet, which the NUMA search reads to leave out Nova's memory rule where it
can reject nothing (``numa.search_hooks``).

Its promise, along patches of random forests: ``False`` only when no provider of the snapshot
has an inventory of the class at a ratio above 1.0 (on a fresh build: exactly then), and never
``False`` again once it was ``True`` in a lineage. The NUMA answers with and without the check
are compared in ``tests/test_numa_fidelity.py`` (a host at ratio 1.5) and by the bounded
search's tests against the exhaustive ranking.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement_numa.engine.fleet import FleetSnapshot
from placement_numa.engine.fleet_patch import replace_trees
from placement_numa.engine.providers import InventoryTuple, ProviderTuple
from tests.candidate_fleets import RCS, forests
from tests.test_fleet_patch_sharing import patched_by_edits, rows, state_of


def exact(fleet: FleetSnapshot, resource_class: str) -> bool:
    """Whether a live provider of ``fleet`` has ``resource_class`` at a ratio above 1.0."""
    providers = fleet.providers
    return any(
        providers[i].inventories[resource_class].allocation_ratio > 1.0
        for i in fleet.index_by_uuid.values()
        if resource_class in providers[i].inventories
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_overcommits_along_patches(data: st.DataObject) -> None:
    """A fresh build answers exactly; a patched snapshot answers ``True`` whenever one of its
    providers overcommits, and keeps ``True`` once said (asked after some patches only, so
    that some calls read the looks of several patches at once)."""
    current = data.draw(forests())
    for rc in RCS:
        assert current.overcommits(rc) == exact(current, rc)
    said = {rc: current.overcommits(rc) for rc in RCS}
    state = state_of(current)
    for revision in range(2, 2 + data.draw(st.integers(1, 4))):
        patched, new_state = patched_by_edits(data, current, state, revision)
        fresh = FleetSnapshot.build(revision, *rows(new_state, list(new_state)))
        if data.draw(st.booleans()):
            for rc in RCS:
                answer = patched.overcommits(rc)
                assert answer or not exact(patched, rc)
                assert answer or not said[rc]  # once True, True for the lineage
                said[rc] = answer
                assert fresh.overcommits(rc) == exact(fresh, rc)
        current, state = patched, new_state


def test_a_ratio_above_one_patched_in_is_seen() -> None:
    """One host at ratio 1.0, then its memory inventory patched to ratio 1.5: ``False``, then
    ``True`` (the patch's new look is read), and still ``True`` after a patch back to 1.0."""

    host: list[ProviderTuple] = [(1, "00000000-0000-4000-8000-000000000001", None, 1)]
    used = [(1, "MEMORY_MB", 1024)]

    def memory(ratio: float) -> list[InventoryTuple]:
        return [(1, "MEMORY_MB", 4096, 0, 1, 4096, 1, ratio)]

    fleet = FleetSnapshot.build(1, host, memory(1.0), used)
    assert not fleet.overcommits("MEMORY_MB")
    raised = replace_trees(fleet, 2, [1], host, memory(1.5), used, owned=True)
    assert raised is not None and raised.overcommits("MEMORY_MB")
    lowered = replace_trees(raised, 3, [1], host, memory(1.0), used, owned=True)
    assert lowered is not None and lowered.overcommits("MEMORY_MB")
    assert not lowered.overcommits("VCPU")
