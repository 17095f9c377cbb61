"""Infit/outfit against a direct cell-by-cell formula, and the null calibration."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalcert.errors import InputError
from evalcert.irt import BetaIRT, Rasch, TwoPL
from evalcert.irt.itemfit import fit_statistics, item_fit
from tests.irt.conftest import simulate


def _direct(y, p):
    """Wright & Masters (1982) Ch. 5 for one item (or model), written out cell by cell."""
    z2, res2, w_sum, c_over_w2, c_minus_w2 = [], [], 0.0, 0.0, 0.0
    for x, e in zip(y, p):
        w = e * (1 - e)
        c = e * (1 - e) ** 4 + (1 - e) * e ** 4
        z2.append((x - e) ** 2 / w)
        res2.append((x - e) ** 2)
        w_sum += w
        c_over_w2 += c / w ** 2
        c_minus_w2 += c - w ** 2
    n = len(y)
    u, v = sum(z2) / n, sum(res2) / w_sum
    qu, qv = np.sqrt(c_over_w2 / n ** 2 - 1 / n), np.sqrt(c_minus_w2) / w_sum
    return u, (u ** (1 / 3) - 1) * 3 / qu + qu / 3, v, (v ** (1 / 3) - 1) * 3 / qv + qv / 3


def test_fit_statistics_match_direct_formula_with_missing_cells():
    rng = np.random.default_rng(0)
    P = rng.uniform(0.05, 0.95, (9, 7))
    Y = (rng.random(P.shape) < P).astype(float)
    O = rng.random(P.shape) < 0.8
    for axis in (0, 1):
        got = fit_statistics(Y, P, O, axis=axis)
        for k in range(P.shape[1 - axis]):
            sel = O[:, k] if axis == 0 else O[k]
            y = (Y[:, k] if axis == 0 else Y[k])[sel]
            p = (P[:, k] if axis == 0 else P[k])[sel]
            ref = _direct(y, p)
            for name, r in zip(("outfit", "outfit_t", "infit", "infit_t"), ref):
                assert got[name][k] == pytest.approx(r, rel=1e-10)
            assert got["n"][k] == sel.sum()


def test_item_fit_is_calibrated_under_the_model_and_flags_a_bad_item():
    Y, *_ = simulate(1500, 20, seed=21)
    rng = np.random.default_rng(1)
    Y[:, 0] = (rng.random(1500) < 0.5).astype(float)           # pure noise: unrelated to ability
    res = item_fit(Rasch(method="cml").fit(Y), Y)
    assert res.items["outfit"][0] > 1.2 and res.items["infit_t"][0] > 4
    t = res.items["infit_t"][1:]
    assert abs(np.mean(t)) < 1.5 and np.mean(np.abs(t) > 2) < 0.3
    assert "item0" in res.flagged("items")
    assert "item0" in res.summary()


def test_item_fit_skips_excluded_lines_and_checks_inputs():
    Y, *_ = simulate(80, 10, seed=22)
    Y[0] = 1.0                                                    # excluded by JML
    with pytest.warns(Warning):
        est = Rasch(method="jml").fit(Y)
    res = item_fit(est, Y)
    assert res.models["n"][0] == 0 and np.isnan(res.models["outfit"][0])
    assert np.all(res.items["n"] == np.isfinite(est.abilities_).sum())
    with pytest.raises(InputError, match="shape"):
        item_fit(est, Y[:, :5])
    with pytest.raises(InputError, match="names"):
        item_fit(est, pd.DataFrame(Y, columns=[f"x{j}" for j in range(10)]))
    with pytest.raises(InputError, match="not fitted"):
        item_fit(TwoPL(), Y)
    beta = BetaIRT.__new__(BetaIRT)
    beta.result_, beta.model_name = None, "beta"
    with pytest.raises(InputError, match="0/1"):
        item_fit(beta, Y)
