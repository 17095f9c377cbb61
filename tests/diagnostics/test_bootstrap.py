"""Bootstrap of training cells with refits on a fixed holdout (paper 000, App. D.4)."""

from __future__ import annotations

import numpy as np
import pytest

from evalcert.diagnostics.baselines import RaschLeastSquares
from evalcert.diagnostics.bootstrap import bootstrap_fidelity
from evalcert.diagnostics.sampling import holdout_mask
from evalcert.errors import InputError
from tests.diagnostics.conftest import additive_scores


def _setup():
    S = additive_scores(10, 30)
    hold = holdout_mask(S.observed, 0.2, seed=0)
    return S, ~hold & S.observed, hold


def test_same_seed_same_intervals_whatever_the_chunking():
    S, train, hold = _setup()
    ref = RaschLeastSquares("identity").fit(S.restrict(train)).theta_
    kw = dict(n_boot=12, seed=3, reference_theta=ref, n_jobs=1)
    a = bootstrap_fidelity(RaschLeastSquares("identity"), S, train, hold, chunk_size=5, **kw)
    b = bootstrap_fidelity(RaschLeastSquares("identity"), S, train, hold, chunk_size=12, **kw)
    np.testing.assert_array_equal(a.replicates["rmse"], b.replicates["rmse"])
    assert a.intervals == b.intervals and set(a.intervals) == {"rmse", "spearman", "kendall"}
    lo, hi = a.intervals["rmse"]
    assert lo <= hi and len(a.replicates["rmse"]) == 12 and "percentile" in a.summary()


def test_clipped_linear_refits_with_sample_weights():
    solvers = pytest.importorskip("evalcert.solvers")
    S, train, hold = _setup()
    res = bootstrap_fidelity(solvers.ClippedLinear(solver="native"), S, train, hold, n_boot=8)
    assert res.intervals["rmse"][0] <= res.intervals["rmse"][1]
    assert abs(res.estimate.rmse - np.median(res.replicates["rmse"])) < 0.02


def test_masks_of_the_wrong_shape_are_rejected():
    S, train, hold = _setup()
    with pytest.raises(InputError, match="shape"):
        bootstrap_fidelity(RaschLeastSquares(), S, train[:, :3], hold, n_boot=2)


# ------------------------------- warm refits on every backend, scoring on cells (issue 13.4)
from evalcert.diagnostics import bootstrap as bootstrap_module  # noqa: E402
from evalcert.diagnostics.sampling import holdout_on_cells  # noqa: E402


class _CountingRasch(RaschLeastSquares):
    """Records which model objects fit, and how many times each (same process only)."""

    fits: list[int] = []

    def fit(self, S, sample_weight=None):
        type(self).fits.append(id(self))
        return super().fit(S, sample_weight=sample_weight)


def test_each_dask_worker_fits_one_model_reused_across_its_tasks(dask_client):
    # The old code deep-copied the model in every task: 4 tasks meant 4 cold
    # first refits on 4 fresh objects. Now the one worker thread keeps one model
    # for the whole run (fitted once on all training cells, then 8 warm refits)
    # and the cache is emptied when the run ends.
    S = additive_scores(10, 30)
    hold = holdout_on_cells(S, 0.2, seed=1)
    _CountingRasch.fits = []
    remote = bootstrap_fidelity(_CountingRasch("identity"), S, ~hold, hold, n_boot=8, seed=2,
                                chunk_size=2, backend="dask",
                                scheduler=dask_client.scheduler.address)
    client_fit, *worker_fits = _CountingRasch.fits
    assert len(worker_fits) == 1 + 8 and len(set(worker_fits)) == 1
    assert worker_fits[0] != client_fit
    assert bootstrap_module._STATE == {}
    local = bootstrap_fidelity(RaschLeastSquares("identity"), S, ~hold, hold, n_boot=8, seed=2,
                               n_jobs=1)
    np.testing.assert_array_equal(local.replicates["rmse"], remote.replicates["rmse"])


def test_dask_clipped_linear_bootstrap_equals_the_in_process_warm_refits(dask_client):
    solvers = pytest.importorskip("evalcert.solvers")
    S = additive_scores(12, 40, noise=0.1, seed=4)
    hold = holdout_on_cells(S, 0.2, seed=0)
    kw = dict(n_boot=6, seed=5, chunk_size=2)
    local = bootstrap_fidelity(solvers.ClippedLinear(solver="native"), S, ~hold, hold,
                               n_jobs=1, **kw)
    remote = bootstrap_fidelity(solvers.ClippedLinear(solver="native"), S, ~hold, hold,
                                backend="dask", scheduler=dask_client.scheduler.address, **kw)
    # warm starts from different previous optima: equal to the solver's tolerance
    np.testing.assert_allclose(local.replicates["rmse"], remote.replicates["rmse"],
                               rtol=0, atol=1e-6)
    assert local.n_redrawn == remote.n_redrawn


def test_clipped_linear_is_scored_on_the_cells_without_a_dense_prediction(monkeypatch):
    # The old code called predict() (a K x J array, refused at 10^4 x 10^6); a
    # model with predict_cells is scored on the observed cells.
    solvers = pytest.importorskip("evalcert.solvers")

    def refuse(self):
        raise AssertionError("predict() builds K x J")

    monkeypatch.setattr(solvers.ClippedLinear, "predict", refuse)
    S = additive_scores(10, 30)
    hold = holdout_on_cells(S, 0.2, seed=1)
    res = bootstrap_fidelity(solvers.ClippedLinear(solver="native"), S, ~hold, hold, n_boot=3)
    assert len(res.replicates["rmse"]) == 3 and res.estimate.n_holdout == int(hold.sum())
