"""Two-stage holdout, cross-validation, CLI and real data."""

import numpy as np
import pandas as pd
import pytest

from evalcert.cli import main
from evalcert.diagnostics.masks import row_holdout_mask
from evalcert.irt import (BetaIRT, LogisticFactor, Rasch, cross_validate, heldout_auc,
                                  holdout_evaluate, holdout_predict)
from tests.conftest import require_shared

from .conftest import simulate


def test_row_holdout_leaks_nothing():
    """Stage 1 never sees test models; held-out cells never reach stage 2."""
    Y, *_ = simulate(50, 30, seed=11)
    mask = row_holdout_mask(Y.shape, 0.2, 0.3, seed=0)
    test = mask.any(1)
    P = holdout_predict(Rasch(method="map"), Y, mask, "rows")
    Y2 = Y.copy()
    Y2[test] = np.where(mask[test], 1 - Y[test], Y[test])   # flip every held-out cell
    P2 = holdout_predict(Rasch(method="map"), Y2, mask, "rows")
    assert np.array_equal(P, P2)
    Y3 = Y.copy()
    Y3[test] = 1 - Y[test]                                   # change test rows entirely
    P3 = holdout_predict(Rasch(method="map"), Y3, mask, "rows")
    assert np.array_equal(P[~test], P3[~test])               # stage 1 untouched


@pytest.mark.parametrize("scheme", ["entrywise", "rows", "columns", "l_mask"])
def test_heldout_auc_beats_chance(scheme):
    Y, *_ = simulate(80, 60, seed=12)
    res = holdout_evaluate(Rasch(method="map"), Y, scheme, seed=1)
    assert res.auc > 0.6 and res.n_test_cells > 0
    assert "AUC" in res.summary()


def test_auc_known_value():
    assert heldout_auc(np.array([0, 0, 1, 1]), np.array([0.1, 0.4, 0.35, 0.8])) == 0.75


def test_cross_validation_picks_dims_of_planted_factor_model():
    rng = np.random.default_rng(13)
    U, V = rng.normal(size=(60, 2)) * 1.5, rng.normal(size=(50, 2)) * 1.5
    L = U @ V.T
    Y = (rng.random(L.shape) < 1 / (1 + np.exp(-L))).astype(float)
    cv = cross_validate(LogisticFactor(lam=1.0), Y, "dims", [1, 2], n_folds=3)
    assert cv.best == 2 and cv.log_loss[1] < cv.log_loss[0]


def test_cli_fit_and_holdout(tmp_path, capsys):
    Y, *_ = simulate(30, 20, seed=14)
    path = tmp_path / "r.csv"
    pd.DataFrame(Y, index=[f"m{i}" for i in range(30)]).to_csv(path)
    out = tmp_path / "o.json"
    assert main(["irt", "fit", str(path), "--model", "rasch", "--method", "cml",
                 "--json", str(out)]) == 0
    assert "conditional" in capsys.readouterr().out and out.exists()
    assert main(["irt", "holdout", str(path), "--model", "2pl", "--method", "map",
                 "--scheme", "columns"]) == 0
    assert main(["irt", "fit", str(path), "--model", "2pl", "--method", "cml"]) == 2


def test_chembench_real_data_rasch_fits():
    table = pd.read_csv(require_shared("irt/irt-on-bench/binary_matrix.csv"), index_col=0).T
    with pytest.warns(UserWarning, match="all 0 or all 1"):
        cml = Rasch(method="cml").fit(table)
    assert len(cml.result_.excluded_items) == 134
    mml = Rasch(method="mml").fit(table)
    ok = np.isfinite(cml.difficulties_)
    assert np.corrcoef(cml.difficulties_[ok], mml.difficulties_[ok])[0, 1] > 0.99
    scores = table.mean(axis=1).to_numpy()
    assert np.corrcoef(mml.abilities_, scores)[0, 1] > 0.95
    assert "GPT-4o" in mml.model_names_


def test_alpaca_eval_real_data_beta_irt_fits():
    table = pd.read_csv(require_shared("irt/alpaca_eval/preference_matrix.csv"), index_col=0)
    est = BetaIRT(method="map").fit(table)
    assert est.result_.converged and est.precision_ > 0 and est.n_clipped_ > 0
    assert np.corrcoef(est.abilities_, table.mean(axis=1).to_numpy())[0, 1] > 0.9


@pytest.mark.parametrize("method", ["jml", "cml", "mml"])
@pytest.mark.parametrize("value", [0.0, 1.0])
def test_fit_models_and_fit_items_keep_excluded_frozen_lines(method, value):
    # issue 21: one all-0 (all-1) item is excluded from the fit with a NaN difficulty;
    # placing new models on the frozen items raised ConvergenceError("non-finite")
    Y = (np.random.default_rng(0).random((20, 15)) < 0.5).astype(float)
    Y[:, 3] = value
    with pytest.warns(UserWarning):
        fit = Rasch(method=method).fit(Y[:15])
    assert np.isnan(fit.difficulties_[3])
    new = fit.fit_models(Y[15:])
    assert np.isfinite(new.abilities_).all()
    P = new.predict_proba()
    ok = np.arange(15) != 3
    assert ((P[:, ok] > 0) & (P[:, ok] < 1)).all()
    assert np.allclose(P[:, 3], value)          # the excluded item's ML limit
    # the same new models placed with the item left out entirely: same abilities
    alone = Rasch(method=method).fit(Y[:15][:, ok]).fit_models(Y[15:][:, ok])
    assert np.allclose(new.abilities_, alone.abilities_, atol=1e-6)
    Yt = Y.T.copy()                              # and the mirror: a frozen all-0 model
    with pytest.warns(UserWarning):
        fit_t = Rasch(method="jml").fit(Yt[:, :15])
    items = fit_t.fit_items(Yt[:, 15:])
    assert np.isfinite(items.difficulties_).all()


@pytest.mark.parametrize("method", ["jml", "mml"])
def test_chembench_rows_holdout_gives_its_auc(method, capsys):
    # issue 21: ConvergenceError; it gave AUC 0.80 before, and gives it again
    path = require_shared("irt/irt-on-bench/binary_matrix.csv")
    assert main(["irt", "holdout", str(path), "--transpose", "--scheme", "rows",
                 "--method", method]) == 0
    row = [line for line in capsys.readouterr().out.splitlines() if " rows " in line][0]
    auc = float(row.split()[3])
    assert 0.75 < auc < 0.85
