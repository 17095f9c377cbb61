"""Bootstrap refits (new weights on the same design) reuse what the design
determines: the Hessian's pattern and the constraints. Each refit must equal a
fresh fit with those weights, and connectivity is still checked on every user
fit (issue 13.4, session 6)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from evalcert.data import ScoreMatrix, bipartite_components
from evalcert.errors import ConnectivityError
from evalcert.solvers import ClippedLinear
from evalcert.solvers import clipped_linear as clipped_linear_module
from evalcert.solvers.clipped_linear_qp import (Design, HessianPattern, build_qp, hessian,
                                                with_weights)


def _scores(K, J, p, seed, spread=3.0):
    """A random sparse design (no empty row or column), saturated at the box,
    with scores perturbed by noise (so no test relies on ties of the rounding)."""
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(0.25, 0.35, K), rng.normal(0, 0.25, J)
    v = spread * (theta[:, None] - b[None, :] + 0.1 * rng.standard_t(5, (K, J)))
    v = np.clip(v + 1e-9 * rng.standard_normal((K, J)), -1.0, 1.0)
    v[rng.random((K, J)) > p] = np.nan
    v[np.arange(K), rng.integers(0, J, K)] = 0.0
    v[rng.integers(0, K, J), np.arange(J)] = 0.0
    return ScoreMatrix.from_array(v)


def _connected_weights(S, rng, tries=200):
    """Bootstrap counts whose positive cells connect the design (redrawn until they do)."""
    rows, cols, _ = S.cells()
    n = len(rows)
    for _ in range(tries):
        w = np.bincount(rng.integers(0, n, n), minlength=n).astype(float)
        keep = w > 0
        agent_comp, item_comp = bipartite_components(rows[keep], cols[keep], S.shape)
        if max(agent_comp.max(), item_comp.max()) == 0:
            return w
    raise AssertionError("no connected resample")


@pytest.mark.parametrize("seed", range(4))
def test_one_pattern_gives_the_hessian_of_every_weight_vector(seed):
    """Reusing one pattern for successive weights leaves nothing stale: each
    matrix equals 2 (D'WD + lam I) from the sparse product, pattern included."""
    rng = np.random.default_rng(seed)
    S = _scores(9, 23, 0.4, seed)
    rows, cols, _ = S.cells()
    design = Design.from_cells(*S.shape, rows, cols)
    K, J, n = design.K, design.J, design.n_cells
    pattern = HessianPattern.of(design, 2)
    lam = [0.0, 1e-3][seed % 2]
    for w in (rng.integers(0, 4, n).astype(float), None, rng.uniform(0, 2, n), np.ones(n)):
        P = pattern.matrix(w, lam)
        W = sp.diags(np.ones(n) if w is None else w)
        expected = 2.0 * (design.D.T @ W @ design.D + lam * sp.identity(K + J))
        if w is None or np.array_equal(w, np.round(w)):      # integer sums: exact
            np.testing.assert_array_equal(P[:K + J, :K + J].toarray(), expected.toarray())
        else:       # the diagonal sums fractional weights in another order: rounding only
            np.testing.assert_allclose(P[:K + J, :K + J].toarray(), expected.toarray(),
                                       rtol=1e-14, atol=0)
        assert P.nnz == 2 * n + K + J and P[K + J:].nnz == 0
        assert np.shares_memory(P.indices, pattern.indices)  # shared, not copied
        np.testing.assert_array_equal(P.data, hessian(design, w, lam, 2).data)


@pytest.mark.parametrize("box", ["all", "none", "observed"])
@pytest.mark.parametrize("seed", range(3))
def test_reweighted_qp_equals_a_fresh_build(seed, box):
    rng = np.random.default_rng(seed)
    S = _scores(8, 20, 0.5, seed)
    rows, cols, s = S.cells()
    design = Design.from_cells(*S.shape, rows, cols)
    n = design.n_cells
    first = build_qp(design, s, rng.integers(1, 3, n).astype(float), 1e-4, box)
    pattern = HessianPattern.of(design, 2 if box == "all" else 0)
    w = rng.integers(0, 3, n).astype(float)
    w[cols == cols[0]] = 0.0                      # an item without weight: with lam = 0 ...
    for lam in (1e-4, 0.0):
        refit = with_weights(first, design, s, w, lam, box, pattern)
        fresh = build_qp(design, s, w, lam, box)
        assert (refit.P != fresh.P).nnz == 0 and refit.P.shape == fresh.P.shape
        np.testing.assert_array_equal(refit.q, fresh.q)
        assert refit.r == fresh.r and refit.x_bound == fresh.x_bound
        assert (refit.eliminable is None) == (fresh.eliminable is None)
        if fresh.eliminable is not None:
            np.testing.assert_array_equal(refit.eliminable, fresh.eliminable)
        assert refit.A is first.A                 # kept: it depends on the design only
    assert refit.eliminable is None or box == "observed"   # ... it is not eliminable


@pytest.mark.parametrize("path", ["direct", "pcg"])
@pytest.mark.parametrize("seed", range(3))
def test_refits_with_new_weights_equal_fresh_fits(seed, path):
    """The bootstrap's sequence: a plain fit, then refits with new weights on the
    same cells (P's values replaced on its kept pattern, A kept, warm starts)."""
    rng = np.random.default_rng(seed)
    S = _scores(14, 50, 0.35, seed)
    opts = {"path": path}
    model = ClippedLinear(solver_options=opts).fit(S)
    A = model._structure[1].A
    for _ in range(3):
        w = _connected_weights(S, rng)
        model.fit(S, sample_weight=w)
        fresh = ClippedLinear(solver_options=opts).fit(S, sample_weight=w)
        assert model._structure[1].A is A and model._pattern is not None
        a, f = model.result_, fresh.result_
        assert a.objective == pytest.approx(f.objective, rel=1e-9, abs=1e-12)
        np.testing.assert_allclose(model.theta_, fresh.theta_, rtol=0, atol=1e-7)
        np.testing.assert_allclose(model.b_, fresh.b_, rtol=0, atol=1e-7)
        assert a.certificate.passed and f.certificate.passed     # certified on every refit
        assert a.n_observed == f.n_observed == int(np.count_nonzero(w))
        assert a.certificate.verify(S, sample_weight=w).passed  # from the data alone


def _cut_weights(S):
    """Weights that drop every cell of agent 0: a connected design split by them."""
    rows, _, _ = S.cells()
    return np.where(rows == 0, 0.0, 1.0)


def test_a_disconnecting_user_weight_still_raises():
    S = _scores(10, 30, 0.5, 1)
    w = _cut_weights(S)
    with pytest.raises(ConnectivityError):
        ClippedLinear().fit(S, sample_weight=w)
    model = ClippedLinear().fit(S)
    model.fit(S, sample_weight=_connected_weights(S, np.random.default_rng(0)))
    with pytest.raises(ConnectivityError):           # after refits, on the kept pattern
        model.fit(S, sample_weight=w)
    # the bootstrap's hook vouches for one weighted set only: any other is checked
    model._assume_connected(np.ones(S.n_observed, dtype=bool))
    with pytest.raises(ConnectivityError):
        model.fit(S, sample_weight=w)


def test_the_connectivity_hook_skips_exactly_the_vouched_check(monkeypatch):
    S = _scores(10, 30, 0.5, 2)
    calls = []
    real = clipped_linear_module._require_connected
    monkeypatch.setattr(clipped_linear_module, "_require_connected",
                        lambda *a: calls.append(1) or real(*a))
    model = ClippedLinear().fit(S)
    w = _connected_weights(S, np.random.default_rng(3))
    model._assume_connected(w > 0)
    model.fit(S, sample_weight=w)
    assert len(calls) == 1                           # the plain fit's check only
    other = _connected_weights(S, np.random.default_rng(4))
    model.fit(S, sample_weight=other)
    assert len(calls) == 2
    fresh = ClippedLinear()                          # never fitted: nothing to vouch for
    fresh._assume_connected(other > 0)
    fresh.fit(S, sample_weight=other)
    assert len(calls) == 3
