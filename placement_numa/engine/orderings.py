"""Every ordering of interchangeable units: the candidates the search does not enumerate.

The search keeps one representative per ordering class (``engine/plan.py``, ``_units``);
``expand`` hands the provider tuples of each run of interchangeable units to the units of the
run in every distinct way (distinct permutations of a multiset), giving the other candidates of
the class (same resources, providers and allocations).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["expand"]


def expand(base: list[int], runs: Sequence[Sequence[tuple[int, ...]]]) -> Iterator[list[int]]:
    """Every distinct way to hand the provider tuples chosen for each run of interchangeable
    units to the units of the run (distinct permutations of a multiset, lexicographic), for
    every run at once (their product, first run varying slowest); ``base`` first. Lazy and
    iterative (no recursion per run)."""
    if not runs:
        yield base
        return
    tuples_per_run = [[tuple(base[k] for k in unit) for unit in run] for run in runs]
    iterators: list[Iterator[list[tuple[int, ...]]]] = []
    current: list[list[tuple[int, ...]]] = []
    for tuples in tuples_per_run:
        it = _distinct_permutations(sorted(tuples))
        iterators.append(it)
        current.append(next(it))
    while True:
        variant = list(base)
        for run, perm in zip(runs, current, strict=True):
            for unit, values in zip(run, perm, strict=True):
                for k, value in zip(unit, values, strict=True):
                    variant[k] = value
        yield variant
        r = len(runs) - 1
        while r >= 0:
            following = next(iterators[r], None)
            if following is not None:
                current[r] = following
                break
            iterators[r] = _distinct_permutations(sorted(tuples_per_run[r]))
            current[r] = next(iterators[r])
            r -= 1
        if r < 0:
            return


def _distinct_permutations(values: list[Any]) -> Iterator[list[Any]]:
    """Distinct permutations of a sorted multiset, lexicographic; work per permutation is
    O(len(values)) (Knuth, TAOCP 7.2.1.2, Algorithm L)."""
    a = list(values)
    n = len(a)
    while True:
        yield list(a)
        j = n - 2
        while j >= 0 and a[j] >= a[j + 1]:
            j -= 1
        if j < 0:
            return
        m = n - 1
        while a[m] <= a[j]:
            m -= 1
        a[j], a[m] = a[m], a[j]
        a[j + 1 :] = reversed(a[j + 1 :])
