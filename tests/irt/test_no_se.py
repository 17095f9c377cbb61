"""``standard_errors=False`` (issue 12): same estimates to the bit, NaN SEs, a note, no crash."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from evalcert.cli import main
from evalcert.errors import InputError
from evalcert.irt import (GradedResponse, LogisticFactor, Rasch, ThreePL, TwoPL,
                                  make_estimator)
from evalcert.irt.base import SE_SKIPPED
from evalcert.io.irt_tables import estimate_tables, ranking_text
from tests.irt.conftest import simulate

CASES = [(Rasch, {"method": m}) for m in ("jml", "cml", "mml", "map")] + [
    (Rasch, {"method": "mml", "quadrature": "adaptive"}),
    (Rasch, {"method": "mcmc", "n_draws": 40, "n_burn": 40, "n_chains": 2, "max_rhat": 10.0}),
    (TwoPL, {"method": "mml"}), (TwoPL, {"method": "map"}),
    (ThreePL, {"guessing": 0.2, "n_quad": 21}),
]


def _data(missing: bool = False):
    Y, *_ = simulate(60, 12, seed=3, slopes=True)
    if missing:
        Y[np.random.default_rng(4).random(Y.shape) < 0.2] = np.nan
    return Y


def _fits(cls, kw, Y):
    return cls(**kw).fit(Y), cls(**kw, standard_errors=False).fit(Y)


@pytest.mark.filterwarnings("ignore::evalcert.irt.data.ExtremeResponseWarning")
@pytest.mark.parametrize("cls, kw", CASES, ids=lambda c: getattr(c, "__name__", str(c)))
@pytest.mark.parametrize("missing", [False, True])
def test_estimates_bit_identical_and_ses_nan(cls, kw, missing):
    if missing and kw.get("method") == "cml":
        pytest.skip("covered on complete data")
    Y = _data(missing)
    on, off = _fits(cls, kw, Y)
    assert on.result_.parameters.keys() == off.result_.parameters.keys()
    for name, value in on.result_.parameters.items():
        np.testing.assert_array_equal(off.result_.parameters[name], value, err_msg=name)
    assert on.loglik_ == off.loglik_ and on.n_iter_ == off.n_iter_
    assert on.result_.standard_errors.keys() == off.result_.standard_errors.keys()
    for name, se in on.result_.standard_errors.items():
        assert np.isfinite(se).any(), name                 # the reference computed them
        got = off.result_.standard_errors[name]
        assert got.shape == se.shape and np.isnan(got).all(), name
        assert np.isnan(getattr(off, f"{name}_se_")).all()
    assert SE_SKIPPED in off.result_.notes and SE_SKIPPED not in on.result_.notes
    # no SE note contradicts it (e.g. "item SEs from each item's own block")
    assert not any("SE" in n for n in off.result_.notes if n != SE_SKIPPED)


def test_graded_and_factor_take_the_flag():
    rng = np.random.default_rng(0)
    theta = rng.normal(size=80)
    Yg = np.clip(np.round(theta[:, None] + rng.normal(size=(80, 5))) + 1, 0, 3)
    on, off = (GradedResponse(n_quad=21, standard_errors=s).fit(Yg) for s in (True, False))
    np.testing.assert_array_equal(on.thresholds_, off.thresholds_)
    assert np.isnan(off.thresholds_se_).all() and np.isfinite(on.thresholds_se_).all()
    fac = LogisticFactor(dims=1, standard_errors=False).fit(_data())
    assert SE_SKIPPED in fac.result_.notes                 # it has no SEs either way


def test_mml_skips_the_observed_information(monkeypatch):
    import evalcert.irt.estimation.mml_em as mml

    def boom(*args, **kwargs):
        raise AssertionError("observed information computed with standard_errors=False")

    monkeypatch.setattr(mml, "observed_information", boom)
    Rasch(method="mml", standard_errors=False).fit(_data())
    TwoPL(standard_errors=False).fit(_data(missing=True))
    with pytest.raises(AssertionError):
        Rasch(method="mml").fit(_data())


def test_bad_value_is_refused():
    with pytest.raises(InputError, match="standard_errors"):
        Rasch(standard_errors="no").fit(_data())


def test_exports_summary_json_and_two_stage_fits_do_not_crash():
    Y = _data()
    est = make_estimator("2pl", "mml", standard_errors=False).fit(Y)
    models, items = estimate_tables(est, Y)
    assert models["ability_se"].isna().all() and items["difficulty_se"].isna().all()
    text = ranking_text(models)
    assert "not computed" in text and "nan" not in text
    assert "not computed" in est.result_.summary()
    blob = json.loads(est.result_.to_json())
    assert all(v is None for v in blob["standard_errors"]["difficulties"])
    new = est.fit_models(Y[:5])                            # frozen items: SEs stay NaN
    assert np.isnan(new.abilities_se_).all() and np.isfinite(new.abilities_).all()
    assert est.score(Y[:3], method="eap").abilities.shape == (3,)


def _wide(tmp_path):
    Y = _data()
    frame = pd.DataFrame(Y, index=[f"m{i}" for i in range(Y.shape[0])],
                         columns=[f"q{j}" for j in range(Y.shape[1])])
    path = tmp_path / "r.csv"
    frame.to_csv(path)
    return path


@pytest.mark.parametrize("model, method", [("rasch", "mml"), ("2pl", "mml"), ("rasch", "cml")])
def test_cli_no_se(tmp_path, capsys, model, method):
    path, out = _wide(tmp_path), tmp_path / "out"
    code = main(["irt", "fit", str(path), "--model", model, "--method", method, "--no-se",
                 "--out-dir", str(out), "--json", str(tmp_path / "r.json")])
    text = capsys.readouterr().out
    assert code == 0
    ranking = text.split("ranking of models (ability):\n")[1].splitlines()
    assert ranking[0].split() == ["rank", "model", "ability", "n_observed", "accuracy"]
    assert "standard errors not computed" in text
    models = pd.read_csv(out / "models.csv")
    assert models["ability_se"].isna().all()               # empty cells, column kept
    ref = make_estimator(model, method).fit(pd.read_csv(path, index_col=0))
    got = pd.read_csv(out / "items.csv")["difficulty"].to_numpy()
    # pandas < 3's read_csv parses text an ulp off: a few ulps, not bit for bit
    np.testing.assert_allclose(got, ref.difficulties_, rtol=1e-14, atol=1e-15)
    assert json.loads((tmp_path / "r.json").read_text())["notes"][-1] == SE_SKIPPED


@pytest.mark.filterwarnings("ignore::evalcert.irt.data.ExtremeResponseWarning")
def test_excluded_line_limits_match_the_dense_formula():
    # _finish computes the ML limits of excluded lines only (item 4 of the task: less
    # fixed cost per fit); they must equal the old dense K x M formula
    Y = _data(missing=True)
    Y[2] = np.where(np.isnan(Y[2]), np.nan, 1.0)          # all-1 model (with missing cells)
    Y[:, 5] = np.where(np.isnan(Y[:, 5]), np.nan, 0.0)    # all-0 item
    est = Rasch(method="jml").fit(Y)
    res = est.result_
    keep_r = ~np.isin(res.model_names, res.excluded_models)
    keep_c = ~np.isin(res.item_names, res.excluded_items)
    obs = np.isfinite(Y).astype(float)
    hits = np.nan_to_num(Y)
    mean_r = (hits @ keep_c) / np.maximum(obs @ keep_c, 1)
    mean_c = (keep_r @ hits) / np.maximum(keep_r @ obs, 1)
    assert not keep_r.all() and not keep_c.all()
    np.testing.assert_array_equal(est._row_limit, np.where(keep_r, np.nan, mean_r))
    np.testing.assert_array_equal(est._col_limit, np.where(keep_c, np.nan, mean_c))
    P = est.predict_proba()
    assert np.all(P[2] == 1.0) and np.all(P[keep_r][:, 5] == 0.0)
