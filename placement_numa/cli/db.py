"""``placement-numa db upgrade|downgrade``: schema migrations."""

from __future__ import annotations

import argparse
from typing import Any

from placement_numa.app import prepare_database
from placement_numa.db import migrate
from placement_numa.settings import Settings

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``db`` subcommand (``db upgrade``) to ``subparsers`` (argparse)."""
    parser = subparsers.add_parser("db", help="database schema management")
    commands = parser.add_subparsers(dest="db_command", required=True)
    up = commands.add_parser("upgrade", help="apply migrations and sync standard names")
    up.add_argument("--database-url")
    up.set_defaults(handler=upgrade)
    down = commands.add_parser("downgrade", help="revert migrations to REVISION")
    down.add_argument("revision", help="target revision ('base' drops every table)")
    down.add_argument("--database-url")
    down.set_defaults(handler=downgrade)


def _settings(args: argparse.Namespace) -> Settings:
    return Settings(database_url=args.database_url) if args.database_url else Settings()


def upgrade(args: argparse.Namespace) -> int:
    settings = _settings(args)
    prepare_database(settings)
    print(f"database at {settings.database_url} is at head")
    return 0


def downgrade(args: argparse.Namespace) -> int:
    settings = _settings(args)
    migrate.downgrade(settings.database_url, args.revision, settings.migrations_dir)
    print(f"database at {settings.database_url} downgraded to {args.revision}")
    return 0
