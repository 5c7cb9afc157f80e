"""Cell sets, page sizes, KEP-3545 distances, KEP-2902 spread and distribution, rank keys (pure).

Named topologies (built by helpers, not long literals)::

    dual socket (Intel)        KEP-3545 4-cell            KEP-3545 8-cell (two 4-cell sockets)
    10 21                      10 11 12 12                4-cell block | 30
    21 10                      11 10 12 12                -------------+-------------
                               12 12 10 11                30           | 4-cell block
                               12 12 11 10
"""

from __future__ import annotations

import math

import pytest

from placement_numa.cli.demo import kep_eight_cells, kep_four_cells
from placement_numa.numa.cellset import CellSet
from placement_numa.numa.distribute import split_evenly, widths_to_try
from placement_numa.numa.page_sizes import (
    PageSizeError,
    parse_page_size,
    provider_traits,
    step_size_mb,
)
from placement_numa.numa.rank_distance import average_distance
from placement_numa.numa.rank_spread import spread
from placement_numa.numa.ranking import HostCells, rank_key, score


def dual_socket(remote: int = 21) -> dict[int, dict[int, int]]:
    return {0: {0: 10, 1: remote}, 1: {0: remote, 1: 10}}


@pytest.mark.parametrize(
    ("mask", "expected"),
    [
        ("1100", 10.5),
        ("1010", 11.0),
        ("1001", 11.0),
        ("0011", 10.5),
        ("0110", 11.0),
    ],
)
def test_kep3545_four_cell_examples(mask: str, expected: float) -> None:
    assert average_distance(CellSet.from_mask(mask), kep_four_cells()) == expected


def test_kep3545_eight_cell_examples() -> None:
    table = kep_eight_cells()
    assert average_distance(CellSet.from_mask("10001000"), table) == 20.0
    # The KEP text divides the nine terms (sum 100) by 6 = 16.7; Kubernetes divides by n**2.
    assert average_distance(CellSet.from_mask("11100000"), table) == pytest.approx(100 / 9)
    # ... and the narrower set still wins: width is compared before distance.
    wide = score(HostCells({i: 8 for i in range(8)}, table), {0: 1, 1: 1, 2: 1})
    narrow = score(HostCells({i: 8 for i in range(8)}, table), {0: 1, 4: 1})
    assert rank_key(narrow) < rank_key(wide)


def test_missing_matrix_uses_kernel_defaults() -> None:
    assert average_distance(CellSet.of(0, 1), None) == 15.0
    assert average_distance(CellSet.of(0), None) == 10.0
    assert average_distance(CellSet.of(0, 1), dual_socket()) == 15.5


@pytest.mark.parametrize(
    ("free", "expected"),
    [
        ([8, 8], 0.0),
        ([4, 8], 2.0),
        ([0, 8, 8, 8], math.sqrt(12)),
        ([], 0.0),
        ([5], 0.0),
    ],
)
def test_kep2902_spread_is_population_stddev(free: list[int], expected: float) -> None:
    assert spread(free) == pytest.approx(expected)


def test_spread_prefers_the_emptier_cell() -> None:
    host = HostCells({0: 4, 1: 8})
    on_busy, on_idle = score(host, {0: 2}), score(host, {1: 2})
    assert (on_busy.spread, on_idle.spread) == (3.0, 1.0)
    assert rank_key(on_idle) < rank_key(on_busy)


def test_rank_tie_breaks_in_order() -> None:
    host = HostCells({i: 8 for i in range(4)}, kep_four_cells())
    keys = {
        cells: rank_key(score(host, {c: 2 for c in cells}))
        for cells in [(0,), (3,), (0, 1), (2, 3), (0, 2), (1, 3)]
    }
    ordered = sorted(keys, key=keys.__getitem__)
    assert ordered == [(0,), (3,), (0, 1), (2, 3), (0, 2), (1, 3)]
    # without prefer_closest the distance is ignored: (0, 2) beats (2, 3) on lower ids
    plain = {
        c: rank_key(score(host, {i: 2 for i in c}), prefer_closest=False) for c in [(0, 2), (2, 3)]
    }
    assert plain[(0, 2)] < plain[(2, 3)]


def test_cellset() -> None:
    a, b = CellSet.of(1, 0, 1), CellSet.of(2)
    assert a.ids == (0, 1) and a.count() == 2 and str(a) == "{0,1}"
    assert b.is_narrower_than(a) and not a.is_narrower_than(b)
    assert CellSet.from_mask("0011") == CellSet.of(2, 3)
    with pytest.raises(ValueError):
        CellSet.from_mask("0a")


# KEP-2902 distribution steps: (CPUs, cells) -> amounts with the remainder striped
@pytest.mark.parametrize(
    ("total", "parts", "unit", "expected"),
    [
        (8, 1, 1, [8]),
        (8, 2, 1, [4, 4]),
        (9, 2, 1, [5, 4]),
        (10, 3, 1, [4, 3, 3]),
        (11, 4, 1, [3, 3, 3, 2]),
        (20, 3, 1, [7, 7, 6]),
        (4096, 3, 2, [1366, 1366, 1364]),
        (3072, 2, 1024, [2048, 1024]),
    ],
)
def test_kep2902_split_steps(total: int, parts: int, unit: int, expected: list[int]) -> None:
    assert split_evenly(total, parts, unit) == expected
    assert sum(expected) == total


def test_kep2902_widths() -> None:
    assert widths_to_try(20, 8) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert widths_to_try(2, 8) == [1, 2]


@pytest.mark.parametrize(
    ("text", "kind", "size_kb", "traits"),
    [
        ("small", "small", None, {"MEMORY_PAGE_SIZE_SMALL"}),
        ("large", "large", None, {"MEMORY_PAGE_SIZE_LARGE"}),
        ("any", "any", None, set()),
        ("2048", "size", 2048, {"CUSTOM_MEMORY_PAGE_SIZE_2048"}),
        ("2MB", "size", 2048, {"CUSTOM_MEMORY_PAGE_SIZE_2048"}),
        ("2MiB", "size", 2048, {"CUSTOM_MEMORY_PAGE_SIZE_2048"}),
        ("1GB", "size", 1048576, {"CUSTOM_MEMORY_PAGE_SIZE_1048576"}),
        ("4KB", "size", 4, {"CUSTOM_MEMORY_PAGE_SIZE_4"}),
    ],
)
def test_page_sizes(text: str, kind: str, size_kb: int | None, traits: set[str]) -> None:
    parsed = parse_page_size(text)
    assert (parsed.kind, parsed.size_kb, set(parsed.required_traits())) == (kind, size_kb, traits)


@pytest.mark.parametrize("text", ["", "huge", "0", "2M", "1.5GB", "512B", "-4"])
def test_invalid_page_sizes(text: str) -> None:
    with pytest.raises(PageSizeError):
        parse_page_size(text)


def test_page_size_providers() -> None:
    assert provider_traits(4) == ["MEMORY_PAGE_SIZE_SMALL", "CUSTOM_MEMORY_PAGE_SIZE_4"]
    assert provider_traits(2048) == ["MEMORY_PAGE_SIZE_LARGE", "CUSTOM_MEMORY_PAGE_SIZE_2048"]
    assert [step_size_mb(k) for k in (4, 2048, 1048576)] == [1, 2, 1024]
