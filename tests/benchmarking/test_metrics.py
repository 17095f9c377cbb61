"""The harness computes its summaries right: a hand-made run table with shifted geometric
means and Dolan-More profile values worked out by hand."""

import math

import pytest

from evalcert.benchmarking.metrics import (RunRecord, performance_profiles,
                                           shifted_geometric_mean, summarise,
                                           with_objective_errors)

LIMIT = 8.0


def run(problem, backend, runtime, success=True, **kw):
    return RunRecord(family="hand", problem=problem, kind=kw.pop("kind", "qp"),
                     backend=backend, profile="default", success=success, runtime=runtime, **kw)


# A solves everything; B fails p2; C fails everything (its runtimes are never used).
TABLE = [run("p1", "A", 1.0), run("p2", "A", 2.0), run("p3", "A", 4.0),
         run("p1", "B", 0.5), run("p2", "B", 0.1, success=False), run("p3", "B", 0.25),
         run("p1", "C", 0.01, success=False), run("p2", "C", 0.01, success=False),
         run("p3", "C", 0.01, success=False)]


def test_sgm_of_1_and_4_without_shift_is_2():
    assert shifted_geometric_mean([1.0, 4.0], shift=0.0) == pytest.approx(2.0)


def test_sgm_shift_1_of_0_and_3_is_1():
    # (0 + 1)(3 + 1) = 4, sqrt(4) - 1 = 1
    assert shifted_geometric_mean([0.0, 3.0], shift=1.0) == pytest.approx(1.0)


def test_summary_charges_failures_the_time_limit():
    by = {s.backend: s for s in summarise(TABLE, time_limit=LIMIT, shift=0.0)}
    # A: (1 * 2 * 4)^(1/3) = 2; B: (0.5 * 8 * 0.25)^(1/3) = 1; C: 8 (all failed)
    assert by["A"].sgm == pytest.approx(2.0)
    assert by["B"].sgm == pytest.approx(1.0)
    assert by["C"].sgm == pytest.approx(8.0)
    assert (by["A"].sgm_ratio, by["B"].sgm_ratio, by["C"].sgm_ratio) == pytest.approx((2, 1, 8))
    assert (by["A"].success_rate, by["B"].success_rate, by["C"].success_rate) == \
        pytest.approx((1.0, 2 / 3, 0.0))


def test_summary_with_shift_1():
    by = {s.backend: s for s in summarise(TABLE, time_limit=LIMIT, shift=1.0)}
    # A: (2 * 3 * 5)^(1/3) - 1
    assert by["A"].sgm == pytest.approx(30 ** (1 / 3) - 1)


def test_performance_profile_by_hand():
    (prof,) = performance_profiles(TABLE)
    # best times: p1 0.5 (B), p2 2 (A), p3 0.25 (B)
    # ratios A: 2, 1, 16; B: 1, inf, 1; C: inf everywhere
    col = {b: sorted(prof.ratios[:, k]) for k, b in enumerate(prof.backends)}
    assert col["A"] == pytest.approx([1.0, 2.0, 16.0])
    assert col["B"][:2] == pytest.approx([1.0, 1.0]) and math.isinf(col["B"][2])
    assert prof.fraction("A", 1.0) == pytest.approx(1 / 3)
    assert prof.fraction("A", 2.0) == pytest.approx(2 / 3)
    assert prof.fraction("A", 15.9) == pytest.approx(2 / 3)
    assert prof.fraction("A", 16.0) == pytest.approx(1.0)
    assert prof.fraction("B", 1.0) == pytest.approx(2 / 3)
    assert prof.fraction("B", 1e9) == pytest.approx(2 / 3)
    assert prof.fraction("C", math.inf) == 0.0
    taus, rho = prof.curve("A")
    assert list(taus) == pytest.approx([1, 2, 16]) and list(rho) == pytest.approx([1 / 3, 2 / 3, 1])


def test_objective_error_against_most_accurate_certified_run():
    recs = [run("q", "A", 1.0, objective=10.0, primal_residual=1e-12, dual_residual=1e-12,
                duality_gap=1e-12),
            run("q", "B", 1.0, objective=10.5, primal_residual=1e-7, dual_residual=1e-7,
                duality_gap=1e-7),
            run("q", "C", 1.0, success=False, objective=30.0, primal_residual=1.0,
                dual_residual=1.0, duality_gap=1.0)]
    err = {r.backend: r.objective_error for r in with_objective_errors(recs)}
    assert err == pytest.approx({"A": 0.0, "B": 0.05, "C": 2.0})


def test_ilp_reference_is_largest_certified_value():
    recs = [run("i", "H", 0.1, kind="ilp", objective=0.75),
            run("i", "C", 0.1, kind="ilp", objective=0.5, success=False)]
    err = {r.backend: r.objective_error for r in with_objective_errors(recs)}
    assert err == pytest.approx({"H": 0.0, "C": 0.25})
