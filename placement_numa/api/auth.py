"""Authentication and authorisation, in one place. For now Placement's ``noauth2``:

* every route but the version document (and the API docs) needs an ``x-auth-token`` header
  (401 without one);
* the token is ``user[:project]``; user ``admin`` has the admin role, and an ``x-roles`` header
  (comma-separated) replaces the roles, as in Placement's noauth2 middleware;
* the default policy admits the admin role only (403 otherwise), checked after the microversion
  was negotiated, so a bad version header is reported first.
"""

from __future__ import annotations

from dataclasses import dataclass

from placement_numa.errors import Forbidden, Unauthorized

__all__ = ["PUBLIC_PATHS", "Credentials", "authenticate", "authorize"]

PUBLIC_PATHS = frozenset({"/", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"})


@dataclass(frozen=True, slots=True)
class Credentials:
    """Who is calling: user and project ids from the token, and their roles."""

    user_id: str
    project_id: str
    roles: tuple[str, ...]

    @property
    def is_admin(self) -> bool:
        """True when the caller holds the ``admin`` role."""
        return "admin" in self.roles


def authenticate(path: str, headers: dict[str, str]) -> Credentials | None:
    """The caller's credentials, or ``None`` on a public path.

    ``headers`` are lower-cased. Raises ``Unauthorized`` (401) when a token is needed and absent.
    """
    if path in PUBLIC_PATHS:
        return None
    token = headers.get("x-auth-token")
    if token is None:
        raise Unauthorized("This server could not verify that you are authorized.")
    user_id, _sep, project_id = token.partition(":")
    if "x-roles" in headers:
        roles = tuple(r.strip() for r in headers["x-roles"].split(",") if r.strip())
    elif user_id == "admin":
        roles = ("admin",)
    else:
        roles = ()
    return Credentials(user_id=user_id, project_id=project_id or user_id, roles=roles)


def authorize(credentials: Credentials | None) -> None:
    """Apply the default policy (admin only). Raises ``Forbidden`` (403)."""
    if credentials is not None and not credentials.is_admin:
        raise Forbidden("Policy does not allow this request to be performed.")
