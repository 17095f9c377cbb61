"""Fast paths of the Rasch estimators, each against a slower reference.

* pooling of exchangeable models/items: the pooled objective equals the full one;
* Newton on pooled groups (JML/MAP) against L-BFGS on the whole matrix;
* the JML existence check against a brute-force cut enumeration (Ford's
  condition), and against what the estimates do as the prior vanishes;
* the complete-data MML E-step (shared grid / per-group nodes) against the
  per-model adaptive Gauss-Hermite E-step;
* the stationarity certificate every joint and conditional fit carries.
"""

import dataclasses
import itertools
import warnings

import numpy as np
import pandas as pd
import pytest

from evalcert.cli import main
from evalcert.errors import ConnectivityError, ConvergenceError, InputError
from evalcert.irt import Rasch, TwoPL, validate_responses
from evalcert.irt.base import STATIONARITY_LIMIT
from evalcert.irt.estimation import mml_em as mml_module
from evalcert.irt.estimation import pooling
from evalcert.irt.data import require_finite_jml
from evalcert.irt.estimation.joint_newton import _objective
from tests.conftest import require_shared

from .conftest import simulate


def _with_missing(Y, frac, seed):
    Y = Y.copy()
    Y[np.random.default_rng(seed).random(Y.shape) < frac] = np.nan
    return Y


# -- pooling ----------------------------------------------------------------------------
def test_group_rows_groups_exactly_equal_rows_even_on_hash_collisions(monkeypatch):
    rng = np.random.default_rng(0)
    obs = rng.random((300, 70)) < 0.9
    obs[150:] = obs[:150]                       # plenty of duplicate patterns
    totals = rng.integers(0, 3, 300)

    def check(first, group):
        for g, rep in enumerate(first):
            rows = np.flatnonzero(group == g)
            assert (obs[rows] == obs[rep]).all() and (totals[rows] == totals[rep]).all()
        keys = {(obs[r].tobytes(), totals[r]) for r in first}
        assert len(keys) == first.size          # different groups differ

    first, group = pooling.group_rows(obs, totals)
    check(first, group)
    assert first.size < 300
    # every row hashing alike must not merge different rows
    monkeypatch.setattr(pooling, "_row_hash", lambda packed, totals: np.zeros(len(totals),
                                                                            np.uint64))
    first2, group2 = pooling.group_rows(obs, totals)
    check(first2, group2)
    assert first2.size == first.size


@pytest.mark.parametrize("missing", [0.0, 0.3])
def test_pooled_objective_equals_full_objective(missing):
    Y, *_ = simulate(200, 30, seed=21)
    data = validate_responses(_with_missing(Y, missing, 1))
    pooled = pooling.pool_responses(data.values, data.observed)
    rng = np.random.default_rng(2)
    theta_g, b_h = rng.normal(size=pooled.shape[0]), rng.normal(size=pooled.shape[1])
    theta, b = theta_g[pooled.row_group], b_h[pooled.col_group]
    eta = theta[:, None] - b[None, :]
    full = np.sum(data.observed * (np.logaddexp(0, eta) - data.values * eta))
    full += 0.5 * 0.7 * (theta @ theta + b @ b)
    assert _objective(pooled, theta_g, b_h, 0.7)[0] == pytest.approx(full, rel=1e-12)
    if missing == 0:
        assert pooled.shape[0] < 200            # complete data: models pool by score


# -- Newton against L-BFGS ----------------------------------------------------------------
@pytest.mark.parametrize("method", ["jml", "map"])
@pytest.mark.parametrize("missing", [0.0, 0.25])
def test_newton_on_pooled_groups_matches_lbfgs_on_full_matrix(method, missing):
    Y, *_ = simulate(400, 60, seed=22)
    Y = _with_missing(Y, missing, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        newton = Rasch(method=method, optimizer="newton", tol=1e-9).fit(Y)
        lbfgs = Rasch(method=method, optimizer="lbfgs").fit(Y)
    assert newton.result_.solver.startswith("newton")
    assert lbfgs.result_.solver == "L-BFGS-B"
    for attr in ("difficulties_", "abilities_", "difficulties_se_", "abilities_se_"):
        a, b = getattr(newton, attr), getattr(lbfgs, attr)
        assert np.array_equal(np.isnan(a), np.isnan(b))
        assert np.nanmax(np.abs(a - b)) < 1e-4, attr
    if method == "jml":     # Newton's optimum is at least as good as L-BFGS's
        assert newton.loglik_ >= lbfgs.loglik_ - 1e-9 * abs(lbfgs.loglik_)
    else:                   # MAP maximises loglik + prior; loglik alone moves first-order
        assert newton.loglik_ == pytest.approx(lbfgs.loglik_, rel=1e-7)
    assert newton.n_iter_ < 15


def test_optimizer_is_validated():
    with pytest.raises(InputError, match="optimizer"):
        Rasch(optimizer="sgd").fit(np.eye(3))


# -- existence of the JML estimate ------------------------------------------------------------
def _ford_condition(data):
    """Brute force: every proper subset of models+items beats something outside it."""
    n, m = data.shape
    wins = [(i, n + j) if data.values[i, j] == 1 else (n + j, i)
            for i, j in zip(*np.nonzero(data.observed))]
    nodes = range(n + m)
    for size in range(1, n + m):
        for subset in itertools.combinations(nodes, size):
            inside = set(subset)
            if not any(u in inside and v not in inside for u, v in wins):
                return False
    return True


def test_finite_jml_check_matches_brute_force_ford_condition():
    rng = np.random.default_rng(5)
    seen = {True: 0, False: 0}
    for _ in range(300):
        Y = (rng.random((4, 4)) < rng.uniform(0.3, 0.7)).astype(float)
        Y[rng.random(Y.shape) < 0.15] = np.nan
        try:
            data = validate_responses(Y)
        except InputError:
            continue
        expected = _ford_condition(data)
        seen[expected] += 1
        if expected:
            require_finite_jml(data)
        else:
            with pytest.raises(ConnectivityError):
                require_finite_jml(data)
    assert seen[True] > 10 and seen[False] > 10


def test_jml_without_finite_optimum_is_refused_and_map_diverges_there():
    # no line is all 0 or all 1, yet the weak models (l1, l2) miss every easy
    # item (e1, e2) and the strong ones (h1, h2) solve every hard one (d1, d2):
    # nothing links the halves, so their JML gap is infinite
    #              e1 e2 d1 d2
    Y = np.array([[0, 1, 1, 1],      # h1
                  [1, 0, 1, 1],      # h2
                  [0, 0, 1, 0],      # l1
                  [0, 0, 0, 1.0]])   # l2
    assert not _ford_condition(validate_responses(Y))
    with pytest.raises(ConnectivityError, match="strongly connected") as info:
        Rasch(method="jml").fit(Y)
    assert sorted(info.value.component_sizes) == [(2, 2), (2, 2)]
    # the gap grows without bound as the prior vanishes (MAP -> JML) ...
    spread = [np.ptp(Rasch(method="map", lam=lam).fit(Y).difficulties_) for lam in (1e-3, 1e-7)]
    assert spread[1] - spread[0] > 3
    # ... but not once one weak model solves one easy item
    Y[2, 0] = 1
    assert _ford_condition(validate_responses(Y))
    jml = Rasch(method="jml").fit(Y)
    spread = [np.ptp(Rasch(method="map", lam=lam).fit(Y).difficulties_) for lam in (1e-3, 1e-7)]
    assert abs(spread[1] - spread[0]) < 0.05
    assert spread[1] == pytest.approx(np.ptp(jml.difficulties_), abs=1e-3)


# -- MML E-steps ----------------------------------------------------------------------------------
@pytest.mark.parametrize("cls, slopes", [(Rasch, False), (TwoPL, True)])
def test_complete_data_mml_estep_matches_adaptive_gauss_hermite(cls, slopes):
    Y, *_ = simulate(300, 40, seed=23, slopes=slopes)
    fits = {q: cls(method="mml", quadrature=q, tol=1e-9).fit(Y)
            for q in ("adaptive", "grid", "auto")}
    assert "adaptive Gauss-Hermite" in fits["adaptive"].result_.solver
    assert "shared uniform grid" in fits["grid"].result_.solver
    for q in ("grid", "auto"):
        for attr in ("difficulties_", "abilities_", "difficulties_se_"):
            assert np.max(np.abs(getattr(fits[q], attr) - getattr(fits["adaptive"], attr))) < 1e-6
        assert fits[q].loglik_ == pytest.approx(fits["adaptive"].loglik_, rel=1e-10)


def _dense_adaptive_estep(Y, O, a, d, mu, sd, n_quad):
    """Reference: the per-model adaptive E-step on dense arrays (every cell, masked)."""
    from numpy.polynomial.hermite_e import hermegauss
    from scipy.special import expit, logsumexp
    z, w = hermegauss(n_quad)
    theta = mu[:, None] + sd[:, None] * z[None, :]
    log_joint = (np.log(w / w.sum()) + 0.5 * z ** 2 + np.log(sd)[:, None] - 0.5 * theta ** 2)
    P = expit(theta[:, :, None] * a + d)                                  # (N, Q, M)
    log_joint += np.einsum("nm,nqm->nq", O, Y[:, None, :] * np.log(P)
                           + (1 - Y[:, None, :]) * np.log1p(-P))
    ll = logsumexp(log_joint, axis=1)
    post = np.exp(log_joint - ll[:, None])
    resid = O[:, None, :] * (Y[:, None, :] - P)
    H = O[:, None, :] * P * (1 - P)
    return {"mu": (post * theta).sum(1), "g0": np.einsum("nq,nqm->m", post, resid),
            "g1": np.einsum("nq,nqm->m", post * theta, resid),
            "h0": np.einsum("nq,nqm->m", post, H), "h1": np.einsum("nq,nqm->m", post * theta, H),
            "h2": np.einsum("nq,nqm->m", post * theta ** 2, H),
            "loglik": float(ll.sum())}


@pytest.mark.parametrize("missing", [0.0, 0.5, 0.9])
def test_cell_based_adaptive_estep_matches_dense_reference(missing):
    rng = np.random.default_rng(31)
    Y, *_ = simulate(40, 25, seed=31, slopes=True)
    O = (rng.random(Y.shape) >= missing).astype(float)
    O[np.arange(40), rng.integers(0, 25, 40)] = 1            # every model answers something
    a, d = rng.lognormal(0, 0.3, 25), rng.normal(size=25)
    mu, sd = rng.normal(size=40), rng.uniform(0.2, 0.8, 40)
    out = mml_module._AdaptiveEStep(Y * O, O, 11)(a, d, mu, sd)
    ref = _dense_adaptive_estep(Y, O, a, d, mu, sd, 11)
    for key in ("mu", "g0", "g1", "h0", "h1", "h2"):
        assert np.allclose(out[key], ref[key], rtol=1e-10, atol=1e-10), key
    assert out["loglik"] == pytest.approx(ref["loglik"], rel=1e-12)


def test_shared_grid_repairs_bad_posterior_guesses(monkeypatch):
    # few models and many items: posteriors are narrow, so a grid placed from a
    # wrong (mu, sd) guess misses them; the E-step must notice and repair
    Y, *_ = simulate(8, 3000, seed=24)
    keep = (Y.sum(0) > 0) & (Y.sum(0) < 8)
    Y = Y[:, keep]
    estep = mml_module._CompleteEStep(Y, pool_by_score=True, n_quad=15, shared_only=True)
    a = np.full(Y.shape[1], 1.3)
    d = np.log((Y.sum(0) + 0.5) / (8 - Y.sum(0) + 0.5))
    mu, sd = estep.start(a, d)
    reference = estep(a, d, mu, sd)
    calls = []
    original = mml_module._CompleteEStep._laplace
    monkeypatch.setattr(mml_module._CompleteEStep, "_laplace",
                        lambda self, a, d, t: calls.append(t.size) or original(self, a, d, t))
    for guess in ((mu + 0.5, sd / 20), (mu - 0.3, sd * 5), (np.zeros_like(mu), np.ones_like(sd))):
        out = estep(a, d, *guess)
        for key in ("mu", "sd", "g0", "g1", "h0", "h2"):
            assert np.max(np.abs(out[key] - reference[key])) < 1e-8 * (
                1 + np.max(np.abs(reference[key]))), key
        assert out["loglik"] == pytest.approx(reference["loglik"], rel=1e-12)
    assert calls                                  # at least one guess needed the repair


def test_grid_quadrature_needs_complete_data():
    Y = _with_missing(simulate(50, 10, seed=25)[0], 0.2, 4)
    with pytest.raises(InputError, match="grid"):
        Rasch(method="mml", quadrature="grid").fit(Y)
    assert "adaptive" in Rasch(method="mml").fit(Y).result_.solver
    with pytest.raises(InputError, match="quadrature"):
        Rasch(method="mml", quadrature="simpson").fit(Y)


def test_cli_solver_options(tmp_path, capsys):
    Y, *_ = simulate(40, 15, seed=26)
    path = tmp_path / "r.csv"
    pd.DataFrame(Y, index=[f"m{i}" for i in range(40)]).to_csv(path)
    assert main(["irt", "fit", str(path), "--method", "jml", "--optimizer", "lbfgs"]) == 0
    assert "L-BFGS-B" in capsys.readouterr().out
    assert main(["irt", "fit", str(path), "--method", "mml", "--quadrature", "grid"]) == 0
    assert "shared uniform grid" in capsys.readouterr().out
    assert main(["irt", "fit", str(path), "--model", "factor", "--optimizer", "newton"]) == 2


# -- real data ---------------------------------------------------------------------------------------
def test_psn_irt_41871_items_fast_paths_agree_with_references():
    Y = pd.read_csv(require_shared("irt/PSN-IRT/combine.csv"), header=None).to_numpy(float)
    assert Y.shape == (12, 41871)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jml = Rasch(method="jml").fit(Y)
        cml = Rasch(method="cml").fit(Y)
        auto = Rasch(method="mml").fit(Y)
        adaptive = Rasch(method="mml", quadrature="adaptive").fit(Y)
    assert "newton" in jml.result_.solver
    assert len(jml.result_.excluded_items) == 610 + 2810      # the README's counts
    ok = np.isfinite(cml.difficulties_)
    assert np.corrcoef(jml.difficulties_[ok], cml.difficulties_[ok])[0, 1] > 0.999
    assert np.nanmax(np.abs(auto.difficulties_ - adaptive.difficulties_)) < 1e-5
    assert auto.loglik_ == pytest.approx(adaptive.loglik_, rel=1e-9)


# -- the stationarity certificate ----------------------------------------------------------------------
@pytest.mark.parametrize("make", [lambda: Rasch(method="jml"), lambda: Rasch(method="map"),
                                  lambda: Rasch(method="jml", optimizer="lbfgs"),
                                  lambda: Rasch(method="cml"), lambda: TwoPL(method="map")])
def test_fits_carry_a_stationarity_certificate_recomputed_from_data(make, rasch_data):
    est = make().fit(rasch_data[0])
    assert 0 <= est.result_.stationarity <= STATIONARITY_LIMIT
    assert "stationarity" in est.result_.summary()


def test_stationarity_measures_distance_in_standard_errors(rasch_data):
    est = Rasch(method="map", lam=0.5).fit(rasch_data[0])
    data = validate_responses(rasch_data[0])
    R, C = est.abilities_[:, None].copy(), est.difficulties_[:, None].copy()
    # undo the sum-zero shift: MAP's prior is not shift-invariant
    shift = est._fit_joint(data)["C"][0, 0] - C[0, 0]
    R, C = R + shift, C + shift
    assert est._stationarity(data, R, C, np.zeros(0), 0.5, ("rows", "cols")) < 1e-6
    # move one difficulty by half its standard error: a Newton step moves it back
    # by about that much (the diagonal curvature ignores the coupling, hence ~)
    C[7, 0] += 0.5 * est.difficulties_se_[7]
    moved = est._stationarity(data, R, C, np.zeros(0), 0.5, ("rows", "cols"))
    assert 0.4 < moved < 0.6


def test_unconverged_optimizer_output_is_refused(monkeypatch, rasch_data):
    from evalcert.irt import base
    # an optimizer that stops after one step and claims success
    monkeypatch.setattr(base, "lbfgs", lambda fun, x0, **kw: (x0 - 0.1 * fun(x0)[1], 1))
    with pytest.raises(ConvergenceError, match="not stationary") as info:
        TwoPL(method="map").fit(rasch_data[0])
    assert info.value.status == "not_stationary"
    with pytest.raises(ConvergenceError, match="not stationary"):
        Rasch(method="jml", optimizer="lbfgs").fit(rasch_data[0])


def test_pooled_cml_matches_unpooled_cml(monkeypatch, rasch_data):
    Y = rasch_data[0]
    pooled = Rasch(method="cml", tol=1e-9).fit(Y)
    assert "pooled groups" in pooled.result_.solver
    monkeypatch.setattr(pooling, "group_rows",
                        lambda obs, totals: (np.arange(len(totals)), np.arange(len(totals))))
    plain = Rasch(method="cml", tol=1e-9).fit(Y)
    assert plain.result_.solver.endswith(f"{Y.shape[0]} x {Y.shape[1]} pooled groups)")
    for attr in ("difficulties_", "abilities_", "difficulties_se_", "abilities_se_"):
        assert np.max(np.abs(getattr(pooled, attr) - getattr(plain, attr))) < 1e-8, attr
    assert pooled.loglik_ == pytest.approx(plain.loglik_, rel=1e-12)


# -- CML with missing cells (issue 12) ------------------------------------------------------
def _reference_cml(Y):
    """CML written plainly: exact summation ESFs per model, BFGS over sum-zero difficulties."""
    from scipy.optimize import minimize

    from evalcert.irt.estimation.esf import log_esf
    obs = ~np.isnan(Y)
    hits = np.nan_to_num(Y)
    ones, scores = hits.sum(0), hits.sum(1).astype(int)

    def objective(x):
        b = np.r_[-x.sum(), x]
        value, grad = ones @ b, ones.copy()
        for i in range(Y.shape[0]):
            items = np.flatnonzero(obs[i])
            full = log_esf(b[items])
            value += full[scores[i]]
            for k, j in enumerate(items):       # d log gamma / d b_j = -pi_ij
                loo = log_esf(np.delete(b[items], k))
                grad[j] -= np.exp(-b[j] + loo[scores[i] - 1] - full[scores[i]])
        return value, grad[1:] - grad[0]
    x = minimize(objective, np.zeros(Y.shape[1] - 1), jac=True, method="BFGS",
                 options={"gtol": 1e-10}).x
    return np.r_[-x.sum(), x]


def test_cml_with_missing_cells_matches_a_plain_reference():
    Y, *_ = simulate(40, 12, seed=31)
    Y = _with_missing(Y, 0.25, 3)
    Y[np.random.default_rng(4).random(Y.shape) < 0.05] = np.nan     # perturbed design
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = Rasch(method="cml", tol=1e-10).fit(Y)
    keep_r = ~np.isin(est.model_names_, est.result_.excluded_models)
    keep_c = ~np.isin(est.result_.item_names, est.result_.excluded_items)
    reference = _reference_cml(Y[np.ix_(keep_r, keep_c)])
    assert np.max(np.abs(est.difficulties_[keep_c] - reference)) < 1e-6


@pytest.mark.parametrize("missing", [0.0, 0.4])
def test_cml_schur_steps_reach_the_diagonal_steps_optimum(monkeypatch, missing):
    from evalcert.irt import rasch as rasch_module
    Y = _with_missing(simulate(150, 40, seed=32)[0], missing, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        monkeypatch.setattr(rasch_module, "_EXACT_NEWTON_FLOPS", np.inf)
        exact = Rasch(method="cml", tol=1e-10).fit(Y)
        monkeypatch.setattr(rasch_module, "_EXACT_NEWTON_FLOPS", 0.0)
        fast = Rasch(method="cml", tol=1e-10).fit(Y)
        monkeypatch.setattr(rasch_module, "_SCHUR_FLOPS", 0.0)
        slow = Rasch(method="cml", tol=1e-10).fit(Y)
    assert "exact Hessian" in exact.result_.solver
    assert "Schur Hessian" in fast.result_.solver and "diagonal" in slow.result_.solver
    for attr in ("difficulties_", "abilities_", "difficulties_se_", "abilities_se_"):
        assert np.nanmax(np.abs(getattr(fast, attr) - getattr(slow, attr))) < 1e-8, attr
        assert np.nanmax(np.abs(getattr(exact, attr) - getattr(slow, attr))) < 1e-8, attr
    assert exact.n_iter_ <= fast.n_iter_ < slow.n_iter_


def test_jml_pooled_information_equals_the_information_recomputed_from_data(rasch_data):
    """The JML certificate takes the pooled curvature; recomputed from the data it is the same."""
    est = Rasch(method="jml")
    data = validate_responses(_with_missing(rasch_data[0], 0.3, 7))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = est._fit(data)
    sub = data.take(out["keep_rows"], out["keep_cols"])
    hR, hC = est._information(sub, out["R"], out["C"], np.zeros(0))
    assert np.allclose(1 / np.sqrt(hR), out["se_R"], rtol=1e-12)
    assert np.allclose(1 / np.sqrt(hC), out["se_C"], rtol=1e-12)
    recomputed = est._stationarity(sub, out["R"], out["C"], np.zeros(0), 0.0, ("rows", "cols"))
    assert recomputed == pytest.approx(out["stationarity"], rel=1e-9)


def test_cml_models_with_the_same_item_set_share_one_score_law(monkeypatch):
    """Block designs (few distinct masks) evaluate fewer laws and give the same estimates."""
    from evalcert.irt.estimation import esf
    Y, *_ = simulate(90, 400, seed=33)
    masks = np.random.default_rng(8).random((3, 400)) < 0.6
    masks[:, ~masks.any(0)] = True
    Y[~masks[np.arange(90) % 3]] = np.nan
    laws, real = [], esf._batch_terms

    def spy(b, *args):
        laws.append(b.shape[0])
        return real(b, *args)
    monkeypatch.setattr(esf, "_batch_terms", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        shared = Rasch(method="cml", tol=1e-10).fit(Y)
        n_shared, laws[:] = sum(laws), []
        real_from_mask = esf.ObservedSets.from_mask
        monkeypatch.setattr(esf.ObservedSets, "from_mask", classmethod(         # no sharing
            lambda cls, obs: dataclasses.replace(real_from_mask(obs),
                                                 pattern=np.arange(obs.shape[0]))))
        alone = Rasch(method="cml", tol=1e-10).fit(Y)
    assert n_shared < 0.5 * sum(laws), (n_shared, sum(laws))
    assert np.nanmax(np.abs(shared.difficulties_ - alone.difficulties_)) < 1e-8
    assert np.nanmax(np.abs(shared.abilities_ - alone.abilities_)) < 1e-8
