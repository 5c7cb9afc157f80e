"""The NUMA distance matrix of a compute node, through placement-numa's NUMA topology API.

The API is an extension of Placement (not in OpenStack Placement): when the service answers the
read with 404/405 for the route itself, the step is skipped with a logged note. The matrix is
written only when it differs from the stored one, with the generation read just before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from placement_numa.agent.client import PlacementClient, PlacementClientError, ProviderConflict

if TYPE_CHECKING:
    from placement_numa.agent.desired_tree import DesiredTree
    from placement_numa.agent.sync import SyncReport

__all__ = ["sync_distances", "distance_path"]


def distance_path(root_uuid: str) -> str:
    """Where the compute node's distance matrix lives."""
    return f"/resource_providers/{root_uuid}/numa_topology"


def _document(tree: DesiredTree) -> dict[str, Any]:
    return {
        "cells": list(tree.cell_ids),
        "distances": [list(row) for row in tree.distances],
    }


def _same(stored: Mapping[str, Any] | None, wanted: Mapping[str, Any]) -> bool:
    if not stored:
        return False
    return [int(c) for c in stored.get("cells", [])] == wanted["cells"] and [
        [int(d) for d in row] for row in stored.get("distances", [])
    ] == wanted["distances"]


def sync_distances(
    client: PlacementClient, tree: DesiredTree, uuids: Mapping[str, str], report: SyncReport
) -> None:
    """Write the tree's distance matrix on its compute node when it differs (see module doc)."""
    root_uuid = uuids[tree.root.path]
    path = distance_path(root_uuid)
    wanted = _document(tree)
    for _attempt in range(4):
        try:
            status, stored = client.get_json(path, ok=(200, 404, 405))
        except PlacementClientError as exc:
            report.note(f"distance matrix not synced: {exc}")
            return
        if status == 405 or (status == 404 and not _is_missing_matrix(stored)):
            report.note("distance matrix skipped: the service has no NUMA topology API")
            return
        if status == 200 and _same(stored, wanted):
            return
        body = dict(wanted)
        if status == 200 and stored is not None and "resource_provider_generation" in stored:
            body["resource_provider_generation"] = stored["resource_provider_generation"]
        elif status == 404:
            _, inventories_generation = _generation(client, root_uuid)
            body["resource_provider_generation"] = inventories_generation
        try:
            client.send_json("PUT", path, body, ok=(200, 201, 204))
        except ProviderConflict as exc:
            if exc.is_generation_conflict:
                continue
            report.note(f"distance matrix not synced: {exc}")
            return
        except PlacementClientError as exc:
            report.note(f"distance matrix not synced: {exc}")
            return
        report.change(f"distance matrix of {tree.root.name}: {wanted['distances']}")
        return
    report.note("distance matrix not synced: generation kept changing")


def _is_missing_matrix(body: Any) -> bool:
    """A 404 that says "no matrix yet" for an existing route (as opposed to an unknown route)."""
    try:
        code = body["errors"][0].get("code", "")
    except (TypeError, KeyError, IndexError):
        return False
    return "numa" in str(code)


def _generation(client: PlacementClient, uuid: str) -> tuple[str, int]:
    generation, _ = client.get_traits(uuid)
    return uuid, generation
