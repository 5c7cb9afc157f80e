"""The one HTTP client base of the Placement API's clients here: the agent
(``agent/client.py``), the CLI commands (``cli/reshape.py``, ``cli/demo.py``,
``cli/schedule.py``) and the scheduler's claim client (``claim_client.py``). httpx only (no
FastAPI, no SQLAlchemy), so each of them stays importable on its own.

What they share:

* ``headers(token, version=..., roles=...)``: ``x-auth-token`` (noauth2's fixed token; an
  ``httpx.Auth`` such as ``agent.auth.KeystoneTokenAuth`` replaces it per request),
  ``OpenStack-API-Version: placement <version>`` (default ``MICROVERSION``) and ``x-roles``
  (noauth2 only; Keystone ignores it);
* ``open_client(base_url, ...)``: an ``httpx.Client`` with those headers and a timeout;
* ``error_of(response)``: Placement's error body (``{"errors": [{"code", "detail", ...}]}``)
  as ``(code, detail, error)``; ``detail`` is the last paragraph, on one line;
* ``PlacementHTTPError``: an error answer (``status``, ``code``, ``detail``, ``method``,
  ``path``), ``str()`` one line; ``check(response, *ok)`` raises it. A CLI command that lets
  one escape prints that line and exits 1 (``cli.failures.describe``, which also words
  ``httpx.TransportError``: no answer).
Errors::

    PlacementHTTPError        an error answer; .status, .code, .detail, .method, .path
                              (subclassed by agent.client.PlacementClientError,
                              claim_client.ClaimRefused; cli.reshape.PlacementRefused
                              wraps it)
    httpx.TransportError      no answer (connection refused, timeout): left to the caller
"""

from __future__ import annotations

from typing import Any

import httpx

__all__ = [
    "MICROVERSION",
    "UNDEFINED_CODE",
    "PlacementHTTPError",
    "headers",
    "open_client",
    "error_of",
    "check",
]

MICROVERSION = "1.39"  # the microversion every client here speaks unless it asks another
UNDEFINED_CODE = "placement.undefined_code"  # Placement's code of an error without its own


class PlacementHTTPError(RuntimeError):
    """Placement answered with an error: HTTP ``status``, Placement error ``code``,
    ``detail`` (one line), and the request's ``method`` and ``path`` when known.
    ``str()``: ``"PUT /resource_providers/x -> 409 placement.concurrent_update: ..."``."""

    def __init__(
        self, status: int, code: str, detail: str, *, method: str = "", path: str = ""
    ) -> None:
        request = f"{method} {path} -> " if method else ""
        super().__init__(f"{request}{status} {code}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail
        self.method = method
        self.path = path


def headers(
    token: str | None = "admin", *, version: str = MICROVERSION, roles: str | None = None
) -> dict[str, str]:
    """The request headers of a Placement client: ``x-auth-token`` (``None``: none),
    ``openstack-api-version``, ``x-roles`` when given, ``accept: application/json``."""
    found = {"openstack-api-version": f"placement {version}", "accept": "application/json"}
    if token is not None:
        found["x-auth-token"] = token
    if roles:
        found["x-roles"] = roles
    return found


def open_client(
    base_url: str,
    *,
    token: str | None = "admin",
    version: str = MICROVERSION,
    roles: str | None = None,
    timeout: float = 30.0,
    auth: httpx.Auth | None = None,
) -> httpx.Client:
    """An ``httpx.Client`` on ``base_url`` sending ``headers(token, version, roles)``;
    ``timeout`` in seconds per request; ``auth`` (e.g. Keystone tokens) applied per request.
    The caller closes it (``with open_client(...) as http:``)."""
    return httpx.Client(
        base_url=base_url,
        headers=headers(token, version=version, roles=roles),
        timeout=timeout,
        auth=auth,
    )


def error_of(response: httpx.Response) -> tuple[str, str, dict[str, Any]]:
    """``(code, detail, error)`` of an error answer: Placement's first error (``error`` its
    JSON object, ``{}`` when the body is not Placement's error format), ``code`` defaulting to
    ``UNDEFINED_CODE``; ``detail`` without the status explanation Placement puts before a blank
    line, whitespace collapsed to one line (the body's text when not Placement's format)."""
    try:
        error = response.json()["errors"][0]
        if not isinstance(error, dict):
            raise TypeError(error)
    except (ValueError, KeyError, IndexError, TypeError):
        return UNDEFINED_CODE, " ".join(response.text.split()), {}
    code = str(error.get("code") or UNDEFINED_CODE)
    detail = " ".join(str(error.get("detail") or "").strip().split("\n\n")[-1].split())
    return code, detail, error


def check(response: httpx.Response, *ok: int) -> httpx.Response:
    """``response`` when its status is in ``ok`` (default 200), else raises
    ``PlacementHTTPError`` naming the request."""
    if response.status_code in (ok or (200,)):
        return response
    code, detail, _ = error_of(response)
    request = response.request
    raise PlacementHTTPError(
        response.status_code, code, detail, method=request.method, path=request.url.path
    )
