"""IRT inputs that cannot give an answer are refused with a typed error (issue 10, item 7).

Each case was observed on the old code (NaN estimates reported as converged, an
untyped ValueError, ZeroDivisionError, ``True`` read as index 1, a singular
Newton system on a connected design, minutes of Beta-IRT on 0/1 data).
"""

import itertools
import time
import warnings

import numpy as np
import pytest

from evalcert.errors import ConvergenceError, InputError
from evalcert.irt import BetaIRT, LogisticFactor, Rasch, TwoPL


def test_twopl_joint_fit_without_identified_scale_is_refused_not_nan():
    # 12 x 2: after dropping all-0/all-1 models every kept model scored 1 of 2,
    # so all abilities are equal and "abilities sd 1" divides by zero (old: NaN,
    # converged=True)
    Y = (np.random.default_rng(1).random((12, 2)) < 0.5).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ConvergenceError, match="not identified"):
            TwoPL(method="jml").fit(Y)
        est = TwoPL(method="map").fit(Y)
    assert np.isfinite(est.abilities_).all() and est.result_.converged


def test_nonfinite_estimates_are_never_reported_as_converged(monkeypatch):
    Y = (np.random.default_rng(0).random((30, 8)) < 0.5).astype(float)
    est = Rasch(method="map")
    real = Rasch._fit_joint

    def broken(self, data):
        out = real(self, data)
        out["R"] = out["R"].copy()
        out["R"][3] = np.nan
        return out
    monkeypatch.setattr(Rasch, "_fit_joint", broken)
    with pytest.raises(ConvergenceError, match="non-finite"):
        est.fit(Y)


def test_factor_dims_above_the_item_count_is_an_input_error():
    Y = (np.random.default_rng(0).random((10, 3)) < 0.5).astype(float)
    with pytest.raises(InputError, match="dims=5 exceeds"):
        LogisticFactor(dims=5).fit(Y)
    assert LogisticFactor(dims=3).fit(Y).abilities_.shape == (10, 3)


@pytest.mark.parametrize("option", [{"n_draws": 0}, {"n_draws": 3}, {"n_chains": 0},
                                    {"n_burn": -1}, {"n_draws": 10.5}])
def test_mcmc_settings_are_checked_before_sampling(option):
    Y = (np.random.default_rng(0).random((10, 5)) < 0.5).astype(float)
    with pytest.raises(InputError, match=next(iter(option))):
        Rasch(method="mcmc", **option).fit(Y)


@pytest.mark.parametrize("anchor", [True, False, np.True_])
def test_boolean_anchor_is_not_read_as_an_index(anchor):
    Y = (np.random.default_rng(0).random((30, 5)) < 0.5).astype(float)
    Y[1, 0] = 1 - Y[1, 0] if Y[1].min() == Y[1].max() else Y[1, 0]
    with pytest.raises(InputError, match="anchor_item"):
        Rasch(anchor_item=anchor).fit(Y)
    with pytest.raises(InputError, match="anchor_model"):
        TwoPL(method="map", anchor_model=anchor).fit(Y)


@pytest.mark.parametrize("n_models", [4, 8, 10, 20])
def test_rasch_jml_when_every_model_scores_two_of_four(n_models):
    # every model scores 2/4 with the same items observed: one pooled group of
    # models, whose Schur complement is exactly 0 (old: "Newton system is
    # singular (is the design connected?)" on a connected design)
    rows = [r for r in itertools.product([0, 1], repeat=4) if sum(r) == 2]
    Y = np.array([rows[i % 6] for i in range(n_models)], float)
    newton = Rasch(method="jml", optimizer="newton", tol=1e-10).fit(Y)
    lbfgs = Rasch(method="jml", optimizer="lbfgs").fit(Y)
    assert np.max(np.abs(newton.difficulties_ - lbfgs.difficulties_)) < 1e-5
    assert np.ptp(newton.abilities_) == 0          # exchangeable models, one ability
    # the item with k correct answers out of n has difficulty -logit(k / n) + const
    share = Y.mean(0)
    expected = -np.log(share / (1 - share))
    assert np.max(np.abs(newton.difficulties_ - (expected - expected.mean()))) < 1e-8


def test_beta_irt_refuses_binary_data_up_front():
    Y = (np.random.default_rng(0).random((300, 400)) < 0.5).astype(float)
    start = time.perf_counter()
    with pytest.raises(InputError, match="0 or 1"):
        BetaIRT().fit(Y)
    assert time.perf_counter() - start < 5      # refused before any solve (old: minutes)


def test_score_matrix_and_dataframe_inputs_fit_like_the_array():
    import pandas as pd

    from evalcert.data import ScoreMatrix
    rng = np.random.default_rng(0)
    Y = (rng.random((30, 10)) < 0.5).astype(float)
    Y[rng.random(Y.shape) < 0.2] = np.nan
    agents, items = [f"m{i}" for i in range(30)], [f"q{j}" for j in range(10)]
    S = ScoreMatrix.from_cells(*np.nonzero(~np.isnan(Y)), Y[~np.isnan(Y)], agents, items,
                               bounds=(0, 1))
    reference = Rasch(method="cml").fit(Y)
    for data in (S, pd.DataFrame(Y, index=agents, columns=items)):
        est = Rasch(method="cml").fit(data)
        assert np.allclose(est.difficulties_, reference.difficulties_, equal_nan=True)
        assert est.result_.model_names == tuple(agents)
        assert est.result_.item_names == tuple(items)


def test_a_matrix_too_large_for_memory_is_refused_before_any_work(monkeypatch):
    from evalcert import memory
    monkeypatch.setattr(memory, "memory_available", lambda: 10 ** 6)    # 1 MB
    Y = (np.random.default_rng(0).random((200, 200)) < 0.5).astype(float)
    with pytest.raises(InputError, match="dense 200 x 200"):
        Rasch().fit(Y)
