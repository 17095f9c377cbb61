"""ClippedLinear(solver="qpsolvers-<solver>"): the qpsolvers adapters as fit backends."""

import pytest

from evalcert import ClippedLinear, demo_scores
from evalcert.errors import BackendUnavailableError, InputError
from evalcert.solvers.backends import QPSOLVERS_BACKENDS, available_qpsolvers


@pytest.fixture(scope="module")
def scores():
    return demo_scores()


@pytest.fixture(scope="module")
def reference(scores):
    return ClippedLinear(solver="native").fit(scores).result_


@pytest.mark.parametrize("name", sorted(QPSOLVERS_BACKENDS))
def test_qpsolvers_backend_fits_within_its_certified_bound(name, scores, reference):
    if name not in available_qpsolvers():
        with pytest.raises(BackendUnavailableError, match="evalcert\\[qp\\]"):
            ClippedLinear(solver=name).fit(scores)
        return
    res = ClippedLinear(solver=name).fit(scores).result_
    assert res.solver == name and res.certificate.passed
    cert, ref = res.certificate, reference.certificate
    f_ref = reference.objective                  # native: feasible to ~1e-12
    # each lower bound is a true bound on the optimum, so it cannot exceed a
    # feasible objective ...
    assert cert.lower_bound <= f_ref + 1e-9 * abs(f_ref)
    # ... and the answer is no further above the optimum than its certified bound
    assert res.objective - ref.lower_bound <= cert.suboptimality_bound + (f_ref - ref.lower_bound) \
        + 1e-9 * abs(f_ref)
    # an answer below the optimum is explained only by primal infeasibility
    # within the default tier (1e-6)
    assert res.objective >= ref.lower_bound - 1e-6 * abs(f_ref)


def test_unknown_and_overflowing_settings_are_refused_before_solving(scores):
    with pytest.raises(BackendUnavailableError, match="unknown solver"):
        ClippedLinear(solver="qpsolvers-gurobi").fit(scores)
    with pytest.raises(InputError, match="lam must be a number in"):
        ClippedLinear(lam=1e308).fit(scores)    # used to overflow the Hessian: ValueError
