"""Marginal ML on observed cells (issue 12, items 1, 2, 4): the blocked E-step, the item
blocks of the observed information, accelerated EM with the slope prior, node choice, divergence."""

import numpy as np
import pytest
from numpy.polynomial.hermite_e import hermegauss
from scipy.special import expit, logsumexp

from evalcert.errors import ConvergenceError
from evalcert.irt import TwoPL
from evalcert.irt.estimation import louis
from evalcert.irt.estimation import mml_em as mml
from evalcert.irt.estimation import mml_estep
from evalcert.irt.estimation.mml_em import auto_n_quad, mml_em

from .conftest import simulate


def _masked(n_models, n_items, missing, seed):
    """2PL data with a share of missing cells; items every model got right/wrong dropped."""
    Y, theta, b, a = simulate(n_models, n_items, seed=seed, slopes=True)
    O = np.random.default_rng(seed).random(Y.shape) >= missing
    O[np.arange(n_models), np.arange(n_models) % n_items] = True
    Y = Y * O
    keep = (Y.sum(0) > 0) & (Y.sum(0) < O.sum(0))
    return Y[:, keep], O[:, keep], theta, b[keep], a[keep]


def _dense_estep(Y, O, a, d, mu, sd, n_quad):
    """Reference: every cell and node of a dense (models, nodes, items) array, masked."""
    z, w = hermegauss(n_quad)
    theta = mu[:, None] + sd[:, None] * z[None, :]
    log_joint = np.log(w / w.sum()) + 0.5 * z ** 2 + np.log(sd)[:, None] - 0.5 * theta ** 2
    eta = theta[:, :, None] * a + d
    log_joint += np.einsum("nm,nqm->nq", O, Y[:, None, :] * eta - np.logaddexp(0, eta))
    ll = logsumexp(log_joint, axis=1)
    post = np.exp(log_joint - ll[:, None])
    P = expit(eta)
    R, H = O[:, None, :] * (Y[:, None, :] - P), O[:, None, :] * P * (1 - P)
    return {"mu": (post * theta).sum(1), "g0": np.einsum("nq,nqm->m", post, R),
            "g1": np.einsum("nq,nqm->m", post * theta, R),
            "h0": np.einsum("nq,nqm->m", post, H), "h1": np.einsum("nq,nqm->m", post * theta, H),
            "h2": np.einsum("nq,nqm->m", post * theta ** 2, H), "loglik": float(ll.sum())}


@pytest.mark.parametrize("block", [7, 64, 1 << 18])
@pytest.mark.parametrize("scale", [1.0, 60.0])          # 60: logits beyond +-700 get clipped
@pytest.mark.parametrize("long", [1, 20, 1 << 30])      # rows alone (_row) ... none (_rows)
def test_blocked_estep_equals_dense_reference(monkeypatch, block, scale, long):
    monkeypatch.setattr(mml_estep, "_BLOCK", block)       # one row per block ... all rows at once
    monkeypatch.setattr(mml_estep, "_LONG", long)
    Y, O, *_ = _masked(30, 40, 0.4, seed=41)
    rng = np.random.default_rng(41)
    M = Y.shape[1]
    a = rng.lognormal(0, 0.3, M) * scale * (1 + 1e-9 * rng.normal(size=M))    # perturbed
    d, mu, sd = rng.normal(size=M), rng.normal(size=30), rng.uniform(0.1, 0.9, 30)
    out = mml._AdaptiveEStep(Y, O.astype(float), 9)(a, d, mu, sd)
    ref = _dense_estep(Y, O.astype(float), a, d, mu, sd, 9)
    for key in ("mu", "g0", "g1", "h0", "h1", "h2"):
        assert np.allclose(out[key], ref[key], rtol=1e-9, atol=1e-9 * scale), key
    assert out["loglik"] == pytest.approx(ref["loglik"], rel=1e-11)


@pytest.mark.parametrize("long", [1, 1 << 30])
@pytest.mark.parametrize("scale", [1.0, 8.0, 60.0])     # R = 32, a few, 1 cells per log
def test_long_rows_equal_dense_reference(monkeypatch, long, scale):
    """Rows of ~400 cells, on their own (one log per product of cells) or packed."""
    monkeypatch.setattr(mml_estep, "_LONG", long)
    Y, O, *_ = _masked(12, 600, 0.3, seed=43)
    rng = np.random.default_rng(43)
    M = Y.shape[1]
    a = rng.lognormal(0, 0.3, M) * scale * (1 + 1e-9 * rng.normal(size=M))
    d, mu, sd = rng.normal(size=M) * scale, rng.normal(size=12), rng.uniform(0.05, 0.3, 12)
    estep = mml._AdaptiveEStep(Y, O.astype(float), 7)
    assert (len(estep.blocks) == 12) == (long == 1)
    ref = _dense_estep(Y, O.astype(float), a, d, mu, sd, 7)
    for curvature in (True, False):
        out = estep(a, d, mu, sd, curvature=curvature)
        keys = ("mu", "g0", "g1") + (("h0", "h1", "h2") if curvature else ())
        for key in keys:
            assert np.allclose(out[key], ref[key], rtol=1e-9, atol=1e-9 * scale), key
        assert out["loglik"] == pytest.approx(ref["loglik"], rel=1e-12)


def test_item_blocks_equal_dense_reference():
    Y, O, *_ = _masked(25, 30, 0.5, seed=42)
    rng = np.random.default_rng(42)
    M = Y.shape[1]
    a, d = rng.lognormal(0, 0.3, M), rng.normal(size=M)
    mu, sd = rng.normal(size=25), rng.uniform(0.2, 0.8, 25)
    rows, cols = np.nonzero(O)
    z, post = louis._posterior(rows, cols, Y[rows, cols], 25, a, d, mu, sd, 11)
    h, s_aa, s_ad, s_dd = louis._item_blocks(rows, cols, Y[rows, cols], M, a, d, mu, sd, z, post)
    # dense: per model the covariance over its posterior of the item's own score (r t, r)
    theta = mu[:, None] + sd[:, None] * z[None, :]
    P = expit(theta[:, :, None] * a + d)                          # (N, Q, M)
    R = O[:, None, :] * (Y[:, None, :] - P)
    C = O[:, None, :] * P * (1 - P)
    W = post[:, :, None]
    ra, rd = R * theta[:, :, None], R
    dev_a, dev_d = ra - (W * ra).sum(1, keepdims=True), rd - (W * rd).sum(1, keepdims=True)
    ref = {"aa": (W * dev_a ** 2).sum((0, 1)), "ad": (W * dev_a * dev_d).sum((0, 1)),
           "dd": (W * dev_d ** 2).sum((0, 1))}
    for got, key in ((s_aa, "aa"), (s_ad, "ad"), (s_dd, "dd")):
        assert np.allclose(got, ref[key], rtol=1e-10, atol=1e-12), key
    t = theta[:, :, None]
    assert np.allclose(h, [(W * C * t * t).sum((0, 1)), (W * C * t).sum((0, 1)),
                           (W * C).sum((0, 1))], rtol=1e-10, atol=1e-12)


def test_slope_prior_fit_is_stationary():
    # regression: the parameter-expansion step rescaled slopes as if they had no
    # prior, so EM stopped at a point where the penalised score was 0.03-0.07 (not
    # an optimum). The fitted point must zero the marginal score (Fisher identity,
    # computed with 21 nodes) plus the log-normal prior's gradient.
    Y, O, *_ = _masked(80, 150, 0.3, seed=11)
    out = mml_em(Y, O, common_slope=False, n_quad=15, tol=1e-9, max_iter=5000, what="t",
                 slope_prec=4.0, quadrature="adaptive")
    estep = mml._AdaptiveEStep(Y, O.astype(float), 21)
    s = estep(out["a"], out["d"], out["eap"], out["psd"])
    s = estep(out["a"], out["d"], s["mu"], s["sd"])
    assert np.max(np.abs(s["g0"])) < 1e-6
    assert np.max(np.abs(s["g1"] - 4.0 * np.log(out["a"]) / out["a"])) < 1e-6


def test_accelerated_em_reaches_the_marginal_ml_of_a_fine_grid():
    # pure ML on data with missing cells: the fitted point maximises the marginal
    # likelihood computed independently on a 2001-node grid (no EM, no adaptive nodes)
    Y, O, *_ = _masked(300, 12, 0.3, seed=43)
    out = mml_em(Y, O, common_slope=False, n_quad=21, tol=1e-9, max_iter=3000, what="t",
                 quadrature="adaptive")
    z = np.linspace(-9, 9, 2001)
    log_w = -0.5 * z ** 2 - 0.5 * np.log(2 * np.pi) + np.log(z[1] - z[0])

    def loglik(a, d):
        eta = z[:, None] * a + d                                   # (K, M)
        ll = Y @ eta.T - O.astype(float) @ np.logaddexp(0, eta).T
        return float(logsumexp(ll + log_w, axis=1).sum())

    best = loglik(out["a"], out["d"])
    rng = np.random.default_rng(43)
    for _ in range(6):      # no nearby point is better, beyond rounding
        da, dd = rng.normal(size=(2, out["a"].size)) * 1e-3
        assert loglik(out["a"] + da, out["d"] + dd) < best + 1e-9
    # and the gradient there is ~0 (central differences on the grid likelihood)
    h, j = 1e-5, 0
    e = np.zeros(out["a"].size)
    e[j] = h
    assert abs(loglik(out["a"] + e, out["d"]) - loglik(out["a"] - e, out["d"])) / (2 * h) < 1e-4


def test_auto_nodes_match_many_nodes():
    Y, O, *_ = _masked(40, 2400, 0.5, seed=44)                 # ~1200 responses per model
    assert auto_n_quad(O) == 7 and auto_n_quad(O[:, :300]) == 11 and auto_n_quad(O[:, :50]) == 15
    Yn = np.where(O, Y, np.nan)
    auto = TwoPL(method="mml", tol=1e-8).fit(Yn)
    many = TwoPL(method="mml", tol=1e-8, n_quad=21).fit(Yn)
    assert "7 nodes" in auto.result_.solver and "21 nodes" in many.result_.solver
    se = many.difficulties_se_
    assert np.max(np.abs(auto.difficulties_ - many.difficulties_) / se) < 1e-4
    assert np.max(np.abs(auto.discriminations_ - many.discriminations_)
                  / many.discriminations_se_) < 1e-4


def test_pure_ml_stops_early_when_slopes_run_away():
    # regression: a perfectly split item has no finite ML slope; EM used to crawl
    # for max_iter iterations (2000 on ChemBench) and then fail without the reason
    Y, theta, *_ = simulate(30, 400, seed=45, slopes=True)
    order = np.argsort(theta)
    Y[order[:15], 0], Y[order[15:], 0] = 0.0, 1.0              # item 0: a perfect split
    with pytest.warns(UserWarning):
        with pytest.raises(ConvergenceError, match="slope MLE does not exist.*item0") as err:
            TwoPL(method="mml", slope_prior=0, quadrature="adaptive", max_iter=300).fit(Y)
    assert err.value.status == "diverged"
