"""The NUMA distance matrix of a compute node, through placement-numa's extension API
``/resource_providers/{root uuid}/numa_distances`` (``api/routers/numa_topology.py``)::

    GET -> {"generation": int, "cells": {"0": uuid, ...},
            "distances": {"0": {"0": 10, "1": 21}, ...}}
    PUT {"generation": null (create) | int (replace), "distances": {...},
         "sockets": {"0": 0, ...}}

The matrix has its own generation. It is written only when it differs from the stored one; a
409 (generation moved) re-reads and retries. A service without the API (OpenStack Placement
answers 404 for the route, without a ``numa_distances`` error code) is skipped with a note.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from placement_numa.agent.client import PlacementClient, PlacementClientError, ProviderConflict
from placement_numa.agent.sync_report import SyncReport

if TYPE_CHECKING:
    from placement_numa.agent.desired_tree import DesiredTree

__all__ = ["sync_distances", "distance_path", "matrix_document", "socket_document"]

_NOT_FOUND_CODE = "numa_distances.not_found"


def distance_path(root_uuid: str) -> str:
    """Where the compute node's distance matrix lives."""
    return f"/resource_providers/{root_uuid}/numa_distances"


def matrix_document(tree: DesiredTree) -> dict[str, dict[str, int]]:
    """``{"<cell id>": {"<cell id>": distance}}`` of the tree's cells."""
    ids = [str(cell_id) for cell_id in tree.cell_ids]
    return {
        a: dict(zip(ids, row, strict=False)) for a, row in zip(ids, tree.distances, strict=False)
    }


def socket_document(tree: DesiredTree) -> dict[str, int]:
    """``{"<cell id>": socket}`` of the cells whose socket is known."""
    return {
        str(cell): socket
        for cell, socket in zip(tree.cell_ids, tree.sockets, strict=False)
        if socket is not None
    }


def _normalised(distances: Any) -> dict[str, dict[str, int]]:
    if not isinstance(distances, Mapping):
        return {}
    return {str(a): {str(b): int(d) for b, d in row.items()} for a, row in distances.items()}


def _error_code(body: Any) -> str:
    try:
        return str(body["errors"][0].get("code", ""))
    except (TypeError, KeyError, IndexError):
        return ""


def sync_distances(
    client: PlacementClient,
    tree: DesiredTree,
    uuids: Mapping[str, str],
    report: SyncReport,
    *,
    max_retries: int = 3,
) -> None:
    """Write the tree's distance matrix on its compute node when it differs (see module doc)."""
    path = distance_path(uuids[tree.root.path])
    wanted = matrix_document(tree)
    for _attempt in range(max_retries + 1):
        try:
            status, stored = client.get_json(path, ok=(200, 404, 405))
        except PlacementClientError as exc:
            report.note(f"distance matrix not synced: {exc}")
            return
        if status == 405 or (status == 404 and not _error_code(stored).endswith(_NOT_FOUND_CODE)):
            report.note("distance matrix skipped: the service has no NUMA distances API")
            return
        sockets = socket_document(tree)
        if (
            status == 200
            and _normalised(stored.get("distances")) == wanted
            and (not sockets or stored.get("sockets") == sockets)
        ):
            return
        generation = stored.get("generation") if status == 200 else None
        body: dict[str, Any] = {"generation": generation, "distances": wanted}
        if sockets:
            body["sockets"] = sockets
        try:
            client.send_json("PUT", path, body)
        except ProviderConflict as exc:
            if exc.is_generation_conflict:
                continue
            report.note(f"distance matrix not synced: {exc}")
            return
        except PlacementClientError as exc:
            report.note(f"distance matrix not synced: {exc}")
            return
        rows = "; ".join(" ".join(str(d) for d in row) for row in tree.distances)
        report.change(f"distance matrix of {tree.root.name}: {rows}")
        return
    report.note("distance matrix not synced: its generation kept changing")
