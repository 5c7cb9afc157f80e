"""Make the OpenAPI document say what the service does (applied by ``app.build_openapi``).

FastAPI derives the document from the route signatures, which here take the raw query string
(Placement's query language is parsed by ``api.query``) and raise Placement errors rather than
FastAPI's validation errors. So, from the tables below:

* the query parameters of every GET that takes any (``QUERY_PARAMETERS``): name, meaning, the
  microversion it appeared in;
* the success bodies of Placement's operations (``api/openapi_responses.py``) and of the
  extensions (``api/openapi_extension_responses.py``);
* the real success statuses (``SUCCESS``): 204 without a body for deletes, 201 with an empty
  body for ``POST /resource_classes``, ...;
* no 422 (the service answers 400); instead the Placement error body
  (``{"errors": [{"status", "title", "detail", "code", "request_id"}]}``) for every status the
  service answers (``_error_statuses``): 400 and 406 (the microversion header) everywhere, 401
  and 403, 404 (a path parameter, or a route newer than 1.0: no or an empty header means 1.0),
  409 (writes), 413 and 415 (bodies), 405 where a method is newer than its route
  (``EXTRA_ERRORS``);
* the ``x-auth-token`` header as the security scheme and ``OpenStack-API-Version`` as a header
  parameter of every operation.
"""

from __future__ import annotations

from typing import Any

from placement_numa.api import microversion as mv
from placement_numa.api.openapi_extension_responses import (
    EXTENSION_BODIES,
    EXTENSION_COMPONENTS,
)
from placement_numa.api.openapi_microversions import KEY as MICROVERSION_KEY
from placement_numa.api.openapi_responses import RESPONSE_BODIES, RESPONSE_COMPONENTS

__all__ = ["complete_document", "QUERY_PARAMETERS", "SUCCESS"]


_UUID = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_NAME = "[A-Z0-9_]+"
# The value forms the query parser (api/query.py, api/candidate_query.py) accepts; whether a
# named trait or resource class exists, and the rules between parameters, are not forms (see
# doc/source/reference/api.rst).
UUID_VALUE: dict[str, Any] = {"type": "string", "format": "uuid"}
MEMBER_OF: dict[str, Any] = {"type": "string", "pattern": f"^(!?{_UUID}|!?in:{_UUID}(,{_UUID})*)$"}
RESOURCES: dict[str, Any] = {
    "type": "string",
    "pattern": f"^{_NAME}:0*[1-9][0-9]*(,{_NAME}:0*[1-9][0-9]*)*$",
}
TRAITS: dict[str, Any] = {
    "type": "string",
    "pattern": f"^(in:{_NAME}(,{_NAME})*|!?{_NAME}(,!?{_NAME})*)$",
}
SUFFIXES: dict[str, Any] = {
    "type": "string",
    "pattern": "^[a-zA-Z0-9_-]{1,64}(,[a-zA-Z0-9_-]{1,64})*$",
}
GROUP_POLICY: dict[str, Any] = {"type": "string", "enum": ["none", "isolate"]}
EXTERNAL_ID: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 255}


def _param(
    name: str,
    description: str,
    *,
    since: mv.Microversion,
    repeatable: bool = False,
    value: dict[str, Any] | None = None,
    required: bool = False,
) -> dict[str, Any]:
    """A query parameter; ``value`` the schema of one value (a string by default)."""
    schema: dict[str, Any] = value or {"type": "string"}
    if repeatable:
        schema = {"type": "array", "items": schema}
    param: dict[str, Any] = {
        "name": name,
        "in": "query",
        "required": required,
        "description": description,
        "schema": schema,
        MICROVERSION_KEY: str(since),
    }
    if repeatable:
        param["style"] = "form"
        param["explode"] = True
    return param


_GROUPS = (
    " Also accepted with a request-group suffix (``resources1``, ``resources_NUMA0``, ...):"
    " one group per suffix (1.25; named suffixes 1.33)."
)
QUERY_PARAMETERS: dict[str, list[dict[str, Any]]] = {
    "/resource_providers": [
        _param("name", "Providers with this name.", since=mv.MIN_VERSION),
        _param("uuid", "The provider with this uuid.", value=UUID_VALUE, since=mv.MIN_VERSION),
        _param(
            "member_of",
            "Aggregate uuid, or ``in:<uuid>,<uuid>`` for any of them (1.3); repeated: all of "
            "them (1.24); ``!`` to exclude (1.32).",
            repeatable=True,
            value=MEMBER_OF,
            since=mv.PROVIDER_MEMBER_OF,
        ),
        _param(
            "resources",
            "``RC:amount,...``: providers with room for each amount (1.4).",
            value=RESOURCES,
            since=mv.PROVIDER_RESOURCES_FILTER,
        ),
        _param(
            "in_tree",
            "Providers in the tree of this provider uuid (1.14).",
            value=UUID_VALUE,
            since=mv.NESTED_PROVIDERS,
        ),
        _param(
            "required",
            "Traits ``A,!B`` the provider must have / must not have (1.18; ``!`` 1.22; "
            "``in:A,B`` and repeats 1.39).",
            repeatable=True,
            value=TRAITS,
            since=mv.PROVIDER_REQUIRED,
        ),
    ],
    "/allocation_candidates": [
        _param(
            "resources",
            "``RC:amount,...`` requested (1.10)." + _GROUPS,
            value=RESOURCES,
            required=True,
            since=mv.ALLOCATION_CANDIDATES,
        ),
        _param(
            "required",
            "Traits the providers must have (``!`` forbidden 1.22, ``in:`` 1.39)." + _GROUPS,
            repeatable=True,
            value=TRAITS,
            since=mv.CANDIDATES_REQUIRED,
        ),
        _param(
            "member_of",
            "Aggregate uuids (``in:`` any of; ``!`` excluded 1.32)." + _GROUPS,
            repeatable=True,
            value=MEMBER_OF,
            since=mv.CANDIDATES_MEMBER_OF,
        ),
        _param(
            "in_tree",
            "Only candidates in this provider's tree (1.31)." + _GROUPS,
            value=UUID_VALUE,
            since=mv.CANDIDATES_IN_TREE,
        ),
        _param(
            "group_policy",
            "``none`` or ``isolate`` (1.25; required with more than one suffixed group).",
            value=GROUP_POLICY,
            since=mv.GRANULAR_GROUPS,
        ),
        _param(
            "limit",
            "At most this many allocation requests (1.16).",
            value={"type": "string", "pattern": "^[1-9][0-9]{0,17}$"},
            since=mv.CANDIDATES_LIMIT,
        ),
        _param(
            "same_subtree",
            "Comma-separated suffixes whose providers share a subtree (1.36).",
            repeatable=True,
            value=SUFFIXES,
            since=mv.SAME_SUBTREE,
        ),
        _param(
            "root_required",
            "Traits the root provider must (not) have (1.35).",
            value=TRAITS,
            since=mv.ROOT_REQUIRED,
        ),
    ],
    "/traits": [
        _param(
            "name",
            "``in:A,B`` (these names) or ``startswith:CUSTOM_`` (a prefix).",
            value={"type": "string", "pattern": "^(in|startswith):"},
            since=mv.TRAITS,
        ),
        _param(
            "associated",
            "``true``: only traits of some provider; ``false``: of none (any case).",
            value={"type": "string", "pattern": "^([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])$"},
            since=mv.TRAITS,
        ),
    ],
    "/usages": [
        _param("project_id", "The project.", value=EXTERNAL_ID, required=True, since=mv.USAGES),
        _param("user_id", "Only this user's consumers.", value=EXTERNAL_ID, since=mv.USAGES),
        _param(
            "consumer_type",
            "Only consumers of this type (1.38; ``all``, ``unknown``).",
            value={"type": "string", "pattern": "^([A-Z0-9_]+|all|unknown)$", "maxLength": 255},
            since=mv.CONSUMER_TYPES,
        ),
    ],
}

_CUSTOM = {"type": "string", "pattern": "^CUSTOM_[A-Z0-9_]+$", "maxLength": 255}
_CLASS = {"type": "string", "pattern": f"^{_NAME}$"}
# (method, path) -> {path parameter: its schema}, where the route refuses (400) other forms.
# Elsewhere a path parameter is any string: an unknown name or uuid is a 404.
PATH_PARAMETERS: dict[tuple[str, str], dict[str, dict[str, Any]]] = {
    ("put", "/resource_classes/{name}"): {"name": _CUSTOM},
    ("delete", "/resource_classes/{name}"): {"name": _CUSTOM},  # standard classes: 400
    ("put", "/traits/{name}"): {"name": _CUSTOM},
    ("delete", "/traits/{name}"): {"name": _CUSTOM},  # standard traits: 400
    ("put", "/allocations/{consumer_uuid}"): {"consumer_uuid": UUID_VALUE},
    **{
        (method, "/resource_providers/{uuid}/inventories/{resource_class}"): {
            "resource_class": _CLASS
        }
        for method in ("get", "put", "delete")
    },
}
_EMPTY = {"description": "No content."}
# (method, path) -> the success responses the handler really sends.
SUCCESS: dict[tuple[str, str], dict[str, dict[str, Any]]] = {
    ("post", "/resource_classes"): {"201": {"description": "Created (empty body, Location)."}},
    ("put", "/resource_classes/{name}"): {
        "200": {"description": "Renamed (before 1.7)."},
        "201": {"description": "Created (1.7+, empty body)."},
        "204": {"description": "Already existed (1.7+)."},
    },
    ("delete", "/resource_classes/{name}"): {"204": _EMPTY},
    ("put", "/traits/{name}"): {
        "201": {"description": "Created (empty body)."},
        "204": {"description": "Already existed."},
    },
    ("delete", "/traits/{name}"): {"204": _EMPTY},
    ("get", "/traits/{name}"): {"204": {"description": "The trait exists."}},
    ("get", "/resource_classes/{name}"): {"200": {"description": "The resource class."}},
    ("delete", "/resource_providers/{uuid}/traits"): {"204": _EMPTY},
    ("delete", "/resource_providers/{uuid}/inventories"): {"204": _EMPTY},
    ("delete", "/resource_providers/{uuid}/inventories/{resource_class}"): {"204": _EMPTY},
    ("post", "/resource_providers"): {
        "200": {"description": "Created (1.20+: the provider)."},
        "201": {"description": "Created (before 1.20: empty body, Location)."},
    },
}

ERROR_SCHEMA = {
    "type": "object",
    "required": ["errors"],
    "properties": {
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["status", "title", "detail"],
                "properties": {
                    "status": {"type": "integer"},
                    "title": {"type": "string"},
                    "detail": {"type": "string"},
                    "code": {"type": "string"},
                    "request_id": {"type": "string"},
                },
            },
        }
    },
}
_ERRORS = {
    "400": "Bad request: a malformed body, query or microversion header (Placement error code).",
    "401": "No or an invalid x-auth-token.",
    "403": "The policy refuses this caller.",
    "404": (
        "The resource does not exist, or the route is newer than the request's microversion"
        " (no or an empty ``OpenStack-API-Version`` means 1.0)."
    ),
    "405": "The method is not allowed at this microversion (``Allow`` lists the route's).",
    "406": (
        "An unacceptable microversion (outside the service's range, such as ``placement 1.40``"
        " or ``placement 2.0``; the error carries ``min_version`` and ``max_version``), or, for"
        " a GET, an Accept header that excludes JSON."
    ),
    "409": "A conflict: stale generation, in use, no room (Placement error code).",
    "413": "The body is larger than the service accepts.",
    "415": "The body is not JSON (no or another content type).",
}
_VERSION_HEADER = {
    "name": "OpenStack-API-Version",
    "in": "header",
    "required": False,
    "description": "``placement 1.39`` (or ``latest``); without it a request is served at 1.0.",
    "schema": {"type": "string"},
}
_WRITES = {"put", "post", "delete", "patch"}
# (method, path) -> error statuses beyond the general rules of ``complete_document``.
EXTRA_ERRORS: dict[tuple[str, str], tuple[str, ...]] = {
    # DELETE of all inventories appeared in 1.5; below it the route answers 405 (Placement).
    ("delete", "/resource_providers/{uuid}/inventories"): ("405",),
}


def _error(code: str) -> dict[str, Any]:
    return {
        "description": _ERRORS[code],
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def _error_statuses(method: str, path: str, operation: dict[str, Any]) -> list[str]:
    """The error statuses ``method path`` can answer: 400 and 406 from the microversion header
    everywhere; 401 and 403 but on the version document ``/``; 404 with a path parameter or a
    microversion gate above 1.0; 406 also from ``Accept``; 409 on writes; 413 and 415 with a
    body; and ``EXTRA_ERRORS``."""
    wanted = ["400", "406"]
    if path == "/":
        return wanted
    wanted += ["401", "403"]
    if "{" in path or operation.get(MICROVERSION_KEY, str(mv.MIN_VERSION)) != str(mv.MIN_VERSION):
        wanted.append("404")
    if method in _WRITES:
        wanted.append("409")
    if "requestBody" in operation:
        wanted += ["413", "415"]
    return wanted + list(EXTRA_ERRORS.get((method, path), ()))


def complete_document(document: dict[str, Any]) -> dict[str, Any]:
    """Apply the tables above to ``document`` (FastAPI's, modified in place and returned)."""
    components = document.setdefault("components", {})
    components.setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    components["schemas"].update(RESPONSE_COMPONENTS)
    components["schemas"].update(EXTENSION_COMPONENTS)
    bodies = {**RESPONSE_BODIES, **EXTENSION_BODIES}
    components["securitySchemes"] = {
        "token": {"type": "apiKey", "in": "header", "name": "x-auth-token"}
    }
    for path, item in document.get("paths", {}).items():
        for method, operation in item.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            responses = operation["responses"]
            responses.pop("422", None)
            if (method, path) in SUCCESS:
                for code in [c for c in responses if c.startswith("2")]:
                    del responses[code]
                responses.update(SUCCESS[(method, path)])
            for code, response in responses.items():
                if code in ("204",) or (
                    code in ("201",) and "empty body" in response["description"]
                ):
                    response.pop("content", None)
                elif code.startswith("2") and (method, path) in bodies:
                    schema = bodies[(method, path)]
                    response["content"] = {"application/json": {"schema": schema}}
            params = [
                p
                for p in operation.get("parameters", [])
                if p.get("in") != "query" or path not in QUERY_PARAMETERS
            ]
            for param in params:
                if param.get("in") == "path":
                    param["schema"].update(
                        PATH_PARAMETERS.get((method, path), {}).get(param["name"], {})
                    )
            if method == "get":
                params += QUERY_PARAMETERS.get(path, [])
            params.append(_VERSION_HEADER)
            for code in _error_statuses(method, path, operation):
                responses.setdefault(code, _error(code))
            if path != "/":
                operation["security"] = [{"token": []}]
            if params:
                operation["parameters"] = params
    components.get("schemas", {}).pop("HTTPValidationError", None)
    components.get("schemas", {}).pop("ValidationError", None)
    return document
