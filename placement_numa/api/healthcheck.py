"""``GET|HEAD /healthcheck``: is this worker able to serve? Unauthenticated, reveals nothing else.

The convention is oslo.middleware's ``healthcheck`` (what load balancers and operators of
OpenStack services poll): ``200`` with body ``OK`` when healthy, ``503`` with the reasons when
not, ``text/plain`` by default and JSON (``{"detailed": false, "reasons": [...]}``) when the
``Accept`` header asks for ``application/json``; ``HEAD`` answers the status only. It sits in
front of authentication (the outermost middleware), as oslo.middleware's filter does in a
paste pipeline.

Checks, in order (each a reason line):

0. oslo.middleware's own healthcheck backends named in ``[healthcheck] backends``, with their
   options: ``disable_by_file`` (``disable_by_file_path``: while that file exists the answer is
   ``503 DISABLED BY FILE``, so an operator drains a worker before maintenance by touching a
   file), ``disable_by_files_ports`` and ``enable_by_files``; a backend that says unavailable
   ends the check with its reason;
1. ``database: ok`` (one ``SELECT`` of the fleet revision through the worker's pool) or
   ``database: unavailable (<code>)``;
2. ``fleet snapshot: revision N, P providers`` (this worker's candidate snapshot, refreshed to
   the database revision, so a healthy answer means candidate queries work) or
   ``fleet snapshot: unavailable (<code>)``.

A 503 carries ``Retry-After``. No hostnames, versions, URLs or credentials are shown.

oslo.middleware's ``Healthcheck`` application itself is WSGI and knows nothing of this
service's database and snapshot (its backends are stevedore plugins built from the
configuration alone), so the response is made here in its format and its backends are run
through their public ``healthcheck(server_port)`` method.
"""

from __future__ import annotations

from typing import Any

import orjson
import stevedore
from oslo_config import cfg
from oslo_middleware.healthcheck import Healthcheck
from oslo_middleware.healthcheck import opts as health_opts
from oslo_middleware.healthcheck.pluginbase import HealthcheckBaseExtension
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from placement_numa.errors import PlacementError

__all__ = ["HealthcheckMiddleware", "PATH", "check", "health_backends"]

PATH = "/healthcheck"


def health_backends(conf: cfg.ConfigOpts) -> list[HealthcheckBaseExtension]:
    """oslo.middleware's healthcheck backends named in ``conf``'s ``[healthcheck] backends``
    (their options registered on ``conf``), in that order; an unknown name is skipped with
    stevedore's warning. Raises oslo.config's errors for a value that does not parse."""
    conf.register_opts(health_opts.HEALTHCHECK_OPTS, group="healthcheck")
    names = list(conf.healthcheck.backends)
    if not names:
        return []
    manager: stevedore.NamedExtensionManager[HealthcheckBaseExtension] = (
        stevedore.NamedExtensionManager(
            Healthcheck.NAMESPACE,
            names,
            name_order=True,
            invoke_on_load=True,
            invoke_args=(conf, {}),
        )
    )
    return [extension.obj for extension in manager if extension.obj is not None]


def _backend_reasons(
    backends: tuple[HealthcheckBaseExtension, ...], port: int
) -> tuple[bool, list[str]]:
    for backend in backends:
        result = backend.healthcheck(port)
        if not result.available:
            return False, [str(result.reason)]
    return True, []


def check(
    app: Any, backends: tuple[HealthcheckBaseExtension, ...] = (), port: int = 0
) -> tuple[bool, list[str]]:
    """Run the checks against ``app`` (its ``state``); ``(healthy, reasons)``. ``backends``:
    oslo.middleware's (``health_backends``), given the server's ``port``. Blocking (SQL, file
    checks): call from a thread."""
    available, refused = _backend_reasons(backends, port)
    if not available:
        return False, refused
    from placement_numa.api.engine_dep import get_candidate_engine
    from placement_numa.db.repositories.fleet import current_revision

    reasons: list[str] = []
    database = app.state.database
    try:
        with database.read() as conn:
            current_revision(conn)
        reasons.append("database: ok")
    except PlacementError as exc:
        return False, [f"database: unavailable ({exc.code})"]
    except Exception as exc:  # noqa: BLE001 - any failure is "unhealthy", never a 500
        return False, [f"database: unavailable ({type(exc).__name__})"]
    try:
        scope = {"type": "http", "app": app, "headers": [], "method": "GET", "path": PATH}
        fleet = get_candidate_engine(Request(scope)).snapshot()
        reasons.append(
            f"fleet snapshot: revision {fleet.revision}, {len(fleet.providers)} providers"
        )
    except PlacementError as exc:
        return False, [*reasons, f"fleet snapshot: unavailable ({exc.code})"]
    except Exception as exc:  # noqa: BLE001
        return False, [*reasons, f"fleet snapshot: unavailable ({type(exc).__name__})"]
    return True, reasons


class HealthcheckMiddleware:
    """See the module docstring. ``retry_after``: seconds, sent with a 503."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        retry_after: int = 2,
        backends: list[HealthcheckBaseExtension] | None = None,
    ) -> None:
        self.app = app
        self.retry_after = retry_after
        self.backends = tuple(backends or ())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer ``/healthcheck``; pass everything else on."""
        if scope["type"] != "http" or scope["path"] != PATH:
            await self.app(scope, receive, send)
            return
        method = scope["method"]
        if method not in ("GET", "HEAD"):
            await _send(send, 405, b"", "text/plain", [(b"allow", b"GET, HEAD")])
            return
        server = scope.get("server") or ("", 0)
        healthy, reasons = await run_in_threadpool(
            check, scope["app"], self.backends, int(server[1] or 0)
        )
        accept = b""
        for key, value in scope["headers"]:
            if key.lower() == b"accept":
                accept = value.lower()
        if b"application/json" in accept:
            body = orjson.dumps({"detailed": False, "reasons": reasons})
            media = "application/json"
        else:
            body = ("OK" if healthy else "\n".join(reasons)).encode()
            media = "text/plain; charset=UTF-8"
        extra: list[tuple[bytes, bytes]] = [(b"cache-control", b"no-cache")]
        if not healthy:
            extra.append((b"retry-after", str(self.retry_after).encode()))
        await _send(send, 200 if healthy else 503, b"" if method == "HEAD" else body, media, extra)


async def _send(
    send: Send, status: int, body: bytes, media: str, extra: list[tuple[bytes, bytes]]
) -> None:
    headers = [
        (b"content-type", media.encode()),
        (b"content-length", str(len(body)).encode()),
        *extra,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
