"""Success is evalcert's certificate, not the solver's word: a backend that returns a
perturbed point, one run at a too-loose tolerance, one that crashes and one that reports
a wrong ILP value all count as failures; honest backends succeed."""

import dataclasses
from fractions import Fraction

import numpy as np
import pytest

from evalcert.benchmarking import (Backend, BenchmarkResult, bootstrap_family,
                                   clipped_linear_family,
                                   ilp_family, run_benchmark, select_backends)
from evalcert.benchmarking.backends import solve_native, solve_osqp_direct, solve_pulp
from evalcert.solvers.certificates import Tolerance


def perturbed_native(problem, settings):
    """Solve exactly, then move the primal point by +-1e-3: the solver still says solved."""
    att = solve_native(problem, settings)
    return dataclasses.replace(att, points=tuple(
        (x + 1e-3 * (-1.0) ** np.arange(len(x)), y) for x, y in att.points))


def loose_osqp(problem, settings):
    """OSQP told 1e-1 (eps 1e-3) whatever the profile asks, without polishing."""
    return solve_osqp_direct(problem, dataclasses.replace(
        settings, tolerance=Tolerance(1e-1, 1e-1), options={"polishing": False}))


def crashing(problem, settings):
    raise RuntimeError("segfault avoided")


def overclaiming_highs(problem, settings):
    """Claims 1/10 above the closed-form M=1 value, which bounds M=1 and M=2 answers."""
    att = solve_pulp(problem, settings, solver="highs")
    return dataclasses.replace(att, value=problem.bound() + Fraction(1, 10))


def underclaiming_highs(problem, settings):
    """Claims 1/10 below the accuracy the data-generating evaluation already reaches."""
    att = solve_pulp(problem, settings, solver="highs")
    return dataclasses.replace(att, value=problem.floor - Fraction(1, 10))


@pytest.fixture(scope="module")
def result() -> BenchmarkResult:
    problems = clipped_linear_family([(8, 30)], seeds=[0], boxes=("observed",))[:2]
    problems += ilp_family(1, [12], seeds=[0]) + ilp_family(2, [12], seeds=[0])
    backends = select_backends(["native", "pulp-highs"]) + [
        Backend("perturbed", "qp", perturbed_native), Backend("loose-osqp", "qp", loose_osqp),
        Backend("crashing", "qp", crashing), Backend("overclaiming", "ilp", overclaiming_highs),
        Backend("underclaiming", "ilp", underclaiming_highs)]
    return run_benchmark(problems, backends, ["default"], n_jobs=1, memory=True,
                         progress=False)


def records(result, backend):
    return [r for r in result.records if r.backend == backend]


def test_honest_backends_succeed(result):
    assert all(r.success for r in records(result, "native"))
    ilps = records(result, "pulp-highs")
    assert len(ilps) == 2 and all(r.success and r.objective_error == 0 for r in ilps)
    assert records(result, "pulp-highs")[0].objective == float(ilp_family(1, [12], [0])[0].bound())


def test_perturbed_solution_fails_the_certificate(result):
    for r in records(result, "perturbed"):
        assert r.solver_ok and not r.success and r.reason == "certificate failed"
        assert max(r.primal_residual, r.dual_residual) > 1e-4


def test_too_loose_tolerance_fails_the_certificate(result):
    for r in records(result, "loose-osqp"):
        assert r.status == "solved" and not r.success
        assert max(r.primal_residual, r.dual_residual, abs(r.duality_gap)) > 1e-6


def test_crash_is_a_failure_not_an_exception(result):
    for r in records(result, "crashing"):
        assert not r.success and r.status.startswith("error: RuntimeError")
        assert np.isnan(r.objective)


def test_ilp_value_above_closed_form_fails(result):
    assert [r.success for r in records(result, "overclaiming")] == [False, False]


def test_ilp_value_below_the_generating_evaluation_fails(result):
    assert [r.success for r in records(result, "underclaiming")] == [False, False]
    problems = ilp_family(1, [12, 60], seeds=[0, 1]) + ilp_family(2, [12, 60], seeds=[0, 1])
    assert all(0 <= p.floor <= p.bound() for p in problems)
    assert any(p.floor > 0 for p in problems)


def test_failures_are_charged_the_time_limit(result):
    by = {(s.backend): s for s in result.summaries}
    assert by["crashing"].sgm == pytest.approx(10.0) and by["crashing"].success_rate == 0
    assert by["native"].success_rate == 1 and by["native"].sgm_ratio == pytest.approx(1.0)


def test_peak_memory_is_measured(result):
    assert all(r.peak_memory_mib > 0 for r in records(result, "native"))


def test_same_seed_same_problems():
    a = clipped_linear_family([(6, 9)], seeds=[3])
    b = clipped_linear_family([(6, 9)], seeds=[3])
    assert all(np.array_equal(p.values, q.values, equal_nan=True) for p, q in zip(a, b))
    assert len(a) == 8 and len({p.name for p in a}) == 8


def test_runs_on_a_dask_cluster():
    distributed = pytest.importorskip("distributed")
    problems = clipped_linear_family([(5, 8)], seeds=[1], boxes=("all",))[:2]
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=2,
                            dashboard_address=None):
        res = run_benchmark(problems, select_backends(["native"]), ["low"],
                            joblib_backend="dask", memory=False, progress=False)
    assert [r.problem for r in res.records] == [p.name for p in problems]
    assert all(r.success for r in res.records)


def test_bootstrap_batch_over_the_time_limit_fails():
    (batch,) = bootstrap_family([(6, 9)], n_refits=5, seeds=[0], boxes=("all",))
    (rec,) = run_benchmark([batch], select_backends(["native"]), ["low"], time_limit=1e-9,
                           n_jobs=1, memory=False, progress=False).records
    assert "time" in rec.status and not rec.success and rec.reason


def sleepy(problem, settings):
    """Ignores its time limit: only a kill stops it."""
    import time
    time.sleep(30)


def segfaulting(problem, settings):
    import faulthandler
    import os
    import signal
    faulthandler.disable()  # pytest's handler would print a stack for this intended crash
    os.kill(os.getpid(), signal.SIGSEGV)


def test_forked_runs_are_killed_at_the_time_limit_and_crashes_recorded():
    import time

    problems = clipped_linear_family([(4, 6)], seeds=[0])[:1]
    backends = [Backend("sleepy", "qp", sleepy), Backend("segfault", "qp", segfaulting),
                select_backends(["native"])[0]]
    start = time.perf_counter()
    res = run_benchmark(problems, backends, ["default"], time_limit=0.5, n_jobs=2,
                        joblib_backend="processes", progress=False)
    assert time.perf_counter() - start < 10
    by = {r.backend: r for r in res.records}
    assert by["sleepy"].reason == "time limit" and "killed" in by["sleepy"].status
    assert by["segfault"].reason == "crashed" and "exit code -11" in by["segfault"].status
    assert by["native"].success and by["native"].peak_memory_mib >= 0


def test_time_limit_and_shift_are_checked():
    from evalcert.errors import InputError

    problems = clipped_linear_family([(4, 6)], seeds=[0])[:1]
    for bad in ({"time_limit": 0.0}, {"time_limit": float("inf")}, {"shift": float("nan")}):
        with pytest.raises(InputError):
            run_benchmark(problems, select_backends(["native"]), ["default"], n_jobs=1,
                          progress=False, **bad)


def test_verdict_is_derived_from_the_runs():
    from evalcert.benchmarking.families import sparse_family
    from evalcert.benchmarking.verdict import scaling_table, verdict

    problems = clipped_linear_family([(5, 8)], seeds=[0])[:2] + \
        sparse_family([(10, 40, 0.2), (20, 120, 0.1)], [0], boxes=["all"])
    backends = select_backends(["osqp-direct"]) + [Backend("perturbed", "qp", perturbed_native)]
    res = run_benchmark(problems, backends, ["default"], n_jobs=1, memory=False,
                        progress=False)
    lines = "\n".join(verdict(res))
    assert "most reliable `osqp-direct`" in lines
    assert "avoid `perturbed`" in lines
    sizes, table, slopes = scaling_table(res.records)
    assert len(sizes) == 2 and sizes[0] < sizes[1]
    assert np.isnan(table["perturbed"]).all() and np.isfinite(table["osqp-direct"]).all()
    assert "sparse designs, box `all`" in lines and "`osqp-direct` a=" in lines
    assert "largest sparse design, box `all`" in lines


def test_box_radius_contains_the_optimum():
    # QPProblem.qp declares QP.x_bound = box_radius(...): the certificate's bound is
    # only rigorous if the optimum's (theta, b) really lie within it.
    from evalcert.benchmarking.families import box_radius, sparse_family
    from evalcert.solvers.backends.base import SolveSettings

    problems = clipped_linear_family([(6, 9)], seeds=[0, 1]) + \
        sparse_family([(12, 40, 0.1)], [0])
    for p in problems:
        qp = p.qp(p.batch()[0])
        K, J = p.values.shape
        assert qp.x_bound == box_radius(K, J, p.box)
        attempt = solve_native(p, SolveSettings())
        x = attempt.points[0][0]
        assert attempt.ok and np.abs(x[:K + J]).max() <= qp.x_bound, p.name
