"""The multidimensional 2PL: recovery of known truth, K by BIC, EAP in K dimensions, mirt."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.linalg import orthogonal_procrustes

from evalcert.errors import InputError
from evalcert.irt import MultidimensionalTwoPL, TwoPL, fit_irt, select_dims
from evalcert.irt.data import observed_cells
from evalcert.irt.estimation import mml_multidim
from evalcert.irt.estimation.mml_multidim import (m2pl_em, marginal_loglik,
                                                  posterior_moments, product_grid,
                                                  triangular_form)


def simulate(seed: int, n: int, m: int, k: int, missing: float = 0.0, spread: float = 0.4,
             simple: bool = False):
    rng = np.random.default_rng(seed)
    A = np.abs(rng.normal(1.0, spread, (m, k)))
    if simple:              # each item mostly on one dimension (a clear second factor)
        A *= np.where(np.arange(m)[:, None] % k == np.arange(k)[None, :], 1.5, 0.25)
    d = rng.normal(0.0, 1.0, m)
    theta = rng.normal(size=(n, k))
    Y = (rng.random((n, m)) < 1 / (1 + np.exp(-(theta @ A.T + d)))).astype(float)
    Y[rng.random(Y.shape) < missing] = np.nan
    return Y, A, d, theta


def brute_force(cols, y, A, d, half_width=7.0, n=601):
    """Posterior mean and covariance of theta ~ N(0, I_2) on a fine 2-D rectangle grid."""
    g = np.linspace(-half_width, half_width, n)
    G = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    eta = G @ A[cols].T + d[cols]
    ll = (y * eta - np.logaddexp(0, eta)).sum(1) - 0.5 * (G ** 2).sum(1)
    w = np.exp(ll - ll.max())
    w /= w.sum()
    mu = w @ G
    D = G - mu
    return mu, (w[:, None] * D).T @ D


def test_product_grid_integrates_gaussian_moments_exactly():
    Z, logw = product_grid(3, 7)
    w = np.exp(logw)
    assert Z.shape == (343, 3)
    assert np.allclose(w @ Z, 0, atol=1e-12)
    assert np.allclose((w[:, None] * Z).T @ Z, np.eye(3), atol=1e-12)
    assert np.isclose(w @ Z[:, 0] ** 4, 3.0)          # E z^4 = 3 (exact for 7 points)


def test_triangular_form_is_a_rotation_and_canonical():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(9, 3))
    T = triangular_form(A)
    assert np.allclose(T @ T.T, A @ A.T)
    assert np.all(T[np.triu_indices(3, 1)] == 0) and np.all(np.diag(T[:3]) > 0)
    R, _ = np.linalg.qr(rng.normal(size=(3, 3)))      # any rotation of A: same canonical form
    assert np.allclose(triangular_form(A @ R), T)


def test_recovers_known_slopes_up_to_rotation_and_beats_the_truth_likelihood():
    Y, A, d, _ = simulate(0, 2000, 16, 2, missing=0.2, simple=True)
    O = ~np.isnan(Y)
    out = m2pl_em(np.nan_to_num(Y), O, dims=2, n_points=15)
    assert out["converged"] and out["n_parameters"] == 16 * 3 - 1
    R, _ = orthogonal_procrustes(out["A"], A)          # the best rotation onto the truth
    err = np.abs(out["A"] @ R - A)
    assert np.median(err) < 0.15 and err.max() < 0.5
    assert np.corrcoef((out["A"] @ R).ravel(), A.ravel())[0, 1] > 0.97
    # rotation-free: the slopes' inner products (A A^T) and the item norms (MDISC)
    assert np.max(np.abs(np.linalg.norm(out["A"], axis=1) - np.linalg.norm(A, axis=1))) < 0.5
    assert np.max(np.abs(out["d"] - d)) < 0.35
    ll_truth = marginal_loglik(np.nan_to_num(Y), O, A, d, n_points=15)
    assert out["loglik"] >= ll_truth                  # the ML fit cannot do worse than truth
    assert out["loglik"] - ll_truth < 0.5 * out["n_parameters"] + 30   # ~chi2(k)/2 scale
    assert np.isclose(marginal_loglik(np.nan_to_num(Y), O, out["A"], out["d"], n_points=15),
                      out["loglik"])


def test_likelihood_is_rotation_invariant_and_score_vanishes_at_the_fit():
    Y, A, d, _ = simulate(1, 400, 10, 2, missing=0.3)
    O = ~np.isnan(Y)
    R, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(2, 2)))
    Y0 = np.nan_to_num(Y)
    assert np.isclose(marginal_loglik(Y0, O, A, d), marginal_loglik(Y0, O, A @ R, d))
    out = m2pl_em(Y0, O, dims=2, tol=1e-5)
    assert out["max_score"] <= 1e-5
    # perturbing any free parameter lowers the likelihood
    base = out["loglik"]
    for j, kk in [(0, 0), (3, 1), (9, 0)]:
        for h in (-1e-2, 1e-2):
            A2 = out["A"].copy()
            A2[j, kk] += h
            assert marginal_loglik(Y0, O, A2, out["d"]) < base


def test_sparse_and_dense_paths_agree(monkeypatch):
    Y, *_ = simulate(2, 200, 10, 2, missing=0.5)
    O = ~np.isnan(Y)
    Y0 = np.nan_to_num(Y)
    lls = []
    for share in (0.0, 1.1):                          # always dense, always sparse
        monkeypatch.setattr(mml_multidim, "_DENSE_SHARE", share)
        lls.append(m2pl_em(Y0, O, dims=2, n_points=11, tol=1e-6))
    assert abs(lls[0]["loglik"] - lls[1]["loglik"]) < 1e-6
    assert np.allclose(lls[0]["A"], lls[1]["A"], atol=1e-3)


def test_one_dimension_is_the_2pl():
    Y, *_ = simulate(4, 800, 10, 1)
    m = MultidimensionalTwoPL(dims=1, n_points=61, tol=1e-6).fit(Y)
    two = TwoPL(method="mml", slope_prior=0.0).fit(Y)
    assert abs(m.loglik_ - two.loglik_) < 2e-3
    assert np.allclose(m.loadings_[:, 0], two.discriminations_, atol=5e-3)
    assert np.allclose(m.difficulties_, two.difficulties_, atol=5e-3)
    assert np.corrcoef(m.abilities_[:, 0], two.abilities_)[0, 1] > 0.9999


def test_bic_picks_two_dimensions_on_two_dimensional_data():
    Y, *_ = simulate(5, 800, 12, 2, missing=0.1, simple=True)
    sel = select_dims(Y, dims=(1, 2), n_points=11)
    assert sel.best_bic == 2 and sel.best_aic == 2
    assert sel.loglik[1] > sel.loglik[0]
    assert sel.n_parameters == (24, 35)
    assert "lowest BIC: K = 2" in sel.summary()


@pytest.mark.slow
def test_bic_picks_two_dimensions_among_three():
    Y, *_ = simulate(5, 1500, 16, 2, missing=0.1, simple=True)
    sel = select_dims(Y, dims=(1, 2, 3), n_points=9)
    assert sel.best_bic == 2
    assert sel.n_parameters == (32, 47, 61)


def test_bic_picks_one_dimension_on_one_dimensional_data():
    Y, *_ = simulate(6, 800, 12, 1, missing=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sel = select_dims(Y, dims=(1, 2), n_points=11)
    assert sel.best_bic == 1
    assert sel.loglik[1] >= sel.loglik[0] - 1e-3     # nested: K=2 fits at least as well


def test_eap_scores_match_a_brute_force_posterior():
    Y, A, d, theta = simulate(7, 200, 40, 2, missing=0.5)
    est = MultidimensionalTwoPL(dims=2, n_points=11).fit(Y)
    Ynew, _, _, _ = simulate(8, 30, 40, 2, missing=0.5)
    Ynew[0] = np.nan                                   # nothing answered: the prior
    Ynew[1, 3:] = np.nan                               # three items
    res = est.score(Ynew)
    A_hat, d_hat = est.loadings_, est.intercepts_
    assert np.allclose(res.abilities[0], 0) and np.allclose(res.covariances[0], np.eye(2))
    starts, cols, y = observed_cells(np.nan_to_num(Ynew), ~np.isnan(Ynew))
    for i in range(1, 12):
        c, yy = cols[starts[i]:starts[i + 1]], y[starts[i]:starts[i + 1]]
        mu, cov = brute_force(c, yy, A_hat, d_hat)
        sd = np.sqrt(np.diag(cov))
        assert np.all(np.abs(res.abilities[i] - mu) / sd < 1e-6)
        assert np.allclose(np.sqrt(np.diag(res.covariances[i])), sd, rtol=1e-6)
        assert np.allclose(res.covariances[i], cov, atol=1e-6)
    assert res.n_items_used[1] == np.sum(~np.isnan(Ynew[1])) <= 3
    assert res.to_frame().shape == (30, 6)


def test_training_abilities_are_the_eap_of_the_fit():
    Y, *_ = simulate(9, 300, 12, 2, missing=0.2)
    est = MultidimensionalTwoPL(dims=2, n_points=15).fit(Y)
    res = est.score(Y[:5])
    assert np.allclose(res.abilities, est.abilities_[:5], atol=1e-6)
    assert est.ability_cov_.shape == (300, 2, 2)
    assert np.allclose(est.abilities_se_, np.sqrt(np.diagonal(est.ability_cov_, 0, 1, 2)))


def test_matches_mirt_loglik():
    """mirt 1.2.0 (PyPI) on this exact simulation: ``fit_mirt(Y, model="2PL",
    n_factors=K, n_quadpts=21 (K=2) / 41 (K=1), tol=1e-7, max_iter=20000)``, run in
    /work/venvs/irtmodels (benchmarks/bench_m2pl.py repeats it side by side). Same
    grids (Gauss-Hermite, 21^2 and 41 nodes). At K=1 mirt converged in 38 EM iterations
    and the two agree to 1e-6; at K=2 mirt's EM took 1,443 iterations and stopped
    0.031 log-lik units below evalcert's maximum (EM crawls along the nearly flat
    directions of an exploratory fit), so there evalcert must be at least as high and
    within 0.05."""
    Y, *_ = simulate(11, 600, 12, 2, missing=0.15)
    for k, n_points, mirt, above in ((1, 41, MIRT_LOGLIK_K1, 1e-3),
                                     (2, 21, MIRT_LOGLIK_K2, 0.05)):
        est = MultidimensionalTwoPL(dims=k, n_points=n_points, tol=1e-6).fit(Y)
        assert est.loglik_ >= mirt - 1e-3          # never below mirt's optimum
        assert est.loglik_ - mirt < above


MIRT_LOGLIK_K1 = -3502.1791917574665
MIRT_LOGLIK_K2 = -3495.168143831189


def test_refusals_and_cli_wiring():
    Y, *_ = simulate(12, 50, 3, 1)
    with pytest.raises(InputError, match="at least 4 items"):
        MultidimensionalTwoPL(dims=4).fit(Y)
    with pytest.raises(InputError, match="dims"):
        MultidimensionalTwoPL(dims=0)
    est = fit_irt(Y, model="m2pl", dims=1)
    with pytest.raises(InputError, match="eap"):
        est.score(Y, method="wle")
    with pytest.raises(InputError, match="items"):
        est.score(Y[:, :2])
    with pytest.raises(InputError, match="nodes exceed"):
        product_grid(3, 101)


def test_cli_fit_m2pl(tmp_path, capsys):
    import pandas as pd

    from evalcert.cli import main

    Y, *_ = simulate(13, 100, 6, 2, missing=0.1)
    path = tmp_path / "r.csv"
    pd.DataFrame(Y, index=[f"m{i}" for i in range(100)],
                 columns=[f"q{j}" for j in range(6)]).rename_axis("model").to_csv(path)
    code = main(["irt", "fit", str(path), "--model", "m2pl", "--dims", "2",
                 "--out-dir", str(tmp_path / "out")])
    assert code == 0
    text = capsys.readouterr().out
    assert "m2pl" in text and "a_kk > 0" in text
    items = pd.read_csv(tmp_path / "out" / "items.csv")
    assert {"loading_0", "loading_1", "intercept"} <= set(items.columns)
    assert items.loc[0, "loading_1"] == 0
    models = pd.read_csv(tmp_path / "out" / "models.csv")
    assert {"ability_0", "ability_1"} <= set(models.columns)


def test_irt_score_refuses_a_multidimensional_item_file(tmp_path):
    from evalcert.io.irt_tables import read_item_table

    path = tmp_path / "items.csv"
    path.write_text("item,difficulty,discrimination,intercept,loading_0,loading_1\n"
                    "q0,0.1,1.0,-0.1,1.0,0.0\nq1,0.2,1.2,-0.2,0.8,0.7\n")
    with pytest.raises(InputError, match="multidimensional"):
        read_item_table(path)
