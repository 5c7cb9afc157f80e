"""What a prefork supervisor builds before it forks (``cli.prefork.warm``) serves its workers'
NUMA flavor queries after writes: the tree layout and the NUMA host views of ``VCPU`` and
``PCPU`` flavors are built once on the supervisor's snapshot, and a worker's first flavor query
after claims and other queries derives its host view from the inherited one (the trees the
claims replaced recomputed, ``FleetSnapshot.changes_since``) instead of building one per
worker, which touched every provider and made each worker's copy of the fleet private
(``doc/source/benchmarks/numa-flavor-scale.rst``, eleventh pass).
"""

from __future__ import annotations

import socket

from placement_numa.api.cell_index_dep import cell_index_for_state
from placement_numa.api.engine_dep import engine_for_state
from placement_numa.cli.prefork import KEEP_UP_REVISIONS, WARMED, Supervisor, warm
from placement_numa.db.repositories.changes import KEEP_REVISIONS
from placement_numa.numa.host_view import host_view
from tests.conftest import PlacementAPI
from tests.test_cell_index_patch import FLAVOR, allocate, hosts_found
from tests.test_numa_api import V, two_cell_host


def test_views_built_before_the_fork_serve_flavor_queries_after_claims(
    api: PlacementAPI,
) -> None:
    state = api.client.app.state  # type: ignore[attr-defined]
    first = two_cell_host(api, "first")
    two_cell_host(api, "second")
    warm(api.client.app)  # type: ignore[arg-type]
    engine = engine_for_state(state)
    fleet = engine.snapshot()
    warmed = fleet.revision
    assert fleet.tree_layout is not None
    for cpu_classes in (("VCPU",), ("PCPU",)):  # kept on the lineage (``host_view``'s key)
        assert warmed in fleet.derived[("numa-host-view", cpu_classes)]
    del fleet

    for _ in range(3):  # claims, each followed by a query that refreshes the snapshot
        allocate(api, first)
        answer = api.get("/allocation_candidates?resources=VCPU:1", version=V)
        assert answer.status_code == 200, answer.text
    assert hosts_found(api) == {"first", "second"}
    assert FLAVOR["vcpus"] and FLAVOR["extra_specs"]  # a NUMA flavor: the VCPU host view
    fleet = engine.snapshot()
    assert fleet.revision > warmed
    index = cell_index_for_state(state).get(state.database, fleet.revision, fleet)
    assert host_view(fleet, index, ("VCPU",)).derived_from == warmed


def test_the_supervisor_builds_again_for_a_new_lineage_only(api: PlacementAPI) -> None:
    """Before it forks a replacement, the supervisor refreshes its snapshot: a snapshot not
    built by ``warm`` (a new lineage: loaded whole when the change log no longer reached)
    gets everything built again, a patched one keeps what its lineage holds (building again
    would touch every provider's page that earlier workers share)."""
    state = api.client.app.state  # type: ignore[attr-defined]
    first = two_cell_host(api, "first")
    engine = engine_for_state(state)
    assert WARMED not in engine.snapshot().derived  # loaded, never warmed: a new lineage
    with socket.socket() as sock:
        supervisor = Supervisor(api.client.app, sock, {}, 1)  # type: ignore[arg-type]
        supervisor.refresh()
        fleet = engine.snapshot()
        assert WARMED in fleet.derived
        warmed, kept = fleet.revision, fleet.derived[("numa-host-view", ("VCPU",))]
        del fleet
        allocate(api, first)
        supervisor.refresh()
    fleet = engine.snapshot()
    assert fleet.revision > warmed and fleet.derived[("numa-host-view", ("VCPU",))] is kept
    assert list(kept) == [warmed]  # nothing built again


def test_the_supervisor_keeps_its_snapshot_within_the_change_logs_reach(
    api: PlacementAPI,
) -> None:
    """A supervisor that forks nothing for a while reads the revision now and then
    (``keep_up``) and refreshes its snapshot, incrementally, once it is ``keep_up_revisions``
    behind: a replacement forked later still patches from the change log (which keeps
    ``KEEP_REVISIONS`` per stripe) instead of loading the whole fleet before it serves."""
    assert KEEP_UP_REVISIONS <= KEEP_REVISIONS // 4
    state = api.client.app.state  # type: ignore[attr-defined]
    first = two_cell_host(api, "first")
    engine = engine_for_state(state)
    with socket.socket() as sock:
        supervisor = Supervisor(api.client.app, sock, {}, 1)  # type: ignore[arg-type]
        supervisor.refresh()
        held = engine.snapshot().revision
        source = state.fleet_source
        loads = source.full_loads
        supervisor.keep_up_revisions = 3
        allocate(api, first)
        supervisor.next_keep_up = 0.0
        supervisor.keep_up()  # one revision behind: left as it is
        assert source.lag() == 1
        allocate(api, first)
        allocate(api, first)
        supervisor.keep_up()  # checked at most every KEEP_UP_CHECK_S
        assert source.lag() == 3
        supervisor.next_keep_up = 0.0
        supervisor.keep_up()
        assert source.lag() == 0
    fleet = engine.snapshot()
    assert fleet.revision == held + 3 and source.full_loads == loads  # patched, not loaded
    assert WARMED in fleet.derived
