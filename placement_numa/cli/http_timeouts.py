"""The built-in server's header read timeout: uvicorn's httptools protocol with a deadline.

uvicorn closes idle keep-alive connections (``timeout_keep_alive``) but waits forever for a
client that connects and sends nothing, or trickles its request line and headers (a
"slowloris"). ``GuardedHttpToolsProtocol`` gives every request ``header_read_timeout`` seconds
(``[placement] header_read_timeout``) from the connection's start, or from the first byte of the
next request on a kept-alive connection, to deliver its complete headers; then the connection is
closed. Slow bodies are bounded per chunk by ``api/request_guard.py`` (``body_read_timeout``).

Worker processes read the timeout from ``PLACEMENT_NUMA_HEADER_READ_TIMEOUT``, which
``placement-numa serve`` sets from the settings.

A worker that stops gracefully (SIGTERM, or replaced after SIGHUP) does not cut its idle
kept-alive connections at once, as uvicorn does: a client may be sending its next request on
one at that very moment, and would read a reset it cannot tell from a lost request. The
connection is kept for the keep-alive timeout (``[placement] keep_alive_timeout``); a request
that arrives meanwhile is answered with ``Connection: close``, after which the client opens a
new connection (to a successor worker). A connection still idle then is closed as any idle
keep-alive connection is (RFC 9112, section 9.6: clients retry on a connection closed idle).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["GuardedHttpToolsProtocol", "ENV_HEADER_TIMEOUT"]

ENV_HEADER_TIMEOUT = "PLACEMENT_NUMA_HEADER_READ_TIMEOUT"


def _header_timeout() -> float:
    try:
        return float(os.environ.get(ENV_HEADER_TIMEOUT, "30"))
    except ValueError:
        return 30.0


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, closing connections whose headers do not arrive in time."""

    _header_timer: asyncio.TimerHandle | None = None
    _draining = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the clock for the first request's headers."""
        super().connection_made(transport)
        self._arm()

    def on_message_begin(self) -> None:
        """A request starts: its headers must complete in time."""
        super().on_message_begin()
        if self._header_timer is None:
            self._arm()

    def on_headers_complete(self) -> None:
        """Headers complete: stop the clock (the body has its own timeout). While the server
        stops, the answer closes the connection."""
        self._disarm()
        super().on_headers_complete()
        if self._draining and self.cycle is not None:
            self.cycle.keep_alive = False

    def shutdown(self) -> None:
        """The server stops gracefully: a request in progress is answered with ``Connection:
        close`` (uvicorn's way); an idle connection is kept until its keep-alive timeout, its
        next request answered with ``Connection: close`` (the module's docstring)."""
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.keep_alive = False
            return
        self._draining = True
        if self.timeout_keep_alive_task is None and not self.transport.is_closing():
            # no request answered yet on this connection: give it the same grace
            self.timeout_keep_alive_task = self.loop.call_later(
                self.timeout_keep_alive, self.timeout_keep_alive_handler
            )

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the clock with the connection."""
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._header_timer = self.loop.call_later(_header_timeout(), self._expired)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _expired(self, *_args: Any) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            self.transport.close()
