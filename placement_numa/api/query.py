"""Query-string value parsers, shared by ``GET /resource_providers`` and the candidate search.

Pure functions: they take the raw values of one parameter (and the microversion where the
grammar changed) and return frozen values from ``placement_numa.domain.filters``, or raise
``placement_numa.errors`` classes carrying Placement's messages and codes. They never raise HTTP
exceptions and know nothing about request group suffixes beyond naming them in messages.

Placement reports all of these problems as 400 ``placement.undefined_code`` (``BadRequest``);
the ``placement.query.*`` codes belong to the candidate request parser.

Grammar (OpenStack Placement 1.0-1.39):

* ``resources=VCPU:2,MEMORY_MB:512``: class:amount pairs, amounts integers >= 1;
* ``required=A,!B`` (``!`` from 1.22), ``required=in:C,D`` and repeated ``required`` (1.39;
  before, only the last value counts);
* ``member_of=<uuid>`` / ``in:<uuid>,<uuid>``, repeated (ANDed) from 1.24, ``!<uuid>`` /
  ``!in:<uuid>,...`` from 1.32;
* ``in_tree=<uuid>``.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Iterable, Sequence

from placement_numa.api import microversion as mv
from placement_numa.domain.aggregates import kept_aggregate_uuid
from placement_numa.domain.filters import MemberOf, RequiredTraits
from placement_numa.errors import BadRequest

__all__ = [
    "is_uuid_like",
    "is_dashed_uuid",
    "check_uuid_param",
    "check_allowed_params",
    "parse_resources",
    "MAX_AMOUNT",
    "parse_required",
    "parse_member_of",
    "parse_in_tree",
]

_INVALID = "Invalid query string parameters"
# Largest amount a query may ask for: a signed 64-bit integer, the range of the databases'
# BIGINT (no capacity can exceed it; a larger value cannot even be compared in SQL).
MAX_AMOUNT = 2**63 - 1
_RESOURCES_FORM = (
    "Badly formed resources parameter. Expected resources query string parameter in form: "
    "?resources=VCPU:2,MEMORY_MB:1024. Got: {got}."
)


def is_uuid_like(value: str) -> bool:
    """True when ``value`` reads as a uuid (hex digits, with or without dashes, braces or a
    ``urn:uuid:`` prefix), as oslo.utils ``is_uuid_like`` decides."""
    try:
        parsed = uuidlib.UUID(value)
    except (TypeError, ValueError, AttributeError):
        return False
    plain = value.lower()
    for prefix in ("urn:", "uuid:"):
        plain = plain.replace(prefix, "")
    plain = plain.strip("{}").replace("-", "")
    return parsed.hex == plain


def is_dashed_uuid(value: str) -> bool:
    """True when ``value`` is a uuid in its 36-character dashed form (any case): jsonschema's
    ``uuid`` format, which Placement's query-string schemas use."""
    try:
        uuidlib.UUID(value)
    except (TypeError, ValueError, AttributeError):
        return False
    return len(value) == 36 and all(value[i] == "-" for i in (8, 13, 18, 23))


def check_uuid_param(name: str, value: str) -> str:
    """Validate a query parameter declared as a uuid in Placement's query schema.

    Placement checks these with jsonschema's ``uuid`` format: the dashed form only (any case),
    so 32 hex digits without dashes are refused here although bodies accept them. Returns
    ``value`` unchanged; raises ``BadRequest`` ("Invalid query string parameters: 'x' is not a
    'uuid'  Failed validating 'format' in schema['properties']['<name>']: ... On
    instance['<name>']: 'x'", Placement's text) otherwise.
    """
    if not is_dashed_uuid(value):
        raise BadRequest(
            f"{_INVALID}: {value!r} is not a 'uuid'  Failed validating 'format' in"
            f" schema['properties'][{name!r}]:     {{'type': 'string', 'format': 'uuid'}}"
            f"  On instance[{name!r}]:     {value!r}"
        )
    return value


def check_allowed_params(names: Iterable[str], allowed: Iterable[str]) -> None:
    """Reject query parameters outside ``allowed`` (Placement's ``additionalProperties: false``).

    Raises ``BadRequest`` naming the unexpected parameters (worded as Placement's jsonschema
    error, which clients match on).
    """
    allowed_set = set(allowed)
    unexpected: list[str] = []
    for name in names:
        if name not in allowed_set and name not in unexpected:
            unexpected.append(name)
    if unexpected:
        listed = ", ".join(f"'{name}'" for name in sorted(unexpected))
        verb = "was" if len(unexpected) == 1 else "were"
        raise BadRequest(
            f"{_INVALID}: Additional properties are not allowed ({listed} {verb} unexpected)"
            "  Failed validating 'additionalProperties' in schema"
        )


def parse_resources(text: str) -> dict[str, int]:
    """Parse ``"VCPU:2,MEMORY_MB:512"`` into ``{"VCPU": 2, "MEMORY_MB": 512}``.

    Amounts are integers in the units of their class (CPUs, MiB, GiB, ...). As in Placement, a
    class named twice keeps its last amount; class names are not checked here (the caller looks
    them up). Raises ``BadRequest`` for an empty value, a pair not of the form ``NAME:AMOUNT``,
    a non-integer amount or an amount below 1 or above ``MAX_AMOUNT`` (2**63 - 1).
    """
    if text.strip() == "":
        raise BadRequest(_RESOURCES_FORM.format(got="empty string"))
    result: dict[str, int] = {}
    for pair in text.split(","):
        parts = pair.split(":")
        if len(parts) != 2:
            raise BadRequest(_RESOURCES_FORM.format(got=pair))
        name, raw_amount = parts
        try:
            if len(raw_amount) > 40:  # int() would work in proportion to the digits sent
                raise ValueError(raw_amount)
            amount = int(raw_amount)
        except ValueError:
            raise BadRequest(
                f"Requested resource {name} expected positive integer amount. Got: {raw_amount}."
            ) from None
        if amount < 1:
            raise BadRequest(f"Requested resource {name} requires amount >= 1. Got: {amount}.")
        if amount > MAX_AMOUNT:
            raise BadRequest(
                f"Requested resource {name} requires amount <= {MAX_AMOUNT}. Got: {amount}."
            )
        result[name] = amount
    return result


def _parse_required_value(
    value: str, *, allow_forbidden: bool, allow_any: bool
) -> tuple[list[frozenset[str]], set[str]]:
    """One ``required`` value -> (sets of which one is required each, forbidden names)."""
    if value.startswith("in:"):
        if not allow_any:
            raise BadRequest(
                f"{_INVALID}: The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since"
                f" microversion 1.39. Got: {value}"
            )
        names = {part.strip() for part in value[3:].split(",")}
        if not all(names):
            raise BadRequest(
                f"{_INVALID}: Expected 'required' parameter value of the form:"
                f" in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: {value}"
            )
        if any(name.startswith("!") for name in names):
            raise BadRequest(
                f"{_INVALID}: The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does not support"
                f" forbidden traits. Got: {value}"
            )
        return [frozenset(names)], set()

    names_list = [part.strip() for part in value.split(",")]
    # Placement strips any number of leading '!' (so "!!A" forbids A); kept for compatibility.
    forbidden = {name.lstrip("!") for name in names_list if name.startswith("!")}
    if not all(names_list) or not all(forbidden):
        form = "HW_CPU_X86_VMX,!CUSTOM_MAGIC" if allow_forbidden else "HW_CPU_X86_VMX,CUSTOM_MAGIC"
        raise BadRequest(
            f"{_INVALID}: Expected 'required' parameter value of the form: {form}."
            f" Got an empty trait in: {value}"
        )
    if forbidden and not allow_forbidden:
        raise BadRequest(
            f"{_INVALID}: Expected 'required' parameter value of the form:"
            f" HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: {value}"
        )
    required = [frozenset({name}) for name in names_list if not name.startswith("!")]
    return required, forbidden


def parse_required(values: Sequence[str], version: mv.Microversion) -> RequiredTraits:
    """Parse the values of one ``required`` parameter (``required`` or ``required<suffix>``).

    ``values`` are all occurrences in request order. Before 1.39 only the last one counts and
    ``in:`` is refused; before 1.22 ``!TRAIT`` is refused. A single-name ``in:A`` counts as a
    plain required trait. Trait names are not checked for existence here. Raises
    ``BadRequest`` with Placement's messages for empty names and unsupported forms.
    """
    allow_forbidden = version >= mv.FORBIDDEN_TRAITS
    allow_any = version >= mv.ANY_TRAITS
    chosen = list(values) if allow_any else list(values)[-1:]
    all_of: set[str] = set()
    any_of: list[frozenset[str]] = []
    forbidden: set[str] = set()
    for value in chosen:
        required_sets, forbidden_names = _parse_required_value(
            value, allow_forbidden=allow_forbidden, allow_any=allow_any
        )
        forbidden |= forbidden_names
        for names in required_sets:
            if len(names) == 1:
                all_of |= names
            elif names not in any_of:
                any_of.append(names)
    return RequiredTraits(frozenset(all_of), tuple(any_of), frozenset(forbidden))


def _parse_member_of_value(value: str) -> tuple[frozenset[str], frozenset[str]]:
    """One ``member_of`` value -> (aggregates of which one is required, forbidden aggregates)."""
    if "," in value and not (value.startswith("in:") or value.startswith("!in:")):
        raise BadRequest(
            "Multiple values for 'member_of' must be prefixed with the 'in:' or '!in:' keyword"
            f" using the valid microversion. Got: {value}"
        )
    required: frozenset[str] = frozenset()
    forbidden: frozenset[str] = frozenset()
    if value.startswith("!in:"):
        forbidden = frozenset(value[4:].split(","))
    elif value.startswith("!"):
        forbidden = frozenset({value[1:]})
    elif value.startswith("in:"):
        required = frozenset(value[3:].split(","))
    else:
        required = frozenset({value})
    for aggregate in sorted(required | forbidden):
        if not is_uuid_like(aggregate):
            raise BadRequest(
                f"{_INVALID}: Expected 'member_of' parameter to contain valid UUID(s)."
                f" Got: {aggregate}"
            )
    # Matched as stored: the string the client sent (``domain.aggregates``), as Placement does.
    return (
        frozenset(map(kept_aggregate_uuid, required)),
        frozenset(map(kept_aggregate_uuid, forbidden)),
    )


def parse_member_of(
    values: Sequence[str], version: mv.Microversion, *, suffix: str = ""
) -> MemberOf:
    """Parse the values of one ``member_of`` parameter (``member_of`` or ``member_of<suffix>``).

    ``values`` are all occurrences; each is a uuid, ``in:`` + uuids (one of them required),
    ``!`` + uuid or ``!in:`` + uuids (all forbidden). Repeats are ANDed (1.24+; before, more than
    one is refused); forbidden forms need 1.32. ``suffix`` only names the parameter in messages.
    Raises ``BadRequest`` with Placement's messages.
    """
    if version < mv.MULTI_MEMBER_OF and len(values) > 1:
        raise BadRequest(f"Multiple member_of{suffix} parameters are not supported")
    any_of: list[frozenset[str]] = []
    forbidden: set[str] = set()
    for value in values:
        required, forbidden_here = _parse_member_of_value(value)
        if required:
            any_of.append(required)
        if forbidden_here:
            if version < mv.FORBIDDEN_AGGREGATES:
                raise BadRequest(
                    f"Forbidden member_of{suffix} parameters are not supported in the specified"
                    " microversion"
                )
            forbidden |= forbidden_here
    return MemberOf(tuple(any_of), frozenset(forbidden))


def parse_in_tree(text: str) -> str:
    """Parse an ``in_tree`` value: the uuid of a resource provider (surrounding blanks removed).

    Raises ``BadRequest`` when it is not a uuid.
    """
    value = text.strip()
    if not is_uuid_like(value):
        raise BadRequest(
            f"{_INVALID}: Expected 'in_tree' parameter to be a format of uuid. Got: {text}"
        )
    return value
