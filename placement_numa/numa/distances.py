"""NUMA distance matrices (the kernel's SLIT, ``/sys/devices/system/node/node<N>/distance``):
validation and the NUMA cell naming convention.

A matrix is keyed by NUMA cell id: ``{0: {0: 10, 1: 21}, 1: {0: 21, 1: 10}}``. Rules: one row
per NUMA cell of the provider tree and one column per cell in every row (square, same ids);
diagonal 10 (``LOCAL_DISTANCE``); every value an integer in 10..254 (ACPI SLIT; 255 means
unreachable and is not accepted). Asymmetric matrices are allowed (SLIT permits them).

NUMA cells are the ``HW_NUMA_ROOT`` providers of a compute node's tree, named
``<host>_NUMA<id>`` (Nova spec "NUMA Topology with Resource Providers").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from placement_numa.errors import BadRequest

__all__ = [
    "INVALID_DISTANCES_CODE",
    "InvalidDistances",
    "CELL_NAME_RE",
    "cell_id_from_name",
    "validate_matrix",
    "matrix_to_json",
]

INVALID_DISTANCES_CODE = "placement_numa.numa_distances.invalid"
CELL_NAME_RE = re.compile(r"_NUMA(\d+)$")
MIN_DISTANCE, MAX_DISTANCE, LOCAL = 10, 254, 10


class InvalidDistances(BadRequest):
    """400 ``placement_numa.numa_distances.invalid``: the matrix does not fit the tree."""

    default_code = INVALID_DISTANCES_CODE


def cell_id_from_name(name: str) -> int | None:
    """``"compute1_NUMA3"`` -> ``3``; ``None`` if the name does not follow the convention."""
    match = CELL_NAME_RE.search(name)
    return int(match.group(1)) if match else None


def _cell_key(value: object, where: str) -> int:
    text = str(value)
    if not text.isdigit():
        raise InvalidDistances(f"{where}: NUMA cell ids are integers >= 0, got '{value}'")
    return int(text)


def validate_matrix(
    raw: Mapping[object, Mapping[object, object]], cell_ids: Iterable[int]
) -> dict[int, dict[int, int]]:
    """Check ``raw`` (keys may be strings, as in JSON) against the tree's ``cell_ids`` and
    return it with integer keys. Raises ``InvalidDistances`` (400) naming the row/cell at fault.
    """
    expected = sorted(set(cell_ids))
    if not expected:
        raise InvalidDistances(
            "the provider tree has no NUMA cell (HW_NUMA_ROOT child named <host>_NUMA<id>)"
        )
    matrix: dict[int, dict[int, int]] = {}
    for row_key, row in raw.items():
        a = _cell_key(row_key, f"row '{row_key}'")
        if not isinstance(row, Mapping):
            raise InvalidDistances(f"row {a} must be an object keyed by NUMA cell id")
        matrix[a] = {}
        for col_key, value in row.items():
            b = _cell_key(col_key, f"distances[{a}]['{col_key}']")
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidDistances(f"distances[{a}][{b}] must be an integer, got {value!r}")
            if not MIN_DISTANCE <= value <= MAX_DISTANCE:
                raise InvalidDistances(
                    f"distances[{a}][{b}] = {value} is outside {MIN_DISTANCE}..{MAX_DISTANCE}"
                )
            matrix[a][b] = value
    if sorted(matrix) != expected:
        raise InvalidDistances(
            f"rows are for NUMA cells {sorted(matrix)} but the tree has cells {expected}"
        )
    for a, columns in matrix.items():
        if sorted(columns) != expected:
            raise InvalidDistances(
                f"row {a} has columns {sorted(columns)} but the tree has cells {expected}"
                " (not square)"
            )
        if columns[a] != LOCAL:
            raise InvalidDistances(
                f"distances[{a}][{a}] = {columns[a]}, the diagonal must be {LOCAL}"
            )
    return matrix


def matrix_to_json(matrix: Mapping[int, Mapping[int, int]]) -> dict[str, dict[str, int]]:
    """Integer keys -> string keys (JSON objects), rows and columns in cell order."""
    return {str(a): {str(b): matrix[a][b] for b in sorted(matrix[a])} for a in sorted(matrix)}
