"""Anderson acceleration of the MML EM map (session 6): the accelerated fit is the plain EM
fixed point, takes fewer E-steps, and does not depend on the order of the items."""

import numpy as np
import pytest

import evalcert.irt.estimation.mml_em as mml
from evalcert.irt import TwoPL
from evalcert.irt.estimation.anderson import Anderson
from evalcert.irt.estimation.mml_em import mml_em


class _PlainEM(Anderson):
    """The reference: no extrapolation, every step is one plain EM step."""

    def step(self, x, gx, extrapolate=True):
        return super().step(x, gx, extrapolate=False)


def _simulate(n, m, missing, seed):
    rng = np.random.default_rng(seed)
    theta, b, a = rng.normal(size=n), rng.normal(size=m), rng.lognormal(0, 0.3, m)
    Y = (rng.random((n, m)) < 1 / (1 + np.exp(-a * (theta[:, None] - b)))).astype(float)
    O = rng.random((n, m)) >= missing
    keep = ((Y * O).sum(0) > 0) & ((Y * O).sum(0) < O.sum(0))
    return np.where(O, Y, 0.0)[:, keep], O[:, keep]


def test_anderson_solves_a_linear_fixed_point_in_few_steps():
    # a 30-dimensional linear contraction with spectral radius 0.97: plain iteration needs
    # ~750 steps for 1e-10, Anderson's (depth 5, a windowed GMRES) under a third of that
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.normal(size=(30, 30)))
    A = Q @ np.diag(np.linspace(-0.5, 0.97, 30)) @ Q.T
    c = rng.normal(size=30)
    fixed = np.linalg.solve(np.eye(30) - A, c)
    counts = []
    for acc in (Anderson(depth=5, max_move=np.inf), None):
        x = np.zeros(30)
        for steps in range(1, 2000):
            gx = A @ x + c
            if np.max(np.abs(gx - x)) < 1e-10:
                break
            x = acc.step(x, gx) if acc is not None else gx
        assert np.max(np.abs(x - fixed)) < 1e-8
        counts.append(steps)
    assert counts[0] < counts[1] / 3, counts


def test_anderson_caps_the_move_and_recovers_from_non_finite_history():
    acc = Anderson(depth=3, max_move=0.5)
    G = lambda x: 0.999 * x + 1.0       # fixed point 1000: the extrapolation wants to jump
    x = np.zeros(2)
    for _ in range(3):
        new = acc.step(x, G(x))
        assert np.max(np.abs(new - G(x))) <= 0.5 + 1e-12
        x = new
    assert acc.step(x, np.full(2, np.inf)).tolist() == [np.inf, np.inf]   # G(x) itself
    assert acc.count == 0                                                 # history dropped


@pytest.mark.parametrize("missing, slope_prec, common", [(0.3, 4.0, False), (0.0, 4.0, False),
                                                         (0.3, 0.0, False), (0.3, 0.0, True)])
def test_accelerated_em_is_the_plain_em_fixed_point(monkeypatch, missing, slope_prec, common):
    # adaptive (missing cells) and complete E-steps, slope prior, pure ML and Rasch: the
    # accelerated fit and plain EM (the slow reference) agree to the convergence tolerance
    Y, O = _simulate(120, 60, missing, seed=3)
    kw = dict(common_slope=common, n_quad=11, tol=1e-9, max_iter=5000, what="t",
              slope_prec=slope_prec, standard_errors=False)
    fast = mml_em(Y, O, **kw)
    monkeypatch.setattr(mml, "Anderson", _PlainEM)
    plain = mml_em(Y, O, **kw)
    for key in ("a", "d", "eap", "psd"):
        assert np.max(np.abs(fast[key] - plain[key])) < 1e-6, key
    assert abs(fast["loglik"] - plain["loglik"]) < 1e-7 * abs(plain["loglik"])
    if not common:                      # the 2PL crawls; Rasch+PX-EM is fast either way
        assert fast["n_iter"] < plain["n_iter"]


def test_accelerated_2pl_does_not_depend_on_the_item_order():
    # the E-step sums in another order (another rounding): the same estimates to the
    # tolerance and (nearly) the same number of E-steps; the SQUAREM path it replaced
    # jumped between 34 and 43 on PSN-IRT
    Y, O = _simulate(40, 400, 0.2, seed=5)
    Yn = np.where(O, Y, np.nan)
    fits = []
    for seed in range(3):
        perm = (np.random.default_rng(seed).permutation(Y.shape[1]) if seed
                else np.arange(Y.shape[1]))
        est = TwoPL(method="mml", standard_errors=False, tol=1e-8).fit(Yn[:, perm])
        a = np.empty(Y.shape[1])
        a[perm] = est.discriminations_
        fits.append((a, est.abilities_, est.result_.n_iter))
    for a, theta, _ in fits[1:]:
        assert np.max(np.abs(a - fits[0][0])) < 1e-6
        assert np.max(np.abs(theta - fits[0][1])) < 1e-6
    counts = [n for *_, n in fits]
    assert max(counts) - min(counts) <= 2


@pytest.mark.parametrize("missing", [0.0, 0.3])
def test_estep_without_curvature_gives_the_same_scores(missing):
    # curvature=False skips the h-sums only: posteriors, scores and log-likelihood are the
    # same bits as with them (complete-data and adaptive E-steps)
    from evalcert.irt.estimation.mml_estep import _AdaptiveEStep, _CompleteEStep
    Y, O = _simulate(50, 80, missing, seed=8)
    rng = np.random.default_rng(9)
    a, d = rng.lognormal(0, 0.3, Y.shape[1]), rng.normal(size=Y.shape[1])
    step = (_CompleteEStep(Y, pool_by_score=False, n_quad=7, shared_only=False) if missing == 0
            else _AdaptiveEStep(Y, O, 7))
    mu, sd = step.start(a, d)
    full, light = step(a, d, mu, sd), step(a, d, mu, sd, curvature=False)
    for key in ("mu", "sd", "g0", "g1"):
        assert np.array_equal(full[key], light[key]), key
    assert full["loglik"] == light["loglik"]
    assert light["h0"] is None and full["h0"].shape == (Y.shape[1],)


def test_stale_curvature_keeps_the_fixed_point(monkeypatch):
    # reusing the last curvatures near convergence changes the path, not the answer
    Y, O = _simulate(100, 80, 0.3, seed=12)
    kw = dict(common_slope=False, n_quad=11, tol=1e-9, max_iter=5000, what="t",
              slope_prec=4.0, standard_errors=False)
    stale = mml_em(Y, O, **kw)
    monkeypatch.setattr(mml, "STALE_CURVATURE", 0.0)       # always fresh curvatures
    fresh = mml_em(Y, O, **kw)
    for key in ("a", "d", "eap", "psd"):
        assert np.max(np.abs(stale[key] - fresh[key])) < 1e-6, key
    assert abs(stale["loglik"] - fresh["loglik"]) < 1e-7 * abs(fresh["loglik"])
