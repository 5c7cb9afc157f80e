"""Unit tests of the query-string value parsers (pure; run once, no database)."""

from __future__ import annotations

import pytest

from placement_numa.api import microversion as mv
from placement_numa.api.query import (
    check_allowed_params,
    check_uuid_param,
    is_uuid_like,
    parse_in_tree,
    parse_member_of,
    parse_required,
    parse_resources,
)
from placement_numa.domain.filters import MemberOf, RequiredTraits
from placement_numa.errors import BadRequest

V = mv.Microversion
A1 = "11111111-1111-1111-1111-111111111111"
A2 = "22222222-2222-2222-2222-222222222222"
A3 = "33333333-3333-3333-3333-333333333333"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("VCPU:2", {"VCPU": 2}),
        ("VCPU:2,MEMORY_MB:512", {"VCPU": 2, "MEMORY_MB": 512}),
        ("VCPU:1,VCPU:3", {"VCPU": 3}),  # Placement: the last amount wins
        ("CUSTOM_X: 4", {"CUSTOM_X": 4}),
    ],
    ids=["one", "two", "repeated-class-last-wins", "blank-before-amount"],
)
def test_parse_resources(text: str, expected: dict[str, int]) -> None:
    assert parse_resources(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Got: empty string."),
        ("  ", "Got: empty string."),
        (
            "VCPU",
            "Badly formed resources parameter. Expected resources query string parameter in"
            " form: ?resources=VCPU:2,MEMORY_MB:1024. Got: VCPU.",
        ),
        ("VCPU:1:2", "Got: VCPU:1:2."),
        ("VCPU:1,", "Got: ."),
        ("VCPU:x", "Requested resource VCPU expected positive integer amount. Got: x."),
        ("VCPU:1.5", "expected positive integer amount. Got: 1.5."),
        ("VCPU:0", "Requested resource VCPU requires amount >= 1. Got: 0."),
        ("VCPU:-3", "requires amount >= 1. Got: -3."),
    ],
    ids=[
        "empty",
        "blank",
        "no-amount",
        "two-colons",
        "trailing-comma",
        "not-int",
        "float",
        "zero",
        "negative",
    ],
)
def test_parse_resources_errors(text: str, message: str) -> None:
    with pytest.raises(BadRequest) as info:
        parse_resources(text)
    assert message in info.value.detail
    assert info.value.code == "placement.undefined_code"
    assert info.value.status == 400


@pytest.mark.parametrize(
    ("values", "version", "expected"),
    [
        (["A,B"], "1.18", RequiredTraits(frozenset({"A", "B"}))),
        (["A", "B"], "1.38", RequiredTraits(frozenset({"B"}))),  # last one only before 1.39
        (["A", "B"], "1.39", RequiredTraits(frozenset({"A", "B"}))),
        (["A,!B"], "1.22", RequiredTraits(frozenset({"A"}), (), frozenset({"B"}))),
        (["!!B"], "1.22", RequiredTraits(forbidden=frozenset({"B"}))),
        ([" A , B "], "1.18", RequiredTraits(frozenset({"A", "B"}))),
        (["in:C,D"], "1.39", RequiredTraits(any_of=(frozenset({"C", "D"}),))),
        (["in:C"], "1.39", RequiredTraits(frozenset({"C"}))),
        (
            ["in:C,D", "in:D,C", "A,!B"],
            "1.39",
            RequiredTraits(frozenset({"A"}), (frozenset({"C", "D"}),), frozenset({"B"})),
        ),
    ],
    ids=[
        "comma",
        "repeat-before-1.39",
        "repeat-1.39",
        "forbidden",
        "double-bang",
        "blanks",
        "any-of",
        "any-of-single",
        "mixed",
    ],
)
def test_parse_required(values: list[str], version: str, expected: RequiredTraits) -> None:
    assert parse_required(values, V.parse(version)) == expected


@pytest.mark.parametrize(
    ("values", "version", "message"),
    [
        (
            [""],
            "1.18",
            "Expected 'required' parameter value of the form: HW_CPU_X86_VMX,"
            "CUSTOM_MAGIC. Got an empty trait in: ",
        ),
        ([""], "1.22", "of the form: HW_CPU_X86_VMX,!CUSTOM_MAGIC. Got an empty trait in: "),
        (["A,,B"], "1.39", "Got an empty trait in: A,,B"),
        (["!"], "1.39", "Got an empty trait in: !"),
        (
            ["!B"],
            "1.21",
            "Expected 'required' parameter value of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: !B",
        ),
        (
            ["in:A,B"],
            "1.38",
            "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since"
            " microversion 1.39. Got: in:A,B",
        ),
        (["in:A,"], "1.39", "in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: in:A,"),
        (["in:A,!B"], "1.39", "does not support forbidden traits. Got: in:A,!B"),
        (["!B", "A"], "1.21", None),  # only the last counts before 1.39: no error
    ],
    ids=[
        "empty-1.18",
        "empty-1.22",
        "empty-middle",
        "bang-only",
        "forbidden-before-1.22",
        "in-before-1.39",
        "in-empty",
        "in-forbidden",
        "earlier-ignored",
    ],
)
def test_parse_required_errors(values: list[str], version: str, message: str | None) -> None:
    if message is None:
        assert parse_required(values, V.parse(version)) == RequiredTraits(frozenset({"A"}))
        return
    with pytest.raises(BadRequest) as info:
        parse_required(values, V.parse(version))
    assert message in info.value.detail
    assert info.value.detail.startswith("Invalid query string parameters: ")


def test_required_traits_helpers() -> None:
    traits = RequiredTraits(frozenset({"B", "A"}), (frozenset({"C", "D"}),), frozenset({"E"}))
    assert traits.names == {"A", "B", "C", "D", "E"}
    assert traits.required_sets == (frozenset({"A"}), frozenset({"B"}), frozenset({"C", "D"}))
    assert traits and not RequiredTraits()


@pytest.mark.parametrize(
    ("values", "version", "expected"),
    [
        ([A1], "1.3", MemberOf((frozenset({A1}),))),
        ([f"in:{A1},{A2}"], "1.3", MemberOf((frozenset({A1, A2}),))),
        ([A1, f"in:{A2},{A3}"], "1.24", MemberOf((frozenset({A1}), frozenset({A2, A3})))),
        ([f"!{A1}"], "1.32", MemberOf(forbidden=frozenset({A1}))),
        (
            [f"!in:{A1},{A2}", f"!{A3}", A2],
            "1.32",
            MemberOf((frozenset({A2}),), frozenset({A1, A2, A3})),
        ),
        (
            [A1.replace("-", "").upper()],
            "1.3",
            MemberOf((frozenset({A1.replace("-", "").upper()}),)),
        ),
    ],
    ids=["one", "in", "repeat-and", "forbidden", "forbidden-in", "undashed-upper"],
)
def test_parse_member_of(values: list[str], version: str, expected: MemberOf) -> None:
    assert parse_member_of(values, V.parse(version)) == expected


@pytest.mark.parametrize(
    ("values", "version", "suffix", "message"),
    [
        ([A1, A2], "1.23", "", "Multiple member_of parameters are not supported"),
        ([A1, A2], "1.23", "_X", "Multiple member_of_X parameters are not supported"),
        (
            [f"!{A1}"],
            "1.31",
            "",
            "Forbidden member_of parameters are not supported in the specified microversion",
        ),
        (
            [f"{A1},{A2}"],
            "1.39",
            "",
            "Multiple values for 'member_of' must be prefixed with the"
            " 'in:' or '!in:' keyword using the valid microversion. Got: ",
        ),
        (
            ["abc"],
            "1.3",
            "",
            "Invalid query string parameters: Expected 'member_of' parameter to"
            " contain valid UUID(s). Got: abc",
        ),
        ([f"in:{A1},"], "1.3", "", "contain valid UUID(s). Got: "),
        (["!in:x"], "1.39", "", "Got: x"),
        (["in:"], "1.39", "", "contain valid UUID(s). Got: "),
    ],
    ids=[
        "repeat-before-1.24",
        "repeat-suffix",
        "forbidden-before-1.32",
        "comma-no-in",
        "not-uuid",
        "empty-in-member",
        "forbidden-not-uuid",
        "in-empty",
    ],
)
def test_parse_member_of_errors(values: list[str], version: str, suffix: str, message: str) -> None:
    with pytest.raises(BadRequest) as info:
        parse_member_of(values, V.parse(version), suffix=suffix)
    assert message in info.value.detail
    assert info.value.code == "placement.undefined_code"


def test_parse_in_tree() -> None:
    assert parse_in_tree(f" {A1} ") == A1
    with pytest.raises(BadRequest) as info:
        parse_in_tree("nope")
    assert info.value.detail == (
        "Invalid query string parameters: Expected 'in_tree' parameter to be a format of uuid."
        " Got: nope"
    )


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (A1, True),
        (A1.upper(), True),
        (A1.replace("-", ""), True),
        ("{" + A1 + "}", True),
        ("urn:uuid:" + A1, True),
        ("abc", False),
        ("", False),
        (A1 + "0", False),
        (" " + A1, False),
    ],
    ids=["dashed", "upper", "no-dashes", "braces", "urn", "short", "empty", "long", "blank"],
)
def test_is_uuid_like(value: str, ok: bool) -> None:
    assert is_uuid_like(value) is ok


def test_check_params() -> None:
    check_allowed_params(["name", "uuid", "name"], {"name", "uuid"})
    with pytest.raises(BadRequest) as info:
        check_allowed_params(["name", "foo"], {"name"})
    assert info.value.detail == (
        "Invalid query string parameters: Additional properties are not allowed"
        " ('foo' was unexpected)  Failed validating 'additionalProperties' in schema"
    )
    assert check_uuid_param("uuid", A1) == A1
    with pytest.raises(BadRequest) as info:
        check_uuid_param("uuid", "abc")
    assert info.value.detail == (
        "Invalid query string parameters: 'abc' is not a 'uuid'  Failed validating 'format' in"
        " schema['properties']['uuid']:     {'type': 'string', 'format': 'uuid'}  On"
        " instance['uuid']:     'abc'"
    )
    with pytest.raises(BadRequest):  # jsonschema's uuid format, as Placement: dashes required
        check_uuid_param("uuid", A1.replace("-", ""))
