"""Query string of ``GET /usages``: ``project_id`` (required), ``user_id``, ``consumer_type``
(1.38+)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from placement_numa.errors import BadRequest

__all__ = ["UsagesQuery", "parse_usages_query"]

_CONSUMER_TYPE = re.compile(r"^[A-Z0-9_]+$|^all|^unknown$")


@dataclass(frozen=True, slots=True)
class UsagesQuery:
    """The parsed query string of ``GET /usages``: a project, optionally a user and a consumer
    type (1.38+)."""

    project_id: str
    user_id: str | None
    consumer_type: str | None


def _check_length(name: str, value: str) -> None:
    """jsonschema's minLength/maxLength wording, as Placement reports it."""
    if not value:
        raise BadRequest(
            "Invalid query string parameters: '' should be non-empty  Failed validating"
            f" 'minLength' in schema['properties']['{name}']"
        )
    if len(value) > 255:
        raise BadRequest(
            f"Invalid query string parameters: '{value}' is too long  Failed validating"
            f" 'maxLength' in schema['properties']['{name}']"
        )


def parse_usages_query(params: Mapping[str, str], *, consumer_types: bool) -> UsagesQuery:
    """Validate the query string as Placement's schema does (400 on unknown or bad keys)."""
    allowed = {"project_id", "user_id"} | ({"consumer_type"} if consumer_types else set())
    extra = sorted(set(params) - allowed)
    if extra:
        names = ", ".join(f"'{key}'" for key in extra)
        raise BadRequest(
            f"Invalid query string parameters: Additional properties are not allowed ({names}"
            f" {'was' if len(extra) == 1 else 'were'} unexpected)  Failed validating"
            " 'additionalProperties' in schema"
        )
    if "project_id" not in params:
        raise BadRequest(
            "Invalid query string parameters: 'project_id' is a required property  Failed"
            " validating 'required' in schema"
        )
    for key in allowed & set(params):
        _check_length(key, params[key])
    consumer_type = params.get("consumer_type")
    if consumer_type is not None and not _CONSUMER_TYPE.search(consumer_type):
        raise BadRequest(
            f"Invalid query string parameters: '{consumer_type}' does not match"
            " '^[A-Z0-9_]+$|^all|^unknown$'  Failed validating 'pattern' in"
            " schema['properties']['consumer_type']"
        )
    return UsagesQuery(params["project_id"], params.get("user_id"), consumer_type)
