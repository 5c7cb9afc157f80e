"""Answers of ``POST /allocation_candidates`` kept per process while the fleet is unchanged.

A scheduler or a Nova filter asks the same flavor many times between two writes (several
boots of one flavor, a filter asked once per host by one request). The ranked answer depends
only on the body, the microversion and the fleet at one ``placement_revision`` (trees,
usages, cell names, distances and host names all move it), so the encoded bytes of a
successful answer are kept under ``(revision, microversion, body)`` and served again until the
revision moves, at which point every kept answer is dropped at once. A first-time flavor, or
any flavor right after a write, is searched as before (issue 30: "repeated" and "first-time"
are measured apart in ``benchmarks/numa_scale.py``).

Bounds: at most ``MAX_ANSWERS`` answers and ``MAX_BYTES`` bytes in all (an answer larger than
a quarter of that is not kept); the oldest go first. Nothing is kept when candidates are
randomized (``[placement] randomize_allocation_candidates``): each answer must be drawn anew.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import orjson

__all__ = ["MAX_ANSWERS", "MAX_BYTES", "RankedAnswers", "process_answers"]

MAX_ANSWERS = 64
MAX_BYTES = 32 * 1024 * 1024  # 32 MiB: a limit=1000 answer is about 2.8 MB

Key = tuple[str, bytes]


class RankedAnswers:
    """Encoded ranked answers of one revision, by ``(microversion, canonical body)``."""

    def __init__(self, max_answers: int = MAX_ANSWERS, max_bytes: int = MAX_BYTES) -> None:
        self.max_answers = max_answers
        self.max_bytes = max_bytes
        self.revision: int | None = None
        self._answers: OrderedDict[Key, bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0

    @staticmethod
    def key(version: object, body: Any) -> Key | None:
        """The key of a request: its microversion and its parsed JSON body, canonical (keys
        sorted); ``None`` when the body cannot be encoded so (it is then never kept)."""
        try:
            return str(version), orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
        except (TypeError, orjson.JSONEncodeError):
            return None

    def get(self, revision: int, key: Key) -> bytes | None:
        """The answer kept for ``key`` at ``revision``, or ``None``."""
        with self._lock:
            if revision != self.revision:
                return None
            found = self._answers.get(key)
            if found is not None:
                self._answers.move_to_end(key)
                self.hits += 1
            return found

    def put(self, revision: int, key: Key, answer: bytes) -> None:
        """Keep ``answer`` for ``key`` at ``revision`` (a newer revision drops every answer
        kept before; an older one, from a search that started before a refresh, is not
        kept)."""
        if len(answer) > self.max_bytes // 4:
            return
        with self._lock:
            if self.revision is None or revision > self.revision:
                self._answers.clear()
                self._bytes = 0
                self.revision = revision
            elif revision < self.revision:
                return
            old = self._answers.pop(key, None)
            if old is not None:
                self._bytes -= len(old)
            self._answers[key] = answer
            self._bytes += len(answer)
            while len(self._answers) > self.max_answers or self._bytes > self.max_bytes:
                _, dropped = self._answers.popitem(last=False)
                self._bytes -= len(dropped)


def process_answers(state: Any) -> RankedAnswers:
    """The process's kept ranked answers, on ``state`` (the app's ``app.state``; made on
    first use)."""
    answers = getattr(state, "ranked_answers", None)
    if answers is None:
        answers = state.ranked_answers = RankedAnswers()
    assert isinstance(answers, RankedAnswers)
    return answers
