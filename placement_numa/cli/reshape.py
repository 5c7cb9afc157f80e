"""``placement-numa reshape plan|apply``: move a flat compute node onto its NUMA tree (or back).

::

    placement-numa reshape plan  --host cn1 --topology cn1-numa.json [--policy spread] [--url URL]
    placement-numa reshape apply --host cn1 --topology cn1-numa.json
    placement-numa reshape plan  --host cn1 --to-flat          # the rollback
    placement-numa reshape apply --host cn1 --to-flat

Everything goes through the Placement API (so it also works against OpenStack Placement): the
host's tree, inventories, traits and consumers are read over HTTP, the plan is computed locally
(``placement_numa.reshape``), and ``apply`` creates the cell and page-size providers with their
traits, re-reads their generations, sends the body with ``POST /reshaper`` (one transaction on
the server), stores the distance matrix (placement-numa's ``numa_distances`` extension, when the
server has it) and, for ``--to-flat``, removes the matrix and deletes the emptied child
providers. If ``POST /reshaper`` fails, the providers it created are deleted again and nothing
else has changed.

``plan`` prints the plan as JSON (``reshaper`` is the ``POST /reshaper`` body) followed by a
human summary on stderr. Exit codes: 0 done, 1 Placement refused, 2 the plan is impossible.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from placement_numa.placement_http import PlacementHTTPError, check, headers, open_client
from placement_numa.reshape import (
    ConsumerState,
    HostState,
    Inventory,
    Plan,
    PlanError,
    ProviderState,
    parse_topology,
    plan_to_flat,
    plan_to_numa,
)

if TYPE_CHECKING:
    import httpx

__all__ = ["register", "read_host", "make_plan", "apply_plan", "PlacementRefused"]

READ_VERSION = "1.38"


class PlacementRefused(RuntimeError):
    """Placement answered a request with an error (``str()`` names the request, status, code
    and detail: ``placement_http.PlacementHTTPError``), or the host is not a compute node."""


def _check(response: httpx.Response, *expected: int) -> httpx.Response:
    try:
        return check(response, *expected)
    except PlacementHTTPError as exc:
        raise PlacementRefused(str(exc)) from exc


def _get(client: httpx.Client, path: str, **params: Any) -> Any:
    answer = client.get(path, params=params or None, headers=_headers(READ_VERSION))
    return _check(answer, 200).json()


def read_host(client: httpx.Client, host: str) -> HostState:
    """The compute node named ``host`` as the planner needs it, read over the Placement API.

    Raises ``PlacementRefused`` when it does not exist or is not a root provider.
    """
    found = _get(client, "/resource_providers", name=host)["resource_providers"]
    if not found:
        raise PlacementRefused(f"no resource provider named {host}")
    root_uuid = found[0]["uuid"]
    if found[0].get("parent_provider_uuid"):
        raise PlacementRefused(f"{host} is not a compute node (root) provider")
    tree = _get(client, "/resource_providers", in_tree=root_uuid)["resource_providers"]
    states: dict[str, ProviderState] = {}
    consumer_ids: set[str] = set()
    for rp in tree:
        invs = _get(client, f"/resource_providers/{rp['uuid']}/inventories")["inventories"]
        traits = _get(client, f"/resource_providers/{rp['uuid']}/traits")["traits"]
        states[rp["uuid"]] = ProviderState(
            uuid=rp["uuid"],
            name=rp["name"],
            generation=rp["generation"],
            parent_uuid=rp.get("parent_provider_uuid"),
            inventories={rc: Inventory.from_dict(inv) for rc, inv in invs.items()},
            traits=frozenset(traits),
        )
        consumer_ids |= set(
            _get(client, f"/resource_providers/{rp['uuid']}/allocations")["allocations"]
        )
    consumers = []
    for consumer in sorted(consumer_ids):
        data = _get(client, f"/allocations/{consumer}")
        consumers.append(
            ConsumerState(
                uuid=consumer,
                project_id=data["project_id"],
                user_id=data["user_id"],
                generation=data.get("consumer_generation"),
                consumer_type=data.get("consumer_type"),
                allocations={rp: dict(v["resources"]) for rp, v in data["allocations"].items()},
            )
        )
    return HostState(
        root=states[root_uuid],
        descendants=tuple(s for u, s in states.items() if u != root_uuid),
        consumers=tuple(consumers),
    )


def make_plan(
    client: httpx.Client, host: str, topology: dict[str, Any] | None, *, policy: str = "pack"
) -> Plan:
    """Read ``host`` and plan its reshape: onto ``topology``, or back to flat when ``None``.

    Raises ``PlanError`` (impossible plan: names the consumer and what it lacked) or
    ``PlacementRefused``.
    """
    state = read_host(client, host)
    if topology is None:
        return plan_to_flat(state)
    return plan_to_numa(state, parse_topology(topology), policy=policy)  # type: ignore[arg-type]


def _headers(version: str) -> dict[str, str]:
    return headers(None, version=version)  # the token and roles are the client's


def apply_plan(client: httpx.Client, plan: Plan, on_step: Callable[[], None] | None = None) -> None:
    """Create the plan's providers with their traits, ``POST /reshaper`` its body at
    ``plan.microversion`` with current generations, move the device providers it re-parents
    (``PUT /resource_providers/{uuid}``, 1.37), delete the providers it empties.
    ``on_step`` (optional) is called after each provider created and after the reshape
    (``len(plan.create_providers) + 1`` calls; a progress hook).

    On a refused ``POST /reshaper`` the providers created here are deleted again and
    ``PlacementRefused`` is raised.
    """
    created: list[str] = []
    try:
        for new in plan.create_providers:
            _check(
                client.post(
                    "/resource_providers",
                    json={
                        "name": new.name,
                        "uuid": new.uuid,
                        "parent_provider_uuid": new.parent_provider_uuid,
                    },
                    headers=_headers("1.20"),
                ),
                200,
            )
            created.append(new.uuid)
            if on_step is not None:
                on_step()
            for trait in new.traits:
                if trait.startswith("CUSTOM_"):
                    _check(client.put(f"/traits/{trait}", headers=_headers("1.6")), 201, 204)
            _check(
                client.put(
                    f"/resource_providers/{new.uuid}/traits",
                    json={"traits": list(new.traits), "resource_provider_generation": 0},
                    headers=_headers("1.6"),
                ),
                200,
            )
        generations = {
            uuid: _get(client, f"/resource_providers/{uuid}")["generation"]
            for uuid in plan.body["inventories"]
        }
        _check(
            client.post(
                "/reshaper",
                json=plan.with_generations(generations),
                headers=_headers(plan.microversion),
            ),
            204,
        )
        if on_step is not None:
            on_step()
    except PlacementRefused:
        for uuid in reversed(created):
            client.delete(f"/resource_providers/{uuid}", headers=_headers("1.20"))
        raise
    for move in plan.reparent_providers:  # device providers: uuid and allocations stay
        _check(
            client.put(
                f"/resource_providers/{move.uuid}",
                json={"name": move.name, "parent_provider_uuid": move.parent_provider_uuid},
                headers=_headers("1.37"),
            ),
            200,
        )
    _apply_distances(client, plan)
    for uuid in plan.delete_providers:
        _check(client.delete(f"/resource_providers/{uuid}", headers=_headers("1.20")), 204)


def _apply_distances(client: httpx.Client, plan: Plan) -> None:
    """Store (to_numa) or remove (to_flat) the host's NUMA distance matrix through
    placement-numa's ``/resource_providers/{uuid}/numa_distances`` extension. A separate write
    after the reshape; skipped against a Placement without the extension (404 without our code).
    """
    path = f"/resource_providers/{plan.root_provider_uuid}/numa_distances"
    current = client.get(path, headers=_headers(READ_VERSION))
    known = current.status_code == 200
    if current.status_code == 404:
        codes = [e.get("code") for e in current.json().get("errors", [])] if current.content else []
        if "placement_numa.numa_distances.not_found" not in codes:
            return  # no distance extension on this server
    if plan.direction == "to_flat":
        if known:
            _check(client.delete(path, params={"generation": current.json()["generation"]}), 204)
        return
    if plan.distances is None:
        return
    ids = [str(i) for i in plan.distances["cells"]]
    matrix = {
        a: {b: value for b, value in zip(ids, row, strict=False)}
        for a, row in zip(ids, plan.distances["distances"], strict=False)
    }
    generation = current.json()["generation"] if known else None
    _check(client.put(path, json={"generation": generation, "distances": matrix}), 200)


def register(subparsers: Any) -> None:
    """Add the ``reshape plan|apply`` subcommand to ``subparsers`` (argparse)."""
    from placement_numa.cli.config_file import add_config_file

    parser = subparsers.add_parser("reshape", help="plan or apply a NUMA reshape of a compute node")
    actions = parser.add_subparsers(dest="action", required=True)
    for action, text in (
        ("plan", "print the plan without changing anything"),
        ("apply", "apply the plan"),
    ):
        sub = actions.add_parser(action, help=text)
        sub.add_argument("--host", required=True, help="the compute node (root provider) name")
        target = sub.add_mutually_exclusive_group(required=True)
        target.add_argument("--topology", type=Path, help="target NUMA topology (JSON file)")
        target.add_argument(
            "--to-flat", action="store_true", help="collapse the NUMA tree (rollback)"
        )
        sub.add_argument(
            "--policy",
            choices=("pack", "spread"),
            default="pack",
            help="pack fills cell 0 first; spread balances the cells",
        )
        sub.add_argument("--url", default="http://127.0.0.1:8778", help="Placement endpoint")
        sub.add_argument("--token", default="admin", help="x-auth-token")
        sub.add_argument(
            "--roles",
            default="admin,service",
            help=(
                "x-roles header (noauth2 only; Keystone ignores it). POST /reshaper needs the "
                "service role under Placement's new policy defaults"
            ),
        )
        add_config_file(sub, client=True)
        sub.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Plan or apply (exit codes in the module docstring)."""
    from placement_numa.cli.progress import progress

    topology = None if args.to_flat else json.loads(args.topology.read_text())
    client = open_client(
        args.url, token=args.token, roles=args.roles, version=READ_VERSION, timeout=60
    )
    with client:
        try:
            plan = make_plan(client, args.host, topology, policy=args.policy)
        except PlanError as exc:
            print(f"cannot reshape {args.host}: {exc}", file=sys.stderr)
            return 2
        except PlacementRefused as exc:
            print(f"cannot read {args.host}: {exc}", file=sys.stderr)
            return 1
        if args.action == "plan":
            print(json.dumps(plan.as_dict(), indent=2))
            print("\n".join(plan.summary), file=sys.stderr)
            return 0
        try:
            steps = len(plan.create_providers) + 1
            with progress(steps, f"reshaping {args.host}") as advance:
                apply_plan(client, plan, on_step=advance)
        except PlacementRefused as exc:
            print(f"reshape of {args.host} refused, nothing changed: {exc}", file=sys.stderr)
            return 1
    print("\n".join(plan.summary))
    print(f"reshaped {args.host}: {plan.direction}")
    return 0
