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
