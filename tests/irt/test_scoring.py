"""Scoring new models on frozen items: ML/WLE/MAP/EAP against brute-force references."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import brentq

from evalcert.errors import InputError
from evalcert.irt import Rasch, TwoPL
from evalcert.irt.information import ItemParameters, item_parameters
from evalcert.irt.scoring import score_abilities, score_models
from tests.irt.conftest import simulate


def _items(seed: int, n: int = 12, guessing: bool = False) -> ItemParameters:
    rng = np.random.default_rng(seed)
    c = rng.uniform(0.1, 0.3, n) if guessing else np.zeros(n)
    return ItemParameters(rng.lognormal(0, 0.3, n), rng.normal(size=n), c,
                          tuple(f"q{j}" for j in range(n)), "3pl" if guessing else "2pl")


def _patterns(seed: int, n_models: int, n_items: int):
    rng = np.random.default_rng(seed)
    Y = (rng.random((n_models, n_items)) < 0.55).astype(float)
    O = rng.random((n_models, n_items)) < 0.85
    Y[0], O[0] = 1.0, True          # all correct
    Y[1], O[1] = 0.0, True          # all wrong
    return Y, O


def _pieces(t: float, p: ItemParameters, y: np.ndarray, o: np.ndarray):
    """Plainly written l, l', I, J at one ability (the reference)."""
    l = g = info = J = 0.0
    for j in np.flatnonzero(o):
        s = 1 / (1 + np.exp(-p.a[j] * (t - p.b[j])))
        P = p.c[j] + (1 - p.c[j]) * s
        d1 = (1 - p.c[j]) * p.a[j] * s * (1 - s)
        d2 = d1 * p.a[j] * (1 - 2 * s)
        l += y[j] * np.log(P) + (1 - y[j]) * np.log(1 - P)
        g += d1 * (y[j] - P) / (P * (1 - P))
        info += d1 ** 2 / (P * (1 - P))
        J += d1 * d2 / (P * (1 - P))
    return l, g, info, J


@pytest.mark.parametrize("guessing", [False, True])
def test_wle_matches_root_of_warm_equation(guessing):
    p = _items(3, guessing=guessing)
    Y, O = _patterns(4, 8, 12)
    theta, se = score_abilities(p, Y, O, method="wle")
    for i in range(Y.shape[0]):
        def warm(t):
            _, g, info, J = _pieces(t, p, Y[i], O[i])
            return g + J / (2 * info)
        ref = brentq(warm, -15, 15, xtol=1e-13)
        assert theta[i] == pytest.approx(ref, abs=1e-8)
        assert se[i] == pytest.approx(1 / np.sqrt(_pieces(ref, p, Y[i], O[i])[2]), rel=1e-8)
    assert np.all(np.isfinite(theta))                 # WLE is finite for all-0/all-1


def test_ml_root_and_infinite_extremes():
    p = _items(5)
    Y, O = _patterns(6, 8, 12)
    theta, se = score_abilities(p, Y, O, method="ml")
    assert theta[0] == np.inf and theta[1] == -np.inf and np.isinf(se[:2]).all()
    for i in range(2, Y.shape[0]):
        ref = brentq(lambda t: _pieces(t, p, Y[i], O[i])[1], -15, 15, xtol=1e-13)
        assert theta[i] == pytest.approx(ref, abs=1e-8)


@pytest.mark.parametrize("guessing", [False, True])
def test_eap_and_map_match_quadrature(guessing):
    p = _items(7, guessing=guessing)
    Y, O = _patterns(8, 6, 12)
    mu, sd = 0.3, 1.4
    eap, psd = score_abilities(p, Y, O, method="eap", prior=(mu, sd))
    mode, _ = score_abilities(p, Y, O, method="map", prior=(mu, sd))
    for i in range(Y.shape[0]):
        def post(t, k=0):
            return t ** k * np.exp(_pieces(t, p, Y[i], O[i])[0] - 0.5 * ((t - mu) / sd) ** 2)
        z = quad(post, -12, 12, epsabs=1e-14, limit=200)[0]
        m1 = quad(post, -12, 12, args=(1,), epsabs=1e-14, limit=200)[0] / z
        m2 = quad(post, -12, 12, args=(2,), epsabs=1e-14, limit=200)[0] / z
        assert eap[i] == pytest.approx(m1, abs=1e-6)
        assert psd[i] == pytest.approx(np.sqrt(m2 - m1 ** 2), rel=1e-5)
        grid = np.linspace(-8, 8, 160001)
        logp = [_pieces(t, p, Y[i], O[i])[0] - 0.5 * ((t - mu) / sd) ** 2
                for t in grid[::400]]
        coarse = grid[::400][int(np.argmax(logp))]
        assert abs(mode[i] - coarse) < 0.05                  # the global mode, not a local one
        ref = brentq(lambda t: _pieces(t, p, Y[i], O[i])[1] - (t - mu) / sd ** 2,
                     coarse - 0.1, coarse + 0.1, xtol=1e-13)
        assert mode[i] == pytest.approx(ref, abs=1e-8)


def test_ml_scores_reproduce_joint_abilities():
    """At the JML optimum each ability solves its own ML equation given the items."""
    Y, *_ = simulate(120, 25, seed=11)
    est = Rasch(method="jml").fit(Y)
    res = score_models(est, Y, method="ml")
    keep = np.isfinite(est.abilities_)
    np.testing.assert_allclose(res.abilities[keep], est.abilities_[keep], atol=1e-5)
    np.testing.assert_allclose(res.standard_errors[keep], est.abilities_se_[keep], rtol=1e-3)


def test_score_models_on_2pl_with_missing_cells_and_names():
    import pandas as pd
    Y, theta, *_ = simulate(300, 30, seed=12, slopes=True)
    est = TwoPL(method="mml").fit(Y[:250])
    new = pd.DataFrame(Y[250:], index=[f"m{i}" for i in range(50)], columns=est.item_names_)
    new.iloc[0, :10] = np.nan
    res = score_models(est, new, method="eap")
    assert res.model_names[0] == "m0" and res.n_items_used[0] == 20
    assert np.corrcoef(res.abilities, theta[250:])[0, 1] > 0.8
    assert "m0" in res.summary() and res.to_dict()["method"] == "eap"
    # columns are matched by name: shuffled and partial tables give the same scores
    shuffled = new.iloc[:, ::-1].drop(columns=["item3"])
    again = score_models(est, shuffled, method="eap")
    new.loc[:, "item3"] = np.nan
    np.testing.assert_allclose(again.abilities, score_models(est, new, method="eap").abilities)
    assert "absent" in again.notes[0]
    with pytest.raises(InputError, match="not in the fitted items"):
        score_models(est, new.rename(columns={"item0": "zzz"}))


def test_score_models_refuses_bad_input():
    Y, *_ = simulate(100, 10, seed=13)
    est = Rasch(method="cml").fit(Y)
    with pytest.raises(InputError, match="items"):
        score_models(est, Y[:, :5])
    with pytest.raises(InputError, match="method"):
        score_models(est, Y, method="mle")
    with pytest.raises(InputError, match="prior"):
        score_models(est, Y, method="eap", prior=(0.0, 0.0))
    with pytest.raises(InputError, match="not fitted"):
        score_models(Rasch(), Y)


def test_wle_on_3pl_items_converges_where_plain_scoring_steps_crawl():
    """Regression: one-sided Fisher-scoring steps crawled (bracket 1e-4 after 200 steps) on
    3pl items with a 0.2 floor; bisecting whenever a step fails to halve the bracket fixes it."""
    from evalcert.irt import ThreePL

    Y, *_ = simulate(40, 15, seed=0)
    est = ThreePL(guessing=0.2).fit(Y)
    p = item_parameters(est)
    theta, _ = score_abilities(p, Y, np.ones_like(Y, bool), method="wle")
    for i in range(Y.shape[0]):
        def warm(t):
            _, g, info, J = _pieces(t, p, Y[i], np.ones(15, bool))
            return g + J / (2 * info)
        grid = np.linspace(-12, 12, 481)
        vals = np.array([warm(t) for t in grid])
        roots = [brentq(warm, grid[k], grid[k + 1], xtol=1e-13) for k in range(480)
                 if vals[k] > 0 > vals[k + 1]]
        assert any(abs(theta[i] - r) < 1e-7 for r in roots)


@pytest.mark.parametrize("method", ["ml", "wle", "map", "eap"])
def test_estimator_score_is_score_models(method):
    from evalcert.irt import ThreePL

    Y = simulate(120, 10, seed=9)[0]
    Y[0], Y[1] = 1.0, 0.0                               # all correct, all wrong (ML: +-inf)
    for est in (Rasch(method="mml"), TwoPL(method="mml"), ThreePL(guessing=0.2)):
        est.fit(Y[5:])
        got, ref = est.score(Y[:5], method=method), score_models(est, Y[:5], method)
        np.testing.assert_array_equal(got.abilities, ref.abilities)
        np.testing.assert_array_equal(got.standard_errors, ref.standard_errors)
        assert got.method == method and got.item_model == est.model_name
        if method in ("wle", "map", "eap"):
            assert np.all(np.isfinite(got.abilities))
    prior = Rasch(method="mml").fit(Y[5:]).score(Y[:5], method="map", prior=(0.0, 0.5))
    assert prior.prior_sd == 0.5


def test_estimator_score_refuses_models_without_binary_item_curves():
    from evalcert.irt import GradedResponse, LogisticFactor

    rng = np.random.default_rng(0)
    graded = GradedResponse().fit(rng.integers(1, 4, (60, 5)).astype(float))
    with pytest.raises(InputError, match="no unidimensional binary item curves"):
        graded.score(np.ones((2, 5)))
    Y = simulate(60, 8, seed=2)[0]
    with pytest.raises(InputError, match="no unidimensional binary item curves"):
        LogisticFactor(dims=2).fit(Y).score(Y[:2])
    with pytest.raises(InputError, match="not fitted"):
        Rasch().score(Y[:2])
    with pytest.raises(InputError, match="method must be one of"):
        Rasch(method="mml").fit(Y).score(Y[:2], method="mle")


def _log_posterior(p: ItemParameters, y: np.ndarray, o: np.ndarray, mu: float, sd: float,
                   grid: np.ndarray) -> np.ndarray:
    j = np.flatnonzero(o)
    P = p.c[j] + (1 - p.c[j]) / (1 + np.exp(-p.a[j] * (grid[:, None] - p.b[j])))
    P = np.clip(P, 1e-300, 1 - 1e-16)
    ll = np.sum(np.where(y[j] > 0.5, np.log(P), np.log1p(-P)), axis=1)
    return ll - 0.5 * ((grid - mu) / sd) ** 2


def _brute_force(p: ItemParameters, y: np.ndarray, o: np.ndarray, mu: float, sd: float):
    """One model by brute force: posterior mean, sd and mode on 1,201 nodes over +-12 prior
    sds, then on 2,401 nodes over +-12 posterior sds (returns the spacing too)."""
    grid = np.linspace(mu - 12 * sd, mu + 12 * sd, 1201)
    for _ in range(2):
        lp = _log_posterior(p, y, o, mu, sd, grid)
        w = np.exp(lp - lp.max())
        w /= w.sum()
        m = w @ grid
        s = np.sqrt(w @ (grid - m) ** 2)
        top, h = grid[np.argmax(lp)], grid[1] - grid[0]
        grid = np.linspace(m - 12 * max(s, h), m + 12 * max(s, h), 2401)
    return m, s, top, h


@pytest.mark.parametrize("n_items,missing,guessing", [
    (40, 0.0, False), (3000, 0.9, False), (600, 0.5, True),
    pytest.param(1500, 0.0, False, marks=pytest.mark.slow),
    pytest.param(1500, 0.3, False, marks=pytest.mark.slow)])
def test_fixed_grid_eap_matches_brute_force_where_posteriors_are_narrow(n_items, missing,
                                                                      guessing):
    """The fixed grid is refined per model where its spacing is too coarse (thousands of
    items: posterior sd ~0.03); complete, dense-with-missing and sparse cells alike."""
    rng = np.random.default_rng(n_items + int(10 * missing))
    p = _items(n_items, n=n_items, guessing=guessing)
    theta = np.concatenate([rng.normal(size=6), [-4.0, 4.5]])
    P = p.c + (1 - p.c) / (1 + np.exp(-p.a * (theta[:, None] - p.b)))
    Y = (rng.random(P.shape) < P).astype(float)
    O = rng.random(P.shape) >= missing
    Y[0], O[0] = 1.0, True                               # all correct
    mu, sd = 0.2, 1.3
    eap, psd = score_abilities(p, Y, O, method="eap", prior=(mu, sd))
    mode, _ = score_abilities(p, Y, O, method="map", prior=(mu, sd))
    for i in range(Y.shape[0]):
        m, s, top, h = _brute_force(p, Y[i], O[i], mu, sd)
        assert eap[i] == pytest.approx(m, abs=1e-6 * s)
        assert psd[i] == pytest.approx(s, rel=1e-5)
        assert abs(mode[i] - top) <= h


def test_scores_are_stable_under_perturbed_items():
    """A 1e-9 change to the item parameters moves no score by more than ~1e-7."""
    rng = np.random.default_rng(3)
    p = _items(5, n=500)
    Y = (rng.random((30, 500)) < 0.6).astype(float)
    O = rng.random((30, 500)) < 0.7
    q = ItemParameters(p.a * (1 + 1e-9 * rng.normal(size=500)), p.b + 1e-9 * rng.normal(size=500),
                       p.c, p.item_names, p.model)
    for method in ("ml", "wle", "map", "eap"):
        t1, s1 = score_abilities(p, Y, O, method=method)
        t2, s2 = score_abilities(q, Y, O, method=method)
        np.testing.assert_allclose(t1, t2, atol=1e-7)
        np.testing.assert_allclose(s1, s2, rtol=1e-6)


def test_sparse_and_dense_cells_give_the_same_scores(forced_path):
    """Below a quarter observed the responses stay a sparse matrix: same numbers."""
    rng = np.random.default_rng(4)
    p = _items(6, n=300, guessing=True)
    Y = (rng.random((40, 300)) < 0.5).astype(float)
    O = rng.random((40, 300)) < 0.2
    for method in ("wle", "map", "eap"):
        sparse = score_abilities(p, Y, O, method=method)
        dense = forced_path(0.0, p, Y, O, method=method)
        np.testing.assert_allclose(sparse[0], dense[0], atol=1e-9)
        np.testing.assert_allclose(sparse[1], dense[1], rtol=1e-8)
