"""Response shapes of ``GET /allocation_candidates`` per microversion (plain dicts, for orjson).

* ``allocation_requests``: 1.10-1.11 a list form ``{"allocations": [{"resource_provider":
  {"uuid"}, "resources": {...}}]}``; from 1.12 ``{"allocations": {uuid: {"resources": {...}}}}``
  plus ``mappings`` ``{suffix: [uuid, ...]}`` from 1.34 (``""`` for the unsuffixed group);
* ``provider_summaries``: ``{uuid: {"resources": {rc: {"capacity", "used"}}}}``; only the
  requested classes before 1.27, every inventoried class after; ``traits`` (in database order)
  from 1.17; ``parent_provider_uuid`` and ``root_provider_uuid`` from 1.29.

Pydantic models here document the newest shape in OpenAPI. ``candidate_body_pieces`` writes the
body lazily as consecutive pieces of JSON bytes (what the GET handler streams) from fragments
encoded once per snapshot (provider summaries, one provider's share of an allocation request,
one mapping entry), with no dict per candidate; ``encode_candidates`` joins them into one
``bytes``; ``render_candidates`` builds the same document as plain dicts (the readable
reference, and the form used below microversion 1.12).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from operator import itemgetter
from typing import Any

import orjson
from pydantic import BaseModel, Field

from placement_numa.api import microversion as mv
from placement_numa.domain.request_groups import CandidateQuery
from placement_numa.engine import CandidateResult, FleetSnapshot
from placement_numa.engine.candidates import Layout, TemplateEntry

__all__ = [
    "FragmentCache",
    "render_candidates",
    "encode_candidates",
    "candidate_body_pieces",
    "AllocationCandidatesResponse",
]


class _Resources(BaseModel):
    resources: dict[str, int]


def _since(version: mv.Microversion) -> Any:
    """A field that appeared at ``version`` (``x-min-microversion`` in the OpenAPI document)."""
    return Field(json_schema_extra={"x-min-microversion": str(version)})


class _AllocationRequest(BaseModel):
    allocations: dict[str, _Resources]
    mappings: dict[str, list[str]] = _since(mv.CANDIDATE_MAPPINGS)


class _Capacity(BaseModel):
    capacity: int
    used: int


class _Summary(BaseModel):
    resources: dict[str, _Capacity]
    traits: list[str] = _since(mv.CANDIDATES_REQUIRED)
    parent_provider_uuid: str | None = _since(mv.NESTED_CANDIDATES)
    root_provider_uuid: str = _since(mv.NESTED_CANDIDATES)


class AllocationCandidatesResponse(BaseModel):
    """Body of ``GET /allocation_candidates`` at the newest microversion."""

    allocation_requests: list[_AllocationRequest]
    provider_summaries: dict[str, _Summary]


class FragmentCache:
    """Encoded JSON fragments of the latest snapshot, per response shape (one per process).

    Keyed by what the engine publishes: a snapshot's ``revision``; a snapshot patched from the
    cached one (``patched_from``) keeps every fragment but those of its ``replaced_providers``
    and ``replaced_roots`` (copied first: a response still being written for the older
    snapshot keeps its own dict); any other snapshot starts empty. A snapshot older than the
    cached one gets a private, empty cache. Entries: a provider index -> its ``"uuid":{summary}``;
    ``("root", root)`` -> a tree's summaries; ``("root-q", root)`` -> its members' quoted
    uuids; ``"shares"``, ``"labels"``, ``"quoted"``: fragments that depend on uuids only.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fleet: weakref.ref[FleetSnapshot] | None = None
        self._revision = -1
        self._shapes: dict[object, dict[Any, Any]] = {}

    def get(self, fleet: FleetSnapshot, shape: object) -> dict[Any, Any]:
        """The fragment dict for ``shape`` on ``fleet`` (only one shape is kept at a time)."""
        with self._lock:
            current = self._fleet() if self._fleet is not None else None
            if current is not fleet:
                if fleet.revision < self._revision:
                    return {}
                if fleet.patched_from is not None and fleet.patched_from == self._revision:
                    self._shapes = {
                        key: _without_stale(cache, fleet) for key, cache in self._shapes.items()
                    }
                else:
                    self._shapes = {}
                self._fleet = weakref.ref(fleet)
                self._revision = fleet.revision
            cache = self._shapes.get(shape)
            if cache is None:
                cache = {}
                self._shapes = {shape: cache}
            return cache


def _without_stale(cache: dict[Any, Any], fleet: FleetSnapshot) -> dict[Any, Any]:
    """A copy of ``cache`` less what ``fleet``'s refresh replaced. (Quoted uuids by index stay:
    a provider keeps its index and uuid, and an index is never reused.)"""
    kept = dict(cache)
    for index in fleet.replaced_providers:
        kept.pop(index, None)
    for root in fleet.replaced_roots:
        kept.pop(("root", root), None)
        kept.pop(("root-q", root), None)
    return kept


def _ordered_traits(traits: frozenset[str], order: dict[str, int] | None) -> list[str]:
    """``traits`` in database id order (Placement's order: standard traits, synced first, before
    custom ones), or by name when the snapshot carries no ids."""
    if order is None:
        return sorted(traits)
    last = len(order)
    return sorted(traits, key=lambda name: (order.get(name, last), name))


def render_candidates(
    result: CandidateResult,
    query: CandidateQuery,
    version: mv.Microversion,
    *,
    nested_aware: bool,
) -> dict[str, Any]:
    """The response body for ``result`` at ``version``."""
    fleet = result.fleet
    providers = fleet.providers
    uuids = fleet.uuids
    requests: list[dict[str, Any]] = []
    dict_form = version >= mv.ALLOCATIONS_DICT
    with_mappings = version >= mv.CANDIDATE_MAPPINGS
    candidates = result.candidates
    if candidates and dict_form:
        layout = candidates[0].layout
        single = [
            (suffix or "", ks[0])
            for suffix, ks in zip(layout.suffixes, layout.slots_of_group, strict=True)
        ]
        all_single = all(len(ks) == 1 for ks in layout.slots_of_group)
    for candidate in candidates:
        if dict_form:
            allocations: dict[str, Any] = {}
            last = -1
            resources: dict[str, int] = {}
            for p, rc, amount in candidate.allocations:
                if p != last:
                    resources = {}
                    allocations[uuids[p]] = {"resources": resources}
                    last = p
                resources[rc] = amount
            item: dict[str, Any] = {"allocations": allocations}
            if with_mappings:
                if all_single:
                    chosen = candidate.chosen
                    item["mappings"] = {label: [uuids[chosen[k]]] for label, k in single}
                else:
                    item["mappings"] = {
                        suffix or "": [uuids[p] for p in used]
                        for suffix, used in candidate.mappings()
                    }
        else:
            per_provider: dict[str, dict[str, int]] = {}
            for p, rc, amount in candidate.allocations:
                per_provider.setdefault(uuids[p], {})[rc] = amount
            item = {
                "allocations": [
                    {"resource_provider": {"uuid": u}, "resources": r}
                    for u, r in per_provider.items()
                ]
            }
        requests.append(item)

    if nested_aware or not fleet.has_trees:
        summary_ids = result.summary_providers()
    else:  # before 1.29 on a nested fleet: only providers used by the candidates
        summary_ids = sorted({p for c in result.candidates for p, _, _ in c.allocations})
    all_classes = version >= mv.SUMMARIES_ALL_INVENTORIES
    requested = {rc for g in query.groups for rc in g.resources}
    with_traits = version >= mv.CANDIDATES_REQUIRED
    with_tree = version >= mv.NESTED_CANDIDATES
    summaries: dict[str, Any] = {}
    for index in summary_ids:
        summaries[providers[index].uuid] = _summary(
            fleet, index, all_classes, with_traits, with_tree, requested
        )
    return {"allocation_requests": requests, "provider_summaries": summaries}


def _summary(
    fleet: FleetSnapshot,
    index: int,
    all_classes: bool,
    with_traits: bool,
    with_tree: bool,
    requested: set[str],
) -> dict[str, Any]:
    providers = fleet.providers
    info = providers[index]
    summary: dict[str, Any] = {
        "resources": {
            rc: {"capacity": inv.capacity, "used": inv.used}
            for rc, inv in sorted(info.inventories.items())
            if all_classes or rc in requested
        }
    }
    if with_traits:
        summary["traits"] = _ordered_traits(info.traits, fleet.trait_order)
    if with_tree:
        summary["parent_provider_uuid"] = providers[info.parent].uuid if info.parent >= 0 else None
        summary["root_provider_uuid"] = providers[info.root].uuid
    return summary


def _compile(
    entry: TemplateEntry, layout: Layout, with_mappings: bool
) -> tuple[bytes, tuple[int, ...]]:
    """``(format, holes)``: the allocation request of ``entry`` as a bytes ``%`` format whose
    ``%s`` holes take the quoted uuids of the providers at positions ``holes``."""
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
        entries = []
        chosen = entry.chosen
        for suffix, ks in zip(layout.suffixes, layout.slots_of_group, strict=True):
            used = sorted({chosen[k] for k in ks})
            holes.extend(used)
            label = orjson.dumps(suffix or "").replace(b"%", b"%%")
            entries.append(label + b":[" + b",".join(b"%s" for _ in used) + b"]")
        text += b',"mappings":{' + b",".join(entries) + b"}"
    text += b"}"
    return text, tuple(holes)


def _getter(holes: list[int]) -> Callable[[list[bytes]], tuple[bytes, ...]]:
    """``f(values) -> tuple(values[h] for h in holes)``, done in C where possible."""
    if len(holes) == 1:
        hole = holes[0]
        return lambda values: (values[hole],)
    if not holes:
        return lambda values: ()
    return itemgetter(*holes)


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
    encoded lazily, piece by piece (a whole tree's allocation requests, one tree's provider
    summaries, a separator), so a response can send the first pieces while the rest are
    still to be written (``api.responses.json_pieces_response``).

    Fragments come from ``fragments`` (the process's ``FragmentCache``; ``None``: a private
    one): per response shape, each provider's ``"uuid":{summary}``; each
    ``"uuid":{"resources":{...}}`` share of an allocation request; each mapping entry.
    The snapshot (``result.fleet``) must stay as it is until the generator is exhausted: the
    result holds it, so a refresh patches a copy instead (``engine.fleet_patch.replace_trees``).
    """
    if version < mv.ALLOCATIONS_DICT:
        yield orjson.dumps(render_candidates(result, query, version, nested_aware=nested_aware))
        return
    fleet = result.fleet
    providers = fleet.providers
    uuids = fleet.uuids
    with_mappings = version >= mv.CANDIDATE_MAPPINGS
    all_classes = version >= mv.SUMMARIES_ALL_INVENTORIES
    requested = {rc for g in query.groups for rc in g.resources}
    with_traits = version >= mv.CANDIDATES_REQUIRED
    with_tree = version >= mv.NESTED_CANDIDATES
    shape = (
        "bytes",
        all_classes,
        with_traits,
        with_tree,
        None if all_classes else frozenset(requested),
    )
    cache = (fragments or FragmentCache()).get(fleet, shape)
    shares: dict[Any, bytes] = cache.setdefault("shares", {})
    labels: dict[Any, bytes] = cache.setdefault("labels", {})

    yield b'{"allocation_requests":['
    separator = b""
    candidates = result.candidates
    if candidates:
        layout = candidates[0].layout
        single = all(len(ks) == 1 for ks in layout.slots_of_group)
        slots = [
            (suffix or "", ks[0])
            for suffix, ks in zip(layout.suffixes, layout.slots_of_group, strict=True)
        ]
        suffix_texts = [orjson.dumps(suffix or "") for suffix in layout.suffixes]
    quoted: dict[int, bytes] = cache.setdefault("quoted", {})
    # runs of consecutive candidates replayed from templates over one provider list (usually
    # a whole tree's answer): one bytes ``%`` per run, its format compiled once per request
    runs: dict[tuple[int, ...], tuple[bytes, Callable[[list[bytes]], tuple[bytes, ...]]]] = {}
    # each template entry compiled once per response (entries live as long as ``result``)
    compiled_entries: dict[int, tuple[bytes, tuple[int, ...]]] = {}
    total = len(candidates)
    n = 0
    while n < total:
        candidate = candidates[n]
        members = candidate.members
        if candidate.entry is not None and members is not None:
            end = n + 1
            while (
                end < total
                and candidates[end].members is members
                and candidates[end].entry is not None
            ):
                end += 1
            run_entries = [c.entry for c in candidates[n:end]]
            run_key = tuple(map(id, run_entries))
            run = runs.get(run_key)
            if run is None:
                formats = []
                holes: list[int] = []
                for entry in run_entries:
                    compiled = compiled_entries.get(id(entry))
                    if compiled is None:
                        compiled = compiled_entries[id(entry)] = _compile(
                            entry,  # type: ignore[arg-type]
                            candidate.layout,
                            with_mappings,
                        )
                    formats.append(compiled[0])
                    holes.extend(compiled[1])
                run = runs[run_key] = (b",".join(formats), _getter(holes))
            anchor = candidate.anchor
            own_tree = members is fleet.tree.get(anchor)
            members_q: list[bytes] | None = cache.get(("root-q", anchor)) if own_tree else None
            if members_q is None:
                members_q = []
                for i in members:
                    q = quoted.get(i)
                    if q is None:
                        q = quoted[i] = orjson.dumps(uuids[i])
                    members_q.append(q)
                if own_tree:
                    cache[("root-q", anchor)] = members_q
            yield separator
            yield run[0] % run[1](members_q)
            separator = b","
            n = end
            continue
        parts: list[bytes] = []
        allocations = candidate.allocations
        start = 0
        count = len(allocations)
        while start < count:
            p = allocations[start][0]
            end = start + 1
            while end < count and allocations[end][0] == p:
                end += 1
            key = allocations[start:end]
            share = shares.get(key)
            if share is None:
                share = (
                    orjson.dumps(uuids[p])
                    + b':{"resources":'
                    + orjson.dumps({rc: amount for _, rc, amount in key})
                    + b"}"
                )
                shares[key] = share
            parts.append(share)
            start = end
        if with_mappings:
            entries: list[bytes] = []
            if single:
                chosen = candidate.chosen
                for label, k in slots:
                    p = chosen[k]
                    mapped = labels.get((label, p))
                    if mapped is None:
                        mapped = orjson.dumps({label: [uuids[p]]})[1:-1]
                        labels[(label, p)] = mapped
                    entries.append(mapped)
            else:
                for (_, used), text in zip(candidate.mappings(), suffix_texts, strict=True):
                    entries.append(text + b":" + orjson.dumps([uuids[i] for i in used]))
            yield separator + b'{"allocations":{' + b",".join(parts) + b'},"mappings":{'
            yield b",".join(entries)
            yield b"}}"
        else:
            yield separator + b'{"allocations":{' + b",".join(parts) + b"}}"
        separator = b","
        n += 1

    def summary(index: int) -> bytes:
        fragment: bytes | None = cache.get(index)
        if fragment is None:
            body = _summary(fleet, index, all_classes, with_traits, with_tree, requested)
            fragment = cache[index] = orjson.dumps({providers[index].uuid: body})[1:-1]
        return fragment

    yield b'],"provider_summaries":{'
    separator = b""
    if nested_aware or not fleet.has_trees:
        for root in result.summary_roots():
            tree: bytes | None = cache.get(("root", root))
            if tree is None:
                tree = cache[("root", root)] = b",".join(
                    [summary(index) for index in fleet.tree[root]]
                )
            yield separator
            yield tree
            separator = b","
    else:  # before 1.29 on a nested fleet: only providers used by the candidates
        touched = sorted({p for c in result.candidates for p, _, _ in c.allocations})
        yield b",".join([summary(index) for index in touched])
    yield b"}}"
