"""Q-complex: enumeration and count C(Q+R-1, R-1), with bounds."""

from math import comb

import numpy as np
import pytest
from hypothesis import given, strategies as st

from evalcert.errors import InputError
from evalcert.logic import iter_qcomplex, qcomplex_array, qcomplex_size


def test_mtbench_qcomplex_has_351_keys():
    assert qcomplex_size(25, 3) == 351 == len(list(iter_qcomplex(25, 3)))


@given(st.integers(1, 12), st.integers(2, 4), st.data())
def test_count_enumeration_and_array_agree_with_bounds(n, r, data):
    lower = data.draw(st.lists(st.integers(0, 3), min_size=r, max_size=r))
    upper = [lo + data.draw(st.integers(0, n)) for lo in lower]
    if not sum(lower) <= n <= sum(min(u, n) for u in upper):
        with pytest.raises(InputError):
            qcomplex_size(n, r, lower, upper)
        return
    keys = list(iter_qcomplex(n, r, lower, upper))
    brute = [k for k in iter_qcomplex(n, r)
             if all(lo <= v <= up for v, lo, up in zip(k, lower, upper))]
    assert keys == brute
    assert qcomplex_size(n, r, lower, upper) == len(keys)
    assert np.array_equal(qcomplex_array(n, r, lower, upper), np.array(keys).reshape(-1, r))


def test_unbounded_count_is_binomial():
    assert all(qcomplex_size(q, r) == comb(q + r - 1, r - 1) for q in (1, 7, 30) for r in (2, 3, 5))
