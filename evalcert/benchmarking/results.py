"""The result of a solver benchmark (its own module, so the runner that produces it, the
verdict and the report that read it import it without importing each other)."""

from __future__ import annotations

import dataclasses
from typing import Any

from evalcert.benchmarking.metrics import BackendSummary, PerformanceProfile, RunRecord
from evalcert.results import ResultMixin, format_table

__all__ = ["BenchmarkResult"]


@dataclasses.dataclass(frozen=True)
class BenchmarkResult(ResultMixin):
    """Every run of a benchmark and its summaries.

    Attributes
    ----------
    records : tuple of RunRecord
    summaries : tuple of BackendSummary
    profiles : tuple of PerformanceProfile
    settings : dict
        Time limit, shift, profiles and their tiers, memory method, joblib backend.
    machine : dict
        CPU, cores, load before and after, library versions.
    wall_seconds : float

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from evalcert.benchmarking.backends import select_backends
    >>> from evalcert.benchmarking.families import StandardQP
    >>> from evalcert.benchmarking.runner import run_benchmark
    >>> from evalcert.solvers.certificates import QP
    >>> qp = QP(P=sp.eye(1, format="csc"), q=np.array([-2.0]), A=sp.eye(1, format="csc"),
    ...         l=np.array([-1.0]), u=np.array([1.0]))  # min x^2/2 - 2x on [-1, 1]
    >>> problem = StandardQP("demo", "demo-qp", qp, (1, 1))
    >>> result = run_benchmark([problem], select_backends(["native"]), ["low", "default"],
    ...                        n_jobs=1, memory=False, progress=False)
    >>> len(result.records), len(result.summaries), result.settings["n_problems"]
    (2, 2, 1)
    >>> result.summary_rows()[0][:4]
    ['kind', 'profile', 'backend', 'solved']
    """

    records: tuple[RunRecord, ...]
    summaries: tuple[BackendSummary, ...]
    profiles: tuple[PerformanceProfile, ...]
    settings: dict[str, Any]
    machine: dict[str, Any]
    wall_seconds: float

    def summary_rows(self) -> tuple[list[str], list[list[Any]]]:
        """Headers and rows of the summary table (one row per kind/profile/backend)."""
        heads = ["kind", "profile", "backend", "solved", "success", "SGM (s)", "SGM ratio",
                 "med. build", "med. compile", "med. solve", "max obj. err", "peak MiB"]
        rows = [[s.kind, s.profile, s.backend, f"{s.successes}/{s.runs}",
                 f"{100 * s.success_rate:.0f}%", s.sgm, s.sgm_ratio, s.median_build,
                 s.median_compile, s.median_solve, s.max_objective_error, s.peak_memory_mib]
                for s in self.summaries]
        return heads, rows

    def summary(self) -> str:
        heads, rows = self.summary_rows()
        s = self.settings
        return (f"solver benchmark: {len(self.records)} runs in {self.wall_seconds:.1f} s "
                f"(time limit {s['time_limit']:g} s, SGM shift {s['shift']:g} s; failures "
                "charged the time limit; success = evalcert's certificate at the tier)\n"
                + format_table(rows, heads))
