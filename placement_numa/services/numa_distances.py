"""Use cases of the NUMA distance API (one transaction each).

The matrix of a compute node is keyed by the NUMA cell ids of its tree (``HW_NUMA_ROOT``
providers named ``<host>_NUMA<id>``) and carries its own generation (not the provider's):

* ``get_distances``: the matrix, its generation and the cell providers;
* ``set_distances``: create (``generation`` ``None``) or replace (``generation`` = current);
* ``delete_distances``: remove it (``generation`` = current).

Errors: ``ResourceProviderNotFound`` (404), ``NumaDistancesNotFound`` (404,
``placement_numa.numa_distances.not_found``), ``NotARoot``-style ``InvalidDistances`` (400) for
a non-root provider or a matrix that does not fit the tree, ``ConcurrentUpdate`` (409).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.exc import IntegrityError

from placement_numa.db.database import Database
from placement_numa.db.repositories import numa_distances as repo
from placement_numa.db.repositories import providers
from placement_numa.errors import ConcurrentUpdate, NotFound, ResourceProviderNotFound
from placement_numa.numa.distances import InvalidDistances, cell_id_from_name, validate_matrix

__all__ = [
    "NumaDistances",
    "NumaDistancesNotFound",
    "get_distances",
    "set_distances",
    "delete_distances",
]


class NumaDistancesNotFound(NotFound):
    """404 ``placement_numa.numa_distances.not_found``: the compute node has no matrix."""

    default_code = "placement_numa.numa_distances.not_found"


@dataclass(frozen=True)
class NumaDistances:
    """A compute node's matrix: ``cells`` maps cell id -> cell provider uuid; ``sockets`` cell
    id -> socket (``physical_package_id``), when known."""

    root_uuid: str
    generation: int
    matrix: dict[int, dict[int, int]]
    cells: dict[int, str]
    updated_at: datetime | None
    sockets: dict[int, int] | None = None


def _root_and_cells(conn: Any, uuid: str) -> tuple[providers.ProviderRow, dict[int, str]]:
    provider = providers.require_by_uuid(conn, uuid, error=ResourceProviderNotFound)
    if provider.parent_provider_id is not None:
        raise InvalidDistances(
            f"resource provider {uuid} is not a compute node (root provider); NUMA distances"
            f" belong to the root {provider.root_provider_uuid}"
        )
    cells: dict[int, str] = {}
    for cell in repo.numa_cells(conn, [provider.id]):
        cell_id = cell_id_from_name(cell.name)
        if cell_id is None:
            raise InvalidDistances(
                f"NUMA cell provider '{cell.name}' ({cell.uuid}) is not named <host>_NUMA<id>"
            )
        cells[cell_id] = cell.uuid
    return provider, cells


def get_distances(*, database: Database, uuid: str) -> NumaDistances:
    """The matrix of root provider ``uuid``. Raises 404s as described in the module."""
    with database.read() as conn:
        provider, cells = _root_and_cells(conn, uuid)
        row = repo.get(conn, provider.id)
    if row is None:
        raise NumaDistancesNotFound(f"No NUMA distances for resource provider {uuid}")
    return NumaDistances(uuid, row.generation, row.matrix, cells, row.updated_at, row.sockets)


def _validate_sockets(sockets: dict[Any, Any], cells: dict[int, str]) -> dict[int, int]:
    """``{cell id: socket}`` over cells of the tree, sockets integers >= 0 (400 otherwise)."""
    result: dict[int, int] = {}
    for key, value in sockets.items():
        try:
            cell = int(key)
        except (TypeError, ValueError):
            raise InvalidDistances(f"sockets: '{key}' is not a NUMA cell id") from None
        if cell not in cells:
            raise InvalidDistances(
                f"sockets: NUMA cell {cell} is not a cell of the tree ({sorted(cells)})"
            )
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidDistances(f"sockets: cell {cell}'s socket must be an integer >= 0")
        result[cell] = value
    return result


def set_distances(
    *,
    database: Database,
    uuid: str,
    generation: int | None,
    distances: dict[Any, dict[Any, Any]],
    sockets: dict[Any, Any] | None = None,
) -> NumaDistances:
    """Create or replace the matrix (SLIT values, keyed by cell id) and, when given, the cells'
    sockets (cell id -> ``physical_package_id``; a cell left out has an unknown socket).
    ``generation`` ``None`` creates (409 if one exists), an integer must equal the stored
    generation (409 otherwise)."""
    try:
        with database.write() as conn:
            provider, cells = _root_and_cells(conn, uuid)
            matrix = validate_matrix(distances, cells)
            socket_map = _validate_sockets(sockets, cells) if sockets is not None else None
            current = repo.get(conn, provider.id)
            if generation is None:
                if current is not None:
                    raise ConcurrentUpdate(
                        f"resource provider {uuid} already has NUMA distances at generation"
                        f" {current.generation}; send that generation to replace them"
                    )
                new_generation = repo.insert_row(conn, provider.id, matrix, socket_map)
            else:
                if current is None:
                    raise ConcurrentUpdate(
                        f"resource provider {uuid} has no NUMA distances; send generation null"
                        " to create them"
                    )
                new_generation = repo.update_row(conn, provider.id, generation, matrix, socket_map)
    except IntegrityError:
        raise ConcurrentUpdate(f"NUMA distances of {uuid} were created concurrently") from None
    return NumaDistances(uuid, new_generation, matrix, cells, providers.utcnow(), socket_map)


def delete_distances(*, database: Database, uuid: str, generation: int | None = None) -> None:
    """Remove the matrix; with ``generation`` it must still be current (409 otherwise)."""
    with database.write() as conn:
        provider = providers.require_by_uuid(conn, uuid, error=ResourceProviderNotFound)
        current = repo.get(conn, provider.id)
        if current is None:
            raise NumaDistancesNotFound(f"No NUMA distances for resource provider {uuid}")
        if generation is not None and generation != current.generation:
            raise ConcurrentUpdate(
                f"NUMA distances generation conflict: the matrix is at generation"
                f" {current.generation}, not {generation}"
            )
        repo.delete_row(conn, provider.id, current.generation)
