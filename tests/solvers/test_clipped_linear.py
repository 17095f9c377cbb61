"""Eq. 7 fits: backends agree, certificates verify, the box binds where it should."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcert.data import ScoreMatrix
from evalcert.io.scores import read_scores
from evalcert.datasets.demo import demo_scores
from evalcert.errors import BackendUnavailableError, CertificateError, InputError, SolverError
from evalcert.solvers import ClippedLinear, available_backends
from evalcert.solvers.reference import naive_clipped_linear
from tests.conftest import require_shared

#: ECOS (an optional extra) goes through CVXPY's cone reformulation of the
#: quadratic and is unreliable on these problems: on PubMed it stops ~1e-7 short
#: in the primal with a dual residual of 3e-2; on the demo it reports "optimal"
#: with a 2% duality gap, or "unbounded" without the box. What must hold is that
#: evalcert never returns such an answer: it raises a typed SolverError.
UNRELIABLE = {"ecos"}


def _fit(S, solver, box="all", **kw):
    """Fit, or return None when an unreliable backend is refused by a typed error."""
    try:
        return ClippedLinear(box=box, solver=solver, **kw).fit(S)
    except SolverError:
        if solver in UNRELIABLE:
            return None
        raise


@pytest.fixture(scope="module")
def demo():
    return demo_scores()


def _interior(seed=3, K=12, J=40, p=0.7):
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(0, 0.1, K), rng.normal(0, 0.1, J)
    v = np.clip(theta[:, None] - b[None, :] + 0.05 * rng.normal(size=(K, J)), -0.9, 0.9)
    v[rng.random((K, J)) > p] = np.nan
    return ScoreMatrix.from_array(v)


@pytest.mark.parametrize("box", ["all", "observed", "none"])
def test_all_backends_agree_on_demo(demo, box):
    ref = _fit(demo, "clarabel", box)
    for solver in available_backends():
        m = _fit(demo, solver, box)
        if m is None:
            continue
        assert m.result_.certificate.passed
        assert m.result_.objective == pytest.approx(ref.result_.objective, rel=1e-6)
        np.testing.assert_allclose(m.theta_, ref.theta_, atol=1e-4)
        np.testing.assert_allclose(m.b_, ref.b_, atol=1e-4)


def test_all_cells_box_equals_naive_per_cell_formulation(demo):
    naive = naive_clipped_linear(demo, box="all", solver="clarabel")
    m = ClippedLinear(box="all").fit(demo)
    assert m.result_.objective == pytest.approx(naive["objective"], rel=1e-7)
    np.testing.assert_allclose(m.theta_, naive["theta"], atol=1e-5)


def test_box_binds_on_saturated_data_and_not_on_interior(demo):
    m = ClippedLinear(box="all").fit(demo)
    groups = m.result_.certificate.binding
    assert [g["side"] for g in groups] == ["upper"]
    assert groups[0]["multiplier"] > 1e-3
    assert m.predict().max() == pytest.approx(1.0, abs=1e-9)
    free = ClippedLinear(box="none").fit(demo)
    assert free.result_.n_clipped > 0 and free.result_.objective < m.result_.objective
    raw = free.theta_[:, None] - free.b_[None, :]
    assert free.result_.n_clipped == int((np.abs(raw) > 1).sum())
    interior = ClippedLinear(box="all").fit(_interior())
    assert interior.result_.certificate.binding == []
    assert np.abs(interior.predict()).max() < 1


def test_gauge_and_predict(demo):
    m = ClippedLinear(box="observed").fit(demo)
    assert abs(m.b_.sum()) < 1e-9
    np.testing.assert_allclose(m.predict(), m.theta_[:, None] - m.b_[None, :])
    assert np.abs(m.predict()[demo.observed]).max() <= 1 + 1e-9


def test_certificate_verifies_from_data_and_rejects_other_data(demo):
    m = ClippedLinear(solver="osqp-direct").fit(demo)
    again = m.result_.certificate.verify(demo)
    assert again.passed and again.relative_gap < 1e-6
    shifted = ScoreMatrix.from_array(np.clip(demo.values * 0.5, -1, 1))
    with pytest.raises(CertificateError, match="certificate check failed"):
        m.result_.certificate.verify(shifted)


def test_sample_weights_match_duplicated_and_dropped_cells(demo):
    rng = np.random.default_rng(0)
    w = rng.integers(0, 3, size=demo.shape).astype(float) * demo.observed
    S0 = demo.restrict(w > 0)
    weighted = ClippedLinear(box="all").fit(demo, sample_weight=w)
    # weights 1 on the kept cells, data restricted: same fit when all weights are 0/1
    ones = (w > 0).astype(float)
    a = ClippedLinear(box="none").fit(demo, sample_weight=ones)
    b = ClippedLinear(box="none").fit(S0)
    np.testing.assert_allclose(a.theta_, b.theta_, atol=1e-9)
    # the same weighted fit through CVXPY's DPP program agrees with the native one
    c = ClippedLinear(box="all", solver="clarabel").fit(demo, sample_weight=w)
    np.testing.assert_allclose(weighted.theta_, c.theta_, atol=1e-5)
    assert weighted.result_.n_observed == int((w > 0).sum())


def test_cvxpy_program_is_reused_across_refits(demo):
    model = ClippedLinear(solver="osqp")
    model.fit(demo)
    first = model._program
    model.fit(ScoreMatrix.from_array(demo.values * 0.9))  # same pattern, new data
    assert model._program is first
    rng = np.random.default_rng(1)
    for _ in range(2):  # bootstrap weights: one weighted program, reused
        model.fit(demo, sample_weight=rng.poisson(1.0, demo.shape) * demo.observed)
    weighted = model._program
    model.fit(demo, sample_weight=rng.poisson(1.0, demo.shape) * demo.observed)
    assert model._program is weighted and weighted is not first


def test_failed_solve_raises_solver_error(demo):
    with pytest.raises(SolverError, match="did not solve"):
        ClippedLinear(solver="osqp-direct", solver_options={"max_iter": 3,
                                                             "polishing": False}).fit(demo)
    with pytest.raises(SolverError, match="status 'max_iter_reached'"):
        ClippedLinear(solver="native", solver_options={"max_iter": 1}).fit(demo)


def test_inaccurate_solve_raises_certificate_error(demo):
    loose = {"eps_abs": 1e-2, "eps_rel": 1e-2, "polishing": False}
    with pytest.raises(CertificateError) as err:
        ClippedLinear(solver="osqp-direct", solver_options=loose).fit(demo)
    assert not err.value.certificate.passed


def test_bad_parameters_raise_before_solving(demo):
    with pytest.raises(InputError, match="lam"):
        ClippedLinear(lam=-1).fit(demo)
    with pytest.raises(InputError, match="box"):
        ClippedLinear(box="some").fit(demo)
    with pytest.raises(BackendUnavailableError, match="unknown solver"):
        ClippedLinear(solver="gurobi").fit(demo)
    with pytest.raises(InputError, match="shape"):
        ClippedLinear().fit(demo, sample_weight=np.ones((2, 2)))
    with pytest.raises(InputError, match="unobserved"):
        ClippedLinear().fit(demo, sample_weight=np.ones(demo.shape))
    with pytest.raises(InputError, match="not fitted"):
        ClippedLinear().predict()


@settings(max_examples=25)
@given(K=st.integers(2, 6), J=st.integers(2, 7), seed=st.integers(0, 10_000),
       box=st.sampled_from(["all", "observed", "none"]), spread=st.floats(0.2, 1.5))
def test_native_matches_clarabel_on_random_small_matrices(K, J, seed, box, spread):
    rng = np.random.default_rng(seed)
    v = np.clip(rng.normal(0, spread, K)[:, None] - rng.normal(0, spread, J)[None, :]
                + 0.3 * rng.normal(size=(K, J)), -1, 1)
    v[rng.random((K, J)) < 0.25] = np.nan
    v[np.arange(K), np.arange(K) % J] = 0.5  # every agent observed
    v[np.arange(J) % K, np.arange(J)] = -0.5  # every item observed
    S = ScoreMatrix.from_array(v)
    if not S.connectivity().is_connected:
        return
    native = ClippedLinear(box=box).fit(S)
    ref = ClippedLinear(box=box, solver="clarabel").fit(S)
    assert native.result_.certificate.passed and ref.result_.certificate.passed
    assert native.result_.objective == pytest.approx(ref.result_.objective, rel=1e-6, abs=1e-8)
    np.testing.assert_allclose(native.theta_, ref.theta_, atol=1e-4)
    assert abs(native.b_.sum()) < 1e-8


def test_pubmed_fit_agrees_across_backends():
    S = read_scores(require_shared("tvd/llm-peer-prediction/derived/pubmed_200_S_directional.csv"))
    assert S.shape == (30, 200)
    ref = ClippedLinear(solver="clarabel").fit(S)
    for solver in available_backends():
        m = _fit(S, solver)
        if m is None:
            continue
        assert m.result_.objective == pytest.approx(ref.result_.objective, rel=1e-6)
        np.testing.assert_allclose(m.theta_, ref.theta_, atol=1e-4)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_native_does_not_cycle_on_sparse_saturated_observed_box(seed):
    # Designs on which the active-set method with c = max diag(P) cycled (the
    # benchmark's cl-observed-sparse-saturated-25x150 family); c = 100 max diag(P)
    # solves them.
    from evalcert.benchmarking.families import SPREAD, synthetic_scores

    values = synthetic_scores(25, 150, 0.3, SPREAD["saturated"], np.random.default_rng(seed))
    S = ScoreMatrix.from_array(values)
    native = ClippedLinear(box="observed").fit(S)
    ref = ClippedLinear(box="observed", solver="clarabel").fit(S)
    assert native.result_.status == "solved"
    assert native.result_.objective == pytest.approx(ref.result_.objective, rel=1e-6)
