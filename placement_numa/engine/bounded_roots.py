"""The roots of a ranked search in ascending order of their rank bound (``merge.merge_ranked``).

A bound (``RankBoundFn``) is a function of what a root offers, so look-alike roots have equal
bounds. When the bound says which roots look alike to it (``ClassedRankBound.root_classes``:
for the NUMA ranking, the host's cell ids, free CPUs and distances) and the search tells which
look alike to the engine (``root_classes.profile_classes``: tree shape and room codes), the
bound is computed once per class of roots alike in both, and the roots are ordered by bound with
numpy: a first-time query costs the classes plus O(roots) in numpy, not a Python bound per root
(issue 30). Otherwise every root is bounded one by one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy

from placement_numa.engine.protocol import RankBoundFn
from placement_numa.engine.replay import RootSearch, RootView
from placement_numa.engine.root_classes import distinct

__all__ = ["bounded_roots"]

# roots converted from the sorted columns at a time (``_lazily``)
_CHUNK = 1024

Pending = Iterable[tuple[Any, int, int]]  # (bound, order, root), ascending (bound, order)


def bounded_roots(
    searcher: RootSearch,
    roots: Iterable[int],
    bound: RankBoundFn | None,
    first: list[tuple[int, int]],
) -> Pending:
    """``(bound, order, root)`` of ``roots`` (``order``: position in ``roots``) in ascending
    ``(bound, order)``, roots whose bound is ``None`` (no candidate) left out; roots to search
    before any bound applies (no ``bound``; roots that may share candidates) are appended to
    ``first`` as ``(order, root)`` instead."""
    fleet = searcher.plan.fleet
    sharing_roots = fleet.roots_with_sharing
    if bound is None:
        first.extend(enumerate(roots))
        return ()
    classes_of = getattr(bound, "root_classes", None)
    ranker_classes = None
    if classes_of is not None and searcher.by_profile and searcher.codes is not None:
        ranker_classes = classes_of(fleet)
    if ranker_classes is None:
        return _one_by_one(searcher, roots, bound, first)
    listed = numpy.fromiter(roots, dtype=numpy.int64)
    orders = numpy.arange(len(listed), dtype=numpy.int64)
    if sharing_roots:
        shared = numpy.isin(listed, numpy.fromiter(sharing_roots, dtype=numpy.int64))
        first.extend(zip(orders[shared].tolist(), listed[shared].tolist(), strict=True))
        listed, orders = listed[~shared], orders[~shared]
    engine_classes = searcher.classify_roots()
    theirs = ranker_classes[listed]
    if len(listed) == 0 or int(theirs.min()) < 0:
        return _one_by_one(searcher, listed.tolist(), bound, first, orders.tolist())
    ours = engine_classes[listed].astype(numpy.int64)
    spread = int(theirs.max()) + 1
    combined = ours * spread + theirs
    _, representatives, inverse = distinct(combined, (int(ours.max()) + 1) * spread)
    keys = [bound(RootView(searcher, root)) for root in listed[representatives].tolist()]
    ranks = numpy.full(len(keys), -1, dtype=numpy.int64)
    bounds: list[Any] = []  # bound per rank
    for position in sorted((j for j, k in enumerate(keys) if k is not None), key=keys.__getitem__):
        if not bounds or keys[position] != bounds[-1]:
            bounds.append(keys[position])
        ranks[position] = len(bounds) - 1
    per_root = ranks[inverse.reshape(-1)]
    found = per_root >= 0
    per_root, orders, listed = per_root[found], orders[found], listed[found]
    # ``orders`` ascends, so a stable sort by rank orders by (rank, order); ranks that fit 16
    # bits (nearly always: a few bound classes) are sorted by numpy's radix sort, O(roots)
    small = per_root.astype(numpy.uint16) if len(bounds) <= 1 << 16 else per_root
    sequence = numpy.argsort(small, kind="stable")
    return _lazily(bounds, per_root[sequence], orders[sequence], listed[sequence])


def _lazily(
    bounds: list[Any], ranks: Any, orders: Any, roots: Any
) -> Iterator[tuple[Any, int, int]]:
    """``(bound, order, root)`` from the sorted columns, converted as the merge asks (a chunk
    at a time: a small ``limit`` reads the first few of 100,000 roots)."""
    chunk = _CHUNK
    for start in range(0, len(roots), chunk):
        end = start + chunk
        for rank, order, root in zip(
            ranks[start:end].tolist(),
            orders[start:end].tolist(),
            roots[start:end].tolist(),
            strict=True,
        ):
            yield bounds[rank], order, root


def _one_by_one(
    searcher: RootSearch,
    roots: Iterable[int],
    bound: RankBoundFn,
    first: list[tuple[int, int]],
    orders: list[int] | None = None,
) -> list[tuple[Any, int, int]]:
    """``bounded_roots`` with a bound call per root (``orders``: the roots' positions, default
    their positions in ``roots``)."""
    sharing_roots = searcher.plan.fleet.roots_with_sharing
    pending: list[tuple[Any, int, int]] = []
    for position, root in enumerate(roots):
        order = position if orders is None else orders[position]
        if root in sharing_roots:
            first.append((order, root))
            continue
        key = bound(RootView(searcher, root))
        if key is not None:
            pending.append((key, order, root))
    pending.sort(key=lambda item: (item[0], item[1]))
    return pending
