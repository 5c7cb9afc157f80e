"""Request body of ``POST /allocation_candidates/claim`` (extension).

What ``POST /allocation_candidates`` takes (a flavor and image, or a query, plus options), plus
who the claim is for, as in ``PUT /allocations/{consumer_uuid}``::

    {"flavor": {"vcpus": 8, "memory_mb": 8192, "extra_specs": {"hw:numa_nodes": "2",
                                                              "hw:cpu_policy": "dedicated"}},
     "consumer_uuid": "7c0c0000-0000-4000-8000-0000000000aa", "consumer_generation": null,
     "project_id": "demo-project", "user_id": "demo-user", "consumer_type": "INSTANCE",
     "alternates": 2}

``limit`` here is the search window: how many ranked candidates one search considers
(default ``services.claims.DEFAULT_WINDOW``; alternates come on top).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from placement_numa.api.schemas.allocations import ConsumerType, ExternalId, UuidKey
from placement_numa.api.schemas.inventories import JsonInt
from placement_numa.api.schemas.numa_candidates import NumaCandidatesBody

__all__ = ["ClaimBody", "MAX_ALTERNATES", "MAX_WINDOW"]

MAX_ALTERNATES = 100
MAX_WINDOW = 1000


class ClaimBody(NumaCandidatesBody):
    """``flavor`` (+ ``image``) or ``query``, options, and the consumer to claim for."""

    limit: Annotated[JsonInt, Field(ge=1, le=MAX_WINDOW)] | None = Field(
        None, description="ranked candidates considered per search"
    )
    consumer_uuid: UuidKey = Field(
        description="the consumer (instance) to claim for", json_schema_extra={"format": "uuid"}
    )
    consumer_generation: JsonInt | None = Field(
        description="the consumer's current generation; null for a new consumer"
    )
    project_id: ExternalId
    user_id: ExternalId
    consumer_type: ConsumerType | None = Field(None, description="e.g. INSTANCE, MIGRATION")
    alternates: Annotated[JsonInt, Field(ge=0, le=MAX_ALTERNATES)] = Field(
        0, description="other candidates (other hosts) to return"
    )
