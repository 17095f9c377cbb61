"""d-core connectivity (paper 000, Sec. 4.4, App. D.2)."""

from __future__ import annotations

import numpy as np
import pytest

from evalcert.diagnostics.connectivity import components, dcore_mask, enforce_dcore
from evalcert.errors import ConnectivityError, InputError


def test_dcore_prunes_rows_and_columns_below_d():
    mask = np.ones((5, 6), bool)
    mask[0, 1:] = False            # row 0 has one cell
    core = dcore_mask(mask, 3)
    assert not core[0].any() and core[1:].all()


def test_top_up_reaches_degree_d_and_one_component_from_the_pool():
    rng = np.random.default_rng(0)
    mask = rng.random((10, 30)) < 0.05
    pool = ~mask
    out = enforce_dcore(mask, 3, "top_up", pool=pool, seed=1)
    assert out.satisfied and not out.satisfied_before
    assert out.mask.sum(axis=1).min() >= 3 and out.mask.sum(axis=0).min() >= 3
    added = np.zeros_like(mask)
    added[tuple(out.added_cells.T)] = True
    assert np.array_equal(out.mask, mask | added) and not (added & ~pool).any()
    assert out.n_cells_after == mask.sum() + out.n_added
    assert "d-core >= 3" in out.summary()


def test_top_up_bridges_two_components():
    mask = np.zeros((6, 6), bool)
    mask[:3, :3] = mask[3:, 3:] = True
    out = enforce_dcore(mask, 3, "top_up", pool=~mask, seed=0)
    assert out.n_components == 1 and out.n_added >= 1


def test_top_up_is_seeded():
    mask = np.eye(8, dtype=bool)
    a = enforce_dcore(mask, 2, pool=np.ones((8, 8), bool), seed=4)
    b = enforce_dcore(mask, 2, pool=np.ones((8, 8), bool), seed=4)
    assert np.array_equal(a.mask, b.mask)


def test_dcore_impossible_with_the_pool_is_a_connectivity_error():
    mask = np.zeros((4, 4), bool)
    pool = np.zeros((4, 4), bool)
    pool[:, :2] = True
    with pytest.raises(ConnectivityError, match="impossible with this pool"):
        enforce_dcore(mask, 3, "top_up", pool=pool)


def test_prune_keeps_the_largest_component_of_the_dcore():
    mask = np.zeros((7, 7), bool)
    mask[:4, :4] = True
    mask[4:, 4:] = True
    mask[6, 6] = False
    out = enforce_dcore(mask, 2, "prune")
    assert out.removed_rows == (4, 5, 6) and out.removed_cols == (4, 5, 6)
    assert out.satisfied and out.n_added == 0


def test_empty_core_and_bad_arguments():
    with pytest.raises(ConnectivityError, match="empty"):
        enforce_dcore(np.eye(3, dtype=bool), 2, "prune")
    with pytest.raises(InputError, match="pool"):
        enforce_dcore(np.eye(3, dtype=bool), 2, "top_up")
    with pytest.raises(InputError, match="boolean"):
        enforce_dcore(np.eye(3), 2, "prune")
    with pytest.raises(InputError, match="method"):
        enforce_dcore(np.eye(3, dtype=bool), 1, "grow")


def test_components_label_the_largest_zero():
    mask = np.zeros((3, 3), bool)
    mask[0, 0] = True
    mask[1:, 1:] = True
    rows, cols = components(mask)
    assert list(rows) == [1, 0, 0] and list(cols) == [1, 0, 0]
