"""``placement-numa export-openapi``: write the served OpenAPI document to a file.

Without ``--output`` the document goes to the checkout's ``api-spec/openapi.json`` when run
from a source checkout, and to standard output from an installed copy. Exit codes: 0 written
(or up to date), 1 ``--check`` found a difference, 2 ``--check`` without a file to compare.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``export-openapi`` subcommand to ``subparsers`` (argparse)."""
    from placement_numa.cli.config_file import add_config_file

    parser = subparsers.add_parser(
        "export-openapi",
        help="write the OpenAPI document (api-spec/openapi.json in a checkout)",
        description=__doc__,
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        help="file to write or check, '-' for standard output "
        "(default: api-spec/openapi.json in a source checkout, else standard output)",
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if the file differs")
    add_config_file(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Write or check the document (exit codes in the module docstring)."""
    from placement_numa.openapi_export import checkout_spec_path, render_openapi

    if args.config_file:  # the document does not depend on it; a bad file still fails here
        from placement_numa.settings import Settings

        Settings(config_file=args.config_file)
    output: Path | None = args.output or checkout_spec_path()
    if output is not None and str(output) == "-":
        output = None
    text = render_openapi()
    if args.check:
        if output is None:
            print("export-openapi --check: no checkout here; pass --output FILE", file=sys.stderr)
            return 2
        current = output.read_text() if output.exists() else ""
        if current != text:
            print(f"{output} is out of date; run placement-numa export-openapi", file=sys.stderr)
            return 1
        return 0
    if output is None:
        sys.stdout.write(text)
        return 0
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    print(f"wrote {output} ({len(json.loads(text)['paths'])} paths)")
    return 0
