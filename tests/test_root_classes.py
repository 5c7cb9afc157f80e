"""``engine.root_classes.distinct`` == ``numpy.unique`` (values, first occurrences, inverse), on
both of its paths: the table for a small key range, the sort for a wide one."""

from __future__ import annotations

import numpy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placement_numa.engine.root_classes import distinct


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=40), max_size=60),
    st.sampled_from((0, 1, 10**6, 2**56)),
)
def test_distinct_equals_numpy_unique(keys: list[int], widen: int) -> None:
    array = numpy.array(keys, dtype=numpy.int64) * (widen or 1)
    top = int(array.max()) + 1 if len(keys) else 1
    values, first, inverse = distinct(array, top)
    expected = numpy.unique(array, return_index=True, return_inverse=True)
    assert values.tolist() == expected[0].tolist()
    assert first.tolist() == expected[1].tolist()
    assert inverse.tolist() == expected[2].reshape(-1).tolist()


def test_distinct_refuses_a_negative_range() -> None:
    with pytest.raises(ValueError, match="top must not be negative"):
        distinct(numpy.zeros(1, dtype=numpy.int64), -1)
