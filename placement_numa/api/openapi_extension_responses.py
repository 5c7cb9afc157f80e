"""The success bodies of placement-numa's extension operations, for the OpenAPI document.

Same rules as Placement's (``openapi_responses.py``): every field the service always sends is
required, a field sent only in some answers (``hosts`` and ``places`` of capacity with
``"hosts": false``) is optional, ``null`` is said where it is sent, objects stay open. The
renderers: ``api/schemas/ranked_candidates.py`` (ranked candidates, claims), the capacity,
defragment, NUMA distances and reshaper routers, ``reshape/plan.py`` (``Plan.as_dict``).
"""

from __future__ import annotations

from typing import Any

from placement_numa.api.openapi_responses import (
    ALLOCATIONS_MAP,
    AMOUNTS,
    INT,
    MAPPINGS,
    RESPONSE_COMPONENTS,
    STR,
    nullable,
    obj,
    ref,
)

__all__ = ["EXTENSION_BODIES", "EXTENSION_COMPONENTS"]

_BOOL = {"type": "boolean"}
_CELLS = {"type": "array", "items": INT}  # host NUMA cell ids


def _list(item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": item}


def _map(value: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": value}


EXTENSION_COMPONENTS: dict[str, dict[str, Any]] = {
    # ranked_candidates.numa_block; a fallback candidate: cells [], null scores
    "NumaBlock": obj(
        {
            "host": STR,
            "cells": _CELLS,
            "width": nullable("integer"),
            "average_distance": nullable("number"),
            "spread": nullable("number"),
            "fallback": _BOOL,
            "aligned": nullable("boolean"),
            "devices": _list(
                obj({"resource_class": STR, "provider": STR, "cell": nullable("integer")})
            ),
            "explain": STR,
        }
    ),
    # ranked_candidates.allocation_request: the 1.39 shape plus the numa block
    "RankedAllocationRequest": obj(
        {"allocations": ALLOCATIONS_MAP, "mappings": MAPPINGS, "numa": ref("NumaBlock")}
    ),
    # capacity_limits.Shortfall.as_json: every field, null where it does not apply
    "Shortfall": obj(
        {
            "reason": {"type": "string", "enum": ["short", "arrangement", "cap"]},
            "resource_class": nullable("string"),
            "cell": nullable("integer"),
            "free": nullable("integer"),
            "requested": nullable("integer"),
        }
    ),
    "NumaDistances": obj(
        {
            "resource_provider_uuid": STR,
            "generation": INT,
            "cells": _map(STR),  # cell id -> cell provider uuid
            "distances": _map(_map(INT)),
            "sockets": {"oneOf": [_map(INT), {"type": "null"}]},
        }
    ),
    "ReshapePlan": obj(
        {
            "direction": {"type": "string", "enum": ["to_numa", "to_flat"]},
            "host": STR,
            "root_provider_uuid": STR,
            "microversion": STR,
            "create_providers": _list(
                obj(
                    {
                        "uuid": STR,
                        "name": STR,
                        "parent_provider_uuid": STR,
                        "traits": _list(STR),
                    }
                )
            ),
            "delete_providers": _list(STR),
            "reparent_providers": _list(
                obj({"uuid": STR, "name": STR, "parent_provider_uuid": STR})
            ),
            # the POST /reshaper body
            "reshaper": obj({"inventories": _map(obj({})), "allocations": _map(obj({}))}),
            "distances": {
                "oneOf": [
                    obj({"cells": _CELLS, "distances": _list(_list(INT))}),
                    {"type": "null"},
                ]
            },
            # consumer -> provider name -> amounts
            "placements": _map(_map(AMOUNTS)),
            "usages": obj({"before": AMOUNTS, "after": AMOUNTS}),
            "summary": _list(STR),
        }
    ),
}
# the 1.39 summary: every field of GET's (ProviderSummary) sent
_SUMMARY = RESPONSE_COMPONENTS["ProviderSummary"]
_FULL_SUMMARY = {**_SUMMARY, "required": list(_SUMMARY["properties"])}
_HOST_CAPACITY = obj(
    {
        "host": STR,
        "uuid": STR,
        "count": INT,
        "capped": _BOOL,
        "limited_by": _list(ref("Shortfall")),
    }
)
_STRANDED_PLACE = obj(
    {
        "host": STR,
        "uuid": STR,
        "cell": nullable("integer"),
        "cell_provider": nullable("string"),
        "stranded": AMOUNTS,
    }
)
_MOVE_END = obj({"host": STR, "uuid": STR, "cells": _CELLS})
# (method, path) -> the schema of its 2xx JSON body.
EXTENSION_BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("post", "/allocation_candidates"): obj(
        {
            "allocation_requests": _list(ref("RankedAllocationRequest")),
            "provider_summaries": _map(_FULL_SUMMARY),
        }
    ),
    ("post", "/allocation_candidates/claim"): obj(
        {
            "consumer_uuid": STR,
            "consumer_generation": INT,
            "allocation_request": ref("RankedAllocationRequest"),
            "alternates": _list(ref("RankedAllocationRequest")),
            "claim": obj({"attempts": INT, "rounds": INT}),
        }
    ),
    ("post", "/allocation_candidates/capacity"): obj(
        {
            "capacity": _list(obj({"flavor": STR, "total": INT}, {"hosts": _list(_HOST_CAPACITY)})),
            "stranded": obj(
                {"free": AMOUNTS, "stranded": AMOUNTS, "fragmentation": _map({"type": "number"})},
                {"places": _list(_STRANDED_PLACE)},
            ),
        }
    ),
    ("post", "/allocation_candidates/defragment"): obj(
        {
            "fits_now": _BOOL,
            "found": _BOOL,
            "host": nullable("string"),
            "timed_out": _BOOL,
            "moves": _list(
                obj(
                    {
                        "consumer": STR,
                        "from": _MOVE_END,
                        "to": _MOVE_END,
                        "allocations": ALLOCATIONS_MAP,
                    }
                )
            ),
        }
    ),
    ("get", "/resource_providers/{uuid}/numa_distances"): ref("NumaDistances"),
    ("put", "/resource_providers/{uuid}/numa_distances"): ref("NumaDistances"),
    ("post", "/reshaper/plan"): ref("ReshapePlan"),
    ("post", "/reshaper/apply"): ref("ReshapePlan"),
}
