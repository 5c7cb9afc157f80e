"""Use cases of the NUMA distance API (one transaction each).

The matrix of a compute node is keyed by the NUMA cell ids of its tree (``HW_NUMA_ROOT``
providers named ``<host>_NUMA<id>``; the stored matrix remembers which provider each id stood
for, so renaming a cell provider changes nothing, ``identify_cells``) and carries its own
generation (not the provider's):

* ``get_distances``: the matrix, its generation and the cell providers;
* ``set_distances``: create (``generation`` ``None``) or replace (``generation`` = current);
* ``delete_distances``: remove it (``generation`` = current).

Errors: ``ResourceProviderNotFound`` (404), ``NumaDistancesNotFound`` (404,
``placement_numa.numa_distances.not_found``), ``NotARoot``-style ``InvalidDistances`` (400) for
a non-root provider or a matrix that does not fit the tree, ``ConcurrentUpdate`` (409).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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
    "cell_id",
    "identify_cells",
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


def cell_id(uuid: str, name: str, stored: Mapping[str, int]) -> int | None:
    """The id of cell provider ``uuid``: the one its tree's stored matrix gave it (``stored``,
    by cell uuid: a rename changes nothing), else the ``<id>`` of its name ``<host>_NUMA<id>``;
    ``None`` when neither says."""
    return stored[uuid] if uuid in stored else cell_id_from_name(name)


def identify_cells(
    cells: Iterable[tuple[str, str]], stored: Mapping[int, str] | None
) -> tuple[dict[int, str], list[tuple[str, str]]]:
    """``({cell id: cell provider uuid}, [(uuid, name) of cells without an id])`` of one tree.

    ``cells``: ``(uuid, name)`` of its ``HW_NUMA_ROOT`` providers; ``stored``: the ``cells`` of
    its stored matrix (``None`` when none, or written before issue 29). A cell keeps the id it
    had when the matrix was stored, whatever its name is now (a rename never changes which cell
    an id means); a cell the matrix does not name takes the ``<id>`` of its name
    ``<host>_NUMA<id>``, unless another cell holds that id already.
    """
    known = {uuid: number for number, uuid in (stored or {}).items()}
    cells = list(cells)
    ids = {known[uuid]: uuid for uuid, _ in cells if uuid in known}
    unnamed: list[tuple[str, str]] = []
    for uuid, name in cells:
        if uuid in known:
            continue
        number = cell_id(uuid, name, known)
        if number is None or number in ids:
            unnamed.append((uuid, name))
        else:
            ids[number] = uuid
    return ids, unnamed


def _root_and_cells(
    conn: Any, uuid: str, *, strict: bool
) -> tuple[providers.ProviderRow, dict[int, str], repo.DistanceRow | None]:
    """The root provider ``uuid``, its cells by id (``identify_cells``) and its stored matrix.
    ``strict`` (writes): a cell without an id is a 400; reads leave it out (a rename or a new
    cell never breaks a read)."""
    provider = providers.require_by_uuid(conn, uuid, error=ResourceProviderNotFound)
    if provider.parent_provider_id is not None:
        raise InvalidDistances(
            f"resource provider {uuid} is not a compute node (root provider); NUMA distances"
            f" belong to the root {provider.root_provider_uuid}"
        )
    current = repo.get(conn, provider.id)
    tree = [(cell.uuid, cell.name) for cell in repo.numa_cells(conn, [provider.id])]
    cells, unnamed = identify_cells(tree, current.cells if current else None)
    if strict and unnamed:
        cell_uuid, name = unnamed[0]
        raise InvalidDistances(
            f"NUMA cell provider '{name}' ({cell_uuid}) is not named <host>_NUMA<id> with an id"
            " no other cell of the tree holds"
        )
    return provider, cells, current


def get_distances(*, database: Database, uuid: str) -> NumaDistances:
    """The matrix of root provider ``uuid``. Raises 404s as described in the module."""
    with database.read() as conn:
        _, cells, row = _root_and_cells(conn, uuid, strict=False)
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
            provider, cells, current = _root_and_cells(conn, uuid, strict=True)
            matrix = validate_matrix(distances, cells)
            socket_map = _validate_sockets(sockets, cells) if sockets is not None else None
            if generation is None:
                if current is not None:
                    raise ConcurrentUpdate(
                        f"resource provider {uuid} already has NUMA distances at generation"
                        f" {current.generation}; send that generation to replace them"
                    )
                new_generation = repo.insert_row(conn, provider.id, matrix, socket_map, cells)
            else:
                if current is None:
                    raise ConcurrentUpdate(
                        f"resource provider {uuid} has no NUMA distances; send generation null"
                        " to create them"
                    )
                new_generation = repo.update_row(
                    conn, provider.id, generation, matrix, socket_map, cells
                )
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
