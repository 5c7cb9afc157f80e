"""A scheduler's client of ``POST /allocation_candidates/claim`` (httpx only; no FastAPI, no
SQLAlchemy), so a scheduler process can claim the best NUMA fit in one call::

    from placement_numa.claim_client import claim_flavor, ClaimRefused

    with httpx.Client(base_url="http://127.0.0.1:8778") as http:
        try:
            claimed = claim_flavor(http, {"vcpus": 8, "memory_mb": 8192,
                                          "extra_specs": {"hw:numa_nodes": "2"}},
                                   project_id="p", user_id="u", alternates=2)
        except ClaimRefused as refused:   # 409 no_room: refused.lacking == {"PCPU": 4}
            ...
    claimed.host, claimed.cells, claimed.allocations, claimed.consumer_generation

Errors (``ClaimError`` tree)::

    ClaimError                 any failure (transport errors are wrapped too)
    └── ClaimRefused           the service answered 4xx/5xx; .status, .code, .detail, .lacking
                               (also a ``placement_http.PlacementHTTPError``)

Headers and error parsing come from ``placement_numa.placement_http``, the client base shared
with the agent and the CLI.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from placement_numa.placement_http import MICROVERSION, PlacementHTTPError, error_of, headers

__all__ = ["ClaimError", "ClaimRefused", "Claimed", "claim", "claim_flavor", "MICROVERSION"]

NO_ROOM = "placement_numa.claim.no_room"


class ClaimError(RuntimeError):
    """The claim could not be made (no answer, or a refusal)."""


class ClaimRefused(ClaimError, PlacementHTTPError):
    """The service refused: HTTP ``status``, Placement error ``code``, ``detail``, and for
    ``placement_numa.claim.no_room`` the ``lacking`` amounts per resource class."""

    def __init__(
        self, status: int, code: str, detail: str, lacking: Mapping[str, int] | None = None
    ) -> None:
        super().__init__(status, code, detail)
        self.lacking = dict(lacking or {})

    @property
    def no_room(self) -> bool:
        """True when the fleet has no room for the request."""
        return self.code == NO_ROOM


@dataclass(frozen=True)
class Claimed:
    """A claim written: consumer, its new generation, the allocation request (``allocations``
    ``{rp_uuid: {"resources": {rc: n}}}``, ``numa`` block), ``alternates`` (allocation requests
    on other hosts, best first)."""

    consumer_uuid: str
    consumer_generation: int
    allocations: dict[str, Any]
    numa: dict[str, Any]
    alternates: list[dict[str, Any]] = field(default_factory=list)
    attempts: int = 1

    @property
    def host(self) -> str | None:
        """The compute node's name."""
        value = self.numa.get("host")
        return str(value) if value is not None else None

    @property
    def cells(self) -> list[int]:
        """The host NUMA cells used."""
        return [int(c) for c in self.numa.get("cells") or []]


def claim(
    http: httpx.Client,
    body: Mapping[str, Any],
    *,
    project_id: str,
    user_id: str,
    consumer_uuid: str | None = None,
    consumer_generation: int | None = None,
    consumer_type: str | None = "INSTANCE",
    alternates: int = 0,
    token: str | None = "admin",
) -> Claimed:
    """POST ``body`` (``{"flavor": ...}`` or ``{"query": ...}`` plus options) with the consumer
    to ``/allocation_candidates/claim`` on ``http`` (its ``base_url`` set). A new consumer uuid
    is made when none is given. Raises ``ClaimRefused`` for an error answer, ``ClaimError`` when
    the service cannot be reached."""
    payload: dict[str, Any] = {
        **body,
        "consumer_uuid": consumer_uuid or str(uuidlib.uuid4()),
        "consumer_generation": consumer_generation,
        "project_id": project_id,
        "user_id": user_id,
        "alternates": alternates,
    }
    if consumer_type is not None:
        payload["consumer_type"] = consumer_type
    try:
        response = http.post("/allocation_candidates/claim", json=payload, headers=headers(token))
    except httpx.HTTPError as exc:
        raise ClaimError(f"cannot reach {http.base_url}: {exc}") from exc
    if response.status_code != 200:
        raise _refusal(response)
    data = response.json()
    request = data["allocation_request"]
    return Claimed(
        consumer_uuid=data["consumer_uuid"],
        consumer_generation=int(data["consumer_generation"]),
        allocations=request["allocations"],
        numa=request.get("numa") or {},
        alternates=list(data.get("alternates") or []),
        attempts=int((data.get("claim") or {}).get("attempts", 1)),
    )


def claim_flavor(
    http: httpx.Client,
    flavor: Mapping[str, Any],
    *,
    image: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> Claimed:
    """``claim`` for a Nova flavor (``{"vcpus", "memory_mb", "root_gb", "extra_specs"...}``)
    and optional image properties; keyword arguments as ``claim``."""
    body: dict[str, Any] = {"flavor": dict(flavor)}
    if image:
        body["image"] = dict(image)
    return claim(http, body, **kwargs)


def _refusal(response: httpx.Response) -> ClaimRefused:
    code, detail, error = error_of(response)
    return ClaimRefused(response.status_code, code, detail, error.get("lacking"))
