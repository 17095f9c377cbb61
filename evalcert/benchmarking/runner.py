"""Run every (problem, backend, profile) through joblib and check every answer.

Each run is one task for :func:`evalcert.parallel.parallel_map`, so a local
process pool (``loky``), a Dask cluster (``joblib_backend="dask"`` inside a
``distributed.Client``) or Ray can take a large grid. A task:

1. (``memory=True``) runs the backend once under ``tracemalloc`` and keeps the
   traced peak -- Python objects and NumPy buffers, **not** memory the
   solvers' C/Rust libraries allocate themselves (OSQP, Clarabel, SCS, ECOS,
   HiGHS workspaces). This pass also warms up lazy imports and caches, so the
   timed pass measures steady-state cost;
   (Forked runs, the default with ``n_jobs != 1``, skip this pass: each run
   happens once and its memory is the process's peak resident size.)
2. runs it again untraced and times it (build / compile / solve);
3. certifies the answer itself: QPs with :func:`~evalcert.solvers.certificates.qp_certificate`
   rebuilt from the problem data at the profile's tolerance ``Tolerance(tier, tier)``
   (the same object the solver is given through :func:`~evalcert.solvers.backends.base.solver_options`);
   ILPs against the closed-form M=1 value (equal for M=1, an upper bound for M=2)
   and, from below, the minimum label accuracy of the evaluation that generated
   the data (it satisfies every axiom at the true key).

Tolerance profiles are the accuracy tiers of the benchmark conventions:
``low`` 1e-3, ``default`` 1e-6, ``high`` 1e-9. The ILPs are exact (``gapRel=0``)
and run once, under the profile ``exact``.

Measured durations on two shared cores (``--jobs 2``; load average 8-10 from
other jobs; 10 QP backends + 2 ILP backends installed): ``evalcert bench
--quick`` (17 problems, 398 runs, time limit 3 s) 135 s of runs, 151 s wall,
37 s of CPU time; on a nearly idle machine (load 1.6) 26 s wall, 35 s CPU. The full grid
(``evalcert bench --jobs 2``: 121 problems, 3126 runs, sizes up to 100 x 1000,
sparse designs up to 60 000 cells, 50-refit bootstrap batches, 3 seeds, time
limit 10 s) took 1341 s wall (22.5 min) and 2531 s of CPU time with one other
job on the machine (load 1.6-2.6).
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any, Sequence

from evalcert.benchmarking.backends import Attempt, Backend, select_backends
from evalcert.benchmarking.isolation import AVAILABLE, run_forked
from evalcert.benchmarking.families import (FAMILIES, IlpProblem, QPProblem, StandardQP,
                                            make_problems, real_family_note)
from evalcert.benchmarking.metrics import (RunRecord,
                                           performance_profiles, summarise,
                                           with_objective_errors)
from evalcert.benchmarking.report import check_report_paths, machine_info, write_report
from evalcert.benchmarking.results import BenchmarkResult
from evalcert.errors import InputError
from evalcert.parallel import parallel_map
from evalcert.solvers.backends.base import SolveSettings
from evalcert.solvers.certificates import Tolerance, qp_certificate

__all__ = ["Profile", "PROFILES", "run_one", "run_benchmark", "bench"]


@dataclasses.dataclass(frozen=True)
class Profile:
    """An accuracy tier: the solver is asked for it and the certificate demands it.

    Examples
    --------
    >>> PROFILES["high"].tier, PROFILES["high"].tolerance.abs_tol
    (1e-09, 1e-09)
    >>> Profile("loose", 1e-2).tolerance.rel_tol
    0.01
    """

    name: str
    tier: float

    @property
    def tolerance(self) -> Tolerance:
        return Tolerance(abs_tol=self.tier, rel_tol=self.tier)


PROFILES = {"low": Profile("low", 1e-3), "default": Profile("default", 1e-6),
            "high": Profile("high", 1e-9)}
EXACT = Profile("exact", 0.0)
#: Seconds per run of ``bench(quick=True)`` unless given.
QUICK_TIME_LIMIT = 3.0


def _certify_qp(problem: QPProblem | StandardQP, attempt: Attempt,
                tol: Tolerance) -> dict[str, Any]:
    """Certify every solve of the batch from the problem data; residuals are the
    largest over the batch (NaN when the solver returned no point at all)."""
    design = problem.design()
    certs = [qp_certificate(problem.qp(weights, design), x, y, tol)
             for weights, (x, y) in zip(problem.batch(), attempt.points)
             if x is not None and y is not None]
    complete = len(certs) == len(problem.batch())
    return {"primal_residual": max((c.primal_residual for c in certs), default=math.nan),
            "dual_residual": max((c.dual_residual for c in certs), default=math.nan),
            "duality_gap": max((abs(c.duality_gap) for c in certs), default=math.nan),
            "objective": sum(c.primal_objective for c in certs) if complete else math.nan,
            "passed": complete and all(c.passed for c in certs)}


def _certify_ilp(problem: IlpProblem, attempt: Attempt) -> dict[str, Any]:
    bound = problem.bound()
    value = attempt.value
    passed = value is not None and (value == bound if problem.m == 1 else value <= bound)
    if passed and problem.floor is not None:    # the generating evaluation is a witness
        passed = value >= problem.floor
    return {"objective": math.nan if value is None else float(value), "passed": passed}


def _attempt(backend: Backend, problem: QPProblem | StandardQP | IlpProblem,
             settings: SolveSettings) -> Attempt:
    """Call the backend; a crash is recorded as a failed attempt, not raised, so that
    one broken solver cannot stop a grid of thousands of runs."""
    start = time.perf_counter()
    try:
        return backend.solve(problem, settings)
    except Exception as exc:  # noqa: BLE001 - any crash is a failure of that backend
        return Attempt(status=f"error: {type(exc).__name__}: {str(exc)[:160]}", ok=False,
                       iterations=-1, build=0.0, compile=0.0,
                       solve=time.perf_counter() - start)


def _failed(task: tuple, status: str, reason: str, runtime: float) -> RunRecord:
    """The record of a run that produced nothing (killed at the time limit, crashed)."""
    problem, backend, profile, time_limit, _ = task
    return RunRecord(
        family=problem.family, problem=problem.name, kind=problem.kind, size=problem.size,
        backend=backend.name, profile=profile.name, tolerance=profile.tier, status=status,
        solver_ok=False, success=False, reason=reason, build=0.0, compile=0.0, solve=runtime,
        runtime=runtime, iterations=-1, objective=math.nan)


def _grace(time_limit: float) -> float:
    """Seconds a forked run may overrun its limit (certifying, process start) before
    it is killed."""
    return time_limit + max(1.0, 0.2 * time_limit)


def run_one(task: tuple[QPProblem | StandardQP | IlpProblem, Backend, Profile, float, bool]) -> RunRecord:
    """Run, time and certify one ``(problem, backend, profile, time_limit, memory)``.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from evalcert.benchmarking.backends import select_backends
    >>> from evalcert.solvers.certificates import QP
    >>> qp = QP(P=sp.eye(1, format="csc"), q=np.array([-2.0]), A=sp.eye(1, format="csc"),
    ...         l=np.array([-1.0]), u=np.array([1.0]))  # min x^2/2 - 2x on [-1, 1]
    >>> problem = StandardQP("demo", "demo-qp", qp, (1, 1))
    >>> native = select_backends(["native"])[0]
    >>> record = run_one((problem, native, PROFILES["default"], 5.0, False))
    >>> record.success, record.backend, record.profile, round(record.objective, 6)
    (True, 'native', 'default', -1.5)
    """
    problem, backend, profile, time_limit, memory = task
    settings = SolveSettings(tolerance=profile.tolerance, time_limit=time_limit)
    peak = math.nan
    attempt = None
    if memory:
        tracemalloc.start()
        traced_start = time.perf_counter()
        traced = _attempt(backend, problem, settings)
        traced_seconds = time.perf_counter() - traced_start
        peak = tracemalloc.get_traced_memory()[1] / 2 ** 20
        tracemalloc.stop()
        if traced_seconds > time_limit:
            attempt = traced  # do not spend the time limit twice
    if attempt is None:
        attempt = _attempt(backend, problem, settings)
    runtime = attempt.build + attempt.compile + attempt.solve
    if problem.kind == "qp":
        check = _certify_qp(problem, attempt, profile.tolerance)
    else:
        check = _certify_ilp(problem, attempt)
    reason = ("" if attempt.ok else f"solver status {attempt.status}") or \
        ("" if check["passed"] else "certificate failed") or \
        ("" if runtime <= time_limit else "time limit")
    return RunRecord(
        family=problem.family, problem=problem.name, kind=problem.kind, size=problem.size,
        backend=backend.name, profile=profile.name, tolerance=profile.tier,
        status=attempt.status, solver_ok=attempt.ok, success=not reason, reason=reason,
        build=attempt.build, compile=attempt.compile, solve=attempt.solve, runtime=runtime,
        iterations=attempt.iterations,
        primal_residual=check.get("primal_residual", math.nan),
        dual_residual=check.get("dual_residual", math.nan),
        duality_gap=check.get("duality_gap", math.nan), objective=check["objective"],
        peak_memory_mib=peak)


def run_benchmark(problems: Sequence[QPProblem | StandardQP | IlpProblem],
                  backends: Sequence[Backend] | None = None,
                  profiles: Sequence[str] = ("low", "default", "high"), *,
                  time_limit: float = 10.0, shift: float = 0.01, memory: bool = True,
                  n_jobs: int | None = None, joblib_backend: str = "processes",
                  progress: bool = True) -> BenchmarkResult:
    """Run every problem with every backend of its kind, at every profile.

    Parameters
    ----------
    problems : sequence of QPProblem, StandardQP or IlpProblem
    backends : sequence of Backend, optional
        Default: every installed backend. Pass your own :class:`Backend` to
        benchmark another solver.
    profiles : sequence of {"low", "default", "high"}
        Accuracy tiers for the QPs; ILPs run once, exactly.
    time_limit : float
        Seconds per run (a batch counts as one run); slower runs fail.
    shift : float
        Shift of the geometric mean, seconds.
    memory : bool
        Measure peak traced memory in an extra pass per run.
    n_jobs : int, optional
        Parallel workers (``None``: all cores; 1: in this process).
    joblib_backend : {"processes", "loky", "dask", "ray"}
        ``processes`` (default): each run in a process forked from this one
        (:mod:`evalcert.benchmarking.isolation`), killed at ``time_limit`` plus
        a grace of ``max(1 s, 20 %)`` and recorded as failed, so a solver that
        ignores its limit or crashes cannot stall the grid; memory is the
        run's peak resident size. ``loky``/``dask``/``ray`` go through
        :func:`evalcert.parallel.parallel_map` (limits are then honoured
        between refits and by the solvers' own options only).
    progress : bool
        Show a tqdm progress bar.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from evalcert.benchmarking.backends import select_backends
    >>> from evalcert.solvers.certificates import QP
    >>> qp = QP(P=sp.eye(1, format="csc"), q=np.array([-2.0]), A=sp.eye(1, format="csc"),
    ...         l=np.array([-1.0]), u=np.array([1.0]))  # min x^2/2 - 2x on [-1, 1]
    >>> problem = StandardQP("demo", "demo-qp", qp, (1, 1))
    >>> result = run_benchmark([problem], select_backends(["native"]), ["default"],
    ...                        n_jobs=1, memory=False, progress=False)
    >>> [(r.problem, r.backend, r.success) for r in result.records]
    [('demo-qp', 'native', True)]
    """
    if not (math.isfinite(time_limit) and time_limit > 0):
        raise InputError(f"time_limit must be a positive number of seconds, got {time_limit!r}")
    if not (math.isfinite(shift) and shift >= 0):
        raise InputError(f"shift must be a finite number of seconds >= 0, got {shift!r}")
    unknown = sorted(set(profiles) - set(PROFILES))
    if unknown or not profiles:
        raise InputError(f"unknown tolerance profiles {unknown}; choose from {list(PROFILES)}")
    backends = list(select_backends(None) if backends is None else backends)
    tasks = []
    for problem in problems:
        tiers = [PROFILES[p] for p in profiles] if problem.kind == "qp" else [EXACT]
        tasks += [(problem, b, prof, time_limit, memory)
                  for prof in tiers for b in backends if b.kind == problem.kind]
    machine = dict(machine_info(), load_before=os.getloadavg())
    cpu_start = os.times()
    start = time.perf_counter()
    forked = joblib_backend == "processes" and n_jobs != 1 and AVAILABLE
    if forked:
        _preload(backends)
        jobs = n_jobs or os.cpu_count() or 1
        tasks = [(p, b, prof, limit, False) for p, b, prof, limit, _ in tasks]
        records, peaks = run_forked(
            run_one, tasks, n_jobs=jobs, deadline=lambda t: _grace(t[3]),
            on_timeout=lambda t, sec: _failed(t, f"killed after {sec:.1f} s", "time limit", sec),
            on_crash=lambda t, msg: _failed(t, f"crashed: {msg}", "crashed", math.nan),
            progress=progress, desc="evalcert bench")
        if memory:
            records = [dataclasses.replace(r, peak_memory_mib=peak / 2 ** 20 if peak else math.nan)
                       for r, peak in zip(records, peaks)]
    else:
        records = parallel_map(run_one, tasks, backend="loky" if joblib_backend == "processes"
                               else joblib_backend, n_jobs=n_jobs, progress=progress,
                               desc="evalcert bench")
    wall = time.perf_counter() - start
    records = with_objective_errors(records)
    machine["load_after"] = os.getloadavg()
    cpu_end = os.times()
    # This process and its reaped children: the forked runs (or all runs with
    # n_jobs=1); joblib's pool workers outlive the call and are not counted.
    machine["cpu_seconds"] = (sum(cpu_end[:4]) - sum(cpu_start[:4]) if forked or n_jobs == 1
                              else math.nan)
    return BenchmarkResult(
        records=tuple(records), summaries=tuple(summarise(records, time_limit, shift)),
        profiles=tuple(performance_profiles(records)),
        settings={"time_limit": time_limit, "shift": shift,
                  "profiles": {p: PROFILES[p].tier for p in profiles},
                  "backends": [b.name for b in backends], "n_jobs": n_jobs,
                  "joblib_backend": "processes (forked, killed at the time limit)" if forked
                  else joblib_backend, "n_problems": len(problems),
                  "memory": ("peak resident memory of the run's process above its start "
                             "(solver C/Rust heaps included)" if forked else
                             "tracemalloc peak (Python + NumPy; not solver C/Rust heaps)")
                  if memory else "not measured"},
        machine=machine, wall_seconds=wall)


def _preload(backends: Sequence[Backend]) -> None:
    """Import every solver library once in this process, so that forked runs
    start with them loaded instead of each paying the import."""
    import importlib

    from evalcert.solvers.backends import CVXPY_SOLVERS, QPSOLVERS_BACKENDS

    names = {b.name for b in backends}
    modules = ["evalcert.solvers.backends.native", "evalcert.solvers.backends.osqp_direct"]
    if any(n.startswith("cvxpy-") for n in names):
        modules += ["evalcert.solvers.backends.cvxpy_"] + [
            CVXPY_SOLVERS[n.removeprefix("cvxpy-")][1] for n in names if n.startswith("cvxpy-")]
    qps = [QPSOLVERS_BACKENDS[n][1] for n in names if n in QPSOLVERS_BACKENDS]
    if qps:
        modules += ["qpsolvers", *qps]
    if any(n.startswith("pulp-") for n in names):
        modules += ["evalcert.logic.ilp", "evalcert.logic.pairs"]
    for module in modules:
        importlib.import_module(module)


def bench(families: Sequence[str] = FAMILIES, backends: Sequence[str] | None = None,
          profiles: Sequence[str] = ("low", "default", "high"), *, quick: bool = False,
          out: str | Path | None = None, data_dir: Path | None = None,
          command: str | None = None, force: bool = False, follow_symlinks: bool = False,
          **options: Any) -> BenchmarkResult:
    """Make the problems of ``families``, run them, and write the report to ``out``.

    The one library call behind ``evalcert bench``; ``command`` (the command
    line that made the run) is written into the report; ``options`` go to
    :func:`run_benchmark` (``time_limit``: default 10 s, :data:`QUICK_TIME_LIMIT`
    with ``quick``; ``n_jobs``, ...). Before any run,
    the report's files in ``out`` are checked (:func:`check_report_paths`: an
    existing ``report.md`` is only replaced with ``force=True``; an ``out`` that is a
    symbolic link is only followed with ``follow_symlinks=True``), and a
    ``real`` family without data is reported on stderr and in the report.

    Examples
    --------
    >>> result = bench(["ilp-m1"], backends=["pulp-highs"], profiles=["default"],
    ...                quick=True, n_jobs=1, memory=False, progress=False)
    >>> len(result.records), all(r.success for r in result.records)
    (2, True)
    """
    selected = select_backends(None if backends is None else list(backends))
    if out is not None:
        out = check_report_paths(Path(out), profiles, force=force,
                                 follow_symlinks=follow_symlinks)
    notes = []
    if "real" in families:
        note = real_family_note(data_dir)
        if note:
            print(f"evalcert bench: {note}", file=sys.stderr)
            notes.append(note)
    problems = make_problems(families, "quick" if quick else "full", data_dir)
    if not problems:
        raise InputError(f"no problems to run in families {list(families)}"
                         + (f" ({notes[0]})" if notes else ""))
    options.setdefault("time_limit", QUICK_TIME_LIMIT if quick else 10.0)
    result = run_benchmark(problems, selected, profiles, **options)
    result = dataclasses.replace(result, settings={**result.settings, "notes": notes,
                                                   "scale": "quick" if quick else "full"})
    if out is not None:
        write_report(result, Path(out), command=command)
    return result
