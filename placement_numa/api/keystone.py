"""Keystone token authentication: keystonemiddleware's ``auth_token``, driven from ASGI.

``auth_token`` is WSGI middleware. For each request, ``KeystoneAuth`` builds a minimal WSGI
environ holding the request's ``X-Auth-Token`` / ``X-Service-Token``, runs the ``auth_token``
filter on it in a worker thread (off the event loop: validation may call Keystone), and reads
the identity headers the filter set (``HTTP_X_USER_ID``, ``HTTP_X_PROJECT_ID``,
``HTTP_X_ROLES``, ``HTTP_X_SERVICE_ROLES``, ``HTTP_OPENSTACK_SYSTEM_SCOPE``, ...). When the
filter answers itself (401 for a missing or invalid token, 503 when Keystone cannot be reached)
that answer becomes a Placement error with the filter's ``WWW-Authenticate`` header.

Configuration is ``[keystone_authtoken]`` of ``app.state.conf`` (``www_authenticate_uri``,
``auth_url``, ``auth_type``, ``username``, ``password``, ``memcached_servers``,
``token_cache_time``, ...): ``auth_token`` registers and reads its options there. Validated
tokens are cached by ``auth_token`` itself: in memcached when ``memcached_servers`` is set,
otherwise in this process for ``token_cache_time`` seconds, so a known token costs no round
trip to Keystone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import webob
from keystonemiddleware import auth_token
from oslo_config import cfg
from oslo_context.context import RequestContext
from starlette.concurrency import run_in_threadpool

from placement_numa.api.identity import context_from_identity
from placement_numa.conf import ConfigFileError
from placement_numa.errors import PlacementError, Unauthorized

__all__ = ["KeystoneAuth", "KeystoneUnavailable", "check_configured"]

_PASSED = "placement_numa.auth_passed"


class KeystoneUnavailable(PlacementError):
    """Keystone could not validate the token (``auth_token`` answered 5xx)."""

    status = 503
    title = "Service Unavailable"


def _passed(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
    """The WSGI application behind the filter: marks the environ as authenticated."""
    environ[_PASSED] = True
    start_response("204 No Content", [])
    return [b""]


def check_configured(conf: cfg.ConfigOpts) -> None:
    """Fail at start when ``[keystone_authtoken]`` cannot validate tokens.

    Raises ``ConfigFileError`` naming the options (``www_authenticate_uri``, ``auth_type``)
    when they are unset, with the way out for development (``--auth-strategy noauth2``).
    """
    for group, opts in auth_token.list_opts():
        conf.register_opts(opts, group=group)
    section = conf.keystone_authtoken
    missing = [name for name in ("www_authenticate_uri", "auth_type") if not section[name]]
    if missing:
        raise ConfigFileError(
            "auth_strategy is keystone but [keystone_authtoken] "
            + " and ".join(missing)
            + " not set: configure Keystone (--config-file placement.conf) or, for"
            " development, use --auth-strategy noauth2"
        )


class KeystoneAuth:
    """``Authenticator`` backed by one keystonemiddleware ``AuthProtocol`` (one per app)."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        check_configured(conf)
        self._filter = auth_token.AuthProtocol(_passed, {"oslo_config_config": conf})

    async def authenticate(self, headers: Mapping[str, str], request_id: str) -> RequestContext:
        """See ``placement_numa.api.auth.Authenticator``; validation runs in a worker thread."""
        environ = await run_in_threadpool(self.validate, headers)
        return context_from_identity(environ, request_id)

    def validate(self, headers: Mapping[str, str]) -> dict[str, Any]:
        """Run ``auth_token`` on the request's tokens (blocking); the resulting WSGI environ.

        Raises ``Unauthorized`` (401, with ``WWW-Authenticate``) when the filter refuses the
        request, ``KeystoneUnavailable`` (503) when it cannot reach Keystone.
        """
        token_headers = {
            name: headers[name.lower()]
            for name in ("X-Auth-Token", "X-Service-Token")
            if name.lower() in headers
        }
        environ: dict[str, Any] = webob.Request.blank("/", headers=token_headers).environ
        status: list[str] = []
        response_headers: list[tuple[str, str]] = []

        def start_response(
            status_line: str, headers_out: list[tuple[str, str]], exc_info: Any = None
        ) -> None:
            status.append(status_line)
            response_headers.extend(headers_out)

        body = self._filter(environ, start_response)
        for _chunk in body:
            pass
        if environ.get(_PASSED):
            return environ
        code = int(status[0].split()[0]) if status else 500
        extra = {k: v for k, v in response_headers if k.lower() == "www-authenticate"}
        if code == 401:
            raise Unauthorized("The request you have made requires authentication.", headers=extra)
        raise KeystoneUnavailable(f"Token validation failed: {status[0] if status else code}")
