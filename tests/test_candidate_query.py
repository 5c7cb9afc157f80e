"""The query-string parser of GET /allocation_candidates (pure; Placement's messages and codes)."""

from __future__ import annotations

import pytest

from placement_numa.api import microversion as mv
from placement_numa.api.candidate_query import parse_candidate_query
from placement_numa.errors import BadRequest

V = mv.Microversion.parse


def parse(qs: str, version: str = "1.39"):  # type: ignore[no-untyped-def]
    pairs = [tuple(p.split("=", 1)) for p in qs.split("&") if p]
    return parse_candidate_query(pairs, V(version))  # type: ignore[arg-type]


def test_nova_spec_two_cell_query() -> None:
    q = parse(
        "resources_MEM1=MEMORY_MB:4096&required_MEM1=MEMORY_PAGE_SIZE_SMALL"
        "&resources_PROC1=VCPU:4&required_NUMA1=HW_NUMA_ROOT&same_subtree=_MEM1,_PROC1,_NUMA1"
        "&resources_MEM2=MEMORY_MB:4096&required_MEM2=MEMORY_PAGE_SIZE_SMALL"
        "&resources_PROC2=VCPU:4&required_NUMA2=HW_NUMA_ROOT&same_subtree=_MEM2,_PROC2,_NUMA2"
        "&group_policy=none&limit=5&root_required=!HW_NON_NUMA",
        "1.36",
    )
    assert [g.suffix for g in q.groups] == [
        "_MEM1",
        "_PROC1",
        "_NUMA1",
        "_MEM2",
        "_PROC2",
        "_NUMA2",
    ]
    assert q.group("_NUMA1").resources == {}  # type: ignore[union-attr]
    assert q.group("_NUMA1").required_traits == {"HW_NUMA_ROOT"}  # type: ignore[union-attr]
    assert q.same_subtree == ({"_MEM1", "_PROC1", "_NUMA1"}, {"_MEM2", "_PROC2", "_NUMA2"})
    assert (q.group_policy, q.limit, q.root_forbidden) == ("none", 5, {"HW_NON_NUMA"})


def test_unsuffixed_group_with_everything() -> None:
    agg1, agg2 = "11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"
    q = parse(
        f"resources=VCPU:1,DISK_GB:2&required=A,!B&required=in:C,D&member_of=in:{agg1},{agg2}"
        f"&member_of=!{agg1}&in_tree={agg2}"
    )
    (g,) = q.groups
    assert g.suffix is None and g.resources == {"VCPU": 1, "DISK_GB": 2}
    assert (g.required_traits, g.forbidden_traits, g.any_traits) == ({"A"}, {"B"}, ({"C", "D"},))
    assert g.member_of == ({agg1, agg2},) and g.forbidden_aggregates == {agg1}
    assert g.in_tree == agg2


@pytest.mark.parametrize(
    ("version", "qs", "code", "start"),
    [
        (
            "1.10",
            "",
            "placement.undefined_code",
            "Invalid query string parameters: 'resources' is a required",
        ),
        (
            "1.10",
            "resources=VCPU:1&limit=1",
            "placement.undefined_code",
            "Invalid query string parameters: Additional properties",
        ),
        (
            "1.16",
            "resources=VCPU:1&limit=0",
            "placement.undefined_code",
            "Invalid query string parameters: '0' does not match",
        ),
        (
            "1.25",
            "resources_A=VCPU:1",
            "placement.undefined_code",
            "Invalid query string parameters: 'resources_A' does not match",
        ),
        (
            "1.25",
            "resources1=VCPU:1&resources2=VCPU:1",
            "placement.undefined_code",
            'The "group_policy" parameter is required',
        ),
        (
            "1.33",
            "resources_A=VCPU:1&group_policy=x",
            "placement.undefined_code",
            "Invalid query string parameters: 'x' is not one of",
        ),
        (
            "1.25",
            "required1=A",
            "placement.undefined_code",
            "All traits parameters must be associated",
        ),
        (
            "1.25",
            "member_of1=11111111-1111-1111-1111-111111111111",
            "placement.undefined_code",
            "All member_of parameters",
        ),
        (
            "1.31",
            "in_tree1=11111111-1111-1111-1111-111111111111",
            "placement.undefined_code",
            "All request groups must specify resources.",
        ),
        ("1.25", "", "placement.undefined_code", "At least one request group"),
        ("1.36", "", "placement.query.missing_value", "There must be at least one resources"),
        (
            "1.36",
            "resources=VCPU:1&required_A=X",
            "placement.query.bad_value",
            "Resourceless suffixed group request",
        ),
        (
            "1.36",
            "resources=VCPU:1&same_subtree=_A",
            "placement.query.bad_value",
            "Real suffixes should be specified",
        ),
        (
            "1.36",
            "resources=VCPU:1&same_subtree=,_A",
            "placement.query.bad_value",
            "Empty string (unsuffixed group)",
        ),
        (
            "1.35",
            "resources=VCPU:1&root_required=A&root_required=B",
            "placement.query.duplicate_key",
            "Query parameter 'root_required' may be",
        ),
        (
            "1.35",
            "resources=VCPU:1&root_required=A,!A",
            "placement.query.bad_value",
            "Conflicting required and forbidden traits found in root_required: A",
        ),
        (
            "1.22",
            "resources=VCPU:1&required=A,!A",
            "placement.undefined_code",
            "Conflicting required and forbidden traits found in the following traits keys:"
            " required: (A)",
        ),
        (
            "1.39",
            "resources=VCPU:0",
            "placement.undefined_code",
            "Requested resource VCPU requires amount >= 1",
        ),
    ],
    ids=lambda value: value if isinstance(value, str) and len(value) < 30 else None,
)
def test_errors(version: str, qs: str, code: str, start: str) -> None:
    with pytest.raises(BadRequest) as caught:
        parse(qs, version)
    assert caught.value.code == code
    assert caught.value.detail.startswith(start), caught.value.detail


def test_first_limit_and_policy_win_but_last_are_validated() -> None:
    q = parse("resources=VCPU:1&limit=3&limit=7&group_policy=isolate&group_policy=none", "1.25")
    assert (q.limit, q.group_policy) == (3, "isolate")
