"""The success bodies of Placement's operations, for the OpenAPI document (``complete_document``).

The routers build their answers as dicts (``api/responses.py``), so FastAPI documents them as
``{}``. These schemas say what the service sends, as the union over microversions: a field that
exists at every microversion is required, a newer one (``parent_provider_uuid`` 1.14,
``consumer_generation`` 1.28, ...) is optional. Objects stay open (a newer microversion may add
a field, as Placement's do). Extension operations keep FastAPI's description.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RESPONSE_BODIES", "RESPONSE_COMPONENTS"]


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _object(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "required": list(required),
        "properties": {**required, **(optional or {})},
    }


_INT = {"type": "integer"}
_STR = {"type": "string"}
_AMOUNTS = {"type": "object", "additionalProperties": _INT}
_GENERATION = {"resource_provider_generation": _INT}
_LINKS = {
    "type": "array",
    "items": _object({"rel": _STR, "href": _STR}),
}
RESPONSE_COMPONENTS: dict[str, dict[str, Any]] = {
    "ResourceProvider": _object(
        {"uuid": _STR, "name": _STR, "generation": _INT, "links": _LINKS},
        {
            "parent_provider_uuid": {"type": ["string", "null"]},  # 1.14
            "root_provider_uuid": _STR,  # 1.14
        },
    ),
    "Inventory": _object(
        {
            "total": _INT,
            "reserved": _INT,
            "min_unit": _INT,
            "max_unit": _INT,
            "step_size": _INT,
            "allocation_ratio": {"type": "number"},
        }
    ),
    "ResourceClass": _object({"name": _STR, "links": _LINKS}),
}
_PROVIDERS = _object({"resource_providers": {"type": "array", "items": _ref("ResourceProvider")}})
_INVENTORIES = _object(
    {
        **_GENERATION,
        "inventories": {"type": "object", "additionalProperties": _ref("Inventory")},
    }
)
_ONE_INVENTORY = {"allOf": [_ref("Inventory"), _object(_GENERATION)]}
_PROVIDER_TRAITS = _object({"traits": {"type": "array", "items": _STR}, **_GENERATION})
_AGGREGATES = _object(
    {"aggregates": {"type": "array", "items": _STR}},
    _GENERATION,  # generation: 1.19
)
_CONSUMER_ALLOCATIONS = _object(
    {
        "allocations": {
            "type": "object",
            "additionalProperties": _object({"resources": _AMOUNTS}, {"generation": _INT}),
        }
    },
    {
        "project_id": _STR,  # 1.12
        "user_id": _STR,  # 1.12
        "consumer_generation": {"type": ["integer", "null"]},  # 1.28
        "consumer_type": _STR,  # 1.38
    },
)
_PROVIDER_ALLOCATIONS = _object(
    {
        "allocations": {
            "type": "object",
            "additionalProperties": _object(
                {"resources": _AMOUNTS}, {"consumer_generation": {"type": ["integer", "null"]}}
            ),
        },
        **_GENERATION,
    }
)
# (method, path) -> the schema of its 2xx JSON body.
RESPONSE_BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("get", "/resource_providers"): _PROVIDERS,
    ("post", "/resource_providers"): _ref("ResourceProvider"),  # 1.20+ (201 without a body)
    ("get", "/resource_providers/{uuid}"): _ref("ResourceProvider"),
    ("put", "/resource_providers/{uuid}"): _ref("ResourceProvider"),
    ("post", "/resource_providers/batch"): _PROVIDERS,
    ("get", "/resource_providers/{uuid}/inventories"): _INVENTORIES,
    ("put", "/resource_providers/{uuid}/inventories"): _INVENTORIES,
    ("post", "/resource_providers/{uuid}/inventories"): _ONE_INVENTORY,
    ("get", "/resource_providers/{uuid}/inventories/{resource_class}"): _ONE_INVENTORY,
    ("put", "/resource_providers/{uuid}/inventories/{resource_class}"): _ONE_INVENTORY,
    ("get", "/resource_classes"): _object(
        {"resource_classes": {"type": "array", "items": _ref("ResourceClass")}}
    ),
    ("get", "/resource_classes/{name}"): _ref("ResourceClass"),
    ("get", "/traits"): _object({"traits": {"type": "array", "items": _STR}}),
    ("get", "/resource_providers/{uuid}/traits"): _PROVIDER_TRAITS,
    ("put", "/resource_providers/{uuid}/traits"): _PROVIDER_TRAITS,
    ("get", "/resource_providers/{uuid}/aggregates"): _AGGREGATES,
    ("put", "/resource_providers/{uuid}/aggregates"): _AGGREGATES,
    ("get", "/resource_providers/{uuid}/usages"): _object({**_GENERATION, "usages": _AMOUNTS}),
    ("get", "/usages"): _object(
        {
            "usages": {
                "type": "object",
                # a class's amount; from 1.38 per consumer type: {class: amount, consumer_count}
                "additionalProperties": {"anyOf": [_INT, _AMOUNTS]},
            }
        }
    ),
    ("get", "/allocations/{consumer_uuid}"): _CONSUMER_ALLOCATIONS,
    ("get", "/resource_providers/{uuid}/allocations"): _PROVIDER_ALLOCATIONS,
}
