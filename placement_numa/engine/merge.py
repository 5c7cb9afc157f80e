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
    (its first goes on the heap, or out at once when its key meets the root's bound, and only
    the rest, if any, become a stream) or an iterator (``_RankedHeap``).
    """
    first: list[tuple[int, int]] = []  # (order, root): searched before any bound applies
    pending = bounded_roots(searcher, roots, bound, first)  # (bound, order, root), sorted
    merged = _RankedHeap(diversify)
    heap, pop, start = merged.heap, merged.pop, merged.start
    for order, root in first:
        if counter.cap_hit:
            break
        start(order, ranked_root(root), _NO_BOUND)
    for key, order, root in pending:
        while heap and (heap[0][0], heap[0][1]) < (key, order):
            yield pop()
        if counter.cap_hit:
            break
        at_once = start(order, ranked_root(root), key)
        if at_once is not None:
            yield at_once
    while True:
        while heap:
            yield pop()
        if not merged.next_round():
            return


_NO_BOUND = object()  # ``_RankedHeap.start`` of a root searched before any bound applies


class _RankedHeap:
    """The heap of ``merge_ranked``: ``(key, order, seq, candidate)`` of each started root's
    next candidate, the rest of each root's candidates as a stream, and (``diversify``) the
    roots whose next candidate waits for the next round."""

    __slots__ = ("heap", "streams", "later", "seq", "diversify")

    def __init__(self, diversify: bool) -> None:
        self.heap: list[tuple[Any, int, int, Candidate]] = []
        self.streams: dict[int, Iterator[tuple[Any, Candidate]]] = {}
        self.later: list[int] = []
        self.seq = 0
        self.diversify = diversify

    def push(self, order: int) -> None:
        """The root's next candidate onto the heap (none left: its stream is dropped)."""
        following = next(self.streams[order], None)
        if following is None:
            del self.streams[order]
            return
        self.seq += 1
        heapq.heappush(self.heap, (following[0], order, self.seq, following[1]))

    def pop(self) -> Candidate:
        """The heap's first candidate, its root's next pushed (or kept for the next round)."""
        _, order, _, candidate = heapq.heappop(self.heap)
        if order in self.streams:  # else the root has no candidate left
            self.followed(order)
        return candidate

    def followed(self, order: int) -> None:
        """A root whose candidate went out: its next onto the heap, or the next round's."""
        if self.diversify:
            self.later.append(order)
        else:
            self.push(order)

    def start(self, order: int, found: RankedRoot, bound: object) -> Candidate | None:
        """A root's ``(key, candidate)`` in rank order onto the heap. When ``found`` is a list
        whose first key meets the root's ``bound``, that first candidate is returned instead:
        it precedes every candidate on the heap (each after ``(key, order)`` once the merge
        popped the smaller ones) and every root not started, so it goes out at once, as
        ``pop`` would give it."""
        if not isinstance(found, list):
            self.streams[order] = found
            self.push(order)
            return None
        if not found:
            return None
        if len(found) > 1:
            self.streams[order] = iter(found[1:])
        if found[0][0] == bound:
            if len(found) > 1:
                self.followed(order)
            return found[0][1]
        self.seq += 1  # the common case: a replayed root's few candidates, one on the heap
        heapq.heappush(self.heap, (found[0][0], order, self.seq, found[0][1]))
        return None

    def next_round(self) -> bool:
        """``diversify``: every waiting root's next candidate onto the heap; whether any
        waited."""
        if not self.later:
            return False
        for order in sorted(self.later):
            self.push(order)
        self.later.clear()
        return True
