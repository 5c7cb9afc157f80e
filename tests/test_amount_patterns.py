"""Queries that differ only in their amounts share answers per tree profile
(``engine/amount_patterns.py``): on random look-alike forests (min_unit, step_size, max_unit
and usage varied), one flavor shape asked in several sizes on one engine answers each size as a
fresh engine does (same candidates, same order) and as the brute-force oracle does, with the
answers kept per pattern bounded or not.

No database: these run once (not per backend)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from placement_numa.domain.request_groups import CandidateQuery, RequestGroup
from placement_numa.engine import SnapshotEngine, StaticFleetSource
from placement_numa.engine.amount_patterns import MAX_PATTERN_SLOTS, pattern_key
from placement_numa.engine.fleet import FleetSnapshot
from placement_numa.engine.plan import plan_query
from placement_numa.engine.replay import RootSearch
from tests.candidate_fleets import forests, queries, uuid_of, with_copies
from tests.candidate_oracle import oracle


def _sized(draw: Any, query: CandidateQuery) -> CandidateQuery:
    """``query`` with amounts drawn again (each requested class kept)."""
    groups = tuple(
        dataclasses.replace(
            g, resources={rc: draw(st.sampled_from((1, 1, 2, 3, 4))) for rc in g.resources}
        )
        for g in query.groups
    )
    return dataclasses.replace(query, groups=groups)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_each_size_of_one_shape_answers_as_a_fresh_engine(data: st.DataObject) -> None:
    base = data.draw(forests(max_providers=5))
    fleet = with_copies(base, copies=2)
    shape = data.draw(queries(len(fleet.providers), max_slots=3))
    sizes = [_sized(data.draw, shape) for _ in range(data.draw(st.integers(2, 5)))]
    orderings = data.draw(st.booleans())
    # profiles kept per query and per pattern (the pattern's dropped past it)
    bound = data.draw(st.sampled_from((RootSearch.MAX_TEMPLATES, 1, 2)))
    shared = SnapshotEngine(StaticFleetSource(fleet))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RootSearch, "MAX_TEMPLATES", bound)
        for query in sizes:
            fresh = SnapshotEngine(StaticFleetSource(with_copies(base, copies=2)))
            got = shared.search(query, orderings=orderings)
            expected = fresh.search(query, orderings=orderings)
            assert _named(got) == _named(expected)
            if orderings:
                assert {c.key() for c in got.candidates} == oracle(fleet, query)
    patterns = fleet.derived.get("amount-patterns", {})
    assert all(len(answers) <= bound for answers in patterns.values())
    event(f"profiles kept for a pattern: {max(map(len, patterns.values()), default=0) > 0}")


def _named(result: Any) -> list[tuple[object, ...]]:
    """The candidates in order, by provider uuid (two fleets built alike number alike)."""
    return [
        (
            tuple((uuid_of(p + 1), rc, a) for p, rc, a in c.allocations),
            tuple((s, tuple(uuid_of(p + 1) for p in ps)) for s, ps in c.mappings()),
        )
        for c in result.candidates
    ]


def test_sums_that_order_differently_make_different_patterns() -> None:
    """``VCPU`` split 1+2 and 2+1 over two cells order their sums differently (a cell with room
    for 1 admits the first cell's share of one, not of the other): two patterns; 2+3 orders as
    1+2 does (one pattern); a class asked by more slots than ``MAX_PATTERN_SLOTS``: none."""
    fleet = with_copies(_two_cells(), copies=1)

    def key(*amounts: int) -> object:
        groups = tuple(
            dataclasses.replace(_cell_group(n), resources={"VCPU": a})
            for n, a in enumerate(amounts)
        )
        return pattern_key(plan_query(fleet, CandidateQuery(groups=groups, group_policy="none")))

    assert key(1, 2) == key(2, 3) != key(2, 1)
    assert key(2, 2) != key(1, 2)
    assert key(*range(1, MAX_PATTERN_SLOTS + 2)) is None


def _cell_group(n: int) -> RequestGroup:
    return RequestGroup(suffix=f"_C{n}", resources={"VCPU": 1})


def _two_cells() -> FleetSnapshot:
    rows = [(1, uuid_of(1), None, 1), (2, uuid_of(2), 1, 1), (3, uuid_of(3), 1, 1)]
    inventories = [(p, "VCPU", 4, 0, 1, 4, 1, 1.0) for p in (2, 3)]
    return FleetSnapshot.build(1, rows, inventories)


def test_sums_ordered_otherwise_are_searched_not_replayed() -> None:
    """Unsuffixed ``VCPU:1`` with ``_S`` ``VCPU:2``, then ``VCPU:2`` with ``VCPU:1``: both sum
    to levels 1, 2, 3, so the root (room 1) and its child (room 4) have the same room codes
    under either, but room 1 admits the unsuffixed share of the first and the suffixed share of
    the second. The second query is answered as a fresh engine answers it."""
    rows = [(1, uuid_of(1), None, 1), (2, uuid_of(2), 1, 1)]
    inventories = [(1, "VCPU", 1, 0, 1, 1, 1, 1.0), (2, "VCPU", 4, 0, 1, 4, 1, 1.0)]

    def query(unsuffixed: int, suffixed: int) -> CandidateQuery:
        return CandidateQuery(
            groups=(
                RequestGroup(resources={"VCPU": unsuffixed}),
                RequestGroup(suffix="_S", resources={"VCPU": suffixed}),
            ),
            group_policy="none",
        )

    shared = SnapshotEngine(StaticFleetSource(FleetSnapshot.build(1, rows, inventories)))
    shared.search(query(1, 2))
    second = query(2, 1)
    fresh = SnapshotEngine(StaticFleetSource(FleetSnapshot.build(1, rows, inventories)))
    assert _named(shared.search(second)) == _named(fresh.search(second))
    assert len(fresh.search(second).candidates) == 2
