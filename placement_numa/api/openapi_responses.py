"""The success bodies of Placement's operations, for the OpenAPI document (``complete_document``).

The routers build their answers as dicts (``api/responses.py``), so FastAPI documents them as
``{}``. These schemas say what the service sends, as the union over microversions: a field that
exists at every microversion is required, a newer one (``parent_provider_uuid`` 1.14,
``consumer_generation`` 1.28, ...) is optional; a field whose shape changed is the ``oneOf`` of
its shapes (``allocations`` of an allocation request: a list before 1.12, a map after). Objects
stay open (a newer microversion may add a field, as Placement's do). The extensions' bodies:
``openapi_extension_responses.py``.
"""

from __future__ import annotations

from typing import Any

from placement_numa.api import microversion as mv
from placement_numa.api.openapi_microversions import KEY as MICROVERSION_KEY

__all__ = [
    "ALLOCATIONS_MAP",
    "AMOUNTS",
    "INT",
    "MAPPINGS",
    "RESPONSE_BODIES",
    "RESPONSE_COMPONENTS",
    "STR",
    "nullable",
    "obj",
    "ref",
    "since",
]


def ref(name: str) -> dict[str, str]:
    """A reference to component ``name``."""
    return {"$ref": f"#/components/schemas/{name}"}


def obj(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    """An open object: the fields of ``required`` always sent, those of ``optional`` at some
    microversions (or in some answers) only."""
    return {
        "type": "object",
        "required": list(required),
        "properties": {**required, **(optional or {})},
    }


def since(version: mv.Microversion, schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` of a field that appeared at microversion ``version`` (its "Since")."""
    return {**schema, MICROVERSION_KEY: str(version)}


def nullable(type_name: str) -> dict[str, Any]:
    """A value of JSON type ``type_name`` or ``null``."""
    return {"type": [type_name, "null"]}


INT = {"type": "integer"}
STR = {"type": "string"}
AMOUNTS = {"type": "object", "additionalProperties": INT}
_GENERATION = {"resource_provider_generation": INT}
_LINKS = {
    "type": "array",
    "items": obj({"rel": STR, "href": STR}),
}
# an allocation request's allocations (1.12+; also defragment's moves): {uuid: {"resources"}}
ALLOCATIONS_MAP = {"type": "object", "additionalProperties": obj({"resources": AMOUNTS})}
_ALLOCATIONS_LIST = {
    "type": "array",
    "items": obj({"resource_provider": obj({"uuid": STR}), "resources": AMOUNTS}),
}
# request group suffix ("" for the unsuffixed group) -> the providers that satisfy it
MAPPINGS = {"type": "object", "additionalProperties": {"type": "array", "items": STR}}
RESPONSE_COMPONENTS: dict[str, dict[str, Any]] = {
    "ResourceProvider": obj(
        {"uuid": STR, "name": STR, "generation": INT, "links": _LINKS},
        {
            "parent_provider_uuid": since(mv.NESTED_PROVIDERS, nullable("string")),
            "root_provider_uuid": since(mv.NESTED_PROVIDERS, STR),
        },
    ),
    "Inventory": obj(
        {
            "total": INT,
            "reserved": INT,
            "min_unit": INT,
            "max_unit": INT,
            "step_size": INT,
            "allocation_ratio": {"type": "number"},
        }
    ),
    "ResourceClass": obj({"name": STR, "links": _LINKS}),
    # GET /allocation_candidates
    "AllocationRequest": obj(
        {"allocations": {"oneOf": [ALLOCATIONS_MAP, _ALLOCATIONS_LIST]}},  # the list: 1.10-1.11
        {"mappings": since(mv.CANDIDATE_MAPPINGS, MAPPINGS)},
    ),
    "ProviderSummary": obj(
        {
            "resources": {
                "type": "object",
                "additionalProperties": obj({"capacity": INT, "used": INT}),
            }
        },
        {
            "traits": since(mv.CANDIDATES_REQUIRED, {"type": "array", "items": STR}),
            "parent_provider_uuid": since(mv.NESTED_CANDIDATES, nullable("string")),
            "root_provider_uuid": since(mv.NESTED_CANDIDATES, STR),
        },
    ),
}
_PROVIDERS = obj({"resource_providers": {"type": "array", "items": ref("ResourceProvider")}})
_INVENTORIES = obj(
    {
        **_GENERATION,
        "inventories": {"type": "object", "additionalProperties": ref("Inventory")},
    }
)
_ONE_INVENTORY = {"allOf": [ref("Inventory"), obj(_GENERATION)]}
_PROVIDER_TRAITS = obj({"traits": {"type": "array", "items": STR}, **_GENERATION})
_AGGREGATES = obj(
    {"aggregates": {"type": "array", "items": STR}},
    {"resource_provider_generation": since(mv.AGGREGATE_GENERATION, INT)},
)
_CONSUMER_ALLOCATIONS = obj(
    {
        "allocations": {
            "type": "object",
            "additionalProperties": obj({"resources": AMOUNTS}, {"generation": INT}),
        }
    },
    {
        "project_id": since(mv.ALLOCATIONS_DICT, STR),
        "user_id": since(mv.ALLOCATIONS_DICT, STR),
        "consumer_generation": since(mv.CONSUMER_GENERATION, nullable("integer")),
        "consumer_type": since(mv.CONSUMER_TYPES, STR),
    },
)
_PROVIDER_ALLOCATIONS = obj(
    {
        "allocations": {
            "type": "object",
            "additionalProperties": obj(
                {"resources": AMOUNTS},
                {"consumer_generation": since(mv.CONSUMER_GENERATION, nullable("integer"))},
            ),
        },
        **_GENERATION,
    }
)
# (method, path) -> the schema of its 2xx JSON body.
RESPONSE_BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("get", "/"): obj(
        {
            "versions": {
                "type": "array",
                "items": obj(
                    {
                        "id": STR,
                        "min_version": STR,
                        "max_version": STR,
                        "status": STR,
                        "links": _LINKS,
                    }
                ),
            }
        }
    ),
    ("get", "/allocation_candidates"): obj(
        {
            "allocation_requests": {"type": "array", "items": ref("AllocationRequest")},
            "provider_summaries": {
                "type": "object",
                "additionalProperties": ref("ProviderSummary"),
            },
        }
    ),
    ("get", "/resource_providers"): _PROVIDERS,
    ("post", "/resource_providers"): ref("ResourceProvider"),  # 1.20+ (201 without a body)
    ("get", "/resource_providers/{uuid}"): ref("ResourceProvider"),
    ("put", "/resource_providers/{uuid}"): ref("ResourceProvider"),
    ("post", "/resource_providers/batch"): _PROVIDERS,
    ("get", "/resource_providers/{uuid}/inventories"): _INVENTORIES,
    ("put", "/resource_providers/{uuid}/inventories"): _INVENTORIES,
    ("post", "/resource_providers/{uuid}/inventories"): _ONE_INVENTORY,
    ("get", "/resource_providers/{uuid}/inventories/{resource_class}"): _ONE_INVENTORY,
    ("put", "/resource_providers/{uuid}/inventories/{resource_class}"): _ONE_INVENTORY,
    ("get", "/resource_classes"): obj(
        {"resource_classes": {"type": "array", "items": ref("ResourceClass")}}
    ),
    ("get", "/resource_classes/{name}"): ref("ResourceClass"),
    ("get", "/traits"): obj({"traits": {"type": "array", "items": STR}}),
    ("get", "/resource_providers/{uuid}/traits"): _PROVIDER_TRAITS,
    ("put", "/resource_providers/{uuid}/traits"): _PROVIDER_TRAITS,
    ("get", "/resource_providers/{uuid}/aggregates"): _AGGREGATES,
    ("put", "/resource_providers/{uuid}/aggregates"): _AGGREGATES,
    ("get", "/resource_providers/{uuid}/usages"): obj({**_GENERATION, "usages": AMOUNTS}),
    ("get", "/usages"): obj(
        {
            "usages": {
                "type": "object",
                # a class's amount; from 1.38 per consumer type: {class: amount, consumer_count}
                "additionalProperties": {"anyOf": [INT, AMOUNTS]},
            }
        }
    ),
    ("get", "/allocations/{consumer_uuid}"): _CONSUMER_ALLOCATIONS,
    ("get", "/resource_providers/{uuid}/allocations"): _PROVIDER_ALLOCATIONS,
}
