"""The ``placement-numa`` command. Each sub-command lives in its own module with
``register(subparsers)``; ``COMMAND_MODULES`` lists them.

Command modules import only ``argparse`` at module level (heavy libraries inside their
handlers), so ``--help`` and the client commands start fast and the client commands (agent,
demo, reshape) never load FastAPI or SQLAlchemy. Expected failures end as one line on stderr
and an exit code (``placement_numa.cli.failures`` lists the codes), never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from placement_numa import __version__

__all__ = ["main", "COMMAND_MODULES", "build_parser", "DefaultsFormatter"]

# One entry per sub-command module (each defines ``register(subparsers)``).
COMMAND_MODULES: tuple[str, ...] = (
    "placement_numa.cli.serve",
    "placement_numa.cli.db",
    "placement_numa.cli.openapi",
    "placement_numa.cli.reshape",
    "placement_numa.cli.agent",
    "placement_numa.cli.demo",
    "placement_numa.cli.schedule",
    "placement_numa.cli.defragment",
    "placement_numa.cli.status",
)

EPILOG = (
    "exit codes: 0 done; 1 the operation failed (service or database unreachable, a request "
    "refused); 2 invalid usage, configuration (--config-file missing, unparsable or with a bad "
    "value) or input; 3 (agent) reshape needed first; 4 (db downgrade, db release) not "
    "confirmed; 5 (schedule) no room, (defragment) no plan found; 6 (serve, db upgrade) the "
    "schema needs 'db adopt' or 'db upgrade' first; 7 (agent) nova-compute manages this "
    "compute node's tree, nothing written; 130 interrupted. "
    "status upgrade check: 0 success, 1 warning, 2 failure (oslo.upgradecheck)"
)


class DefaultsFormatter(argparse.HelpFormatter):
    """Help that names each option's default (unless the help text already does, or the
    default is unset/False)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if (
            action.default not in (None, False, argparse.SUPPRESS)
            and action.option_strings
            and "default" not in text
        ):
            text += " (default: %(default)s)"
        return text


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered sub-command."""
    parser = argparse.ArgumentParser(
        prog="placement-numa",
        description="A NUMA-aware OpenStack Placement compatible service.",
        epilog=EPILOG,
        formatter_class=DefaultsFormatter,
    )
    parser.add_argument("--version", action="version", version=f"placement-numa {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    for sub in _all_subparsers(parser):
        if sub.formatter_class is argparse.HelpFormatter:
            sub.formatter_class = DefaultsFormatter
    return parser


def _all_subparsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found.append(sub)
                found.extend(_all_subparsers(sub))
    return found


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    from placement_numa.cli.config_file import apply_client_defaults
    from placement_numa.cli.failures import EXIT_INTERRUPTED, describe

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args = apply_client_defaults(parser, args, argv)
        result: int = args.handler(args)
    except KeyboardInterrupt:
        print(f"placement-numa {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        known = describe(exc)
        if known is None:
            raise
        message, code = known
        print(f"placement-numa {args.command}: {message}", file=sys.stderr)
        return code
    return result


if __name__ == "__main__":
    sys.exit(main())
