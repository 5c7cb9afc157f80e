"""WSGI entry point ``placement_numa.wsgi:application``, for servers that host Placement today.

OpenStack deployment tools run Placement as ``placement.wsgi.api:application`` under Apache
mod_wsgi or uWSGI; this module lets them run placement-numa the same way::

    gunicorn -k sync -w 4 -b 0.0.0.0:8778 placement_numa.wsgi:application
    uwsgi --http-socket :8778 --module placement_numa.wsgi:application --processes 4
    WSGIScriptAlias / /path/to/site-packages/placement_numa/wsgi.py   # mod_wsgi

The service is an ASGI application; a2wsgi's ``ASGIMiddleware`` (an event loop in a thread of
each process) adapts it. The native server (``placement-numa serve``, uvicorn) stays the fast
path: a WSGI worker handles one request at a time.

Configuration is found as upstream Placement's ``placement.wsgi`` finds it:

1. ``PLACEMENT_NUMA_CONFIG_FILE`` (placement-numa's own variable), else
2. ``$OS_PLACEMENT_CONFIG_DIR/placement.conf`` when ``OS_PLACEMENT_CONFIG_DIR`` is set, else
3. the first ``placement.conf`` oslo.config finds for project ``placement``
   (``~/.placement/``, ``~/``, ``/etc/placement/``, ``/etc/``), else none.

``PLACEMENT_NUMA_*`` variables override the file, as for ``serve``. The settings and the file
are read and checked when the module is imported, so a bad configuration stops the WSGI server
at start (its log names the problem), and so does a schema it cannot serve (an OpenStack
Placement database not yet adopted: ``placement-numa db adopt``). The application itself is
built once per process, on its first request: servers that import the module in a master
process and then fork (uWSGI without ``lazy-apps``, gunicorn ``--preload``) give each worker its
own database pool and event loop.
Schema migrations run there too when ``auto_migrate`` is on (one process at a time, under the
migration lock); deployments usually run ``placement-numa db upgrade`` first and set
``PLACEMENT_NUMA_AUTO_MIGRATE=false``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from placement_numa.settings import Settings

if TYPE_CHECKING:
    from a2wsgi.asgi import ASGIMiddleware
    from a2wsgi.wsgi_typing import Environ, StartResponse

__all__ = ["application", "config_file_from_environment", "load_settings"]

CONFIG_FILE = "placement.conf"


def config_file_from_environment(env: Mapping[str, str] | None = None) -> Path | None:
    """The placement.conf upstream Placement's WSGI script would read (module docstring, 2-3).

    ``env``: the environment (``os.environ`` by default). Returns ``None`` when no file is
    named or found; a directory named by ``OS_PLACEMENT_CONFIG_DIR`` is taken as given (a
    missing file there then fails at start, naming it).
    """
    from oslo_config import cfg

    env = os.environ if env is None else env
    directory = env.get("OS_PLACEMENT_CONFIG_DIR", "").strip()
    if directory:
        return Path(directory) / CONFIG_FILE
    found = cfg.find_config_files(project="placement", prog="placement")
    named = [path for path in found if Path(path).name == CONFIG_FILE]
    return Path(named[0]) if named else None


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """``Settings`` for a WSGI process: ``PLACEMENT_NUMA_CONFIG_FILE`` or the upstream lookup.

    Raises ``placement_numa.conf.ConfigFileError`` (missing file, bad value) or pydantic's
    ``ValidationError``.
    """
    env = os.environ if env is None else env
    if env.get("PLACEMENT_NUMA_CONFIG_FILE"):
        return Settings()
    found = config_file_from_environment(env)
    return Settings(config_file=found) if found is not None else Settings()


class _PerProcessApplication:
    """The WSGI callable: builds the app and its adapter once per process (after a fork)."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._lock = threading.Lock()
        self._pid = -1
        self._wsgi: ASGIMiddleware | None = None

    def _build(self) -> ASGIMiddleware:
        from a2wsgi import ASGIMiddleware

        from placement_numa.api.engine_dep import preload_fleet
        from placement_numa.app import create_app, start_watcher
        from placement_numa.service_logging import setup_service_logging

        setup_service_logging(self._settings)  # oslo.log, as upstream's init_application
        app = create_app(self._settings)
        start_watcher(app)  # a2wsgi runs no lifespan: foreign writes are watched from here
        if self._settings.preload_fleet:  # and the snapshot loaded here
            preload_fleet(app)
        return ASGIMiddleware(app)  # type: ignore[arg-type]

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        """Serve one WSGI request (PEP 3333)."""
        pid = os.getpid()
        if self._pid != pid:
            with self._lock:
                if self._pid != pid:
                    self._wsgi = self._build()
                    self._pid = pid
        assert self._wsgi is not None
        return self._wsgi(environ, start_response)


def _checked(settings: Settings) -> Settings:
    """``settings``, once the schema is one the service can serve (``db.migrate.
    check_at_start``): an OpenStack Placement database not yet adopted, or ours behind head
    with migrations off, stops the WSGI server at start with a ``ForeignSchema`` whose one line
    names the command to run, rather than a 500 on every request. Reads only; a database that
    cannot be reached yet passes."""
    from placement_numa.db.migrate import check_at_start

    check_at_start(
        settings.database_url,
        auto_migrate=settings.auto_migrate,
        sync_on_startup=settings.sync_on_startup,
        migrations_dir=settings.migrations_dir,
    )
    return settings


application = _PerProcessApplication(_checked(load_settings()))
