"""Response shapes of ``GET /allocation_candidates`` per microversion (plain dicts, for orjson).

* ``allocation_requests``: 1.10-1.11 a list form ``{"allocations": [{"resource_provider":
  {"uuid"}, "resources": {...}}]}``; from 1.12 ``{"allocations": {uuid: {"resources": {...}}}}``
  plus ``mappings`` ``{suffix: [uuid, ...]}`` from 1.34 (``""`` for the unsuffixed group);
* ``provider_summaries``: ``{uuid: {"resources": {rc: {"capacity", "used"}}}}``; only the
  requested classes before 1.27, every inventoried class after; ``traits`` (in database order)
  from 1.17; ``parent_provider_uuid`` and ``root_provider_uuid`` from 1.29.

The OpenAPI document describes every microversion's shape (``api/openapi_responses.py``:
``AllocationRequest``, ``ProviderSummary``). ``render_candidates`` builds the
document as plain dicts (the readable reference, and the form used below microversion 1.12;
``api/schemas/candidate_dicts.py``, with ``summary``, the one provider-summary renderer, both
exported here);
``candidate_body_pieces`` and ``encode_candidates`` (``api/schemas/candidate_pieces.py``, also
exported here) write the same document as JSON bytes from fragments kept per process.
"""

from __future__ import annotations

from placement_numa.api.schemas.candidate_dicts import render_candidates, summary
from placement_numa.api.schemas.candidate_pieces import (
    FragmentCache,
    candidate_body_pieces,
    encode_candidates,
)

__all__ = [
    "FragmentCache",
    "render_candidates",
    "encode_candidates",
    "candidate_body_pieces",
    "summary",
]
