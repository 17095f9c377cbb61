"""``evalcert bench``: benchmark the solver backends on evalcert's problem families
(one call to :func:`evalcert.benchmarking.bench`)."""

from __future__ import annotations

import argparse
import shlex

from evalcert.commands._args import add_output_flags, int_range, nonnegative_float, positive_float

# Names only, so that building the parser imports no solver: tests/test_startup.py checks
# them against evalcert.benchmarking.FAMILIES and PROFILES.
FAMILIES = ("clipped-linear", "real", "bootstrap", "gini-hard", "sparse", "ilp-m1", "ilp-m2")
PROFILES = ("low", "default", "high")

__all__ = ["register", "run", "command_line"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``bench`` verb.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="evalcert")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["bench", "--quick", "--family", "sparse", "ilp-m1"])
    >>> args.family, args.profile, args.out, args.time_limit, args.func is run
    (['sparse', 'ilp-m1'], ['low', 'default', 'high'], 'bench_out', None, True)
    """
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
                             "cvxpy-<solver>, qpsolvers-<solver>, pulp-highs, pulp-cbc)")
    parser.add_argument("--profile", nargs="+", choices=list(PROFILES),
                        default=["low", "default", "high"], metavar="PROFILE",
                        help="accuracy tiers: low 1e-3, default 1e-6, high 1e-9 (default: all)")
    parser.add_argument("--quick", action="store_true",
                        help="smaller sizes and one seed (under two minutes on two cores)")
    parser.add_argument("--out", default="bench_out", help="output folder (default bench_out)")
    add_output_flags(parser)
    parser.add_argument("--data-dir", default=None, metavar="FOLDER",
                        help="folder with the real peer-prediction matrices (default: the "
                             "source checkout's ../shared/data; without them the real family "
                             "runs nothing and says so)")
    parser.add_argument("--time-limit", type=positive_float, default=None,
                        help="seconds per run; slower runs are stopped and fail (default 10, "
                             "3 with --quick)")
    parser.add_argument("--shift", type=nonnegative_float, default=0.01,
                        help="shift of the geometric mean in seconds (default 0.01)")
    parser.add_argument("--jobs", type=int_range(1, 256), default=None,
                        help="parallel workers (default: all cores; 1 = in this process)")
    parser.add_argument("--joblib-backend", choices=("processes", "loky", "dask", "ray"),
                        default="processes",
                        help="where runs execute: forked processes killed at the time limit "
                             "(default), or joblib's loky/dask/ray (dask needs a running "
                             "distributed.Client)")
    parser.add_argument("--no-memory", action="store_true",
                        help="do not record each run's peak memory")
    parser.set_defaults(func=run)


def command_line(args: argparse.Namespace) -> str:
    """The ``evalcert bench`` command that reproduces ``args`` (written into the report).

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="evalcert")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["bench", "--family", "ilp-m1", "--quick", "--jobs", "1"])
    >>> command_line(args)  # the defaults spelled out
    'evalcert bench --family ilp-m1 --profile low default high --quick --out bench_out
     --shift 0.01 --jobs 1'
    """
    words = ["evalcert", "bench", "--family", *args.family]
    if args.backends:
        words += ["--backends", *args.backends]
    words += ["--profile", *args.profile, *(["--quick"] if args.quick else []),
              "--out", args.out, *(["--time-limit", f"{args.time_limit:g}"]
                                   if args.time_limit is not None else []),
              "--shift", f"{args.shift:g}"]
    if args.jobs is not None:
        words += ["--jobs", str(args.jobs)]
    if args.data_dir is not None:
        words += ["--data-dir", args.data_dir]
    if args.joblib_backend != "processes":
        words += ["--joblib-backend", args.joblib_backend]
    if args.no_memory:
        words.append("--no-memory")
    return shlex.join(words)


def run(args: argparse.Namespace) -> int:
    """Run the benchmark, print its summary and where the report went.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="evalcert")
    >>> register(parser.add_subparsers(dest="command"))
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     run(parser.parse_args(["bench", "--family", "ilp-m1", "--backends", "pulp-highs",
    ...                            "--quick", "--jobs", "1", "--no-memory",
    ...                            "--out", str(Path(tmp) / "bench")]))
    solver benchmark: 2 runs in ...
    report written to .../bench/report.md ...
    0
    """
    from pathlib import Path

    from evalcert.benchmarking import bench

    result = bench(args.family, args.backends, args.profile, quick=args.quick, out=args.out,
                   data_dir=None if args.data_dir is None else Path(args.data_dir),
                   force=args.force, follow_symlinks=args.follow_symlinks, command=command_line(args), shift=args.shift,
                   **({} if args.time_limit is None else {"time_limit": args.time_limit}), n_jobs=args.jobs, joblib_backend=args.joblib_backend,
                   memory=not args.no_memory)
    print(result.summary())
    print(f"report written to {args.out}/report.md (with runs.csv, profile_*.png and, for "
          "the sparse family, scaling.png)")
    return 0
