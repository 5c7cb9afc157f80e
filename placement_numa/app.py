"""``create_app(settings)``: the FastAPI application, with everything hung off ``app.state``.

``app.state.settings``: the ``Settings``; ``app.state.conf``: the oslo.config ``ConfigOpts`` of
``settings.config_file`` (libraries such as keystonemiddleware and oslo.policy register their
sections on it); ``app.state.database``: the ``Database`` (engine and transactions). Nothing is
created at import time. This is the one app factory: middleware and settings hang off it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.openapi.utils import get_openapi

from placement_numa import __version__
from placement_numa.api import microversion as mv
from placement_numa.api.auth import make_authenticator
from placement_numa.api.cors import CORSMiddleware, cors_filter
from placement_numa.api.db_retry import DbRetryMiddleware
from placement_numa.api.deps import check_accept
from placement_numa.api.docs import install_docs
from placement_numa.api.engine_dep import preload_fleet
from placement_numa.api.errors import install_error_handlers
from placement_numa.api.healthcheck import HealthcheckMiddleware, health_backends
from placement_numa.api.middleware import PlacementMiddleware
from placement_numa.api.observability import install_observability
from placement_numa.api.openapi_doc import complete_document
from placement_numa.api.openapi_microversions import annotate_operations
from placement_numa.api.policy import enforce_policy, make_enforcer
from placement_numa.api.proxy_headers import ProxyHeadersMiddleware, proxy_filter
from placement_numa.api.request_guard import RequestGuardMiddleware
from placement_numa.api.routers import ROUTERS
from placement_numa.db import migrate
from placement_numa.db.database import Database
from placement_numa.db.foreign_writes import ForeignWriteWatcher
from placement_numa.db.migration_lock import migration_lock
from placement_numa.db.resilience import DatabaseOptions
from placement_numa.db.standard_names import sync_standard_names
from placement_numa.db.upstream_options import warn_ignored_options
from placement_numa.service_logging import setup_service_logging
from placement_numa.settings import Settings, load_config

__all__ = [
    "create_app",
    "app_from_env",
    "prepare_database",
    "build_openapi",
    "database_for",
    "start_watcher",
    "watcher_for",
]

LOG = logging.getLogger(__name__)

DESCRIPTION = f"""
A resource-placement service that speaks the OpenStack Placement API (microversions
{mv.MIN_VERSION} to {mv.MAX_VERSION}) and understands NUMA.

Every route but `/` needs an `x-auth-token` header: a Keystone token (`auth_strategy =
keystone`, the default) or, in development (`noauth2`), `user[:project]` (`admin` has the admin
role). Each operation is authorised by the oslo.policy rule of OpenStack Placement's name. Pick a
microversion with `OpenStack-API-Version: placement {mv.MAX_VERSION}`; without it a request
is served at {mv.MIN_VERSION}. This document describes the newest microversion.

Extensions to Placement: standard traits `MEMORY_PAGE_SIZE_SMALL`, `MEMORY_PAGE_SIZE_LARGE` and
`HW_NON_NUMA`; NUMA distance matrices; `POST /allocation_candidates` with a Nova flavor.
"""


def prepare_database(settings: Settings) -> None:
    """Apply migrations and sync the standard trait and resource class names, under the
    migration lock (several workers starting at once migrate one after the other)."""
    warn_ignored_options(settings.config_file)
    with migration_lock(settings.database_url):
        migrate.upgrade_at_start(
            settings.database_url,
            sync_on_startup=settings.sync_on_startup,
            migrations_dir=settings.migrations_dir,
        )
        database = Database(settings.database_url)
        try:
            with database.write() as conn:
                sync_standard_names(conn)
        finally:
            database.dispose()


def database_for(settings: Settings) -> Database:
    """The ``Database`` of one process: pool sizes, timeouts and Retry-After from ``settings``."""
    return Database(
        settings.database_url,
        options=DatabaseOptions(
            statement_timeout=settings.statement_timeout or None,
            lock_timeout=settings.lock_timeout or None,
            retry_after=settings.retry_after,
        ),
        pool_size=settings.max_pool_size,
        max_overflow=settings.max_overflow,
        pool_timeout=settings.pool_timeout,
        pool_recycle=settings.connection_recycle_time,
    )


def build_openapi(app: FastAPI) -> dict[str, Any]:
    """The OpenAPI document of ``app``, with request-body component schemas gathered."""
    document = get_openapi(
        title="placement-numa",
        version=__version__,
        description=DESCRIPTION,
        routes=app.routes,
    )
    components = document.setdefault("components", {}).setdefault("schemas", {})
    for path_item in document.get("paths", {}).values():
        for operation in path_item.values():
            if isinstance(operation, dict) and "x-component-schemas" in operation:
                components.update(operation.pop("x-component-schemas"))
    document["info"]["x-placement-max-microversion"] = str(mv.MAX_VERSION)
    annotate_operations(document, app.routes)
    return complete_document(document)


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Worker start: watch for writes made around us (``start_watcher``; a worker forked by
    ``serve --prefork`` also checks the supervisor's watcher once: ``_catch_up``), then load
    the fleet snapshot before serving (``Settings.preload_fleet``)."""
    watcher = start_watcher(app)
    inherited = getattr(app.state, "load_watcher", None)
    if watcher is not None and inherited is not None:
        _catch_up(inherited)
    if getattr(app.state.settings, "preload_fleet", False):
        preload_fleet(app)
    yield
    if watcher is not None:
        watcher.stop()


def _catch_up(inherited: ForeignWriteWatcher) -> None:
    """A worker forked by ``serve --prefork`` inherits its snapshot and the supervisor's
    watcher, whose baseline preceded that snapshot's load: one check of it, after this
    worker's own baseline, records any write made around us in between (the next query
    refreshes those trees), so none falls between the two baselines."""
    try:
        inherited.check()
    except Exception as exc:  # noqa: BLE001 - the worker's own watcher keeps checking
        LOG.warning("foreign write check at worker start failed: %s", exc)


def watcher_for(app: FastAPI) -> ForeignWriteWatcher | None:
    """A foreign-write watcher for ``app`` (``db.foreign_writes``; PostgreSQL and MariaDB,
    the databases another Placement can share), not started; ``None`` when ``[placement]
    foreign_write_staleness`` is 0 or the database is SQLite."""
    staleness = getattr(app.state.settings, "foreign_write_staleness", 0)
    if staleness <= 0 or app.state.database.dialect == "sqlite":
        return None
    return ForeignWriteWatcher(app.state.database, max(0.25, staleness / 2))


def start_watcher(app: FastAPI) -> ForeignWriteWatcher | None:
    """Start the foreign-write watcher of this worker (``watcher_for``), if any. Call it
    before the fleet snapshot is first loaded: its baseline must precede that load."""
    watcher = watcher_for(app)
    if watcher is not None:
        watcher.start()
    return watcher


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the application for ``settings`` (read from the environment when omitted).

    With ``settings.auto_migrate`` the schema is upgraded and the standard names synced first.
    """
    settings = settings or Settings()
    if settings.auto_migrate:
        prepare_database(settings)
    app = FastAPI(
        title="placement-numa",
        version=__version__,
        description=DESCRIPTION,
        openapi_url="/openapi.json",
        docs_url=None,  # api.docs serves Swagger UI with local assets
        redoc_url=None,
        dependencies=[Depends(check_accept), Depends(enforce_policy)],
        lifespan=_lifespan,
    )
    app.state.settings = settings
    app.state.conf = conf = load_config(settings.config_file)
    app.state.enforcer = make_enforcer(conf)
    app.state.database = database_for(settings)
    for router in ROUTERS:
        app.include_router(router)
    install_docs(app, "placement-numa")
    install_error_handlers(app)
    app.add_middleware(  # innermost: re-runs a request after a deadlock (api/db_retry.py)
        DbRetryMiddleware,
        max_retries=settings.db_max_retries,
        interval=settings.db_retry_interval,
        max_interval=settings.db_max_retry_interval,
    )
    app.add_middleware(
        RequestGuardMiddleware,
        max_body_size=settings.max_request_body_size,
        max_query_length=settings.max_query_string_length,
        body_timeout=settings.body_read_timeout,
    )
    app.state.authenticator = make_authenticator(settings.auth_strategy, conf)
    app.add_middleware(PlacementMiddleware, authenticator=app.state.authenticator)
    app.add_middleware(  # before auth
        HealthcheckMiddleware, retry_after=settings.retry_after, backends=health_backends(conf)
    )
    cors = cors_filter(conf)
    if cors is not None:
        app.add_middleware(CORSMiddleware, filter=cors)  # sees every response but /metrics
    install_observability(app, settings)  # request ids, access log, /metrics
    proxy = proxy_filter(conf)
    if proxy is not None:  # outermost: [oslo_middleware] enable_proxy_headers_parsing
        app.add_middleware(ProxyHeadersMiddleware, proxy=proxy)

    def _openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = build_openapi(app)
        return app.openapi_schema

    app.openapi = _openapi  # type: ignore[method-assign]
    return app


def app_from_env() -> FastAPI:
    """uvicorn factory for worker processes: settings from the environment; logging set up
    from its placement.conf (oslo.log) before the app is built."""
    settings = Settings()
    setup_service_logging(settings)
    return create_app(settings)
