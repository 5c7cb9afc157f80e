"""Room codes coded a block of providers at a time (``engine.answers.RoomCodes``, issue 30).

Whatever a search read before (some roots' codes, every code, none), and along 1-4 patches
of a snapshot (the coded blocks copied from the previous snapshot's, the replaced and new
providers' blocks coded again, old snapshots handed over or not), the codes a search reads
equal those of a fresh build of the same rows. Blocks are made tiny (1, 2 or 4 providers) so
that trees straddle blocks and patched trees spread over several.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement_numa.domain.request_groups import CandidateQuery, RequestGroup
from placement_numa.engine import SnapshotEngine, StaticFleetSource, answers
from placement_numa.engine.answers import lazy_room_codes, room_code_array
from placement_numa.engine.fleet import FleetSnapshot
from placement_numa.engine.fleet_patch import replace_trees
from placement_numa.engine.plan import plan_query
from tests.candidate_fleets import forests
from tests.test_engine_limits import wide_host
from tests.test_fleet_patch_sharing import edits, root_of, rows, state_of, touched_roots
from tests.test_numa_host_view import QUERY


def fresh_codes(fleet: FleetSnapshot) -> dict[str, int] | None:
    """Every live provider's code by uuid, coded whole."""
    codes = room_code_array(plan_query(fleet, QUERY))
    if codes is None:
        return None
    return {fleet.uuids[i]: int(codes[i]) for i in fleet.index_by_uuid.values()}


def read_some(data: st.DataObject, fleet: FleetSnapshot) -> dict[str, int] | None:
    """The codes of some roots' trees (drawn), read as a search reads them (``of``)."""
    codes = lazy_room_codes(plan_query(fleet, QUERY))
    if codes is None:
        return None
    roots = data.draw(st.lists(st.sampled_from(sorted(fleet.tree)), max_size=6))
    found = {}
    for root in roots:
        members = fleet.tree[root]
        for index, code in zip(members, codes.of(fleet, members), strict=True):
            found[fleet.uuids[index]] = code
    return found


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_codes_read_as_searched_equal_fresh_ones(data: st.DataObject) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(answers, "BLOCK_BITS", data.draw(st.sampled_from([0, 1, 2])))
        patch.setattr(answers, "RUN_BLOCKS", data.draw(st.sampled_from([1, 2, 8])))
        check_lineage(data, data.draw(forests()))


def check_lineage(data: st.DataObject, current: FleetSnapshot) -> None:
    """Along 1-4 patches, codes read root by root (and, drawn, whole) on each snapshot of
    the lineage equal those of a fresh build; a snapshot read whole is never read before
    it is patched, so a partly coded one is what the next derives from."""
    state = state_of(current)
    fresh = FleetSnapshot.build(1, *rows(state, list(state)))
    partial(data, current, fresh)
    for revision in range(2, 2 + data.draw(st.integers(1, 4))):
        new_state = data.draw(edits(state, current.max_id))
        roots = sorted(touched_roots(state, new_state))
        args = rows(new_state, [p for p in new_state if root_of(new_state, p) in roots])
        patched = replace_trees(current, revision, roots, *args, owned=data.draw(st.booleans()))
        assert patched is not None
        fresh = FleetSnapshot.build(revision, *rows(new_state, list(new_state)))
        partial(data, patched, fresh)
        if data.draw(st.booleans()):
            assert fresh_codes(patched) == fresh_codes(fresh)
        current, state = patched, new_state
    assert fresh_codes(current) == fresh_codes(fresh)


def partial(data: st.DataObject, fleet: FleetSnapshot, fresh: FleetSnapshot) -> None:
    """Some roots' codes of ``fleet``, read as a search reads them, equal ``fresh``'s."""
    whole = fresh_codes(fresh)
    some = read_some(data, fleet) if fleet.tree else {}
    if some is None:
        assert whole is None
        return
    assert whole is not None
    assert some == {uuid: whole[uuid] for uuid in some}


def test_room_codes_and_classes_per_snapshot_are_bounded() -> None:
    """A snapshot asked one size after another keeps at most ``MAX_SNAPSHOT_AMOUNTS`` room
    codes and root classes (each an array of a value per provider), and answers as a fresh
    engine does once they start over."""
    fleet = wide_host(2, vfs=8, hosts=4)
    engine = SnapshotEngine(StaticFleetSource(fleet))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(answers, "MAX_SNAPSHOT_AMOUNTS", 3)
        for vcpu in range(1, 9):
            query = CandidateQuery(groups=(RequestGroup(suffix=None, resources={"VCPU": vcpu}),))
            found = engine.search(query)  # no limit: every root classed
            fresh = SnapshotEngine(StaticFleetSource(wide_host(2, vfs=8, hosts=4))).search(query)
            assert [c.key() for c in found.candidates] == [c.key() for c in fresh.candidates]
            assert len(answers.per_snapshot(fleet, "codes")) <= 3
            assert len(answers.per_snapshot(fleet, "profile-classes")) <= 3
        assert answers.per_snapshot(fleet, "profile-classes")  # the search classed its roots
