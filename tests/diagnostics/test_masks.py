"""Masking schemes of Sec. 3.7.1."""

import numpy as np
import pytest

from evalcert.diagnostics.masks import (column_holdout_mask, entrywise_mask, held_out_columns,
                                        held_out_rows, l_mask, row_holdout_mask)
from evalcert.errors import InputError


def test_entrywise_fraction_and_observed_only():
    obs = np.random.default_rng(0).random((100, 200)) < 0.9
    m = entrywise_mask((100, 200), 0.2, seed=1, observed=obs)
    assert not (m & ~obs).any()
    assert abs(m.sum() / obs.sum() - 0.2) < 0.01


def test_row_holdout_exposes_a_share_of_test_rows_only():
    m = row_holdout_mask((50, 100), 0.2, exposure=0.3, seed=2)
    rows = held_out_rows(m)
    assert rows.sum() == 10 and not m[~rows].any()
    assert abs(1 - m[rows].mean() - 0.3) < 0.05


def test_column_holdout_is_the_transpose():
    m = column_holdout_mask((40, 30), 0.2, 0.3, seed=3)
    assert held_out_columns(m).sum() == 6 and not m[:, ~held_out_columns(m)].any()
    assert np.array_equal(m, row_holdout_mask((30, 40), 0.2, 0.3, seed=3).T)


def test_l_mask_is_a_block():
    m = l_mask((20, 30), 0.25, 0.2, seed=4)
    r, c = held_out_rows(m), held_out_columns(m)
    assert np.array_equal(m, r[:, None] & c[None, :]) and r.sum() == 5 and c.sum() == 6


def test_same_seed_same_mask_and_generator_accepted():
    assert np.array_equal(entrywise_mask((9, 9), 0.3, seed=5), entrywise_mask((9, 9), 0.3, 5))
    assert entrywise_mask((9, 9), 0.3, np.random.default_rng(5)).shape == (9, 9)


@pytest.mark.parametrize("call", [
    lambda: entrywise_mask((3, 4), 1.5),
    lambda: entrywise_mask((3, -4), 0.2),
    lambda: row_holdout_mask((3, 4), 0.2, exposure=0.0),
    lambda: entrywise_mask((3, 4), 0.2, observed=np.ones((4, 3), bool)),
    lambda: l_mask((1, 4), 0.5, 0.5),
])
def test_bad_shapes_and_fractions_raise(call):
    with pytest.raises(InputError):
        call()
