"""``placement-numa agent``: register this host's NUMA provider tree and keep it in sync.

``--once`` runs one sync; otherwise the agent syncs every ``--interval`` seconds until
interrupted. ``--show`` prints the desired tree as JSON without contacting Placement. Options
override the ``PLACEMENT_NUMA_AGENT_*`` environment, which overrides ``--config-file``
(nova.conf's options: ``placement_numa.cli.config_file``). Exit codes: 0 done, 1 a sync failed,
2 invalid configuration or unreadable sysfs, 3 the host needs a reshape first, 7 nova-compute
manages this compute node's provider tree (``agent.ownership``; nothing written; the periodic
agent stops too). ``--once --take-over-from-nova`` takes the tree over from a nova-compute that
was stopped for good.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: `agent --show` and --help start fast
    from placement_numa.agent.client import PlacementClient
    from placement_numa.agent.config import AgentSettings
    from placement_numa.agent.desired_tree import DesiredTree

__all__ = ["register", "run", "tree_document"]

LOG = logging.getLogger("placement_numa.agent")


def register(subparsers: Any) -> None:
    """Add the ``agent`` subcommand to ``subparsers`` (argparse)."""
    from placement_numa.cli.config_file import add_config_file

    parser = subparsers.add_parser(
        "agent", help="report this host's NUMA provider tree to Placement"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", help="sync once and exit")
    mode.add_argument("--show", action="store_true", help="print the desired tree and exit")
    parser.add_argument(
        "--interval", type=float, default=60.0, help="seconds between syncs (default 60)"
    )
    parser.add_argument(
        "--placement-url", help="Placement endpoint (default http://127.0.0.1:8778)"
    )
    parser.add_argument("--token", help="x-auth-token without Keystone (default admin)")
    parser.add_argument(
        "--auth-url",
        help="Keystone v3 endpoint: authenticate as --username (password from"
        " PLACEMENT_NUMA_AGENT_PASSWORD) instead of sending --token",
    )
    parser.add_argument("--username", help="Keystone user (with --auth-url)")
    parser.add_argument("--project-name", help="Keystone project (default service)")
    parser.add_argument("--hostname", help="compute node name (default: this host's name)")
    parser.add_argument("--sysfs-root", help="sysfs mount point (default /sys)")
    parser.add_argument("--cpu-dedicated-set", help="CPUs reported as PCPU (e.g. 4-15,^8)")
    parser.add_argument("--cpu-shared-set", help="CPUs reported as VCPU")
    parser.add_argument(
        "--disk-gb", type=int, help="DISK_GB total (default: size of instances_path)"
    )
    parser.add_argument(
        "--take-over-from-nova",
        action="store_true",
        help="with --once: manage a compute node nova-compute managed before (stop nova-compute"
        " on this host for good first); removes Nova's traits from its root",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log every HTTP request")
    add_config_file(parser, client=True)
    parser.set_defaults(handler=run, password=None)


def tree_document(tree: DesiredTree) -> dict[str, Any]:
    """The desired tree as JSON: providers (name, uuid, parent, inventories, traits), distances."""
    by_path = tree.by_path()
    return {
        "providers": [
            {
                "name": p.name,
                "uuid": p.uuid,
                "parent": None if p.parent_path is None else by_path[p.parent_path].name,
                "inventories": {rc: inv.as_dict() for rc, inv in sorted(p.inventories.items())},
                "traits": sorted(p.traits),
            }
            for p in tree.providers
        ],
        "cells": list(tree.cell_ids),
        "distances": [list(row) for row in tree.distances],
    }


def _settings(args: argparse.Namespace) -> AgentSettings:
    from placement_numa.agent.config import AgentSettings

    overrides = {
        key: value
        for key, value in {
            "placement_url": args.placement_url,
            "token": args.token,
            "auth_url": args.auth_url,
            "username": args.username,
            "project_name": args.project_name,
            "hostname": args.hostname,
            "sysfs_root": args.sysfs_root,
            "cpu_dedicated_set": args.cpu_dedicated_set,
            "cpu_shared_set": args.cpu_shared_set,
            "disk_gb": args.disk_gb,
            "password": args.password,  # [placement] password of --config-file
        }.items()
        if value is not None
    }
    if (
        getattr(args, "config_file", None)
        and "PLACEMENT_NUMA_AGENT_PCI_DEVICE_SPEC" not in os.environ
    ):
        from placement_numa.agent.config import device_specs_from_file

        overrides["pci_device_spec"] = device_specs_from_file(args.config_file)  # [pci]
    return AgentSettings(**overrides)


def _desired(settings: AgentSettings) -> DesiredTree:
    from placement_numa.agent.desired_tree import build
    from placement_numa.agent.sysfs import discover
    from placement_numa.numa.cpu_spec import format_cpu_spec

    host = discover(settings.sysfs_root)
    LOG.debug(
        "discovered %d NUMA cell(s): %s",
        len(host.cells),
        ", ".join(
            f"{c.id}: CPUs {format_cpu_spec(c.cpus)}, {c.memory_kb // 1024} MiB" for c in host.cells
        ),
    )
    return build(host, settings.policy_for(host))


def _sync_once(settings: AgentSettings, client: PlacementClient, take_over: bool = False) -> int:
    import httpx
    from keystoneauth1.exceptions import ClientException as KeystoneError

    from placement_numa.agent.client import PlacementClientError
    from placement_numa.agent.config import AgentConfigError
    from placement_numa.agent.reshape import reshape_with_planner
    from placement_numa.agent.sync import NovaManagedTree, ReshapeRequired, SyncError, sync
    from placement_numa.agent.sysfs import SysfsError
    from placement_numa.cli.failures import EXIT_NOVA_MANAGED, EXIT_RESHAPE_NEEDED
    from placement_numa.cli.progress import progress

    try:
        tree = _desired(settings)
    except (AgentConfigError, SysfsError) as exc:
        LOG.error("%s", exc)
        return 2
    try:
        with progress(len(tree.providers), f"syncing {tree.root.name}") as advance:
            report = sync(
                client,
                tree,
                reshape=reshape_with_planner,
                on_provider=advance,
                take_over=take_over,
            )
    except NovaManagedTree as exc:
        LOG.error("%s", exc)
        return EXIT_NOVA_MANAGED
    except ReshapeRequired as exc:
        LOG.error("%s", exc)
        return EXIT_RESHAPE_NEEDED
    except httpx.TransportError as exc:
        LOG.error("sync failed: cannot reach %s: %s", settings.placement_url, exc)
        return 1
    except KeystoneError as exc:
        LOG.error("sync failed: Keystone at %s: %s", settings.auth_url, exc)
        return 1
    except (SyncError, PlacementClientError, httpx.HTTPError) as exc:
        LOG.error("sync failed: %s", exc)
        return 1
    LOG.info(
        "%s: %d provider(s), %d change(s), %d write(s)%s",
        tree.root.name,
        len(tree.providers),
        len(report.changes),
        report.writes,
        "" if report.changes else " (in sync)",
    )
    return 0


def _stop(signum: int, frame: object) -> None:
    """SIGTERM ends the periodic agent like Ctrl-C (between or during rounds)."""
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    """Run the agent (see the module docstring for modes and exit codes)."""
    from pydantic import ValidationError

    from placement_numa.agent.config import AgentConfigError
    from placement_numa.agent.sysfs import SysfsError

    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("httpx").setLevel(logging.INFO if args.verbose else logging.WARNING)
    try:
        settings = _settings(args)
    except ValidationError as exc:
        LOG.error("invalid agent configuration: %s", exc)
        return 2
    if args.take_over_from_nova and not args.once:
        LOG.error("--take-over-from-nova needs --once (never leave it on in a service)")
        return 2
    if args.show:
        try:
            print(json.dumps(tree_document(_desired(settings)), indent=2))
        except (AgentConfigError, SysfsError) as exc:
            LOG.error("%s", exc)
            return 2
        return 0
    from placement_numa.agent.client import PlacementClient
    from placement_numa.cli.failures import EXIT_NOVA_MANAGED

    with PlacementClient(
        settings.placement_url,
        token=settings.token,
        auth=settings.http_auth(),
        timeout=settings.timeout,
    ) as client:
        if args.once:
            return _sync_once(settings, client, take_over=args.take_over_from_nova)
        LOG.info("syncing %s every %.0f s", settings.hostname, args.interval)
        signal.signal(signal.SIGTERM, _stop)
        try:
            while True:
                started = time.monotonic()
                try:
                    if _sync_once(settings, client) == EXIT_NOVA_MANAGED:
                        return EXIT_NOVA_MANAGED  # a second writer: stop rather than fight it
                except Exception:  # keep the periodic agent alive; the next round retries
                    LOG.exception("sync round failed")
                time.sleep(max(0.0, args.interval - (time.monotonic() - started)))
        except KeyboardInterrupt:
            LOG.info("stopped")
            return 0
