"""Issue 12 (2PL MML speed): the one-``exp`` logistic kernel with one ``log`` per ``R`` items,
the cache-sized complete-data chunks, the grouped per-item sums of the adaptive E-step and
the cell-only (no dense ``models x items`` copy) path of ``mml_em``, each cross-checked
against a direct reference on small data."""

import tracemalloc

import numpy as np
import pytest
from scipy.special import expit

from evalcert.errors import InputError
from evalcert.irt.estimation import mml_estep
from evalcert.irt.estimation.mml_em import mml_em
from evalcert.irt.estimation.mml_estep import _AdaptiveEStep, _CompleteEStep, _logistic

from .conftest import simulate


@pytest.mark.parametrize("scale", [0.3, 3.0, 30.0, 400.0])
def test_logistic_kernel_matches_direct_formulas(scale):
    """Sums of log(1 + e^eta) by products of R items (R = 1 beyond |eta| ~ 350, clipped
    beyond 700) against logaddexp per cell; p and 1 - p against expit to a few ulps."""
    rng = np.random.default_rng(int(scale))
    a, d = rng.lognormal(0, 0.5, 53) * scale / 3, rng.normal(scale=scale, size=53)
    nodes = np.linspace(-3.0, 3.0, 17)
    bound = float(np.max(np.abs(a)) * 3.0 + np.max(np.abs(d)))
    sums, p, q = _logistic(np.column_stack([a, d]), np.vstack([nodes, np.ones_like(nodes)]),
                           bound)
    eta = np.clip(np.multiply.outer(a, nodes) + d[:, None], -700, 700)
    want = np.logaddexp(0.0, eta).sum(0)
    assert np.allclose(sums, want, rtol=1e-13, atol=1e-12)
    for got, ref in ((p, expit(eta)), (q, expit(-eta))):
        normal = ref > np.finfo(float).tiny
        assert np.max(np.abs(got[normal] / ref[normal] - 1)) < 8 * np.finfo(float).eps


def test_logistic_products_cannot_overflow_at_the_bound():
    """Every eta at +bound: R factors of (1 + e^bound) stay finite (R = 700 // (bound + 1))."""
    for bound in (1.0, 9.5, 69.0, 349.0, 699.0):
        a, d = np.zeros(1000), np.full(1000, bound)
        with np.errstate(over="raise"):
            sums = _logistic(np.column_stack([a, d]), np.vstack([np.zeros(3), np.ones(3)]),
                             bound)[0]
        assert np.allclose(sums, 1000 * np.logaddexp(0.0, bound), rtol=1e-13)


@pytest.mark.parametrize("pool", [False, True])
def test_complete_estep_chunks_and_recompute_path_agree(monkeypatch, pool):
    """Small cache chunks vs one chunk (same sums to rounding), and keeping p, 1 - p vs
    recomputing them in the second pass (the same bits)."""
    Y, *_ = simulate(120, 45, seed=11, slopes=True)
    rng = np.random.default_rng(2)
    a, d = rng.lognormal(0, 0.3, 45), rng.normal(size=45)

    first = _CompleteEStep(Y, pool_by_score=pool, n_quad=9, shared_only=False, n_threads=1)
    mu, sd = first.start(a, d)

    def run():
        step = _CompleteEStep(Y, pool_by_score=pool, n_quad=9, shared_only=False, n_threads=1)
        return step(a, d, mu, sd)

    monkeypatch.setattr(mml_estep, "_THREAD_CHUNK", 1 << 30)
    whole = run()
    monkeypatch.setattr(mml_estep, "_THREAD_CHUNK", 700)        # a few items per chunk
    chunked = run()
    monkeypatch.setattr(mml_estep, "_CHUNK", 0)                 # recompute p, 1 - p
    recomputed = run()
    for key in whole:
        np.testing.assert_allclose(chunked[key], whole[key], rtol=1e-12, atol=1e-12,
                                   err_msg=key)
        assert np.array_equal(recomputed[key], chunked[key]), key


def test_adaptive_estep_groups_match_one_group(monkeypatch):
    """Per-item sums added group by group (bounded per-cell buffer) = one product."""
    Y, *_ = simulate(90, 40, seed=12, slopes=True)
    O = np.random.default_rng(12).random(Y.shape) > 0.4
    O[np.arange(90), np.arange(90) % 40] = True
    rng = np.random.default_rng(3)
    a, d = rng.lognormal(0, 0.3, 40), rng.normal(size=40)
    one = _AdaptiveEStep(Y, O, 7)
    monkeypatch.setattr(mml_estep, "_GROUP", 150)
    monkeypatch.setattr(mml_estep, "_BLOCK", 7 * 40)
    many = _AdaptiveEStep(Y, O, 7)
    assert len(one.groups) == 1 and len(many.groups) > 5
    mu, sd = one.start(a, d)
    ref, out = one(a, d, mu, sd), many(a, d, mu, sd)
    for key in ref:
        np.testing.assert_allclose(out[key], ref[key], rtol=1e-12, atol=1e-12, err_msg=key)


def test_adaptive_estep_reads_only_observed_cells():
    """Values in unobserved cells (NaN, junk) are never read; bool and 0/1 masks agree."""
    Y, *_ = simulate(60, 30, seed=13, slopes=True)
    O = np.random.default_rng(13).random(Y.shape) > 0.5
    O[np.arange(60), np.arange(60) % 30] = True
    rng = np.random.default_rng(4)
    a, d = rng.lognormal(0, 0.3, 30), rng.normal(size=30)
    clean = _AdaptiveEStep(Y * O, O.astype(float), 7)
    mu, sd = clean.start(a, d)
    ref = clean(a, d, mu, sd)
    junk = np.where(O, Y, np.nan)
    junk[~O & (np.arange(30) % 2 == 0)] = 7.0
    out = _AdaptiveEStep(junk, O, 7)(a, d, mu, sd)
    for key in ref:
        assert np.array_equal(out[key], ref[key]), key


def test_missing_data_em_memory_grows_with_observed_cells():
    """400 models x ~15,000 items, each item answered by 4 models (~80,000 observed cells):
    the EM allocates less than half of one dense float copy; the old code made two
    (``O.astype(float)``, ``Y * O``)."""
    rng = np.random.default_rng(5)
    n, m = 400, 20_000
    O = np.zeros((n, m), dtype=bool)
    O[rng.integers(0, n, (4, m)), np.arange(m)] = True
    O[:, :50] = True                        # a common core links the models
    theta, b = rng.normal(size=n), rng.normal(size=m)
    Y = (rng.random((n, m)) < expit(theta[:, None] - b)).astype(float) * O
    keep = (Y.sum(0) > 0) & (Y.sum(0) < O.sum(0))
    Y, O = np.ascontiguousarray(Y[:, keep]), np.ascontiguousarray(O[:, keep])
    tracemalloc.start()
    try:
        out = mml_em(Y, O, common_slope=True, n_quad=11, tol=1e-5, max_iter=500, what="t",
                     standard_errors=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.all(np.isfinite(out["d"])) and O.shape[1] > 15_000
    assert peak < Y.nbytes / 2, f"{peak / 2**20:.1f} MiB traced of {Y.nbytes / 2**20:.0f}"


def test_missing_data_fit_on_perturbed_data_converges_alike():
    """Flipping a few cells moves the 2PL estimates continuously (no rounding-dependent
    stop): the cell-only E-step converges on every perturbation, near the unperturbed fit."""
    Y, *_ = simulate(150, 200, seed=14, slopes=True)
    O = np.random.default_rng(14).random(Y.shape) > 0.5
    O[np.arange(150), np.arange(150) % 200] = True
    keep = ((Y * O).sum(0) > 2) & ((Y * O).sum(0) < O.sum(0) - 2)
    Y, O = Y[:, keep], O[:, keep]
    fits = []
    for seed in range(3):
        Z = Y.copy()
        if seed:
            cells = np.flatnonzero(O)[np.random.default_rng(seed).integers(0, O.sum(), 3)]
            Z.flat[cells] = 1 - Z.flat[cells]
        fits.append(mml_em(Z * O, O, common_slope=False, n_quad=11, tol=1e-7, max_iter=2000,
                           what="t", slope_prec=4.0, standard_errors=False))
    for fit in fits[1:]:
        assert np.max(np.abs(fit["d"] - fits[0]["d"])) < 0.3
        assert np.corrcoef(fit["eap"], fits[0]["eap"])[0, 1] > 0.999


@pytest.mark.parametrize("missing", [0.0, 0.5])
def test_items_all_right_or_wrong_are_refused_before_em(missing):
    """An item every model got right has an infinite difficulty MLE. The old E-step lost
    1 - p to rounding, divided 0 by 0 and stopped on "non-finite"; with 1 - p kept to
    full precision EM would walk d off for max_iter iterations: refuse it up front."""
    Y, *_ = simulate(50, 12, seed=15, slopes=True)
    O = np.random.default_rng(15).random(Y.shape) >= missing
    O[:, 0] = True
    Y[:, 0] = 1.0
    with pytest.raises(InputError, match="1 items are answered all 0 or all 1"):
        mml_em(Y * O, O, common_slope=False, n_quad=7, tol=1e-6, max_iter=50, what="t",
               slope_prec=4.0)


@pytest.mark.parametrize("pool", [False, True])
def test_laplace_start_from_raw_scores_finds_the_same_modes(pool):
    """The complete-data start runs Newton from the raw-score logits to 1e-2 posterior sd:
    the modes and curvatures of a tight solve from 0 (the reference) to that tolerance,
    and a tight solve from the raw scores finds the reference to rounding."""
    Y, *_ = simulate(80, 300, seed=16, slopes=True)
    step = _CompleteEStep(Y, pool_by_score=pool, n_quad=7, shared_only=False)
    a = np.random.default_rng(6).lognormal(0, 0.3, 300)
    d = np.random.default_rng(7).normal(size=300)
    mode, sd = step.start(a, d)
    t = step.hits @ a / step.weights
    ref_mode, ref_sd = step._laplace(a, d, t, tol=1e-12)
    assert np.max(np.abs(mode - ref_mode) / ref_sd) < 1e-2
    np.testing.assert_allclose(sd, ref_sd, rtol=1e-2)
    tight_mode, tight_sd = step._laplace(a, d, t, mode, tol=1e-12)
    assert np.max(np.abs(tight_mode - ref_mode) / ref_sd) < 1e-9
    np.testing.assert_allclose(tight_sd, ref_sd, rtol=1e-9)


@pytest.mark.parametrize("group", [60, 97, 233])
@pytest.mark.parametrize("block", [7 * 50, 7 * 130])
@pytest.mark.parametrize("long", [30, 1 << 30])             # some rows on their own, or none
def test_adaptive_estep_groups_hold_whole_blocks(monkeypatch, group, block, long):
    """Rows of very different lengths: every block lies in one group and the sums equal one
    group's. (Groups and blocks were cut independently: a block crossing a group's end raised
    ValueError or left its cells out of the item sums, on 9 of 12 such layouts.)"""
    rng = np.random.default_rng(7)
    n, m = 40, 60
    O = rng.random((n, m)) < rng.uniform(0.2, 0.9, n)[:, None]
    O[np.arange(n), np.arange(n) % m] = True
    Y = (rng.random((n, m)) < 0.5) * O
    a, d = rng.lognormal(0, 0.3, m), rng.normal(size=m)
    one = _AdaptiveEStep(Y, O, 7)
    mu, sd = one.start(a, d)
    ref = one(a, d, mu, sd)
    monkeypatch.setattr(mml_estep, "_GROUP", group)
    monkeypatch.setattr(mml_estep, "_BLOCK", block)
    monkeypatch.setattr(mml_estep, "_LONG", long)
    many = _AdaptiveEStep(Y, O, 7)
    assert len(many.groups) > 2
    for c0, c1, inner in many.groups:
        assert many.starts[inner[0][0]] == c0 and many.starts[inner[-1][1]] == c1
    out = many(a, d, mu, sd)
    for key in ref:
        np.testing.assert_allclose(out[key], ref[key], rtol=1e-12, atol=1e-12, err_msg=key)
