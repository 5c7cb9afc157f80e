"""Authentication, in one place. For now Placement's ``noauth2``: every route but the version
document (and the API docs) needs an ``x-auth-token`` header; the token ``admin`` is the admin role.
Other tokens authenticate a non-admin user, whom the default policy (admin only) refuses.
"""

from __future__ import annotations

from placement_numa.errors import Forbidden, Unauthorized

__all__ = ["PUBLIC_PATHS", "authenticate"]

PUBLIC_PATHS = frozenset({"/", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"})


def authenticate(path: str, headers: dict[str, str]) -> str | None:
    """Return the role of the caller (``"admin"``), or ``None`` on a public path.

    Raises ``Unauthorized`` (401) without a token and ``Forbidden`` (403) for a non-admin token.
    """
    if path in PUBLIC_PATHS:
        return None
    token = headers.get("x-auth-token")
    if not token:
        raise Unauthorized("This server could not verify that you are authorized.")
    if token != "admin":
        raise Forbidden("Policy does not allow this request to be performed.")
    return "admin"
