"""The body of ``POST /allocation_candidates`` (ranked, with a ``numa`` block) as JSON bytes.

``encode_ranked`` writes the document ``ranked_candidates.render_ranked`` builds, equal once
parsed, from the fragments ``GET /allocation_candidates`` keeps per process
(``candidate_pieces.FragmentCache``, the 1.34+ all-classes shape, which is the ranked body's):
a candidate replayed from one of the engine's answers takes its allocations and mappings from
the run compiled for its ``TemplateEntry`` (kept per tree until a refresh replaces the tree),
each tree's provider summaries are one kept fragment, and the ``numa`` block is encoded once
per (score, devices, fallback, explain) of the response, the host name beside it. So a
``limit=1000`` answer costs the bytes it writes, not a dict per candidate and provider
(issue 30).
"""

from __future__ import annotations

import orjson

from placement_numa.api.schemas.candidate_pieces import FragmentCache, RankedFragments
from placement_numa.api.schemas.ranked_candidates import numa_block, render_ranked
from placement_numa.services.numa_candidates import RankedCandidate

__all__ = ["encode_ranked"]


def encode_ranked(found: list[RankedCandidate], fragments: FragmentCache | None = None) -> bytes:
    """``{"allocation_requests": [...], "provider_summaries": {...}}`` for ranked candidates
    in their order, as JSON bytes (``render_ranked``'s document; summaries of every provider of
    each candidate's trees). ``fragments``: the process's cache (``None``: a private one)."""
    if not found:
        return b'{"allocation_requests":[],"provider_summaries":{}}'
    fleet = found[0].fleet
    if any(r.fleet is not fleet for r in found):  # one snapshot per answer: never seen
        return orjson.dumps(render_ranked(found))
    writer = RankedFragments(fleet, fragments or FragmentCache())
    request_of, tree, providers = writer.open_request, fleet.tree, fleet.providers
    # per (score, devices, fallback, explain): the "numa" block less its host, closing it and
    # the request, and a comma; per host name: ',"numa":{"host":name'
    numa: dict[tuple[object, ...], bytes] = {}
    hosts: dict[str | None, bytes] = {}
    # each request less its closing brace, its "numa" block: joined once at the end
    pieces: list[bytes] = [b'{"allocation_requests":[']
    add = pieces.append
    roots: dict[int, None] = {}  # trees to summarise, in order
    for ranked in found:
        candidate = ranked.candidate
        anchor = candidate.anchor
        if candidate.entry is not None and candidate.members is tree.get(anchor):
            roots[anchor] = None
        else:
            for p, _, _ in candidate.allocations:
                roots[providers[p].root] = None
        score = ranked.score  # kept alive by ``found``: its id names it for this answer
        key = (id(score), ranked.devices, ranked.fallback, ranked.explain)
        block = numa.get(key)
        if block is None:
            rest = numa_block(ranked)
            del rest["host"]
            block = numa[key] = b"," + orjson.dumps(rest)[1:] + b"},"
        host = hosts.get(ranked.host)
        if host is None:
            host = hosts[ranked.host] = b',"numa":{"host":' + orjson.dumps(ranked.host)
        add(request_of(candidate))
        add(host)
        add(block)
    pieces[-1] = pieces[-1][:-1]  # the last request's comma
    add(b'],"provider_summaries":{')
    pieces.append(writer.tree_summaries(roots))
    pieces.append(b"}}")
    return b"".join(pieces)
