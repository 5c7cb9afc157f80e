"""``placement-numa defragment``: the guest moves after which a flavor fits (answered by the
service, never applied).

::

    placement-numa defragment --vcpus 8 --memory-mb 2048 --extra-spec hw:cpu_policy=dedicated \
        [--disk-gb 20] [--instances 1] [--max-moves 3] [--time-budget-ms 2000] [--json] [--url URL]
    placement-numa defragment --flavor '{"vcpus": 8, "memory_mb": 2048, ...}'

One call to ``POST /allocation_candidates/defragment`` (httpx only). Prints one line per move
(``move <consumer> from <host> cells [0] to <host> cells [1]``) and a last line naming the
host the flavor then fits on; with ``--json`` the whole answer. Exit codes: 0 a plan (or the
flavor fits now), 5 no plan found within the bounds, 1 a refusal or an unreachable service,
2 invalid usage; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["register", "run"]


def _flavor(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--flavor is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("--flavor must be a JSON object")
    return value


def register(subparsers: Any) -> None:
    """Add the ``defragment`` subcommand to ``subparsers`` (argparse)."""
    from placement_numa.cli.schedule import _spec

    parser = subparsers.add_parser(
        "defragment", help="plan guest moves after which a flavor fits (never applied)"
    )
    parser.add_argument("--url", default="http://127.0.0.1:8778", help="service URL")
    parser.add_argument("--token", default="admin", help="x-auth-token")
    parser.add_argument("--flavor", type=_flavor, help="the flavor as JSON (Nova's fields)")
    parser.add_argument("--vcpus", type=int, help="flavor vCPUs (without --flavor)")
    parser.add_argument("--memory-mb", type=int, help="flavor MiB (without --flavor)")
    parser.add_argument("--disk-gb", type=int, default=0, help="root disk (GiB)")
    parser.add_argument(
        "--extra-spec", type=_spec, action="append", default=[], metavar="KEY=VALUE",
        help="a flavor extra spec (repeatable)",
    )  # fmt: skip
    parser.add_argument("--instances", type=int, default=1, help="instances to make room for")
    parser.add_argument("--max-moves", type=int, default=3, help="1 to 4 (default 3)")
    parser.add_argument("--time-budget-ms", type=int, default=2000, help="at most 5000")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds")
    parser.add_argument("--json", action="store_true", help="print the answer as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Ask for the plan; see the module docstring."""
    from placement_numa.cli.failures import EXIT_NO_ROOM, EXIT_USAGE
    from placement_numa.placement_http import PlacementHTTPError, check, open_client

    flavor = args.flavor
    if flavor is None:
        if args.vcpus is None or args.memory_mb is None:
            print("defragment: give --flavor, or --vcpus and --memory-mb", file=sys.stderr)
            return EXIT_USAGE
        flavor = {"vcpus": args.vcpus, "memory_mb": args.memory_mb, "root_gb": args.disk_gb,
                  "extra_specs": dict(args.extra_spec)}  # fmt: skip
    body = {"flavor": flavor, "instances": args.instances, "max_moves": args.max_moves,
            "time_budget_ms": args.time_budget_ms}  # fmt: skip
    try:
        with open_client(args.url, token=args.token, timeout=args.timeout) as http:
            answer = check(http.post("/allocation_candidates/defragment", json=body)).json()
    except PlacementHTTPError as exc:
        print(f"defragment: refused: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # httpx transport errors: one line, no traceback
        print(f"defragment: {args.url} unreachable: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(answer, indent=2))
    elif answer["fits_now"]:
        print("the flavor fits now: no move needed")
    elif answer["found"]:
        for move in answer["moves"]:
            src, dst = move["from"], move["to"]
            print(f"move {move['consumer']} from {src['host']} cells {src['cells']}"
                  f" to {dst['host']} cells {dst['cells']}")  # fmt: skip
        print(f"then the flavor fits on {answer['host']} ({len(answer['moves'])} moves)")
    if not answer["found"]:
        why = "time budget spent" if answer.get("timed_out") else "within the bounds"
        print(f"defragment: no plan found ({why})", file=sys.stderr)
        return EXIT_NO_ROOM
    return 0
