"""``placement-numa serve``: run the HTTP service with uvicorn."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from placement_numa.settings import Settings

__all__ = ["register", "WORKER_READY_TIMEOUT"]

# Seconds a replacement worker may take to start after SIGHUP (several workers).
WORKER_READY_TIMEOUT = 120


def register(subparsers: Any) -> None:
    """Add the ``serve`` subcommand to ``subparsers`` (argparse)."""
    from placement_numa.cli.config_file import add_config_file

    parser = subparsers.add_parser("serve", help="run the Placement API service")
    add_config_file(parser)
    parser.add_argument("--host", help="bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port (default 8778)")
    parser.add_argument("--workers", type=int, help="uvicorn worker processes (default 1)")
    parser.add_argument(
        "--prefork",
        action="store_true",
        default=None,
        help="load the fleet once and fork the workers from it (shared copy-on-write)",
    )
    parser.add_argument(
        "--prefork-max-private-mb",
        type=int,
        help="with --prefork: replace a worker holding more memory of its own (MiB; 0: never)",
    )
    parser.add_argument(
        "--database-url",
        help="SQLAlchemy URL (default: sqlite:///placement-numa.sqlite in this directory)",
    )
    parser.add_argument(
        "--auth-strategy",
        choices=("keystone", "noauth2"),
        help="keystone (default; [keystone_authtoken]) or noauth2 (development: trusts headers)",
    )
    parser.add_argument(
        "--no-migrate", action="store_true", help="do not apply migrations on start"
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="once the server is up, load the demo NUMA fleet if the database is empty",
    )
    parser.set_defaults(handler=run)


def _settings(args: argparse.Namespace) -> Settings:
    """The service's ``Settings``: the flags given, over the environment and placement.conf."""
    from placement_numa.settings import Settings

    overrides = {
        key: value
        for key, value in {
            "host": args.host,
            "port": args.port,
            "workers": args.workers,
            "prefork": args.prefork,
            "prefork_max_private_mb": args.prefork_max_private_mb,
            "database_url": args.database_url,
            "config_file": args.config_file,
            "auth_strategy": args.auth_strategy,
        }.items()
        if value is not None
    }
    if args.no_migrate:
        overrides["auto_migrate"] = False
    return Settings(**overrides)


def _check_ready(settings: Settings) -> None:
    """Before any worker starts: keystone configured (when asked), and the database migrated
    (``auto_migrate``) or checked at head (an OpenStack Placement database, or ours behind
    head: one line, ``EXIT_SCHEMA``)."""
    from placement_numa.app import prepare_database

    if settings.auth_strategy == "keystone":
        from placement_numa.api.keystone import check_configured
        from placement_numa.cli.failures import EXIT_USAGE, CommandError
        from placement_numa.conf import ConfigFileError
        from placement_numa.settings import load_config

        try:
            check_configured(load_config(settings.config_file))
        except ConfigFileError as exc:
            raise CommandError(str(exc), EXIT_USAGE) from None
    if settings.auto_migrate:
        prepare_database(settings)
    else:
        from placement_numa.db.migrate import check_at_start

        check_at_start(
            settings.database_url,
            auto_migrate=False,
            sync_on_startup=settings.sync_on_startup,
            migrations_dir=settings.migrations_dir,
        )


def run(args: argparse.Namespace) -> int:
    """Migrate once (unless ``--no-migrate``), then start the workers without migrating."""
    import uvicorn

    # imported before logging is set up, so their import-time warnings stay off stdout
    import placement_numa.app  # noqa: F401
    from placement_numa.cli.http_timeouts import ENV_HEADER_TIMEOUT, GuardedHttpToolsProtocol
    from placement_numa.service_logging import setup_service_logging

    settings = _settings(args)
    setup_service_logging(settings)  # oslo.log from [DEFAULT]; uvicorn's loggers included
    _check_ready(settings)
    # Workers read their settings from the environment; they must not migrate concurrently.
    os.environ["PLACEMENT_NUMA_DATABASE_URL"] = settings.database_url
    if settings.config_file is not None:
        os.environ["PLACEMENT_NUMA_CONFIG_FILE"] = str(settings.config_file)
    os.environ["PLACEMENT_NUMA_AUTO_MIGRATE"] = "false"
    os.environ["PLACEMENT_NUMA_AUTH_STRATEGY"] = settings.auth_strategy
    if settings.workers > 1 and settings.metrics_enabled:
        _multiprocess_metrics_dir()
    prefork = settings.workers > 1 and settings.prefork
    if getattr(args, "demo", False):
        from placement_numa.cli.demo import load_when_up, load_when_up_apart

        demo_url = f"http://{settings.host}:{settings.port}"
        if prefork:  # no thread in a process that forks
            load_when_up_apart(demo_url)
        else:
            load_when_up(demo_url)
    os.environ[ENV_HEADER_TIMEOUT] = str(settings.header_read_timeout)
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "log_config": None,  # no handlers of its own: its loggers propagate to oslo.log's
        "log_level": None,  # [DEFAULT] debug decides
        "access_log": not settings.access_log,  # ours (placement_numa.access) replaces uvicorn's
        "proxy_headers": False,  # [oslo_middleware] enable_proxy_headers_parsing decides
        "http": GuardedHttpToolsProtocol,  # header read timeout (cli/http_timeouts.py)
        "timeout_keep_alive": max(1, round(settings.keep_alive_timeout)),
    }
    if prefork:
        from placement_numa.cli.prefork import serve_prefork

        serve_prefork(settings, options)
    elif settings.workers > 1:
        # uvicorn's supervisor answers SIGHUP: each worker replaced once its successor is ready.
        # A worker loads its fleet snapshot before it is ready: give it time (uvicorn's 5 s is
        # short on a busy host; a successor not ready in time aborts the restart, old kept).
        uvicorn.run(
            "placement_numa.app:app_from_env",
            factory=True,
            workers=settings.workers,
            timeout_worker_healthcheck=WORKER_READY_TIMEOUT,
            **options,
        )
    else:
        _serve_one_process(options)
    return 0


def _serve_one_process(options: dict[str, Any]) -> None:
    """One uvicorn server in this process; SIGHUP reloads configuration, policy and logging
    (``placement_numa.reload``) while it keeps serving."""
    import signal

    import uvicorn
    from fastapi import FastAPI

    from placement_numa.app import app_from_env
    from placement_numa.reload import reload_in_background

    built: list[FastAPI] = []

    def factory() -> FastAPI:
        built.append(app_from_env())
        return built[-1]

    def on_hangup(signum: int, frame: object) -> None:
        if built:
            reload_in_background(built[-1])

    signal.signal(signal.SIGHUP, on_hangup)
    server = uvicorn.Server(uvicorn.Config(factory, factory=True, **options))
    server.run()
    if not server.started:  # uvicorn logged why (address in use, a failing start-up)
        from placement_numa.cli.failures import EXIT_FAILED, CommandError

        raise CommandError("the server did not start", EXIT_FAILED)


def _multiprocess_metrics_dir() -> None:
    """Give the workers one prometheus-client multiprocess directory (so a scrape of any worker
    sees every worker): ``PROMETHEUS_MULTIPROC_DIR`` if set (emptied of old ``*.db`` files),
    else a fresh temporary directory removed at exit."""
    import atexit
    import shutil
    import tempfile
    from pathlib import Path

    given = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if given:
        for stale in Path(given).glob("*.db"):
            stale.unlink()
        return
    directory = tempfile.mkdtemp(prefix="placement-numa-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory
    atexit.register(shutil.rmtree, directory, True)
