"""``placement-numa db ...``: the schema and its hand-over to and from OpenStack Placement.

Sub-commands (each takes ``--config-file`` and ``--database-url``; the URL wins, then
``PLACEMENT_NUMA_DATABASE_URL``, then ``[placement_database] connection`` of the file)::

    db upgrade [REVISION]     apply our migrations (default head) and sync the standard names
    db downgrade REVISION     revert migrations ('base' drops every table): asks first
    db version                print the revision in alembic_version (ours or upstream's)
    db stamp REVISION         write REVISION to alembic_version without migrating
    db adopt                  take over an OpenStack Placement 16 database in place
    db release                hand an adopted database back to OpenStack Placement 16: asks first

Destructive commands ask on the terminal unless ``--yes``; with nothing to read the answer
from (no terminal, standard input closed) they refuse in one line, exit 4. Refusals of
``adopt``/``release`` (the database is not in a state to take over or hand back) are one line,
exit 1, and change nothing.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from placement_numa.settings import Settings

__all__ = ["register"]


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config-file",
        help="placement.conf to read ([placement_database] connection and the other options)",
    )
    parser.add_argument(
        "--database-url",
        help="SQLAlchemy URL (default: PLACEMENT_NUMA_DATABASE_URL, else the file's "
        "[placement_database] connection, else sqlite:///placement-numa.sqlite here)",
    )


def _yes(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--yes", action="store_true", help="do not ask before changing")


def register(subparsers: Any) -> None:
    """Add the ``db`` command and its sub-commands to ``subparsers`` (argparse)."""
    parser = subparsers.add_parser("db", help="database schema management")
    commands = parser.add_subparsers(dest="db_command", required=True)
    up = commands.add_parser("upgrade", help="apply migrations and sync standard names")
    up.add_argument("revision", nargs="?", default="head", help="target revision")
    _common(up)
    up.set_defaults(handler=upgrade)
    down = commands.add_parser("downgrade", help="revert migrations to REVISION (asks first)")
    down.add_argument("revision", help="target revision ('base' drops every table)")
    _common(down)
    _yes(down)
    down.set_defaults(handler=downgrade)
    version = commands.add_parser("version", help="print the schema revision")
    _common(version)
    version.set_defaults(handler=show_version)
    stamp = commands.add_parser("stamp", help="record REVISION without migrating")
    stamp.add_argument("revision", help="revision to record ('head' for our newest)")
    _common(stamp)
    stamp.set_defaults(handler=stamp_revision)
    adopt = commands.add_parser(
        "adopt", help="take over an OpenStack Placement 16 database in place"
    )
    _common(adopt)
    adopt.set_defaults(handler=adopt_database)
    release = commands.add_parser(
        "release", help="hand an adopted database back to OpenStack Placement 16 (asks first)"
    )
    _common(release)
    _yes(release)
    release.set_defaults(handler=release_database)


def _settings(args: argparse.Namespace) -> Settings:
    from placement_numa.cli.failures import EXIT_USAGE, CommandError
    from placement_numa.conf import ConfigFileError
    from placement_numa.settings import Settings

    given: dict[str, Any] = {}
    if args.database_url:
        given["database_url"] = args.database_url
    if args.config_file:
        given["config_file"] = args.config_file
    try:
        return Settings(**given)
    except ConfigFileError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None


def _safe(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def _confirm(question: str, args: argparse.Namespace) -> None:
    """Ask ``question``; raise ``CommandError`` (exit 4) unless the answer is yes."""
    from placement_numa.cli.failures import EXIT_NOT_CONFIRMED, CommandError

    if args.yes:
        return
    try:
        answer = input(f"{question} [y/N] ")
    except EOFError:
        raise CommandError(
            "not confirmed: no answer could be read (standard input closed); pass --yes",
            EXIT_NOT_CONFIRMED,
        ) from None
    if answer.strip().lower() not in ("y", "yes"):
        raise CommandError("not confirmed; nothing was changed", EXIT_NOT_CONFIRMED)


def _refusals() -> tuple[type[BaseException], ...]:
    from alembic.util.exc import CommandError as AlembicError

    from placement_numa.db.adopt import AdoptRefused
    from placement_numa.db.migrate import ForeignSchema
    from placement_numa.db.migration_lock import MigrationLockTimeout

    return (AdoptRefused, ForeignSchema, MigrationLockTimeout, AlembicError)


def _guarded(run: Any) -> int:
    """Run ``run()``; an expected refusal becomes one line, exit 1 (exit 6 for a schema that
    needs ``db adopt`` or ``db upgrade`` first)."""
    from placement_numa.cli.failures import EXIT_FAILED, EXIT_SCHEMA, CommandError
    from placement_numa.db.migrate import ForeignSchema

    try:
        result: int = run()
    except _refusals() as exc:
        code = EXIT_SCHEMA if isinstance(exc, ForeignSchema) else EXIT_FAILED
        raise CommandError(str(exc).strip().splitlines()[0], code) from None
    return result


def upgrade(args: argparse.Namespace) -> int:
    """Apply migrations up to ``args.revision`` and sync the standard names."""
    settings = _settings(args)

    def run() -> int:
        from placement_numa.app import prepare_database
        from placement_numa.db import migrate

        if args.revision == "head":
            prepare_database(settings.model_copy(update={"sync_on_startup": True}))
        else:
            migrate.upgrade(settings.database_url, args.revision, settings.migrations_dir)
        revision = migrate.current(settings.database_url)
        print(f"database at {_safe(settings.database_url)} is at {revision}")
        return 0

    return _guarded(run)


def downgrade(args: argparse.Namespace) -> int:
    """Revert migrations down to ``args.revision`` (after asking)."""
    settings = _settings(args)
    drops = " (every table and row is dropped)" if args.revision == "base" else ""
    _confirm(
        f"downgrade {_safe(settings.database_url)} to {args.revision}{drops}?",
        args,
    )

    def run() -> int:
        from placement_numa.db import migrate

        migrate.downgrade(settings.database_url, args.revision, settings.migrations_dir)
        print(f"database at {_safe(settings.database_url)} downgraded to {args.revision}")
        return 0

    return _guarded(run)


def show_version(args: argparse.Namespace) -> int:
    """Print the schema revision and whose it is."""
    settings = _settings(args)

    def run() -> int:
        from sqlalchemy import create_engine
        from sqlalchemy.pool import NullPool

        from placement_numa.db import adopt, migrate

        engine = create_engine(settings.database_url, poolclass=NullPool)
        try:
            with engine.connect() as conn:
                state, revision = adopt.state(conn)
        finally:
            engine.dispose()
        head = migrate.head(settings.migrations_dir)
        described = {
            "empty": "no schema (empty database)",
            "ours": f"placement-numa {'(head)' if revision == head else f'(head is {head})'}",
            "upstream": "OpenStack Placement 16 (head): adopt it with 'db adopt'",
            "upstream-old": "an older OpenStack Placement",
            "unknown": "unknown",
        }[state]
        print(f"{revision or 'none'}  {described}")
        return 0

    return _guarded(run)


def stamp_revision(args: argparse.Namespace) -> int:
    """Record ``args.revision`` in alembic_version without migrating."""
    settings = _settings(args)

    def run() -> int:
        from placement_numa.db import migrate

        migrate.stamp(settings.database_url, args.revision, settings.migrations_dir)
        print(f"database at {_safe(settings.database_url)} stamped {args.revision}")
        return 0

    return _guarded(run)


def adopt_database(args: argparse.Namespace) -> int:
    """Take over an OpenStack Placement 16 database (``db.adopt.adopt``)."""
    settings = _settings(args)

    def run() -> int:
        import time

        from placement_numa.db import adopt
        from placement_numa.db.database import make_engine
        from placement_numa.db.migration_lock import migration_lock

        started = time.monotonic()
        engine = make_engine(settings.database_url, pool_size=1, max_overflow=0)
        try:
            print(f"adopting {_safe(settings.database_url)}", flush=True)
            with migration_lock(settings.database_url):
                changed, counts = adopt.adopt(engine, log=_log)
                if changed:
                    _sync_names(settings)
        finally:
            engine.dispose()
        took = time.monotonic() - started
        verb = "adopted" if changed else "already adopted"
        print(f"{verb}: {counts} ({took:.1f} s)")
        return 0

    return _guarded(run)


def release_database(args: argparse.Namespace) -> int:
    """Hand an adopted database back to OpenStack Placement 16 (``db.adopt.release``)."""
    settings = _settings(args)

    def run() -> int:
        import time

        from placement_numa.db import adopt
        from placement_numa.db.database import make_engine
        from placement_numa.db.migration_lock import migration_lock

        engine = make_engine(settings.database_url, pool_size=1, max_overflow=0)
        try:
            with engine.connect() as conn:
                state, _revision = adopt.state(conn)
            if state == "ours":
                _confirm(
                    f"hand {_safe(settings.database_url)} back to OpenStack Placement 16? "
                    f"This drops placement-numa's tables ({', '.join(adopt.extension_tables())}"
                    "; NUMA distances are lost)",
                    args,
                )
            started = time.monotonic()
            with migration_lock(settings.database_url):
                changed, counts = adopt.release(engine, log=_log)
        finally:
            engine.dispose()
        verb = "released" if changed else "already released"
        print(f"{verb}: {counts} ({time.monotonic() - started:.1f} s)")
        return 0

    return _guarded(run)


def _log(line: str) -> None:
    print(line, flush=True)


def _sync_names(settings: Settings) -> None:
    """Standard trait and resource class names of this version (as every start does)."""
    from placement_numa.db.database import Database
    from placement_numa.db.standard_names import sync_standard_names

    database = Database(settings.database_url)
    try:
        with database.write() as conn:
            sync_standard_names(conn)
    finally:
        database.dispose()
