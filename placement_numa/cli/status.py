"""``placement-numa status upgrade check``: is this deployment ready for the new release?

The counterpart of OpenStack Placement's ``placement-status upgrade check``, on
oslo.upgradecheck (the checks: ``placement_numa.cli.upgrade_checks``). Prints oslo's table (or
``--json``); exit codes are oslo.upgradecheck's: 0 success, 1 warning, 2 failure, 255 a check
crashed. A missing or unparsable ``--config-file`` is one line and exit 2 like every command.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register", "run"]


def register(subparsers: Any) -> None:
    """Add ``status upgrade check`` to ``subparsers`` (argparse)."""
    from placement_numa.cli.config_file import add_config_file

    parser = subparsers.add_parser("status", help="deployment status checks")
    commands = parser.add_subparsers(dest="status_command", required=True)
    upgrade = commands.add_parser("upgrade", help="upgrade readiness")
    checks = upgrade.add_subparsers(dest="upgrade_command", required=True)
    check = checks.add_parser(
        "check",
        help="run the upgrade checks (exit 0 success, 1 warning, 2 failure)",
        description=__doc__,
    )
    check.add_argument("--json", action="store_true", help="print the results as JSON")
    check.add_argument("--database-url", help="SQLAlchemy URL (default: from the configuration)")
    add_config_file(check)
    check.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run every check, print the table (or JSON), return the worst result's code."""
    import traceback

    from oslo_config import cfg
    from oslo_upgradecheck import upgradecheck

    from placement_numa.cli.upgrade_checks import Checks, load_full_config
    from placement_numa.settings import Settings

    overrides: dict[str, Any] = {"config_file": args.config_file} if args.config_file else {}
    if args.database_url:
        overrides["database_url"] = args.database_url
    settings = Settings(**overrides)
    conf = load_full_config(settings.config_file)
    # oslo.upgradecheck reads --json from its module's CONF (its own main() sets it).
    output = cfg.ConfigOpts()
    output.register_opt(cfg.BoolOpt("json", default=bool(args.json)), group="command")
    output([], project="placement-numa", default_config_files=[], default_config_dirs=[])
    previous, upgradecheck.CONF = upgradecheck.CONF, output
    try:
        return int(Checks(settings, conf).check())
    except Exception:
        print("Error:\n" + traceback.format_exc())
        return 255  # as oslo.upgradecheck's run(): not to be confused with a check's result
    finally:
        upgradecheck.CONF = previous
