"""The ranked body as bytes (``api/schemas/ranked_pieces.encode_ranked``) == the document
``ranked_candidates.render_ranked`` builds, once parsed: on random NUMA fleets and flavors and
on random generic queries (sharing providers, nested trees), answered twice through one
fragment cache (the second answer from kept fragments). Pure, in memory."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement_numa.api.schemas.candidate_pieces import FragmentCache
from placement_numa.api.schemas.ranked_candidates import render_ranked
from placement_numa.api.schemas.ranked_pieces import encode_ranked
from placement_numa.engine import SnapshotEngine, StaticFleetSource
from placement_numa.numa.cell_index import CellIndex
from placement_numa.numa.invalid_flavor import InvalidFlavor
from placement_numa.services.numa_candidates import (
    NumaOptions,
    RankedCandidate,
    flavor_candidates,
    query_candidates,
)
from tests.candidate_fleets import forests, queries, with_copies
from tests.test_numa_bounded import flavors, numa_fleets

PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _same_twice(search: Any) -> None:
    cache = FragmentCache()
    for _ in range(2):
        found: list[RankedCandidate] = search()
        assert orjson.loads(encode_ranked(found, cache)) == render_ranked(found)


@PROPERTY
@given(st.data())
def test_flavor_answers_encode_as_rendered(data: st.DataObject) -> None:
    fleet, index = data.draw(numa_fleets())
    flavor, options = data.draw(flavors())
    engine = SnapshotEngine(StaticFleetSource(fleet))
    ask: dict[str, Any] = {"engine": engine, "flavor": flavor, "options": options}
    try:
        _same_twice(lambda: flavor_candidates(database=None, image=None, index=index, **ask))
    except InvalidFlavor:  # a random flavor Nova refuses: nothing to render
        pass


@PROPERTY
@given(st.data())
def test_generic_answers_encode_as_rendered(data: st.DataObject) -> None:
    copies = data.draw(st.integers(0, 2))  # look-alike trees: replayed answers
    fleet = with_copies(data.draw(forests(max_providers=6)), copies=copies)
    options = NumaOptions(limit=data.draw(st.sampled_from((None, 1, 4))))
    ids = {
        p.uuid: data.draw(st.integers(0, 3)) for p in fleet.providers if "HW_NUMA_ROOT" in p.traits
    }
    index = CellIndex(ids, {}, {})
    query = data.draw(queries(len(fleet.providers), max_slots=3))
    engine = SnapshotEngine(StaticFleetSource(fleet))
    _same_twice(
        lambda: query_candidates(
            database=None, engine=engine, query=query, options=options, index=index
        )
    )


def test_empty_answer() -> None:
    assert orjson.loads(encode_ranked([])) == {"allocation_requests": [], "provider_summaries": {}}
