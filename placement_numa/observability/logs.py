"""Logging is oslo.log: the ``[DEFAULT]`` options every OpenStack service reads, request ids
in each line of a request.

``register_options(conf)`` registers oslo.log's options (``debug``, ``log_file``, ``log_dir``,
``use_syslog``, ``use_journal``, ``use_json``, ``use_stderr``, ``log_config_append``,
``default_log_levels``, ``logging_context_format_string``, ``log_rotation_type``, ...) on the
``ConfigOpts`` before it parses the file (``placement_numa.settings.load_config`` calls it, as
upstream Placement's ``placement.conf.register_opts`` does). This module imports neither the
settings nor ``conf`` (``service_logging`` ties them together).
``setup_logging(conf)`` then calls ``oslo_log.log.setup``, which replaces the root logger's
handlers: a file (``log_file`` / ``log_dir``, watched, so logrotate works), stdout when no file
is named (as upstream), syslog, journald, JSON lines with ``use_json``, or the operator's own
``log_config_append`` file. Every logger propagates to the root, so uvicorn's lines
(``uvicorn.error``, and ``uvicorn.access`` when it is on) go through the same handlers:
``placement-numa serve`` runs uvicorn with ``log_config=None`` so it installs no handler of its
own.

Request ids: oslo.log's ``ContextFormatter`` renders ``[%(global_request_id)s %(request_id)s
%(user_identity)s]`` (its default ``logging_context_format_string``, which upstream Placement
keeps) from the ``RequestContext`` of the record. oslo.context keeps "the current context" in a
thread-local, which an asyncio server shares between all the requests of a worker; so the
request's context lives in the context variable ``LOG_CONTEXT`` instead (it follows the request
into the thread pool of sync routes, since Starlette copies the caller's context), and
``ContextFilter``, on each root handler, hands it to the formatter as ``record.context``. A line
of a request then reads (without and with Nova's global request id)::

    2026-11-26 14:00:00.123 4242 INFO placement_numa.access [None req-6f1c... admin admin - - -
    -] 127.0.0.1 "GET /resource_providers" status: 200 len: 312 microversion: 1.39 time: 0.0042
    2026-11-26 14:00:00.123 4242 INFO placement_numa.access [req-9a0e... req-6f1c... nova
    service - - - -] ...

Log forging: a request path may carry ``%0A`` (a newline once decoded), and names and ids
in bodies may carry any control character. ``EscapeControlFilter``, on each root handler too,
writes every record's message (format and arguments merged) with its control characters
escaped (``\n``, ``\r``, ``\t``, ``\x1b``, ``\u2028``, ...), so one record is one line
whatever a client sent; a traceback's own lines stay as they are.

``reload_logging(conf)`` re-reads the configuration files and sets logging up again (for
SIGHUP). The deprecated ``PLACEMENT_NUMA_LOG_JSON`` / ``PLACEMENT_NUMA_LOG_LEVEL`` environment
variables still win over the file (``use_json``, ``debug``) and log a deprecation warning.
"""

from __future__ import annotations

import logging
import re
from contextvars import ContextVar

from oslo_config import cfg
from oslo_context.context import RequestContext
from oslo_log import log as oslo_logging

__all__ = [
    "LOG_CONTEXT",
    "PRODUCT",
    "EXTRA_LOG_LEVELS",
    "ContextFilter",
    "EscapeControlFilter",
    "escape_control",
    "register_options",
    "setup_logging",
    "reload_logging",
]

PRODUCT = "placement-numa"
LOG_CONTEXT: ContextVar[RequestContext | None] = ContextVar(
    "placement_numa_log_context", default=None
)
# Added to oslo.log's default_log_levels (upstream Placement adds routes=INFO): libraries whose
# DEBUG lines are about their own plumbing, not about the request.
EXTRA_LOG_LEVELS = ("routes=INFO", "httpcore=WARN", "httpx=WARN", "multipart=INFO")
LOG = logging.getLogger(__name__)


# C0 and C1 control characters, DEL, and the Unicode line and paragraph separators.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def escape_control(text: str) -> str:
    """``text`` with each control character written as an escape (``"a\nb"`` -> ``a\\nb``):
    C0 and C1 controls, DEL, U+2028 and U+2029. Printable text, non-ASCII included, is kept."""
    return _CONTROL.sub(_escaped, text) if _CONTROL.search(text) else text


class EscapeControlFilter(logging.Filter):
    """Merges each record's arguments into its message and escapes the control characters of
    the result (``escape_control``): a client's ``%0A`` in a path or a newline in a name never
    starts a forged line. Never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Escape ``record``'s message (and drop its arguments, now merged)."""
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: let the handler report it as logging does
            return True
        record.msg, record.args = escape_control(message), None
        return True


class ContextFilter(logging.Filter):
    """Gives each record the request's ``RequestContext`` (``LOG_CONTEXT``) as
    ``record.context``, unless the caller passed one; never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Attach the current request's context to ``record``."""
        if "context" not in record.__dict__:
            context = LOG_CONTEXT.get()
            if context is not None:
                record.context = context
        return True


def register_options(conf: cfg.ConfigOpts) -> None:
    """Register oslo.log's options (``[DEFAULT]``) on ``conf``, with placement-numa's
    ``default_log_levels``. Call before ``conf`` parses its files (some are CLI options);
    calling it again on the same ``conf`` is harmless."""
    oslo_logging.set_defaults(
        default_log_levels=[*oslo_logging.get_default_log_levels(), *EXTRA_LOG_LEVELS]
    )
    oslo_logging.register_options(conf)


def _apply_deprecated_env(
    conf: cfg.ConfigOpts, *, json_lines: bool | None, level: str | None
) -> None:
    """``PLACEMENT_NUMA_LOG_JSON`` / ``PLACEMENT_NUMA_LOG_LEVEL`` (given explicitly) override
    ``use_json`` / ``debug`` as they did before oslo.log."""
    if json_lines is not None:
        conf.set_override("use_json", json_lines)
    if level is not None:
        conf.set_override("debug", level.lower() == "debug")


def setup_logging(
    conf: cfg.ConfigOpts, *, json_lines: bool | None = None, level: str | None = None
) -> None:
    """Set up process logging from ``conf``'s ``[DEFAULT]`` oslo.log options.

    ``json_lines`` / ``level``: the deprecated environment settings when given explicitly
    (``None``: not given), overriding ``use_json`` / ``debug``; a ``level`` of ``warning`` or
    ``error`` also raises the root logger's level. Raises ``oslo_config.cfg.Error`` for a
    value that does not parse and ``OSError`` when the log file cannot be opened.
    """
    _apply_deprecated_env(conf, json_lines=json_lines, level=level)
    oslo_logging.setup(conf, PRODUCT, version=_version(), fix_eventlet=False)
    logging.captureWarnings(True)
    for handler in logging.getLogger().handlers:
        for kind in (ContextFilter, EscapeControlFilter):
            if not any(isinstance(f, kind) for f in handler.filters):
                handler.addFilter(kind())
    if level is not None and level.lower() not in ("debug", "info"):
        numeric = logging.getLevelName(level.upper())
        if isinstance(numeric, int):
            logging.getLogger().setLevel(numeric)
    for name, value in (
        ("PLACEMENT_NUMA_LOG_JSON", json_lines),
        ("PLACEMENT_NUMA_LOG_LEVEL", level),
    ):
        if value is not None:
            LOG.warning(
                "%s is deprecated: use [DEFAULT] %s in placement.conf",
                name,
                "use_json" if name.endswith("JSON") else "debug",
            )


def reload_logging(conf: cfg.ConfigOpts) -> bool:
    """Re-read ``conf``'s configuration files and set logging up again (for SIGHUP): a new
    ``log_file``, ``debug``, ``use_json``, ``default_log_levels`` or ``log_config_append``
    takes effect, and a log file moved away by logrotate is reopened. Overrides set by the
    deprecated environment variables stay.

    Returns ``False`` (and keeps the previous logging) when a file no longer parses (oslo.config
    logs why); ``True`` otherwise. Raises ``OSError`` when the new log file cannot be opened.
    """
    if not conf.reload_config_files():
        return False
    setup_logging(conf)
    return True


def _version() -> str:
    from placement_numa import __version__

    return __version__
