"""``placement-numa db upgrade|downgrade``: schema migrations."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from placement_numa.settings import Settings

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``db`` subcommand (``db upgrade``) to ``subparsers`` (argparse)."""
    parser = subparsers.add_parser("db", help="database schema management")
    commands = parser.add_subparsers(dest="db_command", required=True)
    up = commands.add_parser("upgrade", help="apply migrations and sync standard names")
    up.add_argument(
        "--database-url",
        help="SQLAlchemy URL (default: PLACEMENT_NUMA_DATABASE_URL, else "
        "sqlite:///placement-numa.sqlite in this directory)",
    )
    up.set_defaults(handler=upgrade)
    down = commands.add_parser("downgrade", help="revert migrations to REVISION")
    down.add_argument("revision", help="target revision ('base' drops every table)")
    down.add_argument(
        "--database-url",
        help="SQLAlchemy URL (default: PLACEMENT_NUMA_DATABASE_URL, else "
        "sqlite:///placement-numa.sqlite in this directory)",
    )
    down.set_defaults(handler=downgrade)


def _settings(args: argparse.Namespace) -> Settings:
    from placement_numa.settings import Settings

    return Settings(database_url=args.database_url) if args.database_url else Settings()


def _safe(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def upgrade(args: argparse.Namespace) -> int:
    """Apply every migration and sync the standard names."""
    from placement_numa.app import prepare_database

    settings = _settings(args)
    prepare_database(settings)
    print(f"database at {_safe(settings.database_url)} is at head")
    return 0


def downgrade(args: argparse.Namespace) -> int:
    """Revert migrations down to ``args.revision``."""
    from placement_numa.db import migrate

    settings = _settings(args)
    migrate.downgrade(settings.database_url, args.revision, settings.migrations_dir)
    print(f"database at {_safe(settings.database_url)} downgraded to {args.revision}")
    return 0
