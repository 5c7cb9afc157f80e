"""Logs with request ids: every log record emitted while a request is served carries its
``x-openstack-request-id`` (``request_id``; ``-`` outside requests), as text or JSON lines.

``REQUEST_ID`` is a context variable set by the observability middleware for the duration of
a request; it follows the request into the thread pool (sync routes), since Starlette runs
them with the caller's context. ``configure_logging`` installs one stderr handler on the root
logger (once per process) with ``RequestIdFilter`` and a text or ``JsonFormatter`` format.

Text lines: ``2026-11-22 17:00:00,000 INFO placement_numa.access [req-...] GET ... 200``.
JSON lines: ``{"time", "level", "logger", "message", "request_id", ...}`` plus the access
log's fields (``user_id``, ``project_id``, ``method``, ``route``, ``status``, ``duration_ms``).
"""

from __future__ import annotations

import json
import logging
import sys
from contextvars import ContextVar
from typing import Any

__all__ = [
    "REQUEST_ID",
    "RequestIdFilter",
    "JsonFormatter",
    "configure_logging",
    "TEXT_FORMAT",
    "ACCESS_FIELDS",
]

REQUEST_ID: ContextVar[str] = ContextVar("placement_numa_request_id", default="-")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"
ACCESS_FIELDS = ("user_id", "project_id", "method", "route", "path", "status", "duration_ms")
_MARK = "_placement_numa_handler"


class RequestIdFilter(logging.Filter):
    """Sets ``record.request_id`` from ``REQUEST_ID`` (never drops a record)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Add the request id of the current context to ``record``."""
        if not hasattr(record, "request_id"):
            record.request_id = REQUEST_ID.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request_id, access fields."""

    def format(self, record: logging.LogRecord) -> str:
        """``record`` as a JSON line."""
        data: dict[str, Any] = {
            "time": self.formatTime(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", REQUEST_ID.get()),
        }
        for name in ACCESS_FIELDS:
            if hasattr(record, name):
                data[name] = getattr(record, name)
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str)


def configure_logging(level: str = "info", json_lines: bool = False) -> None:
    """Install the request-id aware stderr handler on the root logger (idempotent: a second
    call replaces the formatter and level), and on uvicorn's error logger."""
    root = logging.getLogger()
    handler = next((h for h in root.handlers if getattr(h, _MARK, False)), None)
    if handler is None:
        handler = logging.StreamHandler(sys.stderr)
        setattr(handler, _MARK, True)
        handler.addFilter(RequestIdFilter())
        root.addHandler(handler)
    handler.setFormatter(JsonFormatter() if json_lines else logging.Formatter(TEXT_FORMAT))
    numeric = logging.getLevelName(level.upper())
    if isinstance(numeric, int):
        logging.getLogger("placement_numa").setLevel(numeric)
