"""Apply the alembic migrations: the top-level ``migrations/`` folder of a checkout, shipped in
the wheel as ``placement_numa/migrations`` (setup.py maps it; found with ``importlib.resources``,
so an installed wheel migrates from any directory).

Before touching a schema, ``upgrade`` looks at what ``alembic_version`` holds: a revision of
OpenStack Placement's chain (both projects use that table) or one unknown to us raises
``ForeignSchema`` naming what to do (``db adopt``), instead of alembic's "Can't locate
revision". ``upgrade_at_start`` is what a starting service does (``sync_on_startup``);
``check_at_start`` is what one that does not migrate checks (``serve --no-migrate``, the WSGI
entry point), so that it refuses to start rather than answer 500 to every request.

``upgrade`` holds a migration lock (``db.migration_lock``) while it runs, so several processes
starting at once (uvicorn or gunicorn workers, a one-shot migrate job racing a server) migrate
one after the other: the first applies the migrations, the others find the schema at head.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

from placement_numa.db.migration_lock import migration_lock
from placement_numa.db.upstream_revisions import UPSTREAM_HEAD, UPSTREAM_REVISIONS

__all__ = [
    "alembic_config",
    "upgrade",
    "upgrade_at_start",
    "check_at_start",
    "downgrade",
    "stamp",
    "current",
    "head",
    "default_migrations_dir",
    "ForeignSchema",
]


class ForeignSchema(RuntimeError):
    """The database holds a schema we do not migrate (OpenStack Placement's, an unknown one, or
    ours behind head when migrating at start is off); the message says what to run."""


def default_migrations_dir() -> Path:
    """The alembic script directory: ``placement_numa/migrations`` in an installed wheel (plain
    files, a real directory alembic can read), else ``migrations/`` of the checkout this
    package runs from (an editable install or the source tree)."""
    installed = Path(str(files("placement_numa") / "migrations"))
    if (installed / "env.py").exists():
        return installed
    return Path(__file__).resolve().parents[2] / "migrations"


def alembic_config(database_url: str, migrations_dir: Path | None = None) -> Config:
    """An alembic ``Config`` for ``database_url`` using ``migrations_dir`` (default: the
    package's own migrations). Raises ``FileNotFoundError`` when it holds no ``env.py``."""
    script_location = migrations_dir or default_migrations_dir()
    if not (script_location / "env.py").exists():
        raise FileNotFoundError(f"no alembic env.py in {script_location}")
    config = Config()
    config.set_main_option("script_location", str(script_location))
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def current(database_url: str) -> str | None:
    """The revision in ``alembic_version`` (``None``: no schema yet). Raises the driver's
    errors when the database cannot be reached."""
    engine = create_engine(database_url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()


def head(migrations_dir: Path | None = None) -> str:
    """Our newest revision."""
    script = ScriptDirectory.from_config(alembic_config("sqlite://", migrations_dir))
    found = script.get_current_head()
    assert found is not None
    return found


def _check_ours(database_url: str, migrations_dir: Path | None) -> str | None:
    """The current revision, after making sure it is ours (or none); raises ``ForeignSchema``."""
    revision = current(database_url)
    if revision is None:
        return None
    script = ScriptDirectory.from_config(alembic_config("sqlite://", migrations_dir))
    if revision in {rev.revision for rev in script.walk_revisions()}:
        return revision
    if revision == UPSTREAM_HEAD:
        raise ForeignSchema(
            f"this is an OpenStack Placement database (alembic revision {revision}): run "
            "'placement-numa db adopt' to take it over first"
        )
    if revision in UPSTREAM_REVISIONS:
        raise ForeignSchema(
            f"this is an OpenStack Placement database at the older revision {revision}: run "
            "Placement 16's 'placement-manage db sync', then 'placement-numa db adopt'"
        )
    raise ForeignSchema(f"unknown schema (alembic revision {revision}): not placement-numa's")


def upgrade(
    database_url: str,
    revision: str = "head",
    migrations_dir: Path | None = None,
    *,
    lock: bool = True,
) -> None:
    """Upgrade the schema at ``database_url`` to ``revision`` (``head`` by default), under the
    migration lock unless ``lock=False`` (the caller already holds it). Raises
    ``ForeignSchema`` for an OpenStack Placement or unknown schema (nothing changed)."""
    config = alembic_config(database_url, migrations_dir)
    if not lock:
        _check_ours(database_url, migrations_dir)
        command.upgrade(config, revision)
        return
    with migration_lock(database_url):
        _check_ours(database_url, migrations_dir)
        command.upgrade(config, revision)


def _behind(revision: str, target: str) -> ForeignSchema:
    return ForeignSchema(
        f"schema at {revision}, this version needs {target}: run 'placement-numa db "
        "upgrade' (or set [placement_database] sync_on_startup = true)"
    )


def upgrade_at_start(
    database_url: str, *, sync_on_startup: bool, migrations_dir: Path | None = None
) -> None:
    """What a starting service does with the schema (the caller holds the migration lock).

    An empty database gets our schema whatever ``sync_on_startup`` says (zero set-up, as for
    the default SQLite file). A schema of ours behind head is upgraded with ``sync_on_startup``
    (upstream Placement's option, off by default) and refused without it. Raises
    ``ForeignSchema`` for a refusal, an OpenStack Placement database included.
    """
    revision = _check_ours(database_url, migrations_dir)
    target = head(migrations_dir)
    if revision == target:
        return
    if revision is not None and not sync_on_startup:
        raise _behind(revision, target)
    command.upgrade(alembic_config(database_url, migrations_dir), "head")


def check_at_start(
    database_url: str,
    *,
    auto_migrate: bool,
    sync_on_startup: bool,
    migrations_dir: Path | None = None,
) -> None:
    """Refuse, before serving, a schema the service would answer 500 on; reads only.

    Raises ``ForeignSchema`` (its one line names the command to run) for an OpenStack
    Placement database (``db adopt``) or an unknown one, and, when the start will not migrate
    (``auto_migrate`` off: ``serve --no-migrate``, ``PLACEMENT_NUMA_AUTO_MIGRATE=false``), for
    no schema or ours behind head (``db upgrade``); with ``auto_migrate``, for what
    ``upgrade_at_start`` would refuse. A database that cannot be reached passes: the service
    starts and answers 503 until it can.
    """
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import InterfaceError, OperationalError

    url = make_url(database_url)
    sqlite_file = url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:")
    try:
        if sqlite_file and not Path(str(url.database)).exists():
            revision = None  # not created by a check: the start (or db upgrade) creates it
        else:
            revision = _check_ours(database_url, migrations_dir)
    except (OperationalError, InterfaceError):
        return
    target = head(migrations_dir)
    if revision == target or (auto_migrate and (revision is None or sync_on_startup)):
        return
    if revision is None:
        raise ForeignSchema(
            "no placement-numa schema in this database: run 'placement-numa db upgrade' "
            "(or start without --no-migrate)"
        )
    raise _behind(revision, target)


def stamp(database_url: str, revision: str, migrations_dir: Path | None = None) -> None:
    """Write ``revision`` to ``alembic_version`` without running migrations (alembic stamp)."""
    config = alembic_config(database_url, migrations_dir)
    with migration_lock(database_url):
        command.stamp(config, revision, purge=True)


def downgrade(database_url: str, revision: str, migrations_dir: Path | None = None) -> None:
    """Downgrade the schema at ``database_url`` to ``revision`` (``base`` drops everything)."""
    config = alembic_config(database_url, migrations_dir)
    with migration_lock(database_url):
        command.downgrade(config, revision)
