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


# ------------------------------------------------ on cells == dense (issue 13, item 3)
import scipy.sparse as sp  # noqa: E402
from scipy.sparse.csgraph import connected_components  # noqa: E402

from evalcert.data import ScoreMatrix  # noqa: E402
from evalcert.diagnostics.connectivity import dcore_cells, enforce_dcore_cells  # noqa: E402


def _dense_components(mask):
    """The pre-cells dense implementation, kept as the reference."""
    K, J = mask.shape
    r, c = np.nonzero(mask)
    graph = sp.coo_matrix((np.ones(len(r)), (r, K + c)), shape=(K + J, K + J))
    n, labels = connected_components(graph, directed=False)
    relabel = np.empty(n, dtype=int)
    relabel[np.argsort(-np.bincount(labels, minlength=n), kind="stable")] = np.arange(n)
    return relabel[labels][:K], relabel[labels][K:]


def _dense_dcore(mask, d):
    core = mask.copy()
    while True:
        drop_r = (core.sum(axis=1) < d) & core.any(axis=1)
        drop_c = (core.sum(axis=0) < d) & core.any(axis=0)
        if not (drop_r.any() or drop_c.any()):
            return core
        core[drop_r, :] = False
        core[:, drop_c] = False


def _dense_top_up(mask, pool, d, rng):
    out = mask.copy()
    for axis in (0, 1):
        view, cand = (out, pool) if axis == 0 else (out.T, pool.T)
        for k in np.flatnonzero(view.sum(axis=1) < d):
            free = np.flatnonzero(cand[k] & ~view[k])
            view[k, rng.choice(free, d - int(view[k].sum()), replace=False)] = True
    while True:
        lr, lc = _dense_components(out)
        if max(lr.max(), lc.max()) == 0:
            return out
        cand = np.argwhere(pool & ~out & ((lr[:, None] == 0) != (lc[None, :] == 0)))
        out[tuple(cand[rng.integers(len(cand))])] = True


def _design(seed, K=9, J=14, p=0.25):
    rng = np.random.default_rng(seed)
    v = np.where(rng.random((K, J)) < p, rng.uniform(-1, 1, (K, J)), np.nan)
    v[np.arange(K), rng.integers(0, J, K)] = 0.0
    v[rng.integers(0, K, J), np.arange(J)] = 0.0
    return ScoreMatrix.from_array(v)


@pytest.mark.parametrize("seed", range(12))
def test_connectivity_on_cells_equals_the_dense_graph(seed):
    S = _design(seed, p=0.08)                     # often several components
    rep = S.connectivity()
    lr, lc = _dense_components(S.observed)
    assert np.array_equal(rep.agent_component, lr) and np.array_equal(rep.item_component, lc)
    assert np.array_equal(rep.agent_degrees, S.observed.sum(axis=1))
    assert np.array_equal(rep.item_degrees, S.observed.sum(axis=0))
    sub = np.random.default_rng(seed).random(S.shape) < 0.7           # a K x J mask ...
    by_cells = S.connectivity(S.cell_mask(sub))                       # ... or a cell vector
    lr, lc = _dense_components(S.observed & sub)
    assert np.array_equal(by_cells.agent_component, lr)
    assert np.array_equal(S.connectivity(sub).item_component, lc)
    assert by_cells.n_components == max(lr.max(), lc.max()) + 1


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("d", [1, 2, 3])
def test_dcore_on_cells_equals_the_dense_pruning(seed, d):
    S = _design(seed, p=0.3)
    r, c, _ = S.cells()
    core = dcore_cells(r, c, S.shape, d)
    dense = _dense_dcore(S.observed, d)
    assert np.array_equal(dense[r, c], core) and dense.sum() == core.sum()
    assert np.array_equal(dcore_mask(S.observed, d), dense)


@pytest.mark.parametrize("seed", range(10))
def test_top_up_on_cells_draws_exactly_what_the_dense_top_up_draws(seed):
    rng = np.random.default_rng(seed)
    observed = rng.random((10, 25)) < 0.85
    hold = observed & (rng.random(observed.shape) < 0.15)
    design = observed & ~hold & (rng.random(observed.shape) < 0.1)
    pool = observed & ~hold
    assert pool.sum(axis=0).min() >= 3 and pool.sum(axis=1).min() >= 3   # top-up possible
    dense = _dense_top_up(design, pool, 3, np.random.default_rng(seed))
    r, c = np.nonzero(observed)                               # universe: all observed cells
    res = enforce_dcore_cells(r, c, observed.shape, design[r, c], 3, pool=pool[r, c], seed=seed)
    assert np.array_equal(res.mask, dense[r, c]) and res.satisfied
    assert np.array_equal(enforce_dcore(design, 3, pool=pool, seed=seed).mask, dense)
    assert res.n_added == int((dense & ~design).sum())


@pytest.mark.parametrize("seed", range(6))
def test_bridging_many_components_matches_the_dense_reference(seed):
    rng = np.random.default_rng(seed)
    blocks = 6                                     # six disconnected 3 x 4 blocks
    design = np.kron(np.eye(blocks, dtype=bool), np.ones((3, 4), bool))
    pool = rng.random(design.shape) < 0.3
    dense = _dense_top_up(design, pool | design, 3, np.random.default_rng(seed))
    res = enforce_dcore(design, 3, pool=pool | design, seed=seed)
    assert np.array_equal(res.mask, dense) and res.n_components == 1
    assert res.n_added >= blocks - 1
