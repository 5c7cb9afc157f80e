"""``placement-numa schedule``: claim the best NUMA fit for a flavor from the command line.

::

    placement-numa schedule --vcpus 8 --memory-mb 8192 --extra-spec hw:numa_nodes=2 \
        --extra-spec hw:cpu_policy=dedicated [--disk-gb 20] [--alternates 2] [--json] \
        [--consumer UUID --consumer-generation N] [--url http://127.0.0.1:8778]

One call to ``POST /allocation_candidates/claim`` (``placement_numa.claim_client``; a client
command: httpx only). Prints one line (``claimed <consumer> on <host> cells [0, 1] ...``; with
``--json`` the whole answer). Exit codes: 0 claimed, 5 no room (the line says what is lacking),
1 any other refusal or an unreachable service, 2 invalid usage or configuration; never a
traceback. ``--config-file`` reads ``[placement] endpoint_override`` (nova.conf) as ``--url``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["register", "run"]


def _spec(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def register(subparsers: Any) -> None:
    """Add the ``schedule`` subcommand to ``subparsers`` (argparse)."""
    from placement_numa.cli.config_file import add_config_file

    parser = subparsers.add_parser(
        "schedule", help="claim the best NUMA fit for a flavor in one call"
    )
    parser.add_argument("--url", default="http://127.0.0.1:8778", help="service URL")
    parser.add_argument("--token", default="admin", help="x-auth-token")
    parser.add_argument("--vcpus", type=int, required=True, help="flavor vCPUs")
    parser.add_argument("--memory-mb", type=int, required=True, help="flavor MiB")
    parser.add_argument("--disk-gb", type=int, default=0, help="root disk (GiB)")
    parser.add_argument(
        "--extra-spec",
        type=_spec,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a flavor extra spec (repeatable; default: none)",
    )
    parser.add_argument("--consumer", help="consumer uuid (default: a new one)")
    parser.add_argument(
        "--consumer-generation", type=int, default=None, help="generation of --consumer"
    )
    parser.add_argument("--project", default="placement-numa-cli", help="project id")
    parser.add_argument("--user", default="placement-numa-cli", help="user id")
    parser.add_argument("--consumer-type", default="INSTANCE", help="consumer type")
    parser.add_argument("--alternates", type=int, default=0, help="alternate candidates to return")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds")
    parser.add_argument("--json", action="store_true", help="print the claim as JSON")
    add_config_file(parser, client=True)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Claim for the flavor given on the command line; see the module docstring."""
    from placement_numa.claim_client import ClaimError, ClaimRefused, claim_flavor
    from placement_numa.cli.failures import EXIT_NO_ROOM
    from placement_numa.placement_http import open_client

    flavor = {
        "vcpus": args.vcpus,
        "memory_mb": args.memory_mb,
        "root_gb": args.disk_gb,
        "extra_specs": dict(args.extra_spec),
    }
    try:
        with open_client(args.url, token=args.token, timeout=args.timeout) as http:
            claimed = claim_flavor(
                http,
                flavor,
                project_id=args.project,
                user_id=args.user,
                consumer_uuid=args.consumer,
                consumer_generation=args.consumer_generation,
                consumer_type=args.consumer_type,
                alternates=args.alternates,
                token=args.token,
            )
    except ClaimRefused as refused:
        if refused.no_room:
            lacking = ", ".join(f"{rc} {n}" for rc, n in sorted(refused.lacking.items()))
            print(
                f"schedule: no room: {refused.detail}"
                + (f" (lacking {lacking})" if lacking else ""),
                file=sys.stderr,
            )
            return EXIT_NO_ROOM
        print(f"schedule: refused: {refused}", file=sys.stderr)
        return 1
    except ClaimError as exc:
        print(f"schedule: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(
            json.dumps(
                {
                    "consumer_uuid": claimed.consumer_uuid,
                    "consumer_generation": claimed.consumer_generation,
                    "allocations": claimed.allocations,
                    "numa": claimed.numa,
                    "alternates": claimed.alternates,
                },
                indent=2,
            )
        )
    else:
        alternates = [a.get("numa", {}).get("host") for a in claimed.alternates]
        print(
            f"claimed {claimed.consumer_uuid} on {claimed.host} cells {claimed.cells}"
            f" (consumer generation {claimed.consumer_generation}"
            + (f"; alternates {', '.join(str(h) for h in alternates)}" if alternates else "")
            + ")"
        )
    return 0
