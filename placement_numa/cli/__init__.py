"""The ``placement-numa`` command. Each sub-command lives in its own module with
``register(subparsers)``; ``COMMAND_MODULES`` lists them."""

from __future__ import annotations

import argparse
import importlib
import sys

from placement_numa import __version__

__all__ = ["main", "COMMAND_MODULES"]

# One entry per sub-command module (each defines ``register(subparsers)``).
COMMAND_MODULES: tuple[str, ...] = (
    "placement_numa.cli.serve",
    "placement_numa.cli.db",
    "placement_numa.cli.openapi",
    "placement_numa.cli.reshape",
    "placement_numa.cli.agent",
    "placement_numa.cli.demo",
    "placement_numa.cli.schedule",
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered sub-command."""
    parser = argparse.ArgumentParser(
        prog="placement-numa",
        description="A NUMA-aware OpenStack Placement compatible service.",
    )
    parser.add_argument("--version", action="version", version=f"placement-numa {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    result: int = args.handler(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
