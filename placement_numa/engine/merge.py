"""Merging the candidates of many roots: Placement's breadth-first round robin, and the one
heap merge of ranked roots (optionally bounded, optionally diversified)."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from placement_numa.engine.bounded_roots import bounded_roots
from placement_numa.engine.candidates import Candidate
from placement_numa.engine.replay import RankBoundFn, RootSearch

__all__ = ["round_robin", "merge_ranked", "Counter", "RankedRoot"]


class Counter:
    """Work done by one search (see ``SearchStats``) and the cap it runs under."""

    __slots__ = ("generated", "roots", "cap", "cap_hit")

    def __init__(self, cap: int | None) -> None:
        self.generated = 0
        self.roots = 0
        self.cap = cap
        self.cap_hit = False

    def take(self) -> bool:
        """Count one generated candidate; ``False`` (and ``cap_hit``) once the cap is spent."""
        if self.cap is not None and self.generated >= self.cap:
            self.cap_hit = True
            return False
        self.generated += 1
        return True

    def take_many(self, count: int) -> int:
        """Count up to ``count`` generated candidates at once; how many the cap allowed
        (``cap_hit`` when fewer)."""
        if self.cap is not None and self.generated + count > self.cap:
            count = max(0, self.cap - self.generated)
            self.cap_hit = True
        self.generated += count
        return count


def round_robin(streams: Iterable[Iterator[Candidate]]) -> Iterator[Candidate]:
    """Placement's breadth-first order (``util.roundrobin``): the first candidate of every
    stream in stream order, then the second of each, and so on; streams are opened lazily, one
    per first round step."""
    active: deque[Iterator[Candidate]] = deque()
    for stream in streams:
        first = next(stream, None)
        if first is not None:
            yield first
            active.append(stream)
    while active:
        stream = active.popleft()
        following = next(stream, None)
        if following is not None:
            yield following
            active.append(stream)


# one root's ``(key, candidate)`` in rank order: a list (a root answered at once) or lazily
RankedRoot = list[tuple[Any, Candidate]] | Iterator[tuple[Any, Candidate]]


def merge_ranked(
    searcher: RootSearch,
    roots: Iterable[int],
    ranked_root: Callable[[int], RankedRoot],
    bound: RankBoundFn | None,
    *,
    diversify: bool,
    counter: Counter,
) -> Iterator[Candidate]:
    """Ranked candidates of ``roots`` in order ``(rank key, root order, root's own order)``.

    With ``bound``, every root gets a bound first (``RankBoundFn``); roots are searched in
    ``(bound, root order)`` order and a candidate is yielded once it precedes ``(bound,
    order)`` of every root not searched yet, so the work follows the roots whose best
    candidates are returned (design notes, "search per root, best first"). Roots whose
    candidates may also be found from another anchor (sharing providers) are searched first,
    in root order, so the dedup keeps the copy the exhaustive merge would keep. With
    ``diversify``, rounds: each root's best candidate in rank order, then each root's second
    best, and so on. Stops searching new roots once the cap is spent. ``ranked_root(root)``
    gives a root's ``(key, candidate)`` in rank order, as a list when it has them at once
    (its first goes on the heap and only the rest, if any, become a stream) or an iterator.
    """
    first: list[tuple[int, int]] = []  # (order, root): searched before any bound applies
    pending = bounded_roots(searcher, roots, bound, first)  # (bound, order, root), sorted
    heap: list[tuple[Any, int, int, Candidate]] = []  # (key, order, seq, candidate)
    streams: dict[int, Iterator[tuple[Any, Candidate]]] = {}
    later: list[int] = []  # diversify: roots whose next candidate waits for the next round
    seq = 0

    def push(order: int) -> None:
        nonlocal seq
        following = next(streams[order], None)
        if following is None:
            del streams[order]
            return
        seq += 1
        heapq.heappush(heap, (following[0], order, seq, following[1]))

    def pop() -> Candidate:
        _, order, _, candidate = heapq.heappop(heap)
        if order in streams:  # else the root has no candidate left
            if diversify:
                later.append(order)
            else:
                push(order)
        return candidate

    def start(order: int, root: int) -> None:
        nonlocal seq
        found = ranked_root(root)
        if not isinstance(found, list):
            streams[order] = found
            push(order)
        elif found:  # the common case: a replayed root's few candidates, one on the heap
            seq += 1
            heapq.heappush(heap, (found[0][0], order, seq, found[0][1]))
            if len(found) > 1:
                streams[order] = iter(found[1:])

    for order, root in first:
        if counter.cap_hit:
            break
        start(order, root)
    for key, order, root in pending:
        while heap and (heap[0][0], heap[0][1]) < (key, order):
            yield pop()
        if counter.cap_hit:
            break
        start(order, root)
    while True:
        while heap:
            yield pop()
        if not later:
            return
        for order in sorted(later):
            push(order)
        later.clear()
