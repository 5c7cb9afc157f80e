"""Expected failures of the command line, as one line and an exit code (never a traceback).

Exit codes of every ``placement-numa`` command::

    0    done
    1    the operation failed: a service or database could not be reached, or refused a request
    2    invalid usage, configuration (a missing or unparsable --config-file, a value that does
         not parse) or input file
    3    (agent) the host must be reshaped first
    4    (db downgrade, db release) not confirmed: answered no, or no answer could be read and
         --yes was not given
    5    (schedule) no room: no host can take the flavor now (usage was valid)
    6    (serve, db upgrade) the database's schema needs a step first: an OpenStack Placement
         database is taken over with 'db adopt', ours behind this version's with 'db upgrade'
         (an unknown schema too); restarting will not help
    7    (agent) nova-compute manages this compute node's provider tree (Nova's traits, or
         VCPU/PCPU/MEMORY_MB, on its root): one writer per tree, nothing was written; the
         periodic agent stops too. Restarting will not help
    130  interrupted (Ctrl-C)

``placement-numa status upgrade check`` follows oslo.upgradecheck instead: 0 success,
1 warning, 2 failure, 255 the check itself could not run.

``describe(exc)`` maps the exceptions a command may meet to ``(message, exit code)``; it checks
httpx and SQLAlchemy exceptions only when those libraries are already imported, so client
commands never load SQLAlchemy to report an error.
"""

from __future__ import annotations

import json
import sys

__all__ = [
    "CommandError",
    "describe",
    "EXIT_FAILED",
    "EXIT_USAGE",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_CONFIRMED",
    "EXIT_RESHAPE_NEEDED",
    "EXIT_NO_ROOM",
    "EXIT_SCHEMA",
    "EXIT_NOVA_MANAGED",
]

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_RESHAPE_NEEDED = 3
EXIT_NOT_CONFIRMED = 4
EXIT_NO_ROOM = 5
EXIT_SCHEMA = 6
EXIT_NOVA_MANAGED = 7
EXIT_INTERRUPTED = 130


class CommandError(Exception):
    """An expected failure with its message (one line) and exit code."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _first_line(text: object) -> str:
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


def _http(exc: BaseException) -> tuple[str, int] | None:
    httpx = sys.modules.get("httpx")
    if httpx is None or not isinstance(exc, httpx.HTTPError):
        return None
    url = ""
    try:
        url = f" {exc.request.url.scheme}://{exc.request.url.netloc.decode()}"
    except RuntimeError:  # no request attached
        pass
    if isinstance(exc, httpx.ConnectError):
        return f"cannot reach the service at{url}: {_first_line(exc) or 'connection failed'}", 1
    if isinstance(exc, httpx.TimeoutException):
        return f"the service at{url} did not answer in time", 1
    return f"request to{url} failed: {_first_line(exc) or type(exc).__name__}", 1


def _placement(exc: BaseException) -> tuple[str, int] | None:
    """An error answer of the Placement API (``placement_http.PlacementHTTPError``: the
    agent's, the claim client's and the CLI's clients)."""
    placement_http = sys.modules.get("placement_numa.placement_http")
    if placement_http is None or not isinstance(exc, placement_http.PlacementHTTPError):
        return None
    return f"Placement refused: {_first_line(exc)}", EXIT_FAILED


def _database(exc: BaseException) -> tuple[str, int] | None:
    sa_exc = sys.modules.get("sqlalchemy.exc")
    if sa_exc is None or not isinstance(exc, sa_exc.SQLAlchemyError):
        return None
    detail = _first_line(getattr(exc, "orig", None) or exc)
    if isinstance(exc, sa_exc.ArgumentError | sa_exc.NoSuchModuleError):
        return f"invalid database URL: {detail}", EXIT_USAGE
    if isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError):
        return f"cannot use the database: {detail}", EXIT_FAILED
    return f"database error: {detail}", EXIT_FAILED


def _settings(exc: BaseException) -> tuple[str, int] | None:
    pydantic = sys.modules.get("pydantic")
    if pydantic is None or not isinstance(exc, pydantic.ValidationError):
        return None
    problems = "; ".join(
        f"{'.'.join(str(p) for p in error['loc']) or 'value'}: {error['msg']}"
        for error in exc.errors()
    )
    return f"invalid configuration: {problems}", EXIT_USAGE


def _schema(exc: BaseException) -> tuple[str, int] | None:
    """A start refused because of the schema (``db.migrate.ForeignSchema``: an OpenStack
    Placement database to adopt first, or ours behind head)."""
    migrate = sys.modules.get("placement_numa.db.migrate")
    if migrate is None or not isinstance(exc, migrate.ForeignSchema):
        return None
    return _first_line(exc), EXIT_SCHEMA


def _config_file(exc: BaseException) -> tuple[str, int] | None:
    conf = sys.modules.get("placement_numa.conf")
    if conf is not None and isinstance(exc, conf.ConfigFileError):
        return _first_line(exc), EXIT_USAGE
    cfg = sys.modules.get("oslo_config.cfg")
    if cfg is not None and isinstance(exc, cfg.Error):
        return f"invalid configuration: {_first_line(exc)}", EXIT_USAGE
    return None


def describe(exc: BaseException) -> tuple[str, int] | None:
    """``(one-line message, exit code)`` for an expected failure, ``None`` for a bug."""
    if isinstance(exc, CommandError):
        return _first_line(exc), exc.exit_code
    for translate in (_config_file, _placement, _http, _database, _settings, _schema):
        found = translate(exc)
        if found is not None:
            return found
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON: {exc}", EXIT_USAGE
    if isinstance(exc, FileNotFoundError | PermissionError | IsADirectoryError):
        return f"{exc.strerror}: {exc.filename}", EXIT_USAGE
    if isinstance(exc, ConnectionError):
        return f"connection failed: {_first_line(exc)}", EXIT_FAILED
    return None
