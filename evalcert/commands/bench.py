"""``evalcert bench``: benchmark the solver backends on evalcert's problem families
(one call to :func:`evalcert.benchmarking.bench`)."""

from __future__ import annotations

import argparse
import shlex

from evalcert.benchmarking.families import FAMILIES
from evalcert.benchmarking.runner import PROFILES

__all__ = ["register", "run", "command_line"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``bench`` verb."""
    parser = subparsers.add_parser(
        "bench", help="benchmark the solver backends (success rate, runtime, profiles)",
        description="Run every problem family with every installed backend at each "
                    "tolerance profile, certify every answer with evalcert's own KKT check, "
                    "and write runs.csv, report.md and performance-profile PNGs.")
    parser.add_argument("--family", nargs="+", choices=FAMILIES, default=list(FAMILIES),
                        metavar="FAMILY",
                        help=f"problem families (default: all of {', '.join(FAMILIES)})")
    parser.add_argument("--backends", nargs="+", default=None, metavar="BACKEND",
                        help="backends (default: every installed one: native, osqp-direct, "
                             "cvxpy-osqp, cvxpy-clarabel, cvxpy-scs, cvxpy-ecos, pulp-highs, "
                             "pulp-cbc)")
    parser.add_argument("--profile", nargs="+", choices=list(PROFILES),
                        default=["low", "default", "high"], metavar="PROFILE",
                        help="accuracy tiers: low 1e-3, default 1e-6, high 1e-9 (default: all)")
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and one seed (about a minute on two cores)")
    parser.add_argument("--out", default="bench_out", help="output folder (default bench_out)")
    parser.add_argument("--time-limit", type=float, default=10.0,
                        help="seconds per run; slower runs fail (default 10)")
    parser.add_argument("--shift", type=float, default=0.01,
                        help="shift of the geometric mean in seconds (default 0.01)")
    parser.add_argument("--jobs", type=int, default=None,
                        help="joblib workers (default: all cores; 1 = in this process)")
    parser.add_argument("--joblib-backend", choices=("loky", "dask", "ray"), default="loky",
                        help="where runs execute (dask needs a running distributed.Client)")
    parser.add_argument("--no-memory", action="store_true",
                        help="skip the tracemalloc pass that measures peak memory")
    parser.set_defaults(func=run)


def command_line(args: argparse.Namespace) -> str:
    """The ``evalcert bench`` command that reproduces ``args`` (written into the report)."""
    words = ["evalcert", "bench", "--family", *args.family]
    if args.backends:
        words += ["--backends", *args.backends]
    words += ["--profile", *args.profile, *(["--quick"] if args.quick else []),
              "--out", args.out, "--time-limit", f"{args.time_limit:g}",
              "--shift", f"{args.shift:g}"]
    if args.jobs is not None:
        words += ["--jobs", str(args.jobs)]
    if args.joblib_backend != "loky":
        words += ["--joblib-backend", args.joblib_backend]
    if args.no_memory:
        words.append("--no-memory")
    return shlex.join(words)


def run(args: argparse.Namespace) -> int:
    """Run the benchmark, print its summary and where the report went."""
    from evalcert.benchmarking import bench

    result = bench(args.family, args.backends, args.profile, quick=args.quick, out=args.out,
                   command=command_line(args), time_limit=args.time_limit, shift=args.shift, n_jobs=args.jobs,
                   joblib_backend=args.joblib_backend, memory=not args.no_memory)
    print(result.summary())
    print(f"report written to {args.out}/report.md (runs.csv, profile_*.png)")
    return 0
