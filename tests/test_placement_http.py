"""The HTTP client base shared by the agent, the claim client and the CLI
(``placement_numa.placement_http``): Placement's error body parsed one way for all of them, an
error answer as one line, and a CLI command's one-line failure for it (``cli.failures``)."""

from __future__ import annotations

import httpx
import pytest

from placement_numa.agent.client import ProviderConflict
from placement_numa.claim_client import ClaimRefused
from placement_numa.cli.failures import describe
from placement_numa.placement_http import (
    UNDEFINED_CODE,
    PlacementHTTPError,
    check,
    error_of,
    headers,
)

# Placement's error body: the status explanation, a blank line, then the detail
CONFLICT = {
    "errors": [
        {
            "status": 409,
            "title": "Conflict",
            "code": "placement.concurrent_update",
            "detail": "There was a conflict when trying to complete your request.\n\n"
            " resource provider generation conflict  ",
            "request_id": "req-1",
        }
    ]
}


def answer(status: int, **kwargs: object) -> httpx.Response:
    request = httpx.Request("PUT", "http://placement:8778/resource_providers/rp1/inventories")
    return httpx.Response(status, request=request, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("response", "code", "detail"),
    [
        (
            answer(409, json=CONFLICT),
            "placement.concurrent_update",
            "resource provider generation conflict",
        ),
        (
            answer(502, text="Bad gateway\n from the proxy"),
            UNDEFINED_CODE,
            "Bad gateway from the proxy",
        ),
        (answer(400, json={"errors": [{"detail": "bad"}]}), UNDEFINED_CODE, "bad"),
    ],
    ids=["placement-body", "not-placement", "no-code"],
)
def test_error_of_reads_placement_errors(response: httpx.Response, code: str, detail: str) -> None:
    assert error_of(response)[:2] == (code, detail)


def test_check_raises_one_line_naming_the_request() -> None:
    assert check(answer(200, json={})).status_code == 200
    with pytest.raises(PlacementHTTPError) as raised:
        check(answer(409, json=CONFLICT), 200, 204)
    error = raised.value
    assert (error.status, error.code, error.method) == (409, "placement.concurrent_update", "PUT")
    assert str(error) == (
        "PUT /resource_providers/rp1/inventories -> 409 placement.concurrent_update:"
        " resource provider generation conflict"
    )


def test_every_client_error_is_a_placement_http_error_and_a_one_line_cli_failure() -> None:
    agent = ProviderConflict("PUT", "/x", 409, "placement.concurrent_update", "conflict")
    claim = ClaimRefused(409, "placement_numa.claim.no_room", "no room", {"PCPU": 4})
    for error in (agent, claim):
        assert isinstance(error, PlacementHTTPError)
        message, code = describe(error) or ("", 0)
        assert code == 1 and "\n" not in message and message.startswith("Placement refused: ")
    assert claim.lacking == {"PCPU": 4} and claim.no_room


def test_headers() -> None:
    assert headers("tok", version="1.20", roles="service") == {
        "openstack-api-version": "placement 1.20",
        "accept": "application/json",
        "x-auth-token": "tok",
        "x-roles": "service",
    }
    assert "x-auth-token" not in headers(None)
