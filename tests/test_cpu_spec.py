"""The one CPU-set grammar (Nova's ``parse_cpu_spec``), bounded before expansion (pure)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from placement_numa.numa.cpu_spec import (
    MAX_CPU_ID,
    CpuOutOfRange,
    CpuSpecError,
    format_cpu_spec,
    parse_cpu_spec,
)


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
        ("a", "invalid inclusion expression 'a'"),
        ("7-3", "invalid range expression '7-3'"),
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


@pytest.mark.parametrize(
    ("spec", "max_cpu", "cpu"),
    [
        ("0-99999999", 7, 8),
        ("0-4000000000", 3, 4),
        ("5", 3, 5),
        ("0-3,9-12,^9", 3, 10),
        ("0-3,^0-5,6", 3, 6),
    ],
    ids=["hundred-million", "four-billion", "single", "first-left-after-exclusion", "inside"],
)
def test_inclusions_beyond_the_bound_refused_before_expanding(
    spec: str, max_cpu: int, cpu: int
) -> None:
    with pytest.raises(CpuOutOfRange) as caught:
        parse_cpu_spec(spec, max_cpu=max_cpu)
    assert (caught.value.cpu, caught.value.max_cpu) == (cpu, max_cpu)


def test_exclusions_beyond_the_bound_are_clipped_and_cancel_inclusions() -> None:
    assert parse_cpu_spec("0-5,^4-5", max_cpu=3) == {0, 1, 2, 3}
    assert parse_cpu_spec("0-3,^2-4000000000", max_cpu=3) == {0, 1}
    assert parse_cpu_spec("^0-99999999999") == set()


def test_default_bound() -> None:
    assert max(parse_cpu_spec(f"{MAX_CPU_ID}")) == MAX_CPU_ID
    with pytest.raises(CpuOutOfRange):
        parse_cpu_spec(f"0-{MAX_CPU_ID + 1}")
