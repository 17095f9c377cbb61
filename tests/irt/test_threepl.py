"""3PL (guessing floor) by marginal ML: likelihood, gradient, recovery, scoring, comparison."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import approx_fprime

from evalcert.errors import ConvergenceError, InputError
from evalcert.irt import Rasch, TwoPL, likelihood_ratio_test, score_models
from evalcert.irt.estimation.mml_direct import MarginalData
from evalcert.irt.threepl import ThreePL


def simulate_3pl(n, m, seed, c=None):
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(size=n), rng.normal(size=m)
    a = rng.lognormal(0, 0.25, m)
    c = rng.uniform(0.1, 0.3, m) if c is None else np.full(m, c)
    p = c + (1 - c) / (1 + np.exp(-a * (theta[:, None] - b)))
    return (rng.random(p.shape) < p).astype(float), theta, a, b, c


def _marginal_by_quad(Y, O, a, b, c):
    total = 0.0
    for i in range(Y.shape[0]):
        def f(t):
            p = c + (1 - c) / (1 + np.exp(-a * (t - b)))
            ll = np.sum(O[i] * (Y[i] * np.log(p) + (1 - Y[i]) * np.log(1 - p)))
            return np.exp(ll - 0.5 * t * t) / np.sqrt(2 * np.pi)
        total += np.log(quad(f, -12, 12, epsabs=1e-15, epsrel=1e-12, limit=200)[0])
    return total


def test_marginal_loglik_matches_brute_force_quadrature():
    Y, *_ = simulate_3pl(25, 5, seed=1)
    Y[3, :2] = np.nan                                      # missing cells
    est = ThreePL().fit(Y)
    O = ~np.isnan(Y)
    ref = _marginal_by_quad(np.nan_to_num(Y), O, est.discriminations_, est.difficulties_,
                            est.guessing_)
    assert est.loglik_ == pytest.approx(ref, rel=1e-9)


@pytest.mark.parametrize("slope_prior", [4.0, 0.0])   # log-normal prior in log a; pure ML in a
@pytest.mark.parametrize("guessing", [None, 0.2])
def test_gradient_is_exact(guessing, slope_prior):
    Y, *_ = simulate_3pl(40, 6, seed=2)
    est = ThreePL(guessing=guessing, slope_prior=slope_prior)
    md = MarginalData(Y.astype(int), 2, 61)
    x = np.random.default_rng(0).normal(0.5, 0.3, 6 * (2 if guessing else 3))
    x[12:] = np.random.default_rng(1).uniform(0.05, 0.45, x.size - 12)  # floors in (0, 1)
    num = approx_fprime(x, lambda v: est._objective(v, md, 6)[0], 1e-6)
    np.testing.assert_allclose(est._objective(x, md, 6)[1], num, rtol=1e-4, atol=1e-4)


def test_recovery_with_estimated_and_fixed_floor():
    Y, theta, a, b, c = simulate_3pl(1500, 12, seed=3)
    est = ThreePL().fit(Y)
    assert np.corrcoef(est.difficulties_, b)[0, 1] > 0.95
    assert np.mean(np.abs(est.guessing_ - c)) < 0.07
    assert np.corrcoef(est.abilities_, theta)[0, 1] > 0.7          # 12 items: reliability ~0.6
    assert np.all(np.isfinite(est.guessing_se_)) and est.n_parameters_ == 36
    # chance fixed at 1/4 on data generated with it: difficulties and slopes recovered
    Y, theta, a, b, c = simulate_3pl(1500, 12, seed=4, c=0.25)
    fixed = ThreePL(guessing=0.25).fit(Y)
    assert np.all(fixed.guessing_ == 0.25) and fixed.n_parameters_ == 24
    assert np.max(np.abs(fixed.difficulties_ - b)) < 0.35
    # the 2PL has no floor: it flattens the slopes instead
    two = TwoPL(method="mml", slope_prior=0.0).fit(Y)
    assert np.mean(two.discriminations_) < np.mean(fixed.discriminations_)
    assert np.mean(np.abs(fixed.discriminations_ - a)) < np.mean(np.abs(two.discriminations_ - a))


def test_scoring_and_lr_test_with_3pl():
    Y, theta, *_ = simulate_3pl(800, 10, seed=5)
    est = ThreePL().fit(Y)
    res = score_models(est, Y[:50], method="wle")
    assert np.corrcoef(res.abilities, theta[:50])[0, 1] > 0.7
    lr = likelihood_ratio_test(TwoPL(method="mml", slope_prior=0.0).fit(Y), est)
    assert lr.df == 10 and lr.statistic >= 0 and "prior" in " ".join(lr.notes)
    with pytest.raises(InputError, match="not nested"):
        likelihood_ratio_test(Rasch(method="mml").fit(Y), ThreePL(guessing=0.25).fit(Y))


def test_refusals():
    Y, *_ = simulate_3pl(50, 5, seed=6)
    with pytest.raises(InputError, match="guessing"):
        ThreePL(guessing=1.0).fit(Y)
    with pytest.raises(InputError, match="guessing_prior"):
        ThreePL(guessing_prior=(0.5, 2)).fit(Y)
    with pytest.raises(InputError, match="score_models"):
        ThreePL().fit(Y).fit_models(Y)


def _few_models_with_anti_items(seed, n=22, m=150, n_anti=15):
    """ChemBench's pathology in small: 22 models, a fixed 1/4 floor, and items that weaker
    models solve more often (negative true slopes)."""
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(size=n), rng.normal(size=m)
    a = rng.lognormal(0, 0.3, m)
    a[:n_anti] *= -1
    p = 0.25 + 0.75 / (1 + np.exp(-a * (theta[:, None] - b)))
    return (rng.random(p.shape) < p).astype(float)


def test_items_pushed_to_the_floor_stay_finite_and_are_named():
    # Old code (slopes a ~ N(1, 4), no intercept prior) on these seeds: difficulties up to
    # 24 and 214 (slopes near 0), 30 and 19 negative slopes; on ChemBench it did not converge.
    for seed in (0, 2):
        Y = _few_models_with_anti_items(seed)
        Y = Y[:, (Y.sum(0) > 0) & (Y.sum(0) < Y.shape[0])]
        est = ThreePL(guessing=0.25).fit(Y)
        assert est.result_.converged and np.all(est.discriminations_ > 0)
        assert np.max(np.abs(est.difficulties_)) < 10
        assert len(est.floor_items_) >= 2
        assert any("no finite ML intercept" in n and est.floor_items_[0] in n
                   for n in est.result_.notes)
        # brute force: with the other parameters fixed, moving an item's intercept to -40
        # raises the marginal likelihood (no priors on d) exactly for the named items
        md = MarginalData(Y.astype(int), 2, 61)
        m = Y.shape[1]
        a, d = est.discriminations_, -est.discriminations_ * est.difficulties_
        x = np.concatenate([np.log(a), d])
        ml = ThreePL(guessing=0.25, intercept_prior=0.0)
        base = ml._objective(x, md, m)[0]
        rising = []
        for j in range(m):
            y = x.copy()
            y[m + j] = -40.0
            rising.append(ml._objective(y, md, m)[0] < base)
        assert tuple(np.asarray(est.item_names_)[rising]) == est.floor_items_


def _guttman(n, m, seed):
    rng = np.random.default_rng(seed)
    theta, b, a = rng.normal(size=n), rng.normal(size=m), rng.lognormal(0, 0.3, m)
    Y = (rng.random((n, m)) < 1 / (1 + np.exp(-a * (theta[:, None] - b)))).astype(float)
    rest = Y[:, 1:].sum(1)
    Y[:, 0] = rest > np.median(rest)            # item0 splits the models perfectly
    return Y


@pytest.mark.parametrize("guessing", [0.0, None])
def test_pure_ml_slope_that_does_not_exist_is_refused_with_the_item(guessing):
    # old code: L-BFGS stopped "converged" with a_0 ~ 120 (the gradient had underflowed)
    Y = _guttman(60, 20, seed=0)
    with pytest.raises(ConvergenceError, match="slope MLE does not exist for 1 item: item0"):
        ThreePL(guessing=guessing, slope_prior=0).fit(Y)
    est = ThreePL(guessing=guessing).fit(Y)                  # the default prior keeps it
    assert 1 < est.discriminations_[0] < 10 and abs(est.difficulties_[0]) < 1


@pytest.mark.slow
def test_chembench_3pl_converges_with_a_fixed_floor():
    path = (__import__("pathlib").Path(__file__).resolve().parents[2].parent / "shared"
            / "data" / "irt" / "irt-on-bench" / "binary_matrix.csv")
    if not path.exists():
        pytest.skip(f"{path} is absent (shared data not mounted)")
    import pandas as pd

    Y = pd.read_csv(path, index_col=0).T                      # 22 models x 2854 items
    with pytest.warns(UserWarning, match="134 items"):
        est = ThreePL(guessing=0.25).fit(Y)
    kept = np.isfinite(est.difficulties_)
    assert kept.sum() == 2720 and np.all(np.abs(est.difficulties_[kept]) < 10)
    assert 400 < len(est.floor_items_) < 800                  # 594 when measured
    assert any(n.startswith("2 models answer fewer items right than the lowest guessing "
                            "floor (0.25)") and "Galatica-120b" in n for n in est.result_.notes)


def test_gradient_stays_finite_where_the_curve_underflows_at_a_zero_floor():
    # old code divided s (1 - s) by P = s: 0/0 = NaN once sigma(eta) underflowed (eta < -745)
    Y, *_ = simulate_3pl(30, 4, seed=8)
    md = MarginalData(Y.astype(int), 2, 61)
    x = np.array([1.0, 1.0, 1.0, 1.0, -800.0, 0.0, 0.0, 0.0])   # item 0 far below everyone
    value, grad = ThreePL(guessing=0.0, slope_prior=0, intercept_prior=0)._objective(x, md, 4)
    # d loglik / d d_0 -> (right answers to item 0) as s -> 0; fun returns the negated gradient
    assert np.all(np.isfinite(grad)) and grad[4] == pytest.approx(-Y[:, 0].sum(), rel=1e-12)


def test_models_below_the_floor_are_named():
    Y, *_ = simulate_3pl(200, 12, seed=9, c=0.25)
    Y[7] = 0.0
    Y[7, 0] = 1.0                                   # 1 of 12 right: below a 1/4 floor
    est = ThreePL(guessing=0.25).fit(Y)
    note = [n for n in est.result_.notes if "lowest guessing floor (0.25)" in n]
    below = int(np.sum(Y.mean(1) < 0.25))                     # model7 and a few by chance
    assert len(note) == 1 and note[0].startswith(f"{below} models")
    assert "e.g. model7 (0.0833)" in note[0]


@pytest.mark.parametrize("guessing", [0.0, 0.25, None])
def test_pure_ml_runaway_slope_is_named_while_iterating_not_after(guessing):
    # the shared check (marginal.check_slopes, also the 2PL EM's) runs on every L-BFGS
    # iterate: the fit stops once item0's slope passes the grid's limit (10 on 61 nodes);
    # before, L-BFGS ran on (ChemBench: 2,000 steps, 90 s) to a_0 ~ 120 and was judged after
    seen = []

    class Watched(ThreePL):
        def _objective(self, x, md, n_items, counts=None):
            seen.append(float(np.abs(x[:n_items]).max()))
            return super()._objective(x, md, n_items, counts)

    with pytest.raises(ConvergenceError, match="slope MLE does not exist for 1 item: item0"):
        Watched(guessing=guessing, slope_prior=0).fit(_guttman(60, 20, seed=0))
    assert max(seen) < 30 and len(seen) < 300


EXTREME = np.array([-1e308, -800.0, -745.0, -40.0, -1e-20, 0.0, 1e-20, 3.0, 40.0, 745.0,
                    800.0, 1e308, np.inf, -np.inf])


def test_log_sigmoids_match_logaddexp_on_extreme_arguments():
    # one exp + one log1p pass in place of two logaddexp calls
    from evalcert.irt.threepl import _log_sigmoids

    log_s, log_1s = _log_sigmoids(EXTREME)
    np.testing.assert_allclose(log_s, -np.logaddexp(0.0, -EXTREME), rtol=1e-15, atol=0)
    np.testing.assert_allclose(log_1s, -np.logaddexp(0.0, EXTREME), rtol=1e-15, atol=0)


@pytest.mark.parametrize("c, u", [(0.0, 1.0), (0.25, 1.0), (0.0, 0.9), (0.2, 0.85)])
def test_curves_match_the_logaddexp_forms_on_extreme_arguments(c, u):
    from evalcert.irt.fourpl import FourPL

    z = np.linspace(-6, 6, 61)
    a = np.array([1.0, 50.0, -50.0, 1e3, 1e-3, 200.0])
    d = np.array([0.0, -800.0, 800.0, 3.0, -1e4, 1e5])
    est = FourPL(guessing=c, upper=u, slope_prior=0)
    *_, log_s, log_1s, log_p0, log_p1 = est._curves(np.concatenate([a, d]), a.size, z)
    eta = a[:, None] * z + d[:, None]
    ref_s, ref_1s = -np.logaddexp(0.0, -eta), -np.logaddexp(0.0, eta)
    with np.errstate(divide="ignore"):
        ref_p1 = np.logaddexp(np.log(c), np.log(u - c) + ref_s)
        ref_p0 = np.logaddexp(np.log1p(-u), np.log(u - c) + ref_1s)
    for got, ref in ((log_s, ref_s), (log_1s, ref_1s), (log_p1, ref_p1), (log_p0, ref_p0)):
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-15)


def test_race_evaluates_no_point_twice_in_a_row():
    # the start's E-step serves the scale, the surrogate's first gradient and L-BFGS's first
    # value; the last iterate's value is not recomputed when a runaway slope stops the climb
    points = []

    class Watched(ThreePL):
        def _objective(self, x, md, n_items, counts=None):
            if counts is None:
                points.append(x.copy())
            return super()._objective(x, md, n_items, counts)

    with pytest.raises(ConvergenceError, match="item0"):
        Watched(guessing=0.25, slope_prior=0).fit(_guttman(60, 20, seed=0))
    assert len(points) > 2
    assert not any(np.array_equal(p, q) for p, q in zip(points, points[1:]))
    Y, *_ = simulate_3pl(300, 8, seed=4)
    points.clear()
    Watched(guessing=0.2, slope_prior=0, standard_errors=False).fit(Y)
    assert len(points) > 2
    assert not any(np.array_equal(p, q) for p, q in zip(points, points[1:]))
