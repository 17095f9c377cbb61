"""The run table and what is computed from it: success rates, shifted geometric
means of runtime, objective errors and Dolan-More performance profiles.

Conventions (those of qpbenchmark and of Mittelmann's benchmarks):

* a run *succeeds* when the solver says solved **and** evalcert's own
  certificate passes at the profile's tolerance **and** it finished within the
  time limit;
* the shifted geometric mean of runtimes ``t_p`` over problems ``p`` is
  ``SGM = exp(mean(log(t_p + s))) - s``, with every failure charged the time
  limit; the shift ``s`` damps the weight of the fastest runs;
* the Dolan-More performance profile (Math. Program. 91, 2002) of backend
  ``b`` is ``rho_b(tau) = |{p : r_pb <= tau}| / |P|`` with the performance
  ratio ``r_pb = t_pb / min_b' t_pb'`` over successful runs and
  ``r_pb = inf`` for a failure.

Example
-------
>>> round(shifted_geometric_mean([1.0, 4.0], shift=0.0), 6)
2.0
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from typing import Sequence

import numpy as np

from evalcert.results import ResultMixin, format_table

__all__ = ["RunRecord", "BackendSummary", "PerformanceProfile", "shifted_geometric_mean",
           "summarise", "performance_profiles", "with_objective_errors"]

NAN = float("nan")


@dataclasses.dataclass(frozen=True)
class RunRecord(ResultMixin):
    """One (problem, backend, profile) run: a row of the CSV.

    Attributes
    ----------
    family, problem, kind, size : str
        ``kind`` is ``"qp"`` or ``"ilp"``.
    backend, profile : str
    tolerance : float
        The profile's accuracy tier (abs and rel tolerance of the certificate);
        0 for the exact ILPs.
    status : str
        The solver's word.
    solver_ok : bool
        The solver claimed success.
    success : bool
        ``solver_ok`` and certificate passed and within the time limit.
    reason : str
        Why the run failed ("" on success).
    build, compile, solve : float
        Seconds; ``runtime`` is their sum.
    iterations : int
        Summed over a batch; -1 when unknown.
    primal_residual, dual_residual, duality_gap : float
        Recomputed by evalcert (maximum absolute value over a batch); NaN for ILPs.
    objective : float
        Recomputed objective (summed over a batch); the exact value for ILPs.
    objective_error : float
        ``|objective - reference| / max(1, |reference|)`` against the best
        certified answer to the same problem (:func:`with_objective_errors`).
    peak_memory_mib : float
        Peak of memory traced by ``tracemalloc`` during a separate run (NaN if
        not measured).

    Examples
    --------
    >>> from evalcert.benchmarking import clipped_linear_family, run_benchmark, select_backends
    >>> result = run_benchmark(clipped_linear_family([(4, 6)], seeds=[0])[:2],
    ...                        select_backends(["native", "osqp-direct"]), ["default"], n_jobs=1,
    ...                        memory=False, progress=False)
    >>> record = result.records[0]
    >>> record.backend, record.profile, record.kind, record.success, record.reason
    ('native', 'default', 'qp', True, '')
    """

    family: str
    problem: str
    kind: str
    backend: str
    profile: str
    success: bool
    runtime: float
    size: str = ""
    tolerance: float = NAN
    status: str = ""
    solver_ok: bool = True
    reason: str = ""
    build: float = 0.0
    compile: float = 0.0
    solve: float = 0.0
    iterations: int = -1
    primal_residual: float = NAN
    dual_residual: float = NAN
    duality_gap: float = NAN
    objective: float = NAN
    objective_error: float = NAN
    peak_memory_mib: float = NAN

    @property
    def kkt_error(self) -> float:
        """``max(primal residual, dual residual, |gap|)`` (NaN for ILPs)."""
        return max(self.primal_residual, self.dual_residual, abs(self.duality_gap))

    def charged(self, time_limit: float) -> float:
        """Runtime counted in the SGM: the time limit for a failure."""
        return self.runtime if self.success else time_limit

    def summary(self) -> str:
        verdict = "success" if self.success else f"FAILED ({self.reason})"
        return (f"{self.problem} [{self.size}] with {self.backend} at {self.profile}: {verdict}; "
                f"status {self.status}, {self.runtime:.4f} s, {self.iterations} iterations, "
                f"residuals {self.primal_residual:.2e}/{self.dual_residual:.2e}, "
                f"gap {self.duality_gap:.2e}")


def shifted_geometric_mean(values: Sequence[float], shift: float) -> float:
    """``exp(mean(log(v + shift))) - shift``; ``shift >= 0``.

    Examples
    --------
    >>> round(shifted_geometric_mean([1.0, 4.0], 0.0), 6)  # the geometric mean
    2.0
    >>> round(shifted_geometric_mean([1.0, 10.0, 100.0], 1.0), 4)  # shifted: less sensitive
    12.0491
    """
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return NAN
    return float(np.exp(np.mean(np.log(v + shift))) - shift)


@dataclasses.dataclass(frozen=True)
class BackendSummary(ResultMixin):
    """Per (kind, profile, backend): success rate and shifted geometric mean runtime.

    Attributes
    ----------
    kind, profile, backend : str
    runs, successes : int
    success_rate : float
    sgm : float
        Shifted geometric mean runtime in seconds, failures at the time limit.
    sgm_ratio : float
        ``sgm`` over the smallest ``sgm`` of the same (kind, profile).
    median_build, median_compile, median_solve : float
        Over every run.
    max_objective_error : float
        Over successful runs.
    peak_memory_mib : float
        Largest traced peak of any run.

    Examples
    --------
    >>> from evalcert.benchmarking import clipped_linear_family, run_benchmark, select_backends
    >>> result = run_benchmark(clipped_linear_family([(4, 6)], seeds=[0])[:2],
    ...                        select_backends(["native", "osqp-direct"]), ["default"], n_jobs=1,
    ...                        memory=False, progress=False)
    >>> row = summarise(result.records, time_limit=10.0, shift=0.01)[0]
    >>> row.success_rate, bool(row.sgm > 0), bool(row.sgm_ratio >= 1)
    (1.0, True, True)
    """

    kind: str
    profile: str
    backend: str
    runs: int
    successes: int
    success_rate: float
    sgm: float
    sgm_ratio: float
    median_build: float
    median_compile: float
    median_solve: float
    max_objective_error: float
    peak_memory_mib: float

    def summary(self) -> str:
        return (f"{self.backend} ({self.kind}, {self.profile}): {self.successes}/{self.runs} "
                f"solved, SGM {self.sgm:.4g} s ({self.sgm_ratio:.2f}x best)")


def _nanmax(values: list[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return max(finite) if finite else NAN


def summarise(records: Sequence[RunRecord], time_limit: float,
              shift: float) -> list[BackendSummary]:
    """One :class:`BackendSummary` per (kind, profile, backend), in first-seen order.

    Examples
    --------
    >>> from evalcert.benchmarking import clipped_linear_family, run_benchmark, select_backends
    >>> result = run_benchmark(clipped_linear_family([(4, 6)], seeds=[0])[:2],
    ...                        select_backends(["native", "osqp-direct"]), ["default"], n_jobs=1,
    ...                        memory=False, progress=False)
    >>> rows = summarise(result.records, time_limit=10.0, shift=0.01)
    >>> [(row.backend, row.runs, row.successes) for row in rows]
    [('native', 2, 2), ('osqp-direct', 2, 2)]
    """
    groups: dict[tuple[str, str], dict[str, list[RunRecord]]] = defaultdict(dict)
    for r in records:
        groups[(r.kind, r.profile)].setdefault(r.backend, []).append(r)
    out = []
    for (kind, profile), by_backend in groups.items():
        sgms = {b: shifted_geometric_mean([r.charged(time_limit) for r in rs], shift)
                for b, rs in by_backend.items()}
        best = min(sgms.values())
        for b, rs in by_backend.items():
            ok = [r for r in rs if r.success]
            out.append(BackendSummary(
                kind=kind, profile=profile, backend=b, runs=len(rs), successes=len(ok),
                success_rate=len(ok) / len(rs), sgm=sgms[b],
                sgm_ratio=sgms[b] / best if best > 0 else NAN,
                median_build=float(np.median([r.build for r in rs])),
                median_compile=float(np.median([r.compile for r in rs])),
                median_solve=float(np.median([r.solve for r in rs])),
                max_objective_error=_nanmax([r.objective_error for r in ok]),
                peak_memory_mib=_nanmax([r.peak_memory_mib for r in rs])))
    return out


@dataclasses.dataclass(frozen=True)
class PerformanceProfile(ResultMixin):
    """Dolan-More performance profile of the backends on one (kind, profile) group.

    Attributes
    ----------
    kind, profile : str
    problems, backends : tuple of str
    ratios : ndarray, shape (n_problems, n_backends)
        Performance ratios ``r_pb >= 1``; ``inf`` for a failure (or no run).

    Examples
    --------
    >>> from evalcert.benchmarking import clipped_linear_family, run_benchmark, select_backends
    >>> result = run_benchmark(clipped_linear_family([(4, 6)], seeds=[0])[:2],
    ...                        select_backends(["native", "osqp-direct"]), ["default"], n_jobs=1,
    ...                        memory=False, progress=False)
    >>> profile = performance_profiles(result.records)[0]
    >>> profile.kind, profile.profile, bool((profile.ratios >= 1).all())  # 1 = fastest
    ('qp', 'default', True)
    """

    kind: str
    profile: str
    problems: tuple[str, ...]
    backends: tuple[str, ...]
    ratios: np.ndarray

    def fraction(self, backend: str, tau: float) -> float:
        """``rho_b(tau)``: share of problems ``backend`` solved within ``tau`` x the best
        (``tau = inf``: its success rate)."""
        col = self.ratios[:, self.backends.index(backend)]
        return float(np.mean(np.isfinite(col) & (col <= tau))) if len(col) else NAN

    def curve(self, backend: str) -> tuple[np.ndarray, np.ndarray]:
        """Breakpoints of the step function: ``taus`` (finite ratios, sorted) and
        ``rho(tau)`` just after each."""
        col = np.sort(self.ratios[:, self.backends.index(backend)])
        taus = col[np.isfinite(col)]
        return taus, np.arange(1, len(taus) + 1) / max(1, len(col))

    def summary(self, taus: Sequence[float] = (1.0, 2.0, 10.0, math.inf)) -> str:
        rows = [[b] + [self.fraction(b, t) for t in taus] for b in self.backends]
        heads = ["backend"] + [f"rho({t:g})" for t in taus]
        return (f"performance profile, {self.kind} problems, profile {self.profile} "
                f"({len(self.problems)} problems)\n" + format_table(rows, heads))


def performance_profiles(records: Sequence[RunRecord]) -> list[PerformanceProfile]:
    """One :class:`PerformanceProfile` per (kind, profile) group of ``records``.

    Examples
    --------
    >>> from evalcert.benchmarking import clipped_linear_family, run_benchmark, select_backends
    >>> result = run_benchmark(clipped_linear_family([(4, 6)], seeds=[0])[:2],
    ...                        select_backends(["native", "osqp-direct"]), ["default"], n_jobs=1,
    ...                        memory=False, progress=False)
    >>> profile = performance_profiles(result.records)[0]
    >>> profile.backends, len(profile.problems), profile.ratios.shape
    (('native', 'osqp-direct'), 2, (2, 2))
    """
    groups: dict[tuple[str, str], list[RunRecord]] = defaultdict(list)
    for r in records:
        groups[(r.kind, r.profile)].append(r)
    out = []
    for (kind, profile), rs in groups.items():
        problems = tuple(dict.fromkeys(r.problem for r in rs))
        backends = tuple(dict.fromkeys(r.backend for r in rs))
        t = np.full((len(problems), len(backends)), np.inf)
        for r in rs:
            if r.success:
                t[problems.index(r.problem), backends.index(r.backend)] = r.runtime
        best = t.min(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratios = np.where(np.isfinite(t), t / np.where(best > 0, best, 1.0), np.inf)
        out.append(PerformanceProfile(kind, profile, problems, backends, ratios))
    return out


def with_objective_errors(records: Sequence[RunRecord]) -> list[RunRecord]:
    """Fill ``objective_error`` against the best certified answer to each problem.

    The reference is, for a QP, the objective of the successful run with the
    smallest KKT error (over every backend and profile) and, for an ILP
    (a maximisation with exact values), the largest successful value. Problems
    with no successful run keep NaN.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> from evalcert.benchmarking import StandardQP, run_benchmark, select_backends
    >>> from evalcert.solvers.certificates import QP
    >>> qp = QP(P=sp.eye(1, format="csc"), q=np.array([-2.0]), A=sp.eye(1, format="csc"),
    ...         l=np.array([-1.0]), u=np.array([1.0]))
    >>> records = run_benchmark([StandardQP("demo", "demo-qp", qp, (1, 1))],
    ...                         select_backends(["native", "osqp-direct"]), ["default"],
    ...                         n_jobs=1, memory=False, progress=False).records
    >>> blank = [dataclasses.replace(r, objective_error=math.nan) for r in records]
    >>> [(r.backend, bool(r.objective_error < 1e-6)) for r in with_objective_errors(blank)]
    [('native', True), ('osqp-direct', True)]
    """
    reference: dict[str, float] = {}
    for prob in dict.fromkeys(r.problem for r in records):
        ok = [r for r in records if r.problem == prob and r.success]
        if not ok:
            continue
        if ok[0].kind == "qp":
            reference[prob] = min(ok, key=lambda r: r.kkt_error).objective
        else:
            reference[prob] = max(r.objective for r in ok)
    return [dataclasses.replace(
        r, objective_error=abs(r.objective - reference[r.problem])
        / max(1.0, abs(reference[r.problem]))) if r.problem in reference else r
        for r in records]
