"""NUMA distance rows and the NUMA cells of compute node trees (SQL, caller's transaction).

* ``numa_cells``: the ``HW_NUMA_ROOT`` providers under given roots, with their names;
* ``get`` / ``insert`` / ``update`` / ``delete``: one ``numa_distances`` row per root provider,
  guarded by its own ``generation`` (compare-and-swap; 409 ``placement.concurrent_update``).

The ``matrix`` column holds the host's NUMA topology as JSON: the SLIT matrix
``{"0": {"0": 10, ...}, ...}`` alone (rows written before issue 29), or ``{"distances":
<matrix>, "sockets": {"0": 0, ...}, "cells": {"0": "<cell provider uuid>", ...}}``: the sockets
(``physical_package_id``) when known (issue 22), and the cell provider each id stood for when
the matrix was written (issue 29: renaming a cell provider must not change which cell an id
means). No schema change.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import os_traits
from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Connection

from placement_numa.db.repositories.providers import utcnow
from placement_numa.db.tables import numa_distances as nd
from placement_numa.db.tables import resource_provider_traits as rpt
from placement_numa.db.tables import resource_providers as rp
from placement_numa.db.tables import traits
from placement_numa.errors import ConcurrentUpdate

__all__ = [
    "CellRow",
    "DistanceRow",
    "numa_cells",
    "get",
    "get_many",
    "insert_row",
    "update_row",
    "delete_row",
    "all_cell_names",
    "all_cell_ids",
    "all_matrices",
    "all_sockets",
    "root_names",
]

HW_NUMA_ROOT = os_traits.HW_NUMA_ROOT


@dataclass(frozen=True, slots=True)
class CellRow:
    """A NUMA cell provider: its id, uuid, name and root provider id."""

    id: int
    uuid: str
    name: str
    root_provider_id: int


@dataclass(frozen=True, slots=True)
class DistanceRow:
    """A stored matrix: ``matrix`` keyed by cell id (ints); ``generation`` of the matrix."""

    root_provider_id: int
    generation: int
    matrix: dict[int, dict[int, int]]
    created_at: datetime | None
    updated_at: datetime | None
    sockets: dict[int, int] | None = None
    cells: dict[int, str] | None = None


def numa_cells(conn: Connection, root_ids: Iterable[int]) -> list[CellRow]:
    """``HW_NUMA_ROOT`` providers whose root is one of ``root_ids``, by (root, id)."""
    ids = sorted(set(root_ids))
    if not ids:
        return []
    rows = conn.execute(
        select(rp.c.id, rp.c.uuid, rp.c.name, rp.c.root_provider_id)
        .select_from(
            rp.join(rpt, rpt.c.resource_provider_id == rp.c.id).join(
                traits, traits.c.id == rpt.c.trait_id
            )
        )
        .where(traits.c.name == HW_NUMA_ROOT, rp.c.root_provider_id.in_(ids))
        .order_by(rp.c.root_provider_id, rp.c.id)
    ).all()
    return [CellRow(*row) for row in rows]


@dataclass(frozen=True, slots=True)
class _Stored:
    matrix: dict[int, dict[int, int]]
    sockets: dict[int, int] | None
    cells: dict[int, str] | None


def _decode_all(text: str) -> _Stored:
    raw = json.loads(text)
    sockets = cells = None
    if isinstance(raw.get("distances"), dict):
        if "sockets" in raw:
            sockets = {int(c): int(s) for c, s in (raw.get("sockets") or {}).items()}
        if isinstance(raw.get("cells"), dict):
            cells = {int(c): str(u) for c, u in raw["cells"].items()}
        raw = raw["distances"]
    matrix = {int(a): {int(b): int(v) for b, v in row.items()} for a, row in raw.items()}
    return _Stored(matrix, sockets, cells)


def _decode_both(text: str) -> tuple[dict[int, dict[int, int]], dict[int, int] | None]:
    stored = _decode_all(text)
    return stored.matrix, stored.sockets


def _decode(text: str) -> dict[int, dict[int, int]]:
    return _decode_all(text).matrix


def _encode(
    matrix: dict[int, dict[int, int]],
    sockets: dict[int, int] | None = None,
    cells: dict[int, str] | None = None,
) -> str:
    distances = {str(a): {str(b): matrix[a][b] for b in sorted(matrix[a])} for a in sorted(matrix)}
    if sockets is None and cells is None:
        return json.dumps(distances)
    document: dict[str, Any] = {"distances": distances}
    if sockets is not None:
        document["sockets"] = {str(c): sockets[c] for c in sorted(sockets)}
    if cells is not None:
        document["cells"] = {str(c): cells[c] for c in sorted(cells)}
    return json.dumps(document)


def get(conn: Connection, root_provider_id: int) -> DistanceRow | None:
    """The stored matrix of one root provider, or ``None``."""
    row = conn.execute(
        select(
            nd.c.root_provider_id, nd.c.generation, nd.c.matrix, nd.c.created_at, nd.c.updated_at
        ).where(nd.c.root_provider_id == root_provider_id)
    ).first()
    if row is None:
        return None
    stored = _decode_all(row[2])
    return DistanceRow(row[0], row[1], stored.matrix, row[3], row[4], stored.sockets, stored.cells)


def get_many(conn: Connection, root_ids: Iterable[int]) -> dict[int, dict[int, dict[int, int]]]:
    """Matrices of several roots: root provider id -> matrix (roots without one are absent)."""
    ids = sorted(set(root_ids))
    if not ids:
        return {}
    rows = conn.execute(
        select(nd.c.root_provider_id, nd.c.matrix).where(nd.c.root_provider_id.in_(ids))
    ).all()
    return {row[0]: _decode(row[1]) for row in rows}


def insert_row(
    conn: Connection,
    root_provider_id: int,
    matrix: dict[int, dict[int, int]],
    sockets: dict[int, int] | None = None,
    cells: dict[int, str] | None = None,
) -> int:
    """Store a first matrix (and the cells' sockets, if known, and the cell provider of each id)
    at generation 1; returns 1. A
    concurrent insert fails on the unique constraint, reported as ``ConcurrentUpdate`` by the
    caller's transaction."""
    now = utcnow()
    conn.execute(
        insert(nd).values(
            root_provider_id=root_provider_id,
            generation=1,
            matrix=_encode(matrix, sockets, cells),
            created_at=now,
            updated_at=now,
        )
    )
    return 1


def update_row(
    conn: Connection,
    root_provider_id: int,
    seen: int,
    matrix: dict[int, dict[int, int]],
    sockets: dict[int, int] | None = None,
    cells: dict[int, str] | None = None,
) -> int:
    """Replace the matrix (and sockets, cells) if its generation is still ``seen``; returns the new
    generation. Raises ``ConcurrentUpdate`` (409) otherwise."""
    result = conn.execute(
        update(nd)
        .where(nd.c.root_provider_id == root_provider_id, nd.c.generation == seen)
        .values(generation=seen + 1, matrix=_encode(matrix, sockets, cells), updated_at=utcnow())
    )
    if result.rowcount != 1:
        raise ConcurrentUpdate(
            f"NUMA distances generation conflict: the matrix is no longer at generation {seen}."
            " Please update the generation and try again."
        )
    return seen + 1


def delete_row(conn: Connection, root_provider_id: int, seen: int) -> None:
    """Delete the matrix of one root if still at generation ``seen``; raises
    ``ConcurrentUpdate`` (409) otherwise."""
    result = conn.execute(
        delete(nd).where(nd.c.root_provider_id == root_provider_id, nd.c.generation == seen)
    )
    if result.rowcount != 1:
        raise ConcurrentUpdate(
            f"NUMA distances generation conflict: the matrix is no longer at generation {seen}."
        )


def all_cell_names(conn: Connection, roots: Collection[int] | None = None) -> list[tuple[str, str]]:
    """``(cell provider uuid, name)`` of every ``HW_NUMA_ROOT`` provider of the fleet (of the
    trees of ``roots``, root provider database ids, when given: their providers first, by the
    ``root_provider_id`` index, then which of them carry the trait)."""
    if roots is not None:
        members = conn.execute(
            select(rp.c.id, rp.c.uuid, rp.c.name).where(rp.c.root_provider_id.in_(list(roots)))
        ).all()
        if not members:
            return []
        marked = set(
            conn.execute(
                select(rpt.c.resource_provider_id)
                .join(traits, traits.c.id == rpt.c.trait_id)
                .where(traits.c.name == HW_NUMA_ROOT)
                .where(rpt.c.resource_provider_id.in_([row[0] for row in members]))
            ).scalars()
        )
        return [(row[1], row[2]) for row in members if row[0] in marked]
    query = (
        select(rp.c.uuid, rp.c.name)
        .select_from(
            rp.join(rpt, rpt.c.resource_provider_id == rp.c.id).join(
                traits, traits.c.id == rpt.c.trait_id
            )
        )
        .where(traits.c.name == HW_NUMA_ROOT)
    )
    return [(row[0], row[1]) for row in conn.execute(query).all()]


def root_names(conn: Connection, roots: Collection[int] | None = None) -> dict[str, str]:
    """Names of every root provider (compute node), by uuid (of ``roots`` when given)."""
    query = select(rp.c.uuid, rp.c.name).where(rp.c.parent_provider_id.is_(None))
    if roots is not None:
        query = query.where(rp.c.id.in_(list(roots)))
    return {row[0]: row[1] for row in conn.execute(query).all()}


def _stored(conn: Connection, roots: Collection[int] | None) -> list[Any]:
    """``(root uuid, stored text)`` of every stored matrix (of ``roots`` when given)."""
    query = select(rp.c.uuid, nd.c.matrix).select_from(
        nd.join(rp, rp.c.id == nd.c.root_provider_id)
    )
    if roots is not None:
        query = query.where(nd.c.root_provider_id.in_(list(roots)))
    return list(conn.execute(query).all())


def all_matrices(
    conn: Connection, roots: Collection[int] | None = None
) -> dict[str, dict[int, dict[int, int]]]:
    """Every stored matrix, by root provider uuid (of ``roots`` when given)."""
    return {row[0]: _decode(row[1]) for row in _stored(conn, roots)}


def all_sockets(
    conn: Connection, roots: Collection[int] | None = None
) -> dict[str, dict[int, int]]:
    """Every stored cell -> socket map, by root provider uuid (hosts without one absent; of
    ``roots`` when given)."""
    found: dict[str, dict[int, int]] = {}
    for uuid, text in _stored(conn, roots):
        sockets = _decode_both(text)[1]
        if sockets:
            found[uuid] = sockets
    return found


def all_cell_ids(conn: Connection, roots: Collection[int] | None = None) -> dict[str, int]:
    """The cell id each cell provider (by uuid) had when its tree's matrix was stored (of the
    trees of ``roots`` when given; matrices stored before issue 29 say nothing)."""
    found: dict[str, int] = {}
    for _, text in _stored(conn, roots):
        for cell_id, uuid in (_decode_all(text).cells or {}).items():
            found[uuid] = cell_id
    return found
