"""The bootstrap's resample draw and its connectivity shortcut (issue 13.4, session 6)."""

from __future__ import annotations

import numpy as np
import pytest

from evalcert.diagnostics.baselines import RaschLeastSquares
from evalcert.diagnostics.bootstrap import bootstrap_fidelity, resample_weights
from evalcert.diagnostics.sampling import holdout_on_cells
from tests.diagnostics.conftest import additive_scores


def test_resample_weights_are_seeded_multinomial_counts():
    n = 200_000
    a = resample_weights(np.random.default_rng(7), n)
    b = resample_weights(np.random.default_rng(7), n)
    np.testing.assert_array_equal(a, b)                     # deterministic per seed
    assert a.shape == (n,) and a.dtype == float and a.sum() == n and a.min() >= 0
    assert not np.array_equal(a, resample_weights(np.random.default_rng(8), n))
    # Multinomial(n, 1/n): each count ~ Binomial(n, 1/n) ~ Poisson(1); the share of
    # cells drawn k times is (1 - 1/n)^(n-k) C(n,k) n^-k ~ e^-1 / k!, within 6 sd
    for k, p in ((0, np.exp(-1)), (1, np.exp(-1)), (2, np.exp(-1) / 2), (3, np.exp(-1) / 6)):
        share = float(np.mean(a == k))
        assert abs(share - p) < 6 * np.sqrt(p * (1 - p) / n), (k, share, p)
    # every cell can be drawn: the last index too (rng.integers' high is exclusive)
    assert resample_weights(np.random.default_rng(0), 3).sum() == 3
    hits = sum(resample_weights(np.random.default_rng(s), 3) for s in range(300))
    assert np.all(hits > 200)


def test_loky_two_workers_draw_the_same_replicates():
    S = additive_scores(10, 30, seed=3)
    hold = holdout_on_cells(S, 0.2, seed=1)
    kw = dict(n_boot=8, seed=4, chunk_size=3)
    one = bootstrap_fidelity(RaschLeastSquares("identity"), S, ~hold, hold, n_jobs=1, **kw)
    two = bootstrap_fidelity(RaschLeastSquares("identity"), S, ~hold, hold, backend="loky",
                             n_jobs=2, **kw)
    # the same draws; BLAS in a loky worker runs one thread (another summation order), so
    # the RMSEs agree to rounding, not bit for bit (numpy 1.26 differed in the last digit)
    np.testing.assert_allclose(one.replicates["rmse"], two.replicates["rmse"], rtol=1e-12)
    assert one.n_redrawn == two.n_redrawn


def test_the_connectivity_shortcut_changes_nothing_but_the_checks(monkeypatch):
    solvers = pytest.importorskip("evalcert.solvers")
    from evalcert.solvers import clipped_linear as clipped_linear_module

    class Unhooked(solvers.ClippedLinear):
        _assume_connected = None            # the bootstrap cannot vouch: fit checks itself

    calls = []
    real = clipped_linear_module._require_connected
    monkeypatch.setattr(clipped_linear_module, "_require_connected",
                        lambda *a: calls.append(1) or real(*a))
    S = additive_scores(12, 40, noise=0.1, seed=6)
    hold = holdout_on_cells(S, 0.2, seed=0)
    kw = dict(n_boot=6, seed=2, n_jobs=1)
    hooked = bootstrap_fidelity(solvers.ClippedLinear(solver="native"), S, ~hold, hold, **kw)
    n_hooked = len(calls)
    plain = bootstrap_fidelity(Unhooked(solver="native"), S, ~hold, hold, **kw)
    assert n_hooked == 1 and len(calls) - n_hooked == 1 + 6   # first fit; first fit + refits
    for name in hooked.replicates:
        np.testing.assert_array_equal(hooked.replicates[name], plain.replicates[name])
    assert hooked.n_redrawn == plain.n_redrawn and hooked.intervals == plain.intervals
