"""How the agent proves who it is to a Placement behind Keystone.

``KeystoneTokenAuth`` is an ``httpx.Auth`` for the agent's ``PlacementClient``: it asks
keystoneauth1 (the library Nova's report client and every OpenStack client use) for a token of
a Keystone user (the v3 ``password`` method, project-scoped), sends it as ``x-auth-token``, and
lets keystoneauth keep it (renewed shortly before it expires). A 401 means the token died early
(revoked, or the service restarted with new keys): the token is dropped and the request is sent
once more with a fresh one. Without Keystone settings the agent sends its fixed ``token``
(noauth2, development).

Errors: keystoneauth's ``ClientException`` family (``Unauthorized`` for a wrong password,
``ConnectFailure`` for an unreachable Keystone) propagates from the request that needed a token.
"""

from __future__ import annotations

from collections.abc import Generator

import httpx
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3

__all__ = ["KeystoneTokenAuth"]


class KeystoneTokenAuth(httpx.Auth):
    """Keystone tokens for a user, as ``x-auth-token`` on every request (see the module
    docstring). ``auth_url``: the identity endpoint, e.g. ``http://keystone:5000/v3``;
    ``timeout``: seconds for each call to Keystone."""

    def __init__(
        self,
        *,
        auth_url: str,
        username: str,
        password: str,
        project_name: str,
        user_domain_name: str = "Default",
        project_domain_name: str = "Default",
        timeout: float = 30.0,
    ) -> None:
        plugin = v3.Password(
            auth_url=auth_url,
            username=username,
            password=password,
            project_name=project_name,
            user_domain_name=user_domain_name,
            project_domain_name=project_domain_name,
        )
        self.session = ks_session.Session(auth=plugin, timeout=timeout)

    def token(self) -> str:
        """The current token (fetched from Keystone when there is none or it expires soon)."""
        token = self.session.get_token()
        if not token:  # keystoneauth returns None only for a plugin without tokens
            raise RuntimeError("Keystone returned no token")
        return str(token)

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        """httpx's hook: send with the current token; on 401, once more with a fresh one."""
        request.headers["x-auth-token"] = self.token()
        response = yield request
        if response.status_code == 401:
            self.session.invalidate()
            request.headers["x-auth-token"] = self.token()
            yield request
