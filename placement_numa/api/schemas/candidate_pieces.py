"""The body of ``GET /allocation_candidates`` (microversion 1.12+) as JSON bytes, piece by piece.

``candidate_body_pieces`` writes the document ``render_candidates`` builds
(``api/schemas/allocation_candidates.py``) as consecutive pieces of bytes (what the GET handler
streams), from fragments kept per process in a ``FragmentCache``: each provider's summary, each
tree's summaries and quoted uuids, one provider's share of an allocation request, one mapping
entry. Candidates replayed from one of the engine's answers (``Candidate.entry`` positions into
``Candidate.members``, see ``engine/replay.py``) are written a run at a time: the run's
``TemplateEntry`` list is compiled once per process into a bytes ``%`` format whose holes take
the tree's quoted uuids. A run written again by a later response (a repeated query) is kept
rendered per tree until a refresh replaces that tree (``FleetSnapshot.replaced_roots``), so a
tree's answer costs the bytes it writes; a first-time query's runs are not kept (keeping them
cost a first-time one-cell body at ``limit=1000`` about 15%, and no other query shares them).
"""

from __future__ import annotations

import itertools
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import itemgetter
from typing import Any

import orjson

from placement_numa.api import microversion as mv
from placement_numa.api.schemas.candidate_dicts import render_candidates, summary
from placement_numa.domain.request_groups import CandidateQuery
from placement_numa.engine import CandidateResult, FleetSnapshot
from placement_numa.engine.candidates import (
    Candidate,
    Layout,
    ReplayedRun,
    ResultPart,
    TemplateEntry,
)

__all__ = [
    "FragmentCache",
    "RankedFragments",
    "candidate_body_pieces",
    "encode_candidates",
    "process_fragments",
]

# compiled runs kept per response shape; past it they start over
MAX_RUNS = 16384
# template entries compiled by content (``_Compiled``) kept per response shape (about 0.8 KB
# each, with the key's tuples); past it they start over
MAX_COMPILED = 4096
# bytes of rendered runs kept per response shape (``("runs", root)``); past it they start over
# (``_Rendered``)
MAX_RENDERED_BYTES = 64 * 1024 * 1024
# allocation requests' pieces (runs and other candidates) joined into one piece of the body:
# fewer pieces for the response to pass along (``api.responses.json_pieces_response``)
PIECE_REQUESTS = 64
# trees' provider summaries joined into one piece of the body
PIECE_TREES = 64
# (``%`` format, getter of its holes' values, the entries it was compiled from, the serial of
# the response that compiled it, the format less its closing brace: ``_RequestWriter.run``)
_Run = tuple[bytes, Callable[[list[bytes]], tuple[bytes, ...]], Sequence[Any], int, bytes]


class FragmentCache:
    """Encoded JSON fragments of the latest snapshot, per response shape (one per process).

    Keyed by what the engine publishes: a snapshot's ``revision``; a snapshot patched from the
    cached one (``patched_from``) keeps every fragment but those of its ``replaced_providers``
    and ``replaced_roots`` (dropped in place, or from a copy while a response is still being
    written from the older snapshot's dict: that response keeps its own); any other snapshot
    starts empty. A snapshot older than the
    cached one gets a private, empty cache. Entries: a provider index -> its ``"uuid":{summary}``;
    ``("root", root)`` -> a tree's summaries; ``("root-q", root)`` -> its members' quoted
    uuids; ``("runs", root)`` -> a tree's rendered runs of allocation requests (see
    ``_RequestWriter``), at most ``max_rendered_bytes`` of them per shape (``"rendered"``, a
    ``_Rendered``); ``"shares"``, ``"labels"``, ``"quoted"``, ``"runs"``, ``"compiled"``:
    fragments that depend on uuids only or on nothing of the snapshot.
    """

    def __init__(self, max_rendered_bytes: int = MAX_RENDERED_BYTES) -> None:
        self._lock = threading.Lock()
        self._fleet: weakref.ref[FleetSnapshot] | None = None
        self._revision = -1
        self._shapes: dict[object, dict[Any, Any]] = {}
        self.max_rendered_bytes = max_rendered_bytes

    def get(self, fleet: FleetSnapshot, shape: object) -> dict[Any, Any]:
        """The fragment dict for ``shape`` on ``fleet`` (only one shape is kept at a time)."""
        with self._lock:
            current = self._fleet() if self._fleet is not None else None
            if current is not fleet:
                if fleet.revision < self._revision:
                    return {}
                if fleet.patched_from is not None and fleet.patched_from == self._revision:
                    _drop_stale(self._shapes, fleet)
                else:
                    self._shapes = {}
                self._fleet = weakref.ref(fleet)
                self._revision = fleet.revision
            cache = self._shapes.get(shape)
            if cache is None:
                cache = {"rendered": _Rendered(self.max_rendered_bytes)}
                self._shapes = {shape: cache}
            return cache


class _Rendered:
    """The rendered runs one response shape keeps per tree (``("runs", root)`` entries of its
    fragment dict): their bytes, the trees holding some, and the bound past which they all
    start over (``add``). Shared by the responses written from that dict, and by a copy of
    it (``_drop_stale``); the count is approximate under concurrent writers (a tree dropped
    as stale still counts until the next start over), never below what is held."""

    __slots__ = ("bound", "bytes", "roots", "start_overs")

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self.bytes = 0
        self.roots: set[int] = set()
        self.start_overs = 0

    def add(self, cache: dict[Any, Any], root: int, size: int) -> dict[Any, Any] | None:
        """The dict of ``root``'s rendered runs in ``cache`` to keep ``size`` more bytes in
        (made when missing), after dropping every tree's when they would pass the bound;
        ``None`` when ``size`` alone passes it."""
        if size > self.bound:
            return None
        if self.bytes + size > self.bound:
            for held in list(self.roots):
                cache.pop(("runs", held), None)
            self.roots.clear()
            self.bytes = 0
            self.start_overs += 1
        per_tree: dict[Any, Any] | None = cache.get(("runs", root))
        if per_tree is None:
            per_tree = cache[("runs", root)] = {}
        self.roots.add(root)
        self.bytes += size
        return per_tree


def _drop_stale(shapes: dict[object, dict[Any, Any]], fleet: FleetSnapshot) -> None:
    """Drop from each fragment dict of ``shapes`` what ``fleet``'s refresh made stale: in
    place when only ``shapes`` holds the dict, else from a copy that replaces it there (a
    response still being written from the dict keeps it whole)."""
    for key in list(shapes):
        stale = _stale_keys(shapes[key], fleet)
        if sys.getrefcount(shapes[key]) > 2:  # ``shapes`` and getrefcount's argument
            shapes[key] = dict(shapes[key])
        for stale_key in stale:
            shapes[key].pop(stale_key, None)


def _stale_keys(cache: dict[Any, Any], fleet: FleetSnapshot) -> list[Any]:
    """The keys of ``cache`` that ``fleet``'s refresh made stale: the replaced providers' and
    trees' entries. Quoted uuids by index (and the shares and mapping labels that carry them)
    stay while a replaced provider keeps its uuid; they start over when an index now holds
    another uuid (SQLite reuses the ids of deleted rows, so a tree deleted and created again
    may come back under its old indices: ``engine.fleet_patch``)."""
    stale: list[Any] = list(fleet.replaced_providers)
    quoted: dict[int, bytes] = cache.get("quoted", {})
    uuids = fleet.uuids
    for index in fleet.replaced_providers:
        known = quoted.get(index)
        if known is not None and (index >= len(uuids) or known != orjson.dumps(uuids[index])):
            stale += ["quoted", "shares", "labels"]
            break
    for root in fleet.replaced_roots:
        stale += [("root", root), ("root-q", root), ("runs", root)]
    return stale


def encode_candidates(
    result: CandidateResult,
    query: CandidateQuery,
    version: mv.Microversion,
    *,
    nested_aware: bool,
    fragments: FragmentCache | None = None,
) -> bytes:
    """The response body for ``result`` at ``version`` as JSON bytes (equal, once parsed, to
    ``render_candidates``' document): ``candidate_body_pieces`` joined."""
    pieces = candidate_body_pieces(
        result, query, version, nested_aware=nested_aware, fragments=fragments
    )
    return b"".join(pieces)


def candidate_body_pieces(
    result: CandidateResult,
    query: CandidateQuery,
    version: mv.Microversion,
    *,
    nested_aware: bool,
    fragments: FragmentCache | None = None,
) -> Iterator[bytes]:
    """The response body for ``result`` at ``version`` as consecutive pieces of JSON bytes,
    encoded lazily, piece by piece (up to ``PIECE_REQUESTS`` runs of allocation requests,
    up to ``PIECE_TREES`` trees' provider summaries, a separator), so a response can send the
    first pieces while the rest are still to be written (``api.responses.json_pieces_response``;
    fewer, larger pieces: less to pass along per byte).

    Fragments come from ``fragments`` (the process's ``FragmentCache``; ``None``: a private
    one), per response shape. The snapshot (``result.fleet``) must stay as it is until the
    generator is exhausted: the result holds it, so a refresh patches a copy instead
    (``engine.fleet_patch.replace_trees``).
    """
    if version < mv.ALLOCATIONS_DICT:
        yield orjson.dumps(render_candidates(result, query, version, nested_aware=nested_aware))
        return
    fleet = result.fleet
    all_classes = version >= mv.SUMMARIES_ALL_INVENTORIES
    requested = {rc for g in query.groups for rc in g.resources}
    with_traits = version >= mv.CANDIDATES_REQUIRED
    with_tree = version >= mv.NESTED_CANDIDATES
    with_mappings = version >= mv.CANDIDATE_MAPPINGS
    shape = (
        "bytes",
        all_classes,
        with_traits,
        with_tree,
        with_mappings,  # compiled and rendered runs differ
        None if all_classes else frozenset(requested),
    )
    cache = (fragments or FragmentCache()).get(fleet, shape)
    yield b'{"allocation_requests":['
    yield from _RequestWriter(fleet, result.parts, cache, with_mappings).pieces()
    yield b'],"provider_summaries":{'

    summaries = _Summaries(fleet, cache, (all_classes, with_traits, with_tree, requested))
    if nested_aware or not fleet.has_trees:
        roots = result.summary_roots()
        tree = summaries.tree
        for start in range(0, len(roots), PIECE_TREES):
            if start:
                yield b","
            yield b",".join([tree(root) for root in roots[start : start + PIECE_TREES]])
    else:  # before 1.29 on a nested fleet: only providers used by the candidates
        touched = sorted({p for c in result.candidates for p, _, _ in c.allocations})
        yield b",".join([summaries.one(index) for index in touched])
    yield b"}}"


class _Summaries:
    """``provider_summaries`` fragments of one response shape: a provider's
    ``"uuid":{summary}`` (kept by index), a tree's (kept by ``("root", root)``)."""

    def __init__(
        self, fleet: FleetSnapshot, cache: dict[Any, Any], shape: tuple[bool, bool, bool, set[str]]
    ) -> None:
        self.fleet = fleet
        self.cache = cache
        self.shape = shape

    def one(self, index: int) -> bytes:
        """Provider ``index``'s ``"uuid":{summary}``."""
        fragment: bytes | None = self.cache.get(index)
        if fragment is None:
            fleet = self.fleet
            body = summary(fleet, index, *self.shape)
            fragment = self.cache[index] = orjson.dumps({fleet.uuids[index]: body})[1:-1]
        return fragment

    def tree(self, root: int) -> bytes:
        """The summaries of every provider of ``root``'s tree, comma separated."""
        found: bytes | None = self.cache.get(("root", root))
        if found is None:
            one = self.one
            found = self.cache[("root", root)] = b",".join([one(i) for i in self.fleet.tree[root]])
        return found


# the fragment shape of a ranked answer (``ranked_fragments``): every inventory, traits, tree
# uuids and mappings, as GET answers from 1.34 on
_RANKED_SHAPE = ("bytes", True, True, True, True, None)


class RankedFragments:
    """One snapshot's fragments in the 1.34+ shape for a renderer of other candidate lists
    (``api/schemas/ranked_pieces.py``): ``open_request(candidate)``, one allocation request
    (``{"allocations":{...},"mappings":{...}`` less its closing brace); ``tree_summaries(roots)``,
    trees' provider
    summaries. Kept in the process's ``FragmentCache`` beside GET's (the same shape)."""

    def __init__(self, fleet: FleetSnapshot, fragments: FragmentCache) -> None:
        cache = fragments.get(fleet, _RANKED_SHAPE)
        self.writer = _RequestWriter(fleet, [], cache, True)
        self.summaries = _Summaries(fleet, cache, (True, True, True, set()))

    def open_request(self, candidate: Candidate) -> bytes:
        """The candidate's allocation request (its template entry's run when replayed) less
        its closing brace, for a writer that adds members to it (written so from the run's
        format, not cut from the request: a copy less)."""
        if candidate.entry is None or candidate.members is None:
            return self.writer.one(candidate)[:-1]
        return self.writer.run(
            candidate.anchor, candidate.members, candidate.layout, (candidate.entry,), False
        )

    def tree_summaries(self, roots: Iterable[int]) -> bytes:
        """``"uuid":{summary}`` of every provider of the trees of ``roots``, comma
        separated."""
        cache, tree = self.summaries.cache, self.summaries.tree
        found = []
        for root in roots:
            fragment = cache.get(("root", root))
            found.append(tree(root) if fragment is None else fragment)
        return b",".join(found)


def process_fragments(state: Any) -> FragmentCache:
    """The process's cache of encoded candidate fragments, kept on ``state`` (the app's
    ``app.state``; made on first use)."""
    cache = getattr(state, "candidate_fragments", None)
    if cache is None:
        cache = state.candidate_fragments = FragmentCache()
    assert isinstance(cache, FragmentCache)
    return cache


class _RequestWriter:
    """The ``allocation_requests`` items of one response as pieces of bytes (``pieces``)."""

    def __init__(
        self,
        fleet: FleetSnapshot,
        parts: Sequence[ResultPart],
        cache: dict[Any, Any],
        with_mappings: bool,
    ) -> None:
        self.fleet = fleet
        self.trees = fleet.tree
        self.parts = parts
        self.cache = cache
        self.with_mappings = with_mappings
        self.shares: dict[Any, bytes] = cache.setdefault("shares", {})
        self.labels: dict[Any, bytes] = cache.setdefault("labels", {})
        self.quoted: dict[int, bytes] = cache.setdefault("quoted", {})
        runs: dict[tuple[int, ...], _Run] | None = cache.get("runs")
        if runs is None or len(runs) > MAX_RUNS:
            runs = cache["runs"] = {}
        self.runs = runs
        # a private cache (an older snapshot's) has none yet
        self.rendered: _Rendered = cache.setdefault("rendered", _Rendered(MAX_RENDERED_BYTES))
        # this response's number among those written from ``cache``: a tree's rendered run is
        # kept only when an earlier response compiled the run (a repeated query), not for a
        # first-time query, whose entries no later query shares
        self.serial: int = next(cache.setdefault("serials", itertools.count()))
        # each template entry compiled once per response
        self.compiled: dict[int, tuple[bytes, tuple[int, ...]]] = {}
        by_content: _Compiled | None = cache.get("compiled")
        if by_content is None or len(by_content.entries) > MAX_COMPILED:
            by_content = cache["compiled"] = _Compiled(with_mappings)
        self.by_content = by_content

    def pieces(self) -> Iterator[bytes]:
        """Every allocation request, comma separated, in pieces of up to ``PIECE_REQUESTS``
        texts: a ``ReplayedRun``, or consecutive candidates replayed over one provider list,
        written at once (``run``), another candidate alone (``one``)."""
        parts = self.parts
        total = len(parts)
        run, one = self.run, self.one
        gathered: list[bytes] = []
        n = 0
        while n < total:
            part = parts[n]
            n += 1
            if isinstance(part, ReplayedRun):
                gathered.append(run(part.anchor, part.members, part.layout, part.entries))
            elif part.entry is None or part.members is None:
                gathered.append(one(part))
            else:
                members, entries = part.members, [part.entry]
                while n < total:  # the consecutive candidates replayed over ``members``
                    after = parts[n]
                    if isinstance(after, ReplayedRun) or after.members is not members:
                        break
                    if not after.entry:
                        break
                    entries.append(after.entry)
                    n += 1
                gathered.append(run(part.anchor, members, part.layout, entries))
            if len(gathered) >= PIECE_REQUESTS:
                yield b",".join(gathered)
                gathered = [b""]  # the next piece starts with its separator
        if any(gathered):  # not only the separator of a piece that never came
            yield b",".join(gathered)

    def run(
        self,
        anchor: int,
        members: Any,
        layout: Layout,
        entries: Sequence[Any],
        closed: bool = True,
    ) -> bytes:
        """The allocation requests of consecutive candidates of ``anchor``'s tree replayed
        from ``entries`` over ``members`` (with ``layout``), kept per tree when ``members`` is
        the anchor's whole tree and an earlier response compiled the run (a repeated
        query); not ``closed``: less the last request's closing brace."""
        key = tuple(map(id, entries))
        own_tree = members is self.trees.get(anchor)
        per_tree: dict[tuple[int, ...], tuple[bytes, Sequence[Any]]] | None = None
        quoted: list[bytes] | None = None
        if own_tree:
            cache = self.cache
            per_tree = cache.get(("runs", anchor))
            if per_tree is not None:
                found: tuple[bytes, Sequence[Any]] | None = per_tree.get(key)
                if found is not None:
                    return found[0] if closed else found[0][:-1]
            quoted = cache.get(("root-q", anchor))  # ``quoted_members``' look-up, inline
        run = self.runs.get(key)
        if run is None:
            run = self.runs[key] = self.compile(entries, layout)
        if quoted is None:
            quoted = self.quoted_members(anchor, members, own_tree)
        text = (run[0] if closed else run[4]) % run[1](quoted)
        if own_tree and run[3] != self.serial:
            whole = text if closed else text + b"}"  # kept whole, as a GET writes it
            rendered, size = self.rendered, len(whole)
            if per_tree is None or rendered.bytes + size > rendered.bound:
                per_tree = rendered.add(self.cache, anchor, size)
            else:  # the common case, inline: the tree holds runs and there is room
                rendered.bytes += size
            if per_tree is not None:
                per_tree[key] = (whole, entries)
        return text

    def compile(self, entries: Sequence[Any], layout: Layout) -> _Run:
        """``entries`` as one ``%`` format over the quoted uuids of their members."""
        formats = []
        holes: list[int] = []
        for entry in entries:
            compiled = self.compiled.get(id(entry))
            if compiled is None:
                compiled = self.compiled[id(entry)] = self.by_content.of(entry, layout)
            formats.append(compiled[0])
            holes.extend(compiled[1])
        joined = b",".join(formats)
        return (joined, _getter(holes), entries, self.serial, joined[:-1])

    def quoted_members(self, anchor: int, members: Any, own_tree: bool) -> list[bytes]:
        """The JSON-quoted uuids of ``members`` (kept per tree for a whole tree)."""
        found: list[bytes] | None = self.cache.get(("root-q", anchor)) if own_tree else None
        if found is None:
            quoted, uuids = self.quoted, self.fleet.uuids
            found = []
            for i in members:
                q = quoted.get(i)
                if q is None:
                    q = quoted[i] = orjson.dumps(uuids[i])
                found.append(q)
            if own_tree:
                self.cache[("root-q", anchor)] = found
        return found

    def one(self, candidate: Candidate) -> bytes:
        """One allocation request from the candidate's allocations and mappings."""
        uuids, shares = self.fleet.uuids, self.shares
        parts: list[bytes] = []
        allocations = candidate.allocations
        start, count = 0, len(allocations)
        while start < count:
            p = allocations[start][0]
            end = start + 1
            while end < count and allocations[end][0] == p:
                end += 1
            key = allocations[start:end]
            share = shares.get(key)
            if share is None:
                resources = orjson.dumps({rc: amount for _, rc, amount in key})
                share = shares[key] = orjson.dumps(uuids[p]) + b':{"resources":' + resources + b"}"
            parts.append(share)
            start = end
        text = b'{"allocations":{' + b",".join(parts)
        if not self.with_mappings:
            return text + b"}}"
        return text + b'},"mappings":{' + b",".join(self.mappings(candidate)) + b"}}"

    def mappings(self, candidate: Candidate) -> list[bytes]:
        """The candidate's ``mappings`` entries (``"suffix":["uuid",...]``)."""
        layout, uuids = candidate.layout, self.fleet.uuids
        if all(len(ks) == 1 for ks in layout.slots_of_group):
            chosen, labels = candidate.chosen, self.labels
            entries = []
            for suffix, ks in zip(layout.suffixes, layout.slots_of_group, strict=True):
                label, p = suffix or "", chosen[ks[0]]
                mapped = labels.get((label, p))
                if mapped is None:
                    mapped = labels[(label, p)] = orjson.dumps({label: [uuids[p]]})[1:-1]
                entries.append(mapped)
            return entries
        return [
            orjson.dumps(suffix or "") + b":" + orjson.dumps([uuids[i] for i in used])
            for suffix, used in candidate.mappings()
        ]


class _Compiled:
    """Template entries compiled by content (``_compile``), for one response shape.

    Every new answer of the engine (a query asked for the first time, a tree that changed)
    brings new ``TemplateEntry`` objects, yet mostly with the positions, amounts and groups of
    entries compiled before: in a scheduler's loop of first-time queries on the 1,000-host
    mixed fleet, 82% of compiled entries had been compiled before with the same content, and
    99% of the ``mappings`` parts (which depend on ``chosen`` and the layout only). Compiling
    costs 15-25 us an entry; a look-up, the hash of a few small tuples.
    """

    __slots__ = ("with_mappings", "entries", "mappings")

    def __init__(self, with_mappings: bool) -> None:
        self.with_mappings = with_mappings
        # (allocations, chosen, suffixes, slots of each group) -> (format, holes)
        self.entries: dict[tuple[Any, ...], tuple[bytes, tuple[int, ...]]] = {}
        # (chosen, suffixes, slots of each group) -> (``"mappings"`` format, holes)
        self.mappings: dict[tuple[Any, ...], tuple[bytes, tuple[int, ...]]] = {}

    def of(self, entry: TemplateEntry, layout: Layout) -> tuple[bytes, tuple[int, ...]]:
        """``_compile(entry, layout, with_mappings)``, compiled once per content."""
        key = (entry.allocations, entry.chosen, layout.suffixes, layout.slots_of_group)
        found = self.entries.get(key)
        if found is None:
            mapping = None
            if self.with_mappings:
                mapping_key = key[1:]
                mapping = self.mappings.get(mapping_key)
                if mapping is None:
                    if len(self.mappings) > MAX_COMPILED:
                        self.mappings.clear()
                    mapping = self.mappings[mapping_key] = _compile_mappings(entry, layout)
            found = self.entries[key] = _compile(entry, layout, self.with_mappings, mapping)
        return found


def _compile(
    entry: TemplateEntry,
    layout: Layout,
    with_mappings: bool,
    mapping: tuple[bytes, tuple[int, ...]] | None = None,
) -> tuple[bytes, tuple[int, ...]]:
    """``(format, holes)``: the allocation request of ``entry`` as a bytes ``%`` format whose
    ``%s`` holes take the quoted uuids of the providers at positions ``holes``; ``mapping``:
    ``_compile_mappings(entry, layout)`` when already known."""
    holes: list[int] = []
    shares: list[bytes] = []
    allocations = entry.allocations
    start = 0
    while start < len(allocations):
        position = allocations[start][0]
        end = start + 1
        while end < len(allocations) and allocations[end][0] == position:
            end += 1
        resources = orjson.dumps({rc: amount for _, rc, amount in allocations[start:end]})
        shares.append(b'%s:{"resources":' + resources.replace(b"%", b"%%") + b"}")
        holes.append(position)
        start = end
    text = b'{"allocations":{' + b",".join(shares) + b"}"
    if with_mappings:
        mapping_text, mapping_holes = mapping or _compile_mappings(entry, layout)
        text += mapping_text
        holes.extend(mapping_holes)
    text += b"}"
    return text, tuple(holes)


def _compile_mappings(entry: TemplateEntry, layout: Layout) -> tuple[bytes, tuple[int, ...]]:
    """``(format, holes)``: the ``,"mappings":{...}`` part of ``entry``'s allocation request
    (1.34+), its holes the positions of each group's providers."""
    holes: list[int] = []
    entries = []
    chosen = entry.chosen
    for suffix, ks in zip(layout.suffixes, layout.slots_of_group, strict=True):
        used = sorted({chosen[k] for k in ks})
        holes.extend(used)
        label = orjson.dumps(suffix or "").replace(b"%", b"%%")
        entries.append(label + b":[" + b",".join(b"%s" for _ in used) + b"]")
    return b',"mappings":{' + b",".join(entries) + b"}", tuple(holes)


def _getter(holes: list[int]) -> Callable[[list[bytes]], tuple[bytes, ...]]:
    """``f(values) -> tuple(values[h] for h in holes)``, done in C where possible."""
    if len(holes) == 1:
        hole = holes[0]
        return lambda values: (values[hole],)
    if not holes:
        return lambda values: ()
    return itemgetter(*holes)
