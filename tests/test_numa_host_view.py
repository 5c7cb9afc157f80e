"""The NUMA host view (``numa.host_view``) and the engine's look-alike root classes
(``engine.root_classes``) stay exact when snapshots are patched.

A view derived for a patched snapshot (only the replaced trees recomputed) equals a view built
from scratch on a fresh build of the same rows, host by host; and two roots share a profile
class exactly when ``RootSearch._profile`` says they look alike, on patched snapshots too
(the tree layout is carried over by patches); room codes patched from the previous snapshot's
and the room columns (patched in place when the snapshot was handed over) equal those of a
fresh build.
"""

from __future__ import annotations

from typing import Any

import numpy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement_numa.domain.request_groups import CandidateQuery, RequestGroup
from placement_numa.engine.answers import room_code_array, room_codes
from placement_numa.engine.fleet import FleetSnapshot
from placement_numa.engine.patch_log import record_patch
from placement_numa.engine.plan import plan_query
from placement_numa.engine.replay import RootSearch
from placement_numa.engine.root_classes import profile_classes
from placement_numa.numa import host_view as host_view_module
from placement_numa.numa.engine_rank import CellIndex
from placement_numa.numa.host_view import host_view
from tests.candidate_fleets import RCS, forests
from tests.test_fleet_patch_sharing import patched_by_edits, rows, state_of

CPU = ("VCPU",)
QUERY = CandidateQuery(
    groups=(
        RequestGroup(suffix="_A", resources={"VCPU": 1}, required_traits=frozenset()),
        RequestGroup(suffix="_B", resources={"MEMORY_MB": 2}),
    ),
    group_policy="none",
)


def hosts_by_uuid(fleet: FleetSnapshot, index: CellIndex) -> dict[str, Any]:
    """Every root's host entry, by uuids (indices differ between patched and fresh builds);
    the hosts of one host class share one ``HostCells``."""
    view = host_view(fleet, index, CPU)
    uuids = fleet.uuids
    found = {}
    by_class: dict[int, Any] = {}
    for root in fleet.roots:
        ids, host, number = view.host(fleet, root)
        assert by_class.setdefault(number, host) is host  # one HostCells per host class
        found[uuids[root]] = (
            {uuids[cell]: cell_id for cell, cell_id in ids.items()},
            dict(host.free_cpus),
            host.distances,
        )
    return found


def codes_by_uuid(fleet: FleetSnapshot) -> dict[str, int] | None:
    """``QUERY``'s room codes of every live provider, by uuid (list and array agree)."""
    plan = plan_query(fleet, QUERY)
    codes, listed = room_code_array(plan), room_codes(plan)
    if codes is None:
        assert listed is None
        return None
    assert codes.tolist() == listed
    return {fleet.uuids[i]: int(codes[i]) for i in fleet.index_by_uuid.values()}


def columns_by_uuid(fleet: FleetSnapshot, rc: str) -> dict[str, int]:
    """The room column of ``rc`` for every live provider, by uuid."""
    column = fleet.room_column(rc)
    return {fleet.uuids[i]: int(column[i]) for i in fleet.index_by_uuid.values()}


def classes_agree(fleet: FleetSnapshot) -> None:
    """Equal profile classes exactly for roots ``RootSearch`` finds alike."""
    plan = plan_query(fleet, QUERY)
    searcher = RootSearch(plan)
    codes = room_code_array(plan)
    if codes is None or not searcher.by_profile:
        return
    classes = profile_classes(fleet, codes)
    roots = [r for r in fleet.roots if r not in fleet.shared_into]
    for a in roots:
        for b in roots:
            alike = searcher._profile(a) == searcher._profile(b)
            assert (classes[a] == classes[b]) == alike, (a, b)
    assert numpy.all(classes[roots] >= 0)


def lineages(examples: int) -> settings:
    """Hypothesis settings of the lineage tests (slow, large examples)."""
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@lineages(100)
@given(st.data())
def test_derived_views_equal_fresh_ones(data: st.DataObject) -> None:
    current = data.draw(forests())
    # fold the replaced trees' entries in at once or keep them beside the shared ones
    threshold = data.draw(st.sampled_from([0, host_view_module.MAX_CHANGED]))
    host_view_module.MAX_CHANGED, saved = threshold, host_view_module.MAX_CHANGED
    try:
        check_lineage(data, current)
    finally:
        host_view_module.MAX_CHANGED = saved


@lineages(60)
@given(st.data())
def test_views_derived_across_patches_equal_fresh_ones(data: st.DataObject) -> None:
    """A view looked at before 2-4 recorded patches and not between (a prefork supervisor's,
    ``cli.prefork.warm``, at a worker's first flavor query after claims) is derived from, with
    the trees of every patch recomputed."""
    check_lineage(data, data.draw(forests()), between=False)


def check_lineage(data: st.DataObject, current: FleetSnapshot, *, between: bool = True) -> None:
    """Derived views, codes and classes equal fresh ones along 1-4 patches of ``current``;
    views are looked at after some patches only (``between``; else only after the last), so
    that some are derived across several (``FleetSnapshot.changes_since``; a patch left out of
    the log makes a full build)."""
    index = CellIndex()
    viewed = host_view(current, index, CPU)
    classes_agree(current)
    state = state_of(current)
    last = 1 + data.draw(st.integers(1 if between else 2, 4))
    for revision in range(2, last + 1):
        patched, new_state = patched_by_edits(data, current, state, revision)
        if not between or data.draw(st.booleans()) or revision == last:
            record_patch(patched)  # as the SQL fleet source does
        fresh = FleetSnapshot.build(revision, *rows(new_state, list(new_state)))
        if (between and data.draw(st.booleans())) or revision == last:
            bound = max(host_view_module.MAX_CHANGED, len(patched.roots) // 2)
            changes = patched.changes_since(viewed.revision, bound)
            view = host_view(patched, index, CPU)
            # derived from the last view looked at when the log knew what changed since
            assert view.derived_from == (None if changes is None else viewed.revision)
            assert hosts_by_uuid(patched, index) == hosts_by_uuid(fresh, index)
            viewed = view
        assert codes_by_uuid(patched) == codes_by_uuid(fresh)  # patched from the previous
        for rc in RCS:  # room columns patched (in place when handed over) equal fresh ones
            assert columns_by_uuid(patched, rc) == columns_by_uuid(fresh, rc)
        classes_agree(patched)
        current, state = patched, new_state
