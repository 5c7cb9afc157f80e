"""The pure candidate engine against the brute-force oracle, on random small forests.

No database: these run once (not per backend). ``tests/test_allocation_candidates*.py`` checks
the same through the HTTP API on every backend.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement_numa.domain.request_groups import CandidateQuery, RequestGroup
from placement_numa.engine import SnapshotEngine, StaticFleetSource
from placement_numa.engine.candidates import Candidate, ReplayedRun
from placement_numa.engine.fleet import FleetSnapshot
from tests.candidate_fleets import forests, queries, with_copies
from tests.candidate_oracle import oracle

PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def fleet_and_query(draw: Any) -> tuple[FleetSnapshot, CandidateQuery]:
    fleet = draw(forests())
    return fleet, draw(queries(len(fleet.providers)))


def engine_keys(fleet: FleetSnapshot, query: CandidateQuery, **kwargs: Any) -> list[Any]:
    result = SnapshotEngine(StaticFleetSource(fleet)).search(query, **kwargs)
    return [c.key() for c in result.candidates]


@PROPERTY
@given(fleet_and_query())
def test_engine_equals_oracle(case: tuple[FleetSnapshot, CandidateQuery]) -> None:
    fleet, query = case
    keys = engine_keys(fleet, query)
    assert len(keys) == len(set(keys)), "duplicate candidates"
    assert set(keys) == oracle(fleet, query)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_look_alike_trees_replay_exactly(data: st.DataObject) -> None:
    fleet = with_copies(data.draw(forests(max_providers=5)), copies=2)
    query = data.draw(queries(len(fleet.providers), max_slots=3))
    keys = engine_keys(fleet, query)
    assert len(keys) == len(set(keys))
    assert set(keys) == oracle(fleet, query)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_replayed_runs_are_the_candidates_in_order(data: st.DataObject) -> None:
    """A depth-first result holds each replayed root as one ``ReplayedRun`` (``parts``): its
    runs, a limit cutting one included, are the same candidates in the same order as the
    search that makes every candidate one by one (an ``accept`` filter takes that path), and
    ``summary_roots`` read from the runs is the one read from the candidates. Either search
    may come first: each reads the root answers the other kept on the snapshot."""
    fleet = with_copies(data.draw(forests(max_providers=5)), copies=3)
    query = data.draw(queries(len(fleet.providers), max_slots=3))
    limit = data.draw(st.none() | st.integers(1, 12))
    engine = SnapshotEngine(StaticFleetSource(fleet))
    if data.draw(st.booleans()):
        result = engine.search(query, limit=limit)
        one_by_one = engine.search(query, limit=limit, accept=lambda _: True)
    else:
        one_by_one = engine.search(query, limit=limit, accept=lambda _: True)
        result = engine.search(query, limit=limit)
    assert all(len(part) for part in result.parts if isinstance(part, ReplayedRun))
    assert sum(1 if isinstance(p, Candidate) else len(p) for p in result.parts) == len(
        result.candidates
    )
    assert result.stats.returned == len(result.candidates) == len(one_by_one.candidates)
    assert [(c.anchor, c.key()) for c in result.candidates] == [
        (c.anchor, c.key()) for c in one_by_one.candidates
    ]
    assert result.summary_roots() == one_by_one.summary_roots()
    assert result.candidates is result.candidates  # made once


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleet_and_query(), st.integers(1, 4))
def test_limit_is_a_prefix(case: tuple[FleetSnapshot, CandidateQuery], limit: int) -> None:
    fleet, query = case
    everything = engine_keys(fleet, query)
    limited = engine_keys(fleet, query, limit=limit)
    assert limited == everything[:limit]
    assert set(limited) <= oracle(fleet, query)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleet_and_query())
def test_pre_1_29_drops_nested_multi_provider_candidates(
    case: tuple[FleetSnapshot, CandidateQuery],
) -> None:
    fleet, query = case
    assert set(engine_keys(fleet, query, nested_aware=False)) == oracle(
        fleet, query, nested_aware=False
    )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleet_and_query(), st.integers(1, 3))
def test_rank_orders_candidates(case: tuple[FleetSnapshot, CandidateQuery], limit: int) -> None:
    fleet, query = case

    def spread(candidate: Any, view: FleetSnapshot) -> tuple[int, ...]:
        return (-len(candidate.providers()), candidate.anchor)

    engine = SnapshotEngine(StaticFleetSource(fleet))
    ranked = engine.search(query, rank=spread).candidates
    keys = [spread(c, fleet) for c in ranked]
    assert keys == sorted(keys)
    assert {c.key() for c in ranked} == oracle(fleet, query)
    limited = engine.search(query, rank=spread, limit=limit).candidates
    assert [c.key() for c in limited] == [c.key() for c in ranked[:limit]]


def wide_host(children: int, vfs: int = 1) -> FleetSnapshot:
    """One root with ``children`` children of ``vfs`` SRIOV_NET_VF each::

    wide
    ├── pf0 (SRIOV_NET_VF: vfs)
    ├── ...
    └── pf<children-1>
    """
    rows = [(1, "root", None, 1)] + [(i, f"pf{i}", 1, 1) for i in range(2, children + 2)]
    inventories = [(i, "SRIOV_NET_VF", vfs, 0, 1, vfs, 1, 1.0) for i in range(2, children + 2)]
    return FleetSnapshot.build(1, rows, inventories)


def vf_groups(count: int, policy: str) -> CandidateQuery:
    return CandidateQuery(
        groups=tuple(
            RequestGroup(suffix=str(i), resources={"SRIOV_NET_VF": 1}) for i in range(count)
        ),
        group_policy=policy,  # type: ignore[arg-type]
    )


def test_identical_groups_give_every_distinct_mapping() -> None:
    fleet = wide_host(5)
    keys = engine_keys(fleet, vf_groups(5, "isolate"))
    assert len(keys) == len(set(keys)) == 120  # 5! mappings of identical groups to children
    assert set(keys) == oracle(fleet, vf_groups(5, "isolate"))
    two_each = wide_host(3, vfs=2)
    assert set(engine_keys(two_each, vf_groups(4, "none"))) == oracle(
        two_each, vf_groups(4, "none")
    )


def test_impossible_wide_requests_do_not_explore_permutations() -> None:
    # 10 identical groups over 9 one-VF children: searched as a multiset, this dies at once
    # (as permutations it would be ~10! dead ends).
    fleet = wide_host(9)
    assert engine_keys(fleet, vf_groups(10, "isolate")) == []
    assert engine_keys(fleet, vf_groups(10, "none")) == []
    assert len(engine_keys(wide_host(8), vf_groups(8, "isolate"), limit=1000)) == 1000
