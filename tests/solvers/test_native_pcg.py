"""The native solver's PCG path: the item-eliminated (Schur complement) conjugate
gradients against the direct factorisation, active set by active set, on
random perturbed designs; and against PCG on the full system (fewer CG steps,
the same certified fit)."""

from __future__ import annotations

import dataclasses
from functools import partial

import numpy as np
import pytest
import scipy.sparse as sp

from evalcert.data import ScoreMatrix
from evalcert.solvers import ClippedLinear
from evalcert.solvers.backends import native, native_pcg
from evalcert.solvers.backends.native_kkt import _kkt_solve
from evalcert.solvers.clipped_linear_qp import Design, build_qp, centre_free_aux, initial_point


def _design(K, J, per_item, seed, bounds=(-1.0, 1.0)):
    """Random sparse design, ``per_item`` agents per item, saturated scores
    (the box binds), perturbed so no test depends on exact ties."""
    rng = np.random.default_rng(seed)
    lo, hi = bounds
    rows = np.concatenate([rng.choice(K, per_item, replace=False) for _ in range(J)])
    cols = np.repeat(np.arange(J), per_item)
    rows[:K] = np.arange(K) if J * per_item >= K else rows[:K]      # every agent observed
    keep = np.unique(rows * J + cols, return_index=True)[1]
    rows, cols = rows[keep], cols[keep]
    theta, b = rng.normal(0.25, 0.35, K), rng.normal(0, 0.25, J)
    s = 3.0 * (theta[rows] - b[cols]) + 0.1 * rng.standard_normal(len(rows))
    s = np.clip(lo + (s + 1.0) * (hi - lo) / 2.0, lo, hi) + 1e-9 * rng.random(len(rows))
    s = np.minimum(s, hi)
    return Design.from_cells(K, J, rows, cols), s


class _Counter:
    """A progress-bar stand-in that counts the CG steps."""

    def __init__(self):
        self.n = 0

    def update(self, k):
        self.n += k

    def set_postfix_str(self, *args, **kwargs):
        pass


def _check_every_active_set(qp, design, bounds, monkeypatch):
    """Run the active-set iteration on ``qp`` with the direct factorisation,
    checking the Schur PCG solve against it on every active set."""
    caches = {"schur": {}, "direct": {}}
    used = []
    schur_operator = native_pcg._schur_operator
    checked = []

    def spy(*args, **kwargs):
        op = schur_operator(*args, **kwargs)
        used.append(op is not None)
        return op

    monkeypatch.setattr(native_pcg, "_schur_operator", spy)
    span = bounds[1] - bounds[0]

    def kkt(active, rhs, x, y_act, tight):
        xd, yd, exact = _kkt_solve(qp, active, rhs, x, y_act, caches["direct"])
        try:
            xs, ys = native_pcg._pcg_kkt_solve(qp, active, rhs, x, caches["schur"], np.inf,
                                               None, rtol=1e-13)
        except native_pcg._Unsupported:
            return xd, yd, exact
        y_scale = max(1.0, float(np.abs(yd).max(initial=0.0)))
        np.testing.assert_allclose(xs, xd, rtol=0, atol=1e-8 * span)
        np.testing.assert_allclose(ys, yd, rtol=0, atol=1e-7 * y_scale)
        checked.append(int(active.sum()))
        return xd, yd, exact

    x0 = initial_point(design, np.zeros(design.K), np.zeros(design.J), "all", bounds)
    x0 = np.r_[x0, np.zeros(qp.n - len(x0))]
    complete = partial(centre_free_aux, design, "all", bounds=bounds)
    scale = max(1.0, float(qp.P.diagonal().max()))
    x, y, status, ok, _ = native._active_set(qp, x0, np.zeros(qp.m), 100.0 * scale, 50,
                                             complete, kkt, np.inf)
    assert ok and status == "solved"
    assert len(checked) >= 2 and any(a > 1 for a in checked)     # the box rows were active
    assert any(used)                                              # the Schur path ran


@pytest.mark.parametrize("bounds", [(-1.0, 1.0), (0.0, 50.0)])
@pytest.mark.parametrize("lam", [0.0, 1e-3])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_schur_pcg_equals_direct_on_every_active_set(seed, weighted, lam, bounds, monkeypatch):
    """Regression: PCG on the full system (the path before the Schur
    elimination) stalled on the first active set at bounds (0, 50), lam 1e-3
    (theta off by 6.6, multipliers by 0.017); the Schur path agrees with the
    direct factorisation to rounding on every active set."""
    design, s = _design(12, 40, 3, seed, bounds)
    rng = np.random.default_rng(100 + seed)
    w = rng.integers(1, 4, design.n_cells).astype(float) if weighted else np.ones(design.n_cells)
    qp = build_qp(design, s, w, lam, "all", bounds)
    _check_every_active_set(qp, design, bounds, monkeypatch)


@pytest.mark.parametrize("seed", range(3))
def test_schur_pcg_with_more_general_rows_equals_direct(seed, monkeypatch):
    """Two more equality rows besides the gauge, each on agents and on items
    (some of which tie to the box's hubs, so a hub's column repeats in a
    general row): the Schur path builds ``C_E`` and the summed dense ``C_F``
    from the rows' cells directly (no sparse conversion with duplicate sums)
    and still agrees with the direct factorisation on every active set."""
    bounds = (-1.0, 1.0)
    design, s = _design(12, 40, 3, seed, bounds)
    qp = build_qp(design, s, None, 1e-3, "all", bounds)
    rng = np.random.default_rng(200 + seed)
    K, J = design.K, design.J
    extra = np.zeros((2, qp.n))
    extra[:, :K] = rng.normal(size=(2, K)) * (rng.random((2, K)) < 0.5)
    extra[:, K:K + J] = rng.normal(size=(2, J))
    A = sp.vstack([qp.A, sp.csr_matrix(extra)]).tocsc()
    qp = dataclasses.replace(qp, A=A, l=np.r_[qp.l, 0.0, 0.0], u=np.r_[qp.u, 0.0, 0.0])
    _check_every_active_set(qp, design, bounds, monkeypatch)


def test_schur_path_needs_fewer_cg_steps_than_full_pcg(monkeypatch):
    """On a design with few cells per item (the hard case of bench_scale), the
    exact elimination of the items cuts the CG steps of a whole fit; both fits
    are certified and equal."""
    design, s = _design(150, 3000, 3, 7)
    rows, cols = design.rows, design.cols
    S = ScoreMatrix.from_cells(rows, cols, s, [f"a{i}" for i in range(150)],
                               [f"q{j}" for j in range(3000)])
    counts = {}
    original = native_pcg._pcg_kkt_solve
    fits = {}
    for mode in ("schur", "full"):
        counter = _Counter()

        def counting(qp, active, rhs, x, cache, deadline, progress, rtol=1e-12):
            return original(qp, active, rhs, x, cache, deadline, counter, rtol=rtol)

        with monkeypatch.context() as m:
            m.setattr(native, "_pcg_kkt_solve", counting)
            if mode == "full":
                m.setattr(native_pcg, "_schur_operator", lambda *a, **k: None)
            fits[mode] = ClippedLinear(solver_options={"path": "pcg"}).fit(S)
        counts[mode] = counter.n
    for fit in fits.values():
        assert fit.result_.solver == "native (pcg)" and fit.result_.certificate.passed
    assert fits["schur"].result_.objective == pytest.approx(fits["full"].result_.objective,
                                                            rel=1e-10)
    np.testing.assert_allclose(fits["schur"].theta_, fits["full"].theta_, atol=1e-8)
    assert counts["schur"] < counts["full"], counts


def test_mid_size_designs_take_the_pcg_path_and_agree_with_direct():
    """Regression: with the switch at 5e7 flops, a 260 x 600 design (6e6 flops)
    took the direct path, which measured 3-5x slower than the item-eliminated
    PCG on whole fits from 100 x 1000 to 500 x 5000 (so 10^5 cells at 300 x 3000
    cost 3x per cell what larger designs did in ``bench_scale.py --quick``).
    Both paths give the same certified fit."""
    design, s = _design(260, 600, 20, 11)
    S = ScoreMatrix.from_cells(design.rows, design.cols, s, [f"a{i}" for i in range(260)],
                               [f"q{j}" for j in range(600)])
    auto = ClippedLinear().fit(S)
    direct = ClippedLinear(solver_options={"path": "direct"}).fit(S)
    assert auto.result_.solver == "native (pcg)" and direct.result_.solver == "native (direct)"
    assert auto.result_.certificate.passed and direct.result_.certificate.passed
    assert auto.result_.objective == pytest.approx(direct.result_.objective, rel=1e-10)
    np.testing.assert_allclose(auto.theta_, direct.theta_, atol=1e-8)
