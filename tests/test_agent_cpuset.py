"""Nova's CPU spec syntax (pure)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from placement_numa.agent.cpuset import CpuSpecError, format_cpu_spec, parse_cpu_spec


@pytest.mark.parametrize(
    ("spec", "cpus"),
    [
        ("", set()),
        ("3", {3}),
        ("0-3", {0, 1, 2, 3}),
        ("4-15,^8", set(range(4, 16)) - {8}),
        ("^8,4-15", set(range(4, 16)) - {8}),
        ("0-7,^2-3", {0, 1, 4, 5, 6, 7}),
        (" 1 , 2,,5-6 ", {1, 2, 5, 6}),
        ("0-3,^0-3", set()),
        ("1,1,1-2", {1, 2}),
    ],
    ids=[
        "empty",
        "one",
        "range",
        "exclusion",
        "exclusion-first",
        "excluded-range",
        "blanks",
        "all-excluded",
        "repeats",
    ],
)
def test_parse(spec: str, cpus: set[int]) -> None:
    assert parse_cpu_spec(spec) == cpus


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("a", "'a' is not a CPU number"),
        ("7-3", "range '7-3' ends before it starts"),
        ("3-", "'3-'"),
        ("^", "'^'"),
        ("1-2-3", "'1-2-3'"),
        ("-1", "'-1'"),
        ("^^1", "'^^1'"),
    ],
    ids=[
        "letter",
        "reversed",
        "open-range",
        "bare-caret",
        "double-range",
        "negative",
        "double-caret",
    ],
)
def test_parse_errors_name_the_item(spec: str, message: str) -> None:
    with pytest.raises(CpuSpecError, match=message.replace("^", r"\^").replace("-", r"\-")):
        parse_cpu_spec(spec)


@pytest.mark.parametrize(
    ("cpus", "spec"),
    [(set(), ""), ({5}, "5"), ({0, 1, 2, 5}, "0-2,5"), ({9, 3, 4, 10, 11}, "3-4,9-11")],
    ids=["empty", "one", "range-and-one", "unsorted"],
)
def test_format(cpus: set[int], spec: str) -> None:
    assert format_cpu_spec(cpus) == spec


@given(st.frozensets(st.integers(min_value=0, max_value=300)))
def test_format_then_parse_round_trips(cpus: frozenset[int]) -> None:
    assert parse_cpu_spec(format_cpu_spec(cpus)) == cpus
