"""The fast encoder of ``GET /allocation_candidates`` bodies equals the dict reference.

``encode_candidates`` writes JSON bytes from fragments cached per snapshot; parsed, they must be
exactly ``render_candidates``' document, at every microversion shape, twice in a row (the second
time from the caches), with one process cache for all shapes.
"""

from __future__ import annotations

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement_numa.api import microversion as mv
from placement_numa.api.schemas.allocation_candidates import (
    FragmentCache,
    encode_candidates,
    render_candidates,
)
from placement_numa.engine import SnapshotEngine, StaticFleetSource
from tests.candidate_fleets import forests, queries

VERSIONS = [mv.Microversion(1, minor) for minor in (10, 12, 17, 27, 29, 34, 39)]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_encoded_body_equals_reference(data: st.DataObject) -> None:
    """Every microversion's body in turn, twice, from one process cache (``FragmentCache``:
    fragments, compiled and rendered runs of one shape must never serve another)."""
    fleet = data.draw(forests())
    query = data.draw(queries(len(fleet.providers)))
    fragments = FragmentCache()
    for version in data.draw(st.permutations(VERSIONS)):
        nested_aware = version >= mv.NESTED_CANDIDATES
        result = SnapshotEngine(StaticFleetSource(fleet)).search(query, nested_aware=nested_aware)
        expected = render_candidates(result, query, version, nested_aware=nested_aware)
        for _ in range(2):
            encoded = encode_candidates(
                result, query, version, nested_aware=nested_aware, fragments=fragments
            )
            assert orjson.loads(encoded) == expected, version
