"""ASGI middleware: re-run a request whose transaction the database aborted as retryable.

A deadlock victim, a serialization failure or a Galera certification conflict rolls the whole
transaction back (``db.resilience`` raises ``RetryableDatabaseError``), and every request here
is one transaction, so running the request again is safe. This is oslo.db's
``wrap_db_retry(max_retries, retry_interval, inc_retry_interval=True, max_retry_interval,
retry_on_deadlock=True)`` applied per request: at most ``max_retries`` re-runs, waiting
``interval * 2**attempt`` seconds (capped at ``max_interval``, with full jitter) in between; when
they are spent the client gets the 503 ``placement.db.retries_exhausted`` with ``Retry-After``.

How a retry is recognised: the error renderer keeps the private ``x-placement-retryable``
header of ``RetryableDatabaseError`` on the response; this middleware drops that response and
runs the request again, replaying the body chunks the handler had read. The header never
leaves the process.
"""

from __future__ import annotations

import asyncio
import logging
import random

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["DbRetryMiddleware", "RETRYABLE_HEADER"]

LOG = logging.getLogger(__name__)

RETRYABLE_HEADER = b"x-placement-retryable"


class DbRetryMiddleware:
    """See the module docstring. Intervals in seconds."""

    def __init__(
        self, app: ASGIApp, *, max_retries: int, interval: float, max_interval: float
    ) -> None:
        self.app = app
        self.max_retries = max_retries
        self.interval = interval
        self.max_interval = max_interval

    def delay(self, attempt: int) -> float:
        """Seconds to wait before re-run number ``attempt + 1`` (full jitter)."""
        return random.uniform(0, min(self.max_interval, self.interval * 2**attempt))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry point: non-HTTP scopes pass through untouched."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        recorded: list[Message] = []

        async def recording_receive() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                recorded.append(message)
            return message

        for attempt in range(self.max_retries + 1):
            final = attempt == self.max_retries
            if not await self._attempt(scope, recorded, recording_receive, send, final=final):
                return
            LOG.warning(
                "retrying %s %s after a retryable database error (attempt %d of %d)",
                scope.get("method"),
                scope.get("path"),
                attempt + 1,
                self.max_retries,
            )
            await asyncio.sleep(self.delay(attempt))

    async def _attempt(
        self,
        scope: Scope,
        recorded: list[Message],
        receive: Receive,
        send: Send,
        *,
        final: bool,
    ) -> bool:
        """Run the request once (replaying the body chunks read so far); True when its
        response was a retryable error and was dropped (never on the ``final`` attempt)."""
        replay = list(recorded)
        dropped = False

        async def attempt_receive() -> Message:
            if replay:
                return replay.pop(0)
            return await receive()

        async def attempt_send(message: Message) -> None:
            nonlocal dropped
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                kept = [h for h in headers if h[0].lower() != RETRYABLE_HEADER]
                if len(kept) != len(headers):
                    if not final:
                        dropped = True
                        return
                    message = {**message, "headers": kept}
            if dropped:
                return
            await send(message)

        await self.app(scope, attempt_receive, attempt_send)  # same scope: outer layers read it
        return dropped
