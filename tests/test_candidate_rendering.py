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
from placement_numa.api.schemas import candidate_pieces
from placement_numa.api.schemas.allocation_candidates import (
    FragmentCache,
    encode_candidates,
    render_candidates,
)
from placement_numa.api.schemas.candidate_pieces import _compile, _Compiled
from placement_numa.engine import SnapshotEngine, StaticFleetSource
from placement_numa.engine.candidates import TemplateEntry
from tests.candidate_fleets import forests, queries, with_copies

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


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_pieces_joined_at_any_size_equal_reference(data: st.DataObject) -> None:
    """However many allocation requests and trees' summaries are joined into one piece
    (``PIECE_REQUESTS``, ``PIECE_TREES``, drawn down to 1), the pieces are never empty and,
    joined, equal the reference: no separator lost or doubled at a piece's edge."""
    fleet = with_copies(data.draw(forests()), 3)  # look-alike trees: runs of replayed ones
    query = data.draw(queries(len(fleet.providers)))
    version = data.draw(st.sampled_from([mv.Microversion(1, 29), mv.Microversion(1, 39)]))
    sizes = (data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4)))
    result = SnapshotEngine(StaticFleetSource(fleet)).search(query, nested_aware=True)
    expected = render_candidates(result, query, version, nested_aware=True)
    kept = candidate_pieces.PIECE_REQUESTS, candidate_pieces.PIECE_TREES
    candidate_pieces.PIECE_REQUESTS, candidate_pieces.PIECE_TREES = sizes
    try:
        pieces = list(
            candidate_pieces.candidate_body_pieces(result, query, version, nested_aware=True)
        )
    finally:
        candidate_pieces.PIECE_REQUESTS, candidate_pieces.PIECE_TREES = kept
    assert all(pieces)
    assert orjson.loads(b"".join(pieces)) == expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_entries_compiled_by_content_serve_new_answers(data: st.DataObject) -> None:
    """Template entries are compiled once per content and shape (``_Compiled``): an entry
    object never seen (as every new answer of the engine brings) with the content of one
    compiled before gets that compiled format, which is what compiling it gives; and bodies
    written from one process cache after other queries still equal the reference."""
    fleet = with_copies(data.draw(forests()), 2)  # look-alike trees: replayed candidates
    asked = data.draw(st.lists(queries(len(fleet.providers)), min_size=1, max_size=3))
    version = data.draw(st.sampled_from([mv.Microversion(1, 34), mv.Microversion(1, 39)]))
    fragments = FragmentCache()
    for query in [*asked, asked[0]]:  # the first query again, answered by a new engine
        result = SnapshotEngine(StaticFleetSource(fleet)).search(query, nested_aware=True)
        expected = render_candidates(result, query, version, nested_aware=True)
        encoded = encode_candidates(result, query, version, nested_aware=True, fragments=fragments)
        assert orjson.loads(encoded) == expected
        compiled = _Compiled(with_mappings=version >= mv.CANDIDATE_MAPPINGS)
        for candidate in result.candidates:
            entry = candidate.entry
            if entry is None:
                continue
            first = compiled.of(entry, candidate.layout)
            chosen = tuple(list(entry.chosen))  # equal content, new objects
            alike = TemplateEntry(chosen, tuple(tuple(list(a)) for a in entry.allocations))
            assert compiled.of(alike, candidate.layout) is first
            assert first == _compile(alike, candidate.layout, compiled.with_mappings)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_rendered_runs_stay_within_their_bound(data: st.DataObject) -> None:
    """The runs rendered per tree (kept so that a repeated query writes a tree's allocation
    requests by one look-up) never hold more than ``max_rendered_bytes`` per shape: past it
    they start over (``_Rendered``). Before, a reset of the compiled runs restarted the count
    and kept the trees' runs: a loop of first-time queries grew them by the bound again and
    again. Bodies still equal the reference."""
    fleet = with_copies(data.draw(forests()), 3)  # look-alike trees: runs kept per tree
    asked = data.draw(st.lists(queries(len(fleet.providers)), min_size=2, max_size=5))
    bound = data.draw(st.integers(0, 3000))
    fragments = FragmentCache(max_rendered_bytes=bound)
    version = mv.Microversion(1, 39)
    for query in [*asked, *asked]:  # new answers, then the same queries again
        result = SnapshotEngine(StaticFleetSource(fleet)).search(query, nested_aware=True)
        expected = render_candidates(result, query, version, nested_aware=True)
        encoded = encode_candidates(result, query, version, nested_aware=True, fragments=fragments)
        assert orjson.loads(encoded) == expected
        for cache in fragments._shapes.values():
            held = sum(
                len(text)
                for key, runs in cache.items()
                if isinstance(key, tuple) and key[0] == "runs"
                for text, _ in runs.values()
            )
            assert held <= cache["rendered"].bytes <= bound
