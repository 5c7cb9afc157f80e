"""Random forests written through the API on each backend; the HTTP answers equal the oracle's."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement_numa.domain.request_groups import CandidateQuery
from placement_numa.engine.fleet import FleetSnapshot
from tests.backends import reset_rows
from tests.candidate_fleets import forests, queries
from tests.candidate_oracle import oracle
from tests.candidate_seed import query_string, response_keys, seed_fleet, uuid_keys
from tests.conftest import PlacementAPI

pytestmark = pytest.mark.slow


@st.composite
def case(draw: Any) -> tuple[FleetSnapshot, list[CandidateQuery]]:
    fleet = draw(forests(max_providers=7))
    return fleet, draw(st.lists(queries(len(fleet.providers)), min_size=4, max_size=4))


@settings(
    max_examples=5,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(example=case())
def test_api_answers_equal_oracle(
    app: FastAPI, example: tuple[FleetSnapshot, list[CandidateQuery]]
) -> None:
    _run(app, *example)


def _run(app: FastAPI, fleet: FleetSnapshot, qs: list[CandidateQuery]) -> None:
    with app.state.database.write() as conn:
        reset_rows(conn)
    with TestClient(app, raise_server_exceptions=True) as client:
        api = PlacementAPI(client)
        seed_fleet(api, fleet)
        for query in qs:
            r = api.get("/allocation_candidates?" + query_string(query), version="1.39")
            assert r.status_code == 200, r.text
            keys = response_keys(r.json(), query)
            assert len(keys) == len(set(keys))
            assert set(keys) == uuid_keys(fleet, oracle(fleet, query)), query_string(query)
