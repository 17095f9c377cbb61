"""Benchmark evalcert's solver backends on evalcert's own problem families.

``bench()`` makes the problems, runs every (problem, backend, profile) in its
own forked process (killed at the time limit; or through joblib), certifies
every answer itself, and writes a CSV, a Markdown report that opens with a
"which backend" verdict derived from the runs, PNG performance profiles and a
scaling plot (``evalcert bench`` on the command line).

Example
-------
>>> from evalcert.benchmarking import clipped_linear_family, run_benchmark, select_backends
>>> result = run_benchmark(clipped_linear_family([(4, 6)], seeds=[0])[:1],
...                        select_backends(["native"]), ["default"], n_jobs=1,
...                        memory=False, progress=False)
>>> result.records[0].success
True
"""

from evalcert.benchmarking.backends import (Attempt, Backend, default_backends,
                                            select_backends)
from evalcert.benchmarking.families import (FAMILIES, IlpProblem, QPProblem, StandardQP,
                                            bootstrap_family, clipped_linear_family,
                                            gini_hard_family, ilp_family, make_problems,
                                            real_family, real_family_note, sparse_family)
from evalcert.benchmarking.isolation import run_forked
from evalcert.benchmarking.metrics import (BackendSummary, PerformanceProfile, RunRecord,
                                           performance_profiles, shifted_geometric_mean,
                                           summarise)
from evalcert.benchmarking.report import check_report_paths, write_report
from evalcert.benchmarking.results import BenchmarkResult
from evalcert.benchmarking.runner import PROFILES, Profile, bench, run_benchmark
from evalcert.benchmarking.verdict import scaling_table, verdict

__all__ = ["Attempt", "Backend", "default_backends", "select_backends", "FAMILIES",
           "IlpProblem", "QPProblem", "StandardQP", "bootstrap_family", "clipped_linear_family",
           "gini_hard_family", "ilp_family", "make_problems", "real_family", "real_family_note",
           "sparse_family", "run_forked", "BackendSummary",
           "PerformanceProfile", "RunRecord", "performance_profiles",
           "shifted_geometric_mean", "summarise", "check_report_paths", "write_report",
           "PROFILES", "BenchmarkResult", "Profile", "bench", "run_benchmark", "scaling_table",
           "verdict"]
