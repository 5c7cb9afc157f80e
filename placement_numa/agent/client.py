"""A typed httpx client for the parts of the Placement API the agent uses (microversion 1.39).

Every request carries ``x-auth-token`` and ``OpenStack-API-Version: placement 1.39`` (headers,
error parsing and the client itself from ``placement_numa.placement_http``). Paths are
relative, so an injected ``httpx.Client`` (e.g. FastAPI's ``TestClient`` over the app) decides
where they go. Errors::

    PlacementClientError          any unexpected status; .status, .code (Placement error code),
    │                             .detail
    ├── ProviderConflict          409 (generation mismatch: .code "placement.concurrent_update",
    │                             inventory in use, duplicate name, ...)
    └── NotFoundError             404
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from placement_numa.agent.desired_tree import Inventory
from placement_numa.placement_http import (
    MICROVERSION,
    PlacementHTTPError,
    error_of,
    headers,
    open_client,
)

__all__ = [
    "MICROVERSION",
    "PlacementClient",
    "PlacementClientError",
    "ProviderConflict",
    "NotFoundError",
    "ProviderRecord",
]

CONCURRENT_UPDATE = "placement.concurrent_update"


class PlacementClientError(PlacementHTTPError):
    """An unexpected answer: ``status``, Placement's error ``code`` and ``detail``."""

    def __init__(self, method: str, path: str, status: int, code: str, detail: str) -> None:
        super().__init__(status, code, detail, method=method, path=path)


class ProviderConflict(PlacementClientError):
    """409 Conflict."""

    @property
    def is_generation_conflict(self) -> bool:
        """True for a 409 with code ``placement.concurrent_update`` (generation mismatch)."""
        return self.code == CONCURRENT_UPDATE


class NotFoundError(PlacementClientError):
    """404 Not Found."""


@dataclass(frozen=True)
class ProviderRecord:
    """A resource provider as listed by Placement (1.14+ fields)."""

    uuid: str
    name: str
    generation: int
    parent_provider_uuid: str | None
    root_provider_uuid: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProviderRecord:
        """From a provider of Placement's ``GET /resource_providers/{uuid}`` JSON (1.14+ fields);
        raises ``KeyError`` when a field is missing."""
        return cls(
            uuid=data["uuid"],
            name=data["name"],
            generation=int(data["generation"]),
            parent_provider_uuid=data.get("parent_provider_uuid"),
            root_provider_uuid=data.get("root_provider_uuid") or data["uuid"],
        )


class PlacementClient:
    """Placement API calls. ``http`` is used as given (its base URL applies); without it a client
    on ``base_url`` is created (with ``auth``, e.g. ``agent.auth.KeystoneTokenAuth``, in place of
    the fixed ``token``) and closed by ``close()``. ``writes`` lists every non-GET request
    sent (``"PUT /resource_providers/..."``)."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8778",
        *,
        token: str = "admin",
        auth: httpx.Auth | None = None,
        http: httpx.Client | None = None,
        timeout: float = 30.0,
    ) -> None:
        self._own = http is None
        if http is None:
            http = open_client(base_url, token=token, timeout=timeout, auth=auth)
        self._http = http
        # ``x-auth-token`` is replaced on each request by ``auth`` when given. noauth2
        # (development): claim the role nova-compute holds in Keystone, which Placement's new
        # defaults require for POST /reshaper; Keystone ignores the header.
        self._headers = headers(token, roles="service")
        self.writes: list[str] = []

    def close(self) -> None:
        """Close the underlying ``httpx.Client`` if this client created it (an injected one is
        left open)."""
        if self._own:
            self._http.close()

    def __enter__(self) -> PlacementClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing -------------------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, str] | None = None,
        ok: Iterable[int] = (200,),
        version: str | None = None,
    ) -> httpx.Response:
        if method != "GET":
            self.writes.append(f"{method} {path}")
        headers = self._headers
        if version is not None:
            headers = {**headers, "openstack-api-version": f"placement {version}"}
        response = self._http.request(method, path, json=json, params=params, headers=headers)
        if response.status_code in set(ok):
            return response
        code, detail, _ = error_of(response)
        cls: type[PlacementClientError] = PlacementClientError
        if response.status_code == 409:
            cls = ProviderConflict
        elif response.status_code == 404:
            cls = NotFoundError
        raise cls(method, path, response.status_code, code, detail)

    # -- providers ------------------------------------------------------------------------------

    def find_provider(self, name: str) -> ProviderRecord | None:
        """The provider named ``name``, or None."""
        found = self._request("GET", "/resource_providers", params={"name": name}).json()
        providers = found["resource_providers"]
        return ProviderRecord.from_json(providers[0]) if providers else None

    def get_provider(self, uuid: str) -> ProviderRecord | None:
        """The provider ``uuid``, or None when it does not exist."""
        try:
            return ProviderRecord.from_json(
                self._request("GET", f"/resource_providers/{uuid}").json()
            )
        except NotFoundError:
            return None

    def list_tree(self, root_uuid: str) -> list[ProviderRecord]:
        """Every provider in the tree of ``root_uuid`` (``in_tree``)."""
        found = self._request("GET", "/resource_providers", params={"in_tree": root_uuid}).json()
        return [ProviderRecord.from_json(p) for p in found["resource_providers"]]

    def create_provider(self, *, name: str, uuid: str, parent_uuid: str | None) -> ProviderRecord:
        """POST /resource_providers; the created provider (generation 0)."""
        body: dict[str, Any] = {"name": name, "uuid": uuid}
        if parent_uuid is not None:
            body["parent_provider_uuid"] = parent_uuid
        return ProviderRecord.from_json(
            self._request("POST", "/resource_providers", json=body).json()
        )

    def update_provider(self, *, uuid: str, name: str, parent_uuid: str | None) -> ProviderRecord:
        """PUT /resource_providers/{uuid}: rename or re-parent (1.37)."""
        body = {"name": name, "parent_provider_uuid": parent_uuid}
        return ProviderRecord.from_json(
            self._request("PUT", f"/resource_providers/{uuid}", json=body).json()
        )

    def delete_provider(self, uuid: str) -> None:
        """DELETE /resource_providers/{uuid} (409 when it has allocations or children)."""
        self._request("DELETE", f"/resource_providers/{uuid}", ok=(204,))

    # -- inventories, traits, allocations -------------------------------------------------------

    def get_inventories(self, uuid: str) -> tuple[int, dict[str, Inventory]]:
        """``(provider generation, {resource class: Inventory})``."""
        data = self._request("GET", f"/resource_providers/{uuid}/inventories").json()
        inventories = {rc: Inventory.from_dict(inv) for rc, inv in data["inventories"].items()}
        return int(data["resource_provider_generation"]), inventories

    def put_inventories(
        self, uuid: str, generation: int, inventories: Mapping[str, Inventory]
    ) -> int:
        """Replace all inventories (generation-checked); the new generation."""
        body = {
            "resource_provider_generation": generation,
            "inventories": {rc: inv.as_dict() for rc, inv in inventories.items()},
        }
        data = self._request("PUT", f"/resource_providers/{uuid}/inventories", json=body).json()
        return int(data["resource_provider_generation"])

    def get_traits(self, uuid: str) -> tuple[int, frozenset[str]]:
        """``(provider generation, traits)``."""
        data = self._request("GET", f"/resource_providers/{uuid}/traits").json()
        return int(data["resource_provider_generation"]), frozenset(data["traits"])

    def put_traits(self, uuid: str, generation: int, traits: Iterable[str]) -> int:
        """Replace the provider's traits (generation-checked); the new generation."""
        body = {"resource_provider_generation": generation, "traits": sorted(traits)}
        data = self._request("PUT", f"/resource_providers/{uuid}/traits", json=body).json()
        return int(data["resource_provider_generation"])

    def existing_traits(self, names: Iterable[str]) -> frozenset[str]:
        """Which of ``names`` exist (GET /traits?name=in:...)."""
        wanted = sorted(set(names))
        if not wanted:
            return frozenset()
        data = self._request("GET", "/traits", params={"name": "in:" + ",".join(wanted)}).json()
        return frozenset(data["traits"])

    def create_trait(self, name: str) -> None:
        """PUT /traits/{name} (custom traits; 201 created or 204 already there)."""
        self._request("PUT", f"/traits/{quote(name)}", ok=(201, 204))

    def ensure_resource_class(self, name: str) -> bool:
        """Create custom resource class ``name`` unless it exists (GET, then PUT
        /resource_classes/{name}, 1.7); True when it was created."""
        status, _ = self.get_json(f"/resource_classes/{quote(name)}", ok=(200, 404))
        if status == 200:
            return False
        self._request("PUT", f"/resource_classes/{quote(name)}", ok=(201, 204))
        return True

    def get_provider_allocations(self, uuid: str) -> dict[str, dict[str, int]]:
        """``{consumer uuid: {resource class: amount}}`` on the provider."""
        data = self._request("GET", f"/resource_providers/{uuid}/allocations").json()
        return {consumer: dict(a["resources"]) for consumer, a in data["allocations"].items()}

    def get_usages(self, uuid: str) -> dict[str, int]:
        """``{resource class: used}`` of the provider."""
        data = self._request("GET", f"/resource_providers/{uuid}/usages").json()
        return {rc: int(v) for rc, v in data["usages"].items()}

    # -- generic (extensions whose routes may or may not exist) ---------------------------------

    def get_json(self, path: str, *, ok: Iterable[int] = (200,)) -> tuple[int, Any]:
        """GET ``path``; ``(status, JSON body or None)`` for any status in ``ok``."""
        response = self._request("GET", path, ok=ok)
        return response.status_code, (response.json() if response.content else None)

    def send_json(
        self,
        method: str,
        path: str,
        body: Any,
        *,
        ok: Iterable[int] = (200,),
        version: str | None = None,
    ) -> tuple[int, Any]:
        """``method`` ``path`` with a JSON body (at ``version`` when given, else 1.39);
        ``(status, JSON body or None)``."""
        response = self._request(method, path, json=body, ok=ok, version=version)
        return response.status_code, (response.json() if response.content else None)
