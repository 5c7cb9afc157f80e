"""Authentication: who is calling, as an oslo.context ``RequestContext``.

``[api] auth_strategy`` (``Settings.auth_strategy``) picks one of two strategies:

* ``keystone`` (the default, production): the token is validated by keystonemiddleware's
  ``auth_token`` (``placement_numa.api.keystone``), configured in ``[keystone_authtoken]``;
* ``noauth2`` (development and tests), Placement's semantics: the ``x-auth-token`` is
  ``user[:project]``; user ``admin`` has the ``admin`` role; an ``x-roles`` header
  (comma-separated) gives the roles instead, an ``x-project-id`` header the project;
  ``openstack-system-scope: all`` makes a system-scoped token (no project). Anyone can claim
  any role: a warning is logged at start.

Either way the identity becomes the WSGI-style headers keystonemiddleware sets
(``HTTP_X_USER_ID``, ``HTTP_X_PROJECT_ID``, ``HTTP_X_ROLES``, ``HTTP_X_SERVICE_ROLES``,
``HTTP_OPENSTACK_SYSTEM_SCOPE``, ...), read by ``RequestContext.from_environ`` as every OpenStack
service does. The version document and the API docs (``PUBLIC_PATHS``) need no token.
Authorisation (policy) is ``placement_numa.api.policy``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Protocol

from oslo_config import cfg
from oslo_context.context import RequestContext

from placement_numa.api.identity import context_from_identity
from placement_numa.errors import Unauthorized

__all__ = [
    "AUTH_STRATEGIES",
    "PUBLIC_PATHS",
    "Authenticator",
    "NoAuth2",
    "make_authenticator",
]

LOG = logging.getLogger(__name__)

AUTH_STRATEGIES = ("keystone", "noauth2")
PUBLIC_PATHS = frozenset({"/", "", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"}) | {
    # Swagger UI's local assets (api.docs)
    "/docs/assets/swagger-ui-bundle.js",
    "/docs/assets/swagger-ui.css",
    "/docs/assets/favicon.png",
}


class Authenticator(Protocol):
    """One authentication strategy."""

    async def authenticate(self, headers: Mapping[str, str], request_id: str) -> RequestContext:
        """The caller's context from the request's (lower-cased) headers.

        Raises ``Unauthorized`` (401) for a missing or invalid token.
        """


class NoAuth2:
    """Placement's ``noauth2``: trust the token and headers (development and tests only)."""

    async def authenticate(self, headers: Mapping[str, str], request_id: str) -> RequestContext:
        """See ``Authenticator.authenticate``."""
        token = headers.get("x-auth-token")
        if token is None:
            raise Unauthorized("This server could not verify that you are authorized.")
        user_id, _sep, project_id = token.partition(":")
        if "x-roles" in headers:
            roles = [r.strip() for r in headers["x-roles"].split(",") if r.strip()]
        elif user_id == "admin":
            roles = ["admin"]
        else:
            roles = []
        environ = {
            "HTTP_X_AUTH_TOKEN": token,
            "HTTP_X_USER_ID": user_id,
            "HTTP_X_ROLES": ",".join(roles),
        }
        system_scope = headers.get("openstack-system-scope")
        if system_scope:
            environ["HTTP_OPENSTACK_SYSTEM_SCOPE"] = system_scope
        if "x-project-id" in headers:  # as in Placement, the header names the project
            environ["HTTP_X_PROJECT_ID"] = headers["x-project-id"]
        elif not system_scope:
            environ["HTTP_X_PROJECT_ID"] = project_id or user_id
        return context_from_identity(environ, request_id)


def make_authenticator(strategy: str, conf: cfg.ConfigOpts) -> Authenticator:
    """The authenticator for ``strategy`` (``keystone`` or ``noauth2``).

    ``conf`` holds ``[keystone_authtoken]`` (keystonemiddleware registers its options on it).
    Raises ``ValueError`` for an unknown strategy.
    """
    if strategy == "noauth2":
        LOG.warning(
            "auth_strategy is noauth2: tokens are not validated and anyone who can reach the "
            "service can claim any role (x-roles). Use auth_strategy = keystone in production."
        )
        return NoAuth2()
    if strategy == "keystone":
        from placement_numa.api.keystone import KeystoneAuth

        return KeystoneAuth(conf)
    raise ValueError(f"[api] auth_strategy: {strategy!r} is not one of {AUTH_STRATEGIES}")
