"""Parse the query string of ``GET /allocation_candidates`` into a ``CandidateQuery``.

Pure (no FastAPI): takes the query's ``(key, value)`` pairs in request order and the
microversion, returns ``placement_numa.domain.request_groups.CandidateQuery`` or raises
``placement_numa.errors`` classes with OpenStack Placement's messages and codes, in Placement's
order of checks (``handlers/allocation_candidate.py`` and ``lib.py`` read for behaviour):

1. allowed parameters per microversion (1.10 ``resources``; 1.16 ``limit``; 1.17 ``required``;
   1.21 ``member_of``; 1.25 numeric suffixes and ``group_policy``; 1.31 ``in_tree``; 1.33 suffixes
   ``[a-zA-Z0-9_-]{1,64}``; 1.35 ``root_required``; 1.36 ``same_subtree``), ``limit`` a positive
   integer, ``group_policy`` ``none`` or ``isolate``;
2. request-wide values: ``root_required`` once (``placement.query.duplicate_key``), without
   conflicts (``placement.query.bad_value``); ``same_subtree`` without the empty suffix
   (``placement.query.bad_value``);
3. request groups (values parsed by ``placement_numa.api.query``); from 1.36 at least one group
   with resources (``placement.query.missing_value``) and resourceless groups only inside
   ``same_subtree`` (``placement.query.bad_value``); before, every group needs resources;
4. required traits that are also forbidden; ``group_policy`` with more than one suffixed group.

Suffixes keep their text: ``resources_MEM1`` is group ``"_MEM1"``, ``resources1`` group ``"1"``.

``query_from_json`` is the JSON form of the same query (``POST /allocation_candidates`` and
``.../claim`` with ``query``): it is turned into the pairs of a query string and goes through
``parse_candidate_query`` at the newest microversion, so both forms pass the same checks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from placement_numa.api import microversion as mv
from placement_numa.api.query import parse_in_tree, parse_member_of, parse_required, parse_resources
from placement_numa.domain.request_groups import CandidateQuery, GroupPolicy, RequestGroup
from placement_numa.errors import BadRequest, QueryBadValue, QueryDuplicateKey, QueryMissingValue

__all__ = ["parse_candidate_query", "query_from_json"]

_PREFIXES = ("resources", "required", "member_of", "in_tree")
_NUMERIC = r"[1-9][0-9]*"
_ARBITRARY = r"[a-zA-Z0-9_-]{1,64}"
_INVALID = "Invalid query string parameters"
_LIMIT_PATTERN = "^[1-9][0-9]*$"


def _group_prefixes(version: mv.Microversion) -> tuple[str, ...]:
    if version >= mv.CANDIDATES_IN_TREE:
        return _PREFIXES
    return _PREFIXES[:3]


def _key_pattern(version: mv.Microversion) -> re.Pattern[str]:
    suffix = _ARBITRARY if version >= mv.ARBITRARY_SUFFIXES else _NUMERIC
    return re.compile(rf"^({'|'.join(_group_prefixes(version))})({suffix})?$")


def _check_keys(keys: Sequence[str], version: mv.Microversion) -> None:
    """Placement's JSON-schema check of the parameter names (step 1)."""
    if version >= mv.GRANULAR_GROUPS:
        fixed = {"limit", "group_policy"}
        if version >= mv.ROOT_REQUIRED:
            fixed.add("root_required")
        if version >= mv.SAME_SUBTREE:
            fixed.add("same_subtree")
        pattern = _key_pattern(version)
        extras = sorted({k for k in keys if k not in fixed and not pattern.match(k)})
        if extras:
            suffix = _ARBITRARY if version >= mv.ARBITRARY_SUFFIXES else _NUMERIC
            regexes = ", ".join(f"'^{p}({suffix})?$'" for p in sorted(_group_prefixes(version)))
            joined = ", ".join(f"'{k}'" for k in extras)
            verb = "does" if len(extras) == 1 else "do"
            raise BadRequest(f"{_INVALID}: {joined} {verb} not match any of the regexes: {regexes}")
        return
    allowed = {"resources"}
    if version >= mv.CANDIDATES_LIMIT:
        allowed.add("limit")
    if version >= mv.CANDIDATES_REQUIRED:
        allowed.add("required")
    if version >= mv.CANDIDATES_MEMBER_OF:
        allowed.add("member_of")
    extras = sorted({k for k in keys if k not in allowed})
    if extras:
        joined = ", ".join(f"'{k}'" for k in extras)
        verb = "was" if len(extras) == 1 else "were"
        raise BadRequest(
            f"{_INVALID}: Additional properties are not allowed ({joined} {verb} unexpected)"
        )
    if "resources" not in keys:
        raise BadRequest(f"{_INVALID}: 'resources' is a required property")


def _last(pairs: Sequence[tuple[str, str]], key: str) -> str | None:
    found = None
    for k, v in pairs:
        if k == key:
            found = v
    return found


def _all(pairs: Sequence[tuple[str, str]], key: str) -> list[str]:
    return [v for k, v in pairs if k == key]


# Longest ``limit`` read as a number: 18 digits always fit in a signed 64-bit integer, and a
# longer one would make ``int()`` do work proportional to what the client sent.
_LIMIT_DIGITS = 18


def _parse_limit(value: str) -> int:
    """The first ``limit`` value as an int >= 1; 400 for anything else or more than 18 digits."""
    if not re.match(_LIMIT_PATTERN, value):
        raise BadRequest(
            f"{_INVALID}: '{value[:64]}' does not match '{_LIMIT_PATTERN}'  Failed validating"
            " 'pattern' in schema['properties']['limit']"
        )
    if len(value) > _LIMIT_DIGITS:
        raise QueryBadValue(
            f"{_INVALID}: limit has {len(value)} digits; at most {_LIMIT_DIGITS} are allowed."
        )
    return int(value)


def _parse_root_required(values: list[str]) -> tuple[frozenset[str], frozenset[str]]:
    if len(values) > 1:
        raise QueryDuplicateKey("Query parameter 'root_required' may be specified only once.")
    parts = [part.strip() for part in values[0].split(",")]
    if not all(parts) or not all(p.lstrip("!") for p in parts):
        raise BadRequest(
            f"{_INVALID}: Expected 'root_required' parameter value of the form:"
            f" HW_CPU_X86_VMX,!CUSTOM_MAGIC. Got an empty trait in: {values[0]}"
        )
    required = {p for p in parts if not p.startswith("!")}
    forbidden = {p.lstrip("!") for p in parts if p.startswith("!")}
    conflicts = required & forbidden
    if conflicts:
        raise QueryBadValue(
            "Conflicting required and forbidden traits found in root_required: "
            + ", ".join(sorted(conflicts))
        )
    return frozenset(required), frozenset(forbidden)


def _check_last_values(pairs: Sequence[tuple[str, str]]) -> None:
    """Placement's JSON-schema check of the last ``limit`` and ``group_policy`` (step 1)."""
    last_limit = _last(pairs, "limit")
    if last_limit is not None and not re.match(_LIMIT_PATTERN, last_limit):
        raise BadRequest(
            f"{_INVALID}: '{last_limit}' does not match '{_LIMIT_PATTERN}'  Failed validating"
            " 'pattern' in schema['properties']['limit']"
        )
    last_policy = _last(pairs, "group_policy")
    if last_policy is not None and last_policy not in ("none", "isolate"):
        raise BadRequest(
            f"{_INVALID}: '{last_policy}' is not one of ['none', 'isolate']  Failed validating"
            " 'enum' in schema['properties']['group_policy']"
        )


def _parse_group_policy(pairs: Sequence[tuple[str, str]]) -> GroupPolicy | None:
    """The first ``group_policy`` (Placement takes the first)."""
    policies = _all(pairs, "group_policy")
    if not policies:
        return None
    if policies[0] not in ("none", "isolate"):
        raise BadRequest(f"{_INVALID}: '{policies[0]}' is not one of ['none', 'isolate']")
    return "isolate" if policies[0] == "isolate" else "none"


def _parse_same_subtree(pairs: Sequence[tuple[str, str]]) -> list[frozenset[str]]:
    """Each ``same_subtree`` value as a set of suffixes; the empty suffix refused."""
    same_subtree: list[frozenset[str]] = []
    for value in _all(pairs, "same_subtree"):
        names = frozenset(part.strip() for part in value.split(","))
        if "" in names:
            raise QueryBadValue(
                "Empty string (unsuffixed group) can not be specified in `same_subtree` "
            )
        same_subtree.append(names)
    return same_subtree


def _parse_groups(pairs: Sequence[tuple[str, str]], version: mv.Microversion) -> list[RequestGroup]:
    """The request groups, in order of first appearance (step 3, values)."""
    pattern = _key_pattern(version)
    order: list[str] = []
    fields: dict[str, dict[str, Any]] = {}
    for key, value in pairs:
        match = pattern.match(key)
        if match is None:
            continue
        prefix, suffix = match.group(1), match.group(2) or ""
        if suffix not in fields:
            fields[suffix] = {}
            order.append(suffix)
        group = fields[suffix]
        if prefix == "resources":
            group["resources"] = parse_resources(value)
        elif prefix == "required":
            group["required"] = parse_required(_all(pairs, key), version)
        elif prefix == "member_of":
            group["member_of"] = parse_member_of(_all(pairs, key), version, suffix=suffix)
        else:
            group["in_tree"] = parse_in_tree(value)
    return [_group(suffix, fields[suffix]) for suffix in order]


def _group(suffix: str, fields: dict[str, Any]) -> RequestGroup:
    required = fields.get("required")
    member_of = fields.get("member_of")
    return RequestGroup(
        suffix=suffix or None,
        resources=fields.get("resources") or {},
        required_traits=required.all_of if required else frozenset(),
        any_traits=required.any_of if required else (),
        forbidden_traits=required.forbidden if required else frozenset(),
        member_of=member_of.any_of if member_of else (),
        forbidden_aggregates=member_of.forbidden if member_of else frozenset(),
        in_tree=fields.get("in_tree"),
    )


def _check_subtree_groups(groups: list[RequestGroup], same_subtree: list[frozenset[str]]) -> None:
    """From 1.36: at least one group with resources, resourceless groups only inside
    ``same_subtree``, and every suffix there names a group (step 3)."""
    resourceless = [g.label for g in groups if not g.resources]
    if len(resourceless) == len(groups):
        raise QueryMissingValue("There must be at least one resources or resources[$S] parameter.")
    in_subtree = set().union(*same_subtree) if same_subtree else set()
    bad = [s for s in resourceless if s not in in_subtree]
    if bad:
        raise QueryBadValue(
            "Resourceless suffixed group request should be specified in `same_subtree` query"
            f" param: bad group(s) - {bad!r}."
        )
    known = [g.label for g in groups]
    missing = [s for s in sorted(in_subtree) if s not in known]
    if missing:
        raise QueryBadValue(
            f"Real suffixes should be specified in `same_subtree`: {missing!r} not found in"
            f" {known!r}."
        )


def _check_groups_have_resources(groups: list[RequestGroup]) -> None:
    """Before 1.36: traits and member_of only with resources, every group with resources, at
    least one group (step 3)."""
    orphans = [
        f"required{g.label}"
        for g in groups
        if not g.resources and (g.required_traits or g.any_traits)
    ]
    if orphans:
        raise BadRequest(
            "All traits parameters must be associated with resources.  Found the following"
            " orphaned traits keys: " + ", ".join(orphans)
        )
    orphans = [
        f"member_of{g.label}"
        for g in groups
        if not g.resources and (g.member_of or g.forbidden_aggregates)
    ]
    if orphans:
        raise BadRequest(
            "All member_of parameters must be associated with resources. Found the following"
            " orphaned member_of keys: " + ", ".join(orphans)
        )
    if not all(g.resources for g in groups):
        raise BadRequest("All request groups must specify resources.")
    if not groups:
        raise BadRequest("At least one request group (`resources` or `resources{$S}`) is required.")


def _check_conflicts(
    groups: list[RequestGroup], group_policy: GroupPolicy | None, version: mv.Microversion
) -> None:
    """Required traits that are also forbidden; ``group_policy`` with several suffixed groups
    (step 4)."""
    if version >= mv.FORBIDDEN_TRAITS:
        conflicts = []
        for g in groups:
            sets = [frozenset({t}) for t in g.required_traits] + list(g.any_traits)
            for names in sets:
                if names <= g.forbidden_traits:
                    conflicts.append(f"required{g.label}: ({', '.join(sorted(names))})")
        if conflicts:
            raise BadRequest(
                "Conflicting required and forbidden traits found in the following traits keys: "
                + ", ".join(sorted(conflicts))
            )
    if group_policy is None and sum(1 for g in groups if g.suffix is not None) > 1:
        raise BadRequest(
            'The "group_policy" parameter is required when specifying more than one'
            ' "resources{N}" parameter.'
        )


def parse_candidate_query(
    pairs: Sequence[tuple[str, str]], version: mv.Microversion
) -> CandidateQuery:
    """Parse ``pairs`` (the query string, in order, repeats kept) at ``version``.

    Returns the ``CandidateQuery``: groups in order of first appearance (unsuffixed ``suffix``
    ``None``), ``limit`` (first value, an int >= 1), ``group_policy``, ``same_subtree`` sets,
    ``root_required`` / ``root_forbidden``. Raises ``BadRequest`` (``placement.undefined_code``),
    ``QueryBadValue``, ``QueryMissingValue`` or ``QueryDuplicateKey`` with Placement's messages,
    in the order of the module docstring's steps.
    """
    _check_keys([k for k, _ in pairs], version)
    _check_last_values(pairs)
    limits = _all(pairs, "limit")
    limit = _parse_limit(limits[0]) if limits else None
    group_policy = _parse_group_policy(pairs)
    root_required: frozenset[str] = frozenset()
    root_forbidden: frozenset[str] = frozenset()
    root_values = _all(pairs, "root_required")
    if root_values:
        root_required, root_forbidden = _parse_root_required(root_values)
    same_subtree = _parse_same_subtree(pairs)
    groups = _parse_groups(pairs, version)
    if version >= mv.SAME_SUBTREE:
        _check_subtree_groups(groups, same_subtree)
    else:
        _check_groups_have_resources(groups)
    _check_conflicts(groups, group_policy, version)
    return CandidateQuery(
        groups=tuple(groups),
        group_policy=group_policy,
        same_subtree=tuple(same_subtree),
        root_required=root_required,
        root_forbidden=root_forbidden,
        limit=limit,
    )


_JSON_GROUP_KEY = re.compile(rf"^({'|'.join(_PREFIXES)})({_ARBITRARY})?$")
_JSON_GLOBAL = ("group_policy", "root_required", "same_subtree")


def query_from_json(params: Mapping[str, str | list[str]]) -> CandidateQuery:
    """The ``CandidateQuery`` of GET parameters given as JSON (a list where a parameter
    repeats), through ``parse_candidate_query`` at ``mv.MAX_VERSION``: the request-wide
    parameters first, then each group's, unsuffixed group first and the others by suffix (the
    groups' order). ``limit`` belongs to the body, not here.

    Raises ``BadRequest`` (400) for a parameter name that is not a group's or one of
    ``group_policy``, ``root_required``, ``same_subtree``, for an empty list of values, and
    what ``parse_candidate_query`` raises.
    """
    pairs: list[tuple[str, str]] = []
    grouped: dict[str, list[tuple[str, str]]] = {}
    for name, value in params.items():
        values = value if isinstance(value, list) else [value]
        if not values:
            raise BadRequest(f"{_INVALID}: '{name}' has no value")
        match = _JSON_GROUP_KEY.match(name)
        if match is None:
            if name not in _JSON_GLOBAL:
                raise BadRequest(f"{_INVALID}: '{name}' is not allowed")
            pairs.extend((name, v) for v in values)
            continue
        grouped.setdefault(match.group(2) or "", []).extend((name, v) for v in values)
    for suffix in sorted(grouped, key=lambda s: (s != "", s)):
        pairs.extend(grouped[suffix])
    return parse_candidate_query(pairs, mv.MAX_VERSION)
