"""``placement-numa export-openapi``: write the served OpenAPI document to a file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from placement_numa.openapi_export import DEFAULT_PATH, render_openapi

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``export-openapi`` subcommand to ``subparsers`` (argparse)."""
    parser = subparsers.add_parser("export-openapi", help="write api-spec/openapi.json")
    parser.add_argument("--output", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file differs")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    text = render_openapi()
    if args.check:
        current = args.output.read_text() if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is out of date; run placement-numa export-openapi")
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(f"wrote {args.output} ({len(json.loads(text)['paths'])} paths)")
    return 0
