"""Input caps: every input that sizes the work of a request is bounded before the work starts.

The caps come from ``Settings`` (README, "Operating"); each refusal is a 400 ``LimitExceeded``
with its own stable code, or a 413 for the body size (``api/request_guard.py``):

* ``max_request_groups``: request groups of a candidate query (GET, POST ``query``):
  ``placement.limit.request_groups``;
* ``max_resource_classes_per_group``: classes of each group and of ``resources=`` on
  ``/resource_providers``: ``placement.limit.resource_classes``;
* ``max_json_depth``: nesting of every JSON body: ``placement.limit.json_depth``;
* ``max_batch_providers``: providers of one ``POST /resource_providers/batch``:
  ``placement.limit.batch_providers``.

JSON bodies are also refused when a string (or key) holds a NUL character: no Placement value
may contain one and PostgreSQL cannot store it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request

from placement_numa.domain.request_groups import CandidateQuery
from placement_numa.errors import BadRequest, LimitExceeded

__all__ = [
    "RequestLimits",
    "LimitsDep",
    "get_limits",
    "check_candidate_query",
    "check_resource_classes",
    "check_batch_size",
    "check_json",
]


@dataclass(frozen=True, slots=True)
class RequestLimits:
    """The caps of one process (defaults: ``Settings``' defaults)."""

    max_request_groups: int = 64
    max_resource_classes_per_group: int = 64
    max_json_depth: int = 32
    max_batch_providers: int = 1000

    @classmethod
    def from_settings(cls, settings: Any) -> RequestLimits:
        """The caps of a ``Settings`` object (defaults for fields it lacks)."""
        default = cls()
        return cls(
            max_request_groups=getattr(settings, "max_request_groups", default.max_request_groups),
            max_resource_classes_per_group=getattr(
                settings, "max_resource_classes_per_group", default.max_resource_classes_per_group
            ),
            max_json_depth=getattr(settings, "max_json_depth", default.max_json_depth),
            max_batch_providers=getattr(
                settings, "max_batch_providers", default.max_batch_providers
            ),
        )


def get_limits(request: Request) -> RequestLimits:
    """The app's caps (built from ``app.state.settings`` once, then cached on ``app.state``)."""
    state = request.app.state
    limits: RequestLimits | None = getattr(state, "request_limits", None)
    if limits is None:
        limits = RequestLimits.from_settings(getattr(state, "settings", None))
        state.request_limits = limits
    return limits


async def _limits_dependency(request: Request) -> RequestLimits:
    """``get_limits`` as a dependency (``async``: no I/O, so no thread-pool round trip)."""
    return get_limits(request)


LimitsDep = Annotated[RequestLimits, Depends(_limits_dependency)]


def check_resource_classes(count: int, limits: RequestLimits, where: str) -> None:
    """Raise ``LimitExceeded`` (``placement.limit.resource_classes``) when ``count`` resource
    classes are asked for in one group or filter (``where`` names it in the message)."""
    if count > limits.max_resource_classes_per_group:
        raise LimitExceeded(
            f"{where} names {count} resource classes; at most"
            f" {limits.max_resource_classes_per_group} are allowed per request group"
            " ([placement] max_resource_classes_per_group).",
            code="placement.limit.resource_classes",
        )


def check_batch_size(count: int, limits: RequestLimits) -> None:
    """Raise ``LimitExceeded`` (``placement.limit.batch_providers``) when one batch creates more
    than ``max_batch_providers`` providers."""
    if count > limits.max_batch_providers:
        raise LimitExceeded(
            f"The batch creates {count} resource providers; at most"
            f" {limits.max_batch_providers} are allowed per request ([api] max_batch_providers).",
            code="placement.limit.batch_providers",
        )


def check_candidate_query(query: CandidateQuery, limits: RequestLimits) -> None:
    """Refuse a candidate query larger than the caps, before any search.

    Raises ``LimitExceeded``: ``placement.limit.request_groups`` for more than
    ``max_request_groups`` request groups, ``placement.limit.resource_classes`` for a group with
    more than ``max_resource_classes_per_group`` classes.
    """
    if len(query.groups) > limits.max_request_groups:
        raise LimitExceeded(
            f"The query has {len(query.groups)} request groups; at most"
            f" {limits.max_request_groups} are allowed ([placement] max_request_groups).",
            code="placement.limit.request_groups",
        )
    cap = limits.max_resource_classes_per_group
    for group in query.groups:
        if len(group.resources) > cap:  # the message (and the group's label) only on refusal
            check_resource_classes(len(group.resources), limits, f"resources{group.label}")


def _children(value: Any) -> Iterable[Any]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield item
    else:
        yield from value


def check_json(value: Any, limits: RequestLimits) -> None:
    """Walk a parsed JSON document without recursion and refuse it when it nests deeper than
    ``max_json_depth`` (``LimitExceeded``, ``placement.limit.json_depth``) or holds a NUL
    character in a string or key (``BadRequest``). Linear in the size of the document."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise BadRequest("JSON strings may not contain NUL characters (\\u0000).")
        elif isinstance(item, (dict, list)):
            if depth > limits.max_json_depth:
                raise LimitExceeded(
                    f"The JSON body nests deeper than {limits.max_json_depth} levels"
                    " ([placement] max_json_depth).",
                    code="placement.limit.json_depth",
                )
            stack.extend((child, depth + 1) for child in _children(item))
