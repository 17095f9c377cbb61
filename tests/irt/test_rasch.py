"""Rasch estimators: recovery, agreement across methods, extremes, identification."""

import numpy as np
import pytest

from evalcert.errors import ConvergenceError, InputError
from evalcert.irt import ExtremeResponseWarning, Rasch

from .conftest import simulate


@pytest.fixture(scope="module")
def fits(rasch_data):
    Y = rasch_data[0]
    return {m: Rasch(method=m).fit(Y) for m in ("jml", "cml", "mml", "map")}


@pytest.mark.parametrize("method", ["jml", "cml", "mml", "map"])
def test_recovery_correlation_and_scale(fits, rasch_data, method):
    _, theta, b, _ = rasch_data
    est = fits[method]
    assert np.corrcoef(est.difficulties_, b)[0, 1] > 0.97
    assert 0.85 < np.polyfit(b, est.difficulties_, 1)[0] < 1.15
    assert np.corrcoef(est.abilities_, theta)[0, 1] > 0.9
    assert abs(est.difficulties_.mean()) < 1e-8          # sum-zero identification
    assert est.result_.converged and np.isfinite(est.loglik_)
    assert np.all(est.difficulties_se_ > 0)


def test_jml_cml_mml_agree_on_rasch_data(fits):
    cml = fits["cml"].difficulties_
    assert np.max(np.abs(fits["mml"].difficulties_ - cml)) < 0.1
    jml = fits["jml"].difficulties_
    assert np.corrcoef(jml, cml)[0, 1] > 0.999
    # JML's incidental-parameter bias (Sec. 3.3.1) stretches the scale a little
    assert 1.0 < jml.std() / cml.std() < 1.2


def test_cml_stable_at_20000_items():
    Y, theta, b, _ = simulate(30, 20_000, seed=3)
    with pytest.warns(ExtremeResponseWarning):
        est = Rasch(method="cml").fit(Y)
    d = est.difficulties_
    ok = np.isfinite(d)
    assert np.isfinite(est.loglik_) and est.result_.n_iter < 30
    assert np.corrcoef(d[ok], b[ok])[0, 1] > 0.8
    assert np.corrcoef(est.abilities_, theta)[0, 1] > 0.99


def test_extremes_excluded_for_jml_kept_for_map():
    Y, *_ = simulate(60, 25, seed=4)
    Y[:, 3] = 0.0
    Y[0] = 1.0              # item 3 becomes all-0 only once model0 is excluded
    with pytest.warns(ExtremeResponseWarning, match="excluded 1 models"):
        jml = Rasch(method="jml").fit(Y)
    assert np.isnan(jml.abilities_[0]) and np.isnan(jml.difficulties_[3])
    assert jml.result_.excluded_models == ("model0",)
    assert np.all(jml.predict_proba()[0] == 1.0)
    map_ = Rasch(method="map").fit(Y)
    assert np.isfinite(map_.abilities_).all() and map_.abilities_[0] == map_.abilities_.max()


def test_anchor_item_identification_and_same_predictions(rasch_data):
    Y = rasch_data[0]
    a = Rasch(method="jml", anchor_item=5).fit(Y)
    s = Rasch(method="jml").fit(Y)
    assert a.difficulties_[5] == 0.0
    assert np.allclose(a.predict_proba(), s.predict_proba(), atol=1e-6)
    m = Rasch(method="cml", anchor_model="model2").fit(Y)
    assert m.abilities_[2] == 0.0


def test_dataframe_names_kept():
    pd = pytest.importorskip("pandas")
    Y, *_ = simulate(40, 10, seed=5)
    df = pd.DataFrame(Y, index=[f"llm{i}" for i in range(40)],
                      columns=[f"q{j}" for j in range(10)])
    est = Rasch(method="map").fit(df)
    assert est.model_names_[0] == "llm0" and est.result_.item_names[-1] == "q9"
    assert est.result_.to_dict()["parameters"]["abilities"][0] == pytest.approx(
        est.abilities_[0])


def test_mcmc_draws_rhat_ess_and_same_seed_same_numbers():
    Y, theta, b, _ = simulate(40, 20, seed=6)
    kw = dict(method="mcmc", n_chains=3, n_draws=300, n_burn=300, seed=7)
    est = Rasch(**kw).fit(Y)
    assert est.draws_["abilities"].shape == (3, 300, 40)
    assert np.max(est.rhat_["difficulties"]) < 1.1
    assert np.all(est.ess_["difficulties"] > 50)
    assert np.corrcoef(est.difficulties_, b)[0, 1] > 0.85
    map_ = Rasch(method="map").fit(Y)
    assert np.max(np.abs(est.difficulties_ - map_.difficulties_)) < 0.3
    assert np.array_equal(Rasch(**kw).fit(Y).abilities_, est.abilities_)


def test_non_convergence_raises(rasch_data):
    with pytest.raises(ConvergenceError):
        Rasch(method="jml", max_iter=2).fit(rasch_data[0])
    with pytest.raises(ConvergenceError):
        Rasch(method="mml", max_iter=2).fit(rasch_data[0])


@pytest.mark.parametrize("bad, match", [
    (np.array([[0, 1, 2], [1, 0, 1]], float), "outside"),
    (np.array([[np.nan, np.nan], [1, 0]]), "no observed"),
    (np.zeros(4), "2-D"),
])
def test_bad_inputs_raise_input_error(bad, match):
    with pytest.raises(InputError, match=match):
        Rasch().fit(bad)


def test_mismatched_mask_and_unknown_method_raise():
    Y = np.eye(3)
    with pytest.raises(InputError, match="mask"):
        Rasch().fit(Y, mask=np.zeros((2, 3), bool))
    with pytest.raises(InputError, match="method"):
        Rasch(method="em").fit(Y)


@pytest.mark.parametrize("method", ["jml", "cml", "mml"])
def test_extreme_response_warning_points_at_the_callers_line(method):
    Y, *_ = simulate(30, 10, seed=8)
    Y[0], Y[:, 1] = 1.0, 0.0
    with pytest.warns(ExtremeResponseWarning) as record:
        Rasch(method=method).fit(Y)
    assert {w.filename for w in record} == {__file__}


def _reference_sampler(Y, observed, *, lam, n_chains, n_draws, n_burn, seed):
    """The sampler written plainly: every ratio from two full likelihood evaluations."""
    rng = np.random.default_rng(seed)
    O = observed.astype(float)
    N, M = Y.shape
    theta, b = rng.normal(0.0, 1.0, (n_chains, N)), rng.normal(0.0, 1.0, (n_chains, M))
    scale = {"theta": np.full(N, 1.0 / np.sqrt(O.sum(1) / 4 + lam)),
             "b": np.full(M, 1.0 / np.sqrt(O.sum(0) / 4 + lam))}

    def loglik(t, bb, axis):
        eta = t[:, :, None] - bb[:, None, :]
        return np.sum(O * (Y * eta - np.logaddexp(0.0, eta)), axis=axis)

    draws = []
    for it in range(n_burn + n_draws):
        for which, axis in (("theta", 2), ("b", 1)):
            cur = theta if which == "theta" else b
            prop = cur + scale[which] * rng.standard_normal(cur.shape)
            t_new, b_new = (prop, b) if which == "theta" else (theta, prop)
            log_ratio = (loglik(t_new, b_new, axis) - loglik(theta, b, axis)
                         - 0.5 * lam * (prop ** 2 - cur ** 2))
            accept = np.log(rng.random(cur.shape)) < log_ratio
            cur[accept] = prop[accept]
            if it < n_burn and (it + 1) % 25 == 0:
                scale[which] *= np.exp(np.clip(accept.mean(axis=0) - 0.44, -0.3, 0.3))
        if it >= n_burn:
            draws.append(b - b.mean(axis=1, keepdims=True))
    return np.stack(draws, axis=1)


def test_mcmc_sampler_matches_plain_reference_draw_for_draw():
    from evalcert.irt.estimation.mcmc import sample_rasch
    Y, *_ = simulate(25, 12, seed=9)
    Y[np.random.default_rng(1).random(Y.shape) < 0.2] = np.nan
    obs = ~np.isnan(Y)
    kw = dict(lam=1.0, n_chains=3, n_draws=60, n_burn=60, seed=11)
    fast = sample_rasch(np.nan_to_num(Y), obs, **kw)["b"]
    assert np.allclose(fast, _reference_sampler(np.nan_to_num(Y), obs, **kw), atol=1e-10)


def test_cml_with_missing_cells_converges_in_few_newton_steps():
    """Regression (issue 12): CML with missing cells took 12 diagonal-Hessian steps here (and
    ~60 s at 300 x 20,000); the Schur-complement steps and the PROX start take 6."""
    Y, theta, b, _ = simulate(60, 500, seed=3)
    Y[np.random.default_rng(3).random(Y.shape) < 0.5] = np.nan
    with pytest.warns(ExtremeResponseWarning):
        est = Rasch(method="cml", tol=1e-10).fit(Y)
    assert est.n_iter_ <= 7
    assert "Schur Hessian" in est.result_.solver
    bound = float(est.result_.solver.split("ESF truncation error <= ")[1].split(",")[0])
    assert bound < 1e-10
    ok = np.isfinite(est.difficulties_)
    assert np.corrcoef(est.difficulties_[ok], b[ok])[0, 1] > 0.9


@pytest.mark.parametrize("n_first, n_second", [(6, 4), (7, 7), (4, 9), (1, 12)])
def test_cml_on_two_items_is_the_closed_form(n_first, n_second, tmp_path):
    # issue 21: 6 + 4 rows: "Newton did not converge in 2000 iterations" (the approximate
    # Hessian is half the exact one on 2 items, so every step overshot); 7 + 7: a
    # LinAlgError traceback in the SEs. Every model has score 1, so the conditional
    # likelihood is a Bernoulli in b2 - b1: b = (-1, 1) log(n1 / n2) / 2, and the SE of
    # b1 = -b2 is 1 / (2 sqrt(n p (1 - p))), p = n1 / n.
    from evalcert.cli import main

    Y = np.array([[1.0, 0.0]] * n_first + [[0.0, 1.0]] * n_second)
    est = Rasch(method="cml").fit(Y)
    half = np.log(n_first / n_second) / 2
    assert np.allclose(est.difficulties_, [-half, half], atol=1e-6)
    n, p = n_first + n_second, n_first / (n_first + n_second)
    assert np.allclose(est.difficulties_se_, 1 / (2 * np.sqrt(n * p * (1 - p))), rtol=1e-6)
    path = tmp_path / "c.csv"
    path.write_text(",i1,i2\n" + "".join(f"a{k},1,0\n" for k in range(n_first))
                    + "".join(f"b{k},0,1\n" for k in range(n_second)))
    assert main(["irt", "fit", str(path), "--method", "cml"]) == 0
