"""Clipped-linear fits on observed cells: the O(cells) builders against the
sparse-product formulas, the native solver's PCG path against its direct path,
cell-built against dense-built score matrices on every backend, refits,
connectivity on every fit, score bounds, time limits and memory refusals."""

from __future__ import annotations

import time

import numpy as np
import pytest
import scipy.sparse as sp

from evalcert.data import ScoreMatrix
from evalcert.errors import ConnectivityError, InputError, SolverError
from evalcert.solvers import ClippedLinear, available_backends
from evalcert.solvers.backends import native, osqp_direct
from evalcert.solvers.backends.base import SolveSettings, estimate_cost
from evalcert.solvers.clipped_linear_qp import Design, build_qp, centre_free_aux, hessian
from evalcert.solvers.reference import naive_clipped_linear

#: ECOS is refused by a typed error on these problems (see test_clipped_linear).
RELIABLE = [b for b in available_backends() if b != "ecos"]


def _scores(K, J, p, seed, spread=3.0, bounds=(-1.0, 1.0)):
    """Random sparse design, saturated at the bounds when ``spread`` is large."""
    rng = np.random.default_rng(seed)
    lo, hi = bounds
    theta, b = rng.normal(0.25, 0.35, K), rng.normal(0, 0.25, J)
    v = spread * (theta[:, None] - b[None, :] + 0.1 * rng.standard_t(5, (K, J)))
    v = np.clip(lo + (v + 1.0) * (hi - lo) / 2.0, lo, hi)
    v[rng.random((K, J)) > p] = np.nan
    v[np.arange(K), rng.integers(0, J, K)] = 0.5 * (lo + hi)    # no empty row
    v[rng.integers(0, K, J), np.arange(J)] = 0.5 * (lo + hi)    # no empty column
    return ScoreMatrix.from_array(v, bounds=bounds)


def _from_cells(S):
    rows, cols, s = S.cells()
    if not hasattr(ScoreMatrix, "from_cells"):
        pytest.skip("ScoreMatrix.from_cells is not available")
    perm = np.random.default_rng(0).permutation(len(rows))     # any order is accepted
    return ScoreMatrix.from_cells(rows[perm], cols[perm], s[perm], S.agents, S.items, S.bounds)


@pytest.mark.parametrize("seed", range(4))
def test_cell_builders_equal_sparse_product_formulas(seed):
    rng = np.random.default_rng(seed)
    S = _scores(7, 11, 0.5, seed)
    rows, cols, s = S.cells()
    design = Design.from_cells(7, 11, rows, cols)
    w = rng.integers(0, 3, len(rows)).astype(float)
    lam = 1e-3
    D = sp.csr_matrix((np.r_[np.ones(len(rows)), -np.ones(len(rows))],
                       (np.r_[np.arange(len(rows)), np.arange(len(rows))], np.r_[rows, 7 + cols])),
                      shape=(len(rows), 18))
    expected = 2.0 * (D.T @ sp.diags(w) @ D + lam * sp.identity(18))
    P = hessian(design, w, lam, 2)
    np.testing.assert_array_equal(P[:18, :18].toarray(), expected.toarray())
    assert P[18:].nnz == 0 and P.has_sorted_indices
    np.testing.assert_array_equal(design.D.toarray(), D.toarray())
    qp = build_qp(design, s, w, lam, "all")
    np.testing.assert_allclose(qp.q[:18], -2.0 * (D.T @ (w * s)), rtol=0, atol=1e-12)
    assert qp.r == pytest.approx(float(np.sum(w * s * s)), rel=1e-14)


def _stacked_all_cells_box(K, J, bounds):
    """The all-cells box as the build stacked it before its CSC arrays were
    written directly: the reference for :func:`test_fast_builders_equal_references`."""
    lo, hi = bounds
    n = K + J + 2
    blocks = [sp.csr_matrix((np.ones(J), (np.zeros(J, dtype=int), K + np.arange(J))),
                            shape=(1, n))]
    lower, upper = [np.zeros(1)], [np.zeros(1)]
    eye = sp.identity(K + J, format="csr")
    for aux, lb, ub in ((K + J, np.r_[np.full(K, -np.inf), np.full(J, -hi)],
                         np.r_[np.zeros(K), np.full(J, np.inf)]),
                        (K + J + 1, np.r_[np.zeros(K), np.full(J, -np.inf)],
                         np.r_[np.full(K, np.inf), np.full(J, -lo)])):
        col = sp.csr_matrix((-np.ones(K + J), (np.arange(K + J), np.full(K + J, aux))),
                            shape=(K + J, n))
        blocks.append(sp.hstack([eye, sp.csr_matrix((K + J, 2))]).tocsr() + col)
        lower.append(lb)
        upper.append(ub)
    return sp.vstack(blocks).tocsc(), np.concatenate(lower), np.concatenate(upper)


@pytest.mark.parametrize("seed", range(6))
def test_fast_builders_equal_references(seed):
    """The unit-weight Hessian (no weight array) and the directly written
    all-cells box equal the sparse-product / stacked builds exactly, pattern
    included (zero weights stay explicit entries)."""
    rng = np.random.default_rng(seed)
    K, J = (int(v) for v in rng.integers(1, 25, 2))
    S = _scores(K, J, rng.uniform(0.1, 0.9), seed)
    rows, cols, s = S.cells()
    design = Design.from_cells(K, J, rows, cols)
    n = len(rows)
    D = design.D
    lam = [0.0, 1e-3][seed % 2]
    bounds = (-1.0, 1.0) if seed % 3 else (0.0, 50.0)
    for w in (None, np.ones(n), rng.integers(0, 3, n).astype(float)):
        P = hessian(design, w, lam, 2)
        W = sp.diags(np.ones(n) if w is None else w)
        expected = 2.0 * (D.T @ W @ D + lam * sp.identity(K + J))
        np.testing.assert_array_equal(P[:K + J, :K + J].toarray(), expected.toarray())
        assert P.nnz == 2 * n + K + J and P.has_sorted_indices and P[K + J:].nnz == 0
        qp = build_qp(design, s, w, lam, "all", bounds)
        ones = build_qp(design, s, np.ones(n) if w is None else w, lam, "all", bounds)
        np.testing.assert_array_equal(qp.q, ones.q)
        assert qp.r == ones.r
    A, lower, upper = _stacked_all_cells_box(K, J, bounds)
    assert qp.A.format == "csc" and qp.A.has_sorted_indices
    np.testing.assert_array_equal(qp.A.toarray(), A.toarray())
    np.testing.assert_array_equal(qp.l, lower)
    np.testing.assert_array_equal(qp.u, upper)


@pytest.mark.parametrize("bounds", [(-1.0, 1.0), (0.0, 50.0)])
@pytest.mark.parametrize("box", ["all", "none"])
@pytest.mark.parametrize("seed", range(3))
def test_native_pcg_path_equals_direct_path(seed, box, bounds):
    S = _scores(15, 60, 0.4, seed, bounds=bounds)
    fits = {path: ClippedLinear(box=box, solver_options={"path": path}).fit(S)
            for path in ("direct", "pcg")}
    d, c = fits["direct"], fits["pcg"]
    assert d.result_.solver == "native (direct)" and c.result_.solver == "native (pcg)"
    assert c.result_.objective == pytest.approx(d.result_.objective, rel=1e-10)
    span = bounds[1] - bounds[0]
    np.testing.assert_allclose(c.theta_, d.theta_, atol=1e-8 * span)
    np.testing.assert_allclose(c.b_, d.b_, atol=1e-8 * span)
    assert c.result_.certificate.relative_gap < 1e-9
    assert [g.get("side") for g in c.result_.certificate.binding] == \
        [g.get("side") for g in d.result_.certificate.binding]


@pytest.mark.parametrize("solver", RELIABLE)
def test_cells_and_dense_inputs_give_identical_fits(solver):
    S = _scores(9, 30, 0.5, 1)
    T = _from_cells(S)
    a = ClippedLinear(solver=solver).fit(S)
    b = ClippedLinear(solver=solver).fit(T)
    assert b.result_.objective == a.result_.objective
    np.testing.assert_array_equal(b.theta_, a.theta_)
    np.testing.assert_array_equal(b.b_, a.b_)
    np.testing.assert_array_equal(b.result_.certificate.y, a.result_.certificate.y)
    assert b.result_.certificate.verify(S).passed


def test_refits_reuse_structure_and_equal_fresh_fits():
    S = _scores(12, 50, 0.5, 2)
    rows, cols, s = S.cells()
    model = ClippedLinear()
    model.fit(S)
    structure = model._structure
    noisy = ScoreMatrix.from_array(np.clip(S.values * 0.8 + 0.05, -1, 1))
    model.fit(noisy)
    assert model._structure[1].P is structure[1].P               # P, A and caches kept
    fresh = ClippedLinear().fit(noisy)
    np.testing.assert_allclose(model.theta_, fresh.theta_, atol=1e-9)
    # bootstrap weights: one per cell equals the K x J form
    w = np.random.default_rng(0).integers(1, 3, len(rows)).astype(float)
    W = np.zeros(S.shape)
    W[rows, cols] = w
    per_cell = ClippedLinear().fit(S, sample_weight=w)
    dense = ClippedLinear().fit(S, sample_weight=W)
    np.testing.assert_array_equal(per_cell.theta_, dense.theta_)
    with pytest.raises(InputError, match="one weight per observed cell"):
        ClippedLinear().fit(S, sample_weight=w[:-1])


def test_bootstrap_refits_keep_the_osqp_setup():
    S = _scores(12, 50, 0.5, 2)
    rng = np.random.default_rng(1)
    model = ClippedLinear(solver="osqp-direct")
    model.fit(S, sample_weight=rng.integers(1, 3, S.n_observed).astype(float))
    solver = model._structure[2]["osqp-direct"][0]
    w = rng.integers(1, 4, S.n_observed).astype(float)
    model.fit(S, sample_weight=w)
    assert model._structure[2]["osqp-direct"][0] is solver          # P updated in place
    fresh = ClippedLinear(solver="native").fit(S, sample_weight=w)
    assert model.result_.objective == pytest.approx(fresh.result_.objective, rel=1e-7)
    np.testing.assert_allclose(model.theta_, fresh.theta_, atol=1e-5)


def _connected_and_disconnected_twins():
    """Two 6 x 10 designs with 20 cells each: one connected, one of two blocks
    that share no agent or item."""
    v = np.full((6, 10), np.nan)
    v[0, :] = 0.1
    v[:, 0] = 0.2
    v[np.arange(1, 6), np.arange(1, 6)] = 0.3
    w = np.full((6, 10), np.nan)
    w[:3, :5] = 0.1
    w[[3, 4, 5, 3, 4], [5, 6, 7, 8, 9]] = 0.3
    return ScoreMatrix.from_array(v), ScoreMatrix.from_array(w)


@pytest.mark.parametrize("solver", available_backends())
def test_reused_model_refuses_disconnected_design_on_every_backend(solver):
    # issue 10 item 5: the connectivity cache key ignored which cells are
    # observed, so a reused model fitted (and certified) a disconnected design
    # of the same shape and cell count that a fresh model refuses.
    S, T = _connected_and_disconnected_twins()
    assert T.shape == S.shape and T.n_observed == S.n_observed
    assert not T.connectivity().is_connected
    with pytest.raises(ConnectivityError):
        ClippedLinear(solver=solver).fit(T)
    model = ClippedLinear(solver=solver)
    try:
        model.fit(S)
    except SolverError:
        if solver != "ecos":
            raise
    with pytest.raises(ConnectivityError):
        model.fit(T)


@pytest.mark.parametrize("solver", ["native", "osqp-direct", "clarabel"])
@pytest.mark.parametrize("box", ["all", "observed", "none"])
def test_fit_uses_score_bounds(solver, box):
    # issue 10 item 4: scores up to 50 were fitted in the +-1 box.
    S = _scores(8, 25, 0.6, 4, bounds=(-10.0, 50.0))
    assert S.cells()[2].max() == 50.0
    m = ClippedLinear(solver=solver, box=box).fit(S)
    naive = naive_clipped_linear(S, box=box, solver="clarabel")
    assert m.result_.objective == pytest.approx(naive["objective"], rel=1e-6)
    assert m.result_.bounds == (-10.0, 50.0)
    pred = m.theta_[:, None] - m.b_[None, :]
    if box == "all":
        assert pred.max() == pytest.approx(50.0, abs=1e-6)       # saturated: the box binds
        assert pred.min() >= -10.0 - 1e-6
        assert m.result_.certificate.binding[0]["bound"] == 50.0
    if box == "none":
        assert m.result_.n_clipped == int(((pred > 50) | (pred < -10)).sum())
        assert m.predict().max() <= 50.0
    assert m.result_.certificate.verify(S).passed
    unit = ScoreMatrix.from_array(np.clip(S.values / 50.0, -1, 1))
    assert ClippedLinear(solver=solver, box=box).fit(unit).result_.objective < \
        m.result_.objective


def _medium_qp():
    S = _scores(60, 3000, 0.3, 5)
    rows, cols, s = S.cells()
    design = Design.from_cells(60, 3000, rows, cols)
    return design, build_qp(design, s, np.ones(len(s)), 1e-6, "all")


@pytest.mark.parametrize("path", ["direct", "pcg"])
def test_native_time_limit_is_honoured(path):
    design, qp = _medium_qp()
    settings = SolveSettings(time_limit=1e-4, options={"path": path})
    start = time.perf_counter()
    raw = native.solve(qp, settings, x0=np.zeros(qp.n),
                       complete=lambda x, y: centre_free_aux(design, "all", x, y))
    assert raw.status == "time_limit" and not raw.ok
    assert time.perf_counter() - start < 5.0
    full = native.solve(qp, SolveSettings(options={"path": path}), x0=np.zeros(qp.n),
                        complete=lambda x, y: centre_free_aux(design, "all", x, y))
    assert full.ok and full.path == path


def test_osqp_direct_time_limit_is_honoured():
    _, qp = _medium_qp()
    start = time.perf_counter()
    raw = osqp_direct.solve(qp, SolveSettings(time_limit=1e-3))
    assert not raw.ok and time.perf_counter() - start < 5.0


@pytest.mark.parametrize("solver", RELIABLE)
def test_time_limit_raises_typed_error_quickly(solver):
    S = _scores(60, 3000, 0.3, 5)
    start = time.perf_counter()
    with pytest.raises(SolverError) as err:
        ClippedLinear(solver=solver, time_limit=0.01).fit(S)
    assert err.value.status == "time_limit"
    assert time.perf_counter() - start < 10.0
    with pytest.raises(InputError, match="time_limit"):
        ClippedLinear(time_limit=0).fit(S)


def test_memory_refusal_names_estimate_and_backend_that_fits(monkeypatch):
    import evalcert.memory
    from evalcert.solvers.backends import base

    monkeypatch.setattr(base, "SMALL_FIT_BYTES", 0)      # check even this small fit
    S = _scores(40, 400, 0.5, 6)
    need = estimate_cost("clarabel", 40, 400, S.n_observed).nbytes
    native_need = estimate_cost("native", 40, 400, S.n_observed).nbytes
    assert native_need < need
    monkeypatch.setattr(evalcert.memory, "memory_available", lambda: 3 * native_need)
    with pytest.raises(InputError, match=r"needs .* solver='native' needs about"):
        ClippedLinear(solver="clarabel").fit(S)
    assert ClippedLinear(solver="native").fit(S).result_.certificate.passed
    monkeypatch.setattr(evalcert.memory, "memory_available", lambda: native_need // 4)
    with pytest.raises(InputError, match="no backend fits"):
        ClippedLinear(solver="native").fit(S)


def test_cost_estimate_grows_with_cells_not_matrix_size():
    small = estimate_cost("native", 10_000, 1_000_000, 20_000_000)
    assert small.nbytes < 4 * 2 ** 30                  # the 10^4 x 10^6 target fits in 4 GB
    assert estimate_cost("native", 10_000, 10_000_000, 20_000_000).nbytes < 2 * small.nbytes
    dense = estimate_cost("clarabel", 5000, 5000, 25_000_000)
    assert dense.nbytes > 10 * 2 ** 30                 # the CVXPY route that died at 5000^2


@pytest.mark.parametrize("box", ["all", "none"])
def test_predict_cells_equals_the_dense_prediction_at_those_cells(box):
    S = _scores(30, 60, 0.3, 11, spread=6.0)
    m = ClippedLinear(box=box).fit(S)
    rows, cols, _ = S.cells()
    np.testing.assert_array_equal(m.predict_cells(rows, cols), m.predict()[rows, cols])
    with pytest.raises(InputError, match="out of range"):
        m.predict_cells(np.array([30]), np.array([0]))


@pytest.mark.parametrize("seed", range(10))
def test_item_sums_add_the_cells_in_bincounts_order_with_int32_or_int64_columns(seed):
    """q's item block comes from a CSR transpose product that reads int32 columns as they
    are; it must equal np.bincount's sums bit for bit (same order of additions), on
    designs with empty agents and items and values spanning ten orders of magnitude."""
    from evalcert.solvers.clipped_linear_qp import _item_sums
    rng = np.random.default_rng(seed)
    K, J = (int(x) for x in rng.integers(1, 60, 2))
    rows, cols = np.nonzero(rng.random((K, J)) < rng.random())
    values = rng.normal(size=len(rows)) * 10.0 ** rng.integers(-5, 5, len(rows))
    starts = np.searchsorted(rows, np.arange(K + 1))
    want = np.bincount(cols, values, minlength=J)
    for dtype in (np.int32, np.int64):
        assert np.array_equal(_item_sums(values, cols.astype(dtype), starts, (K, J)), want)
