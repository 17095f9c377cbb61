"""``evalcert curl`` and ``evalcert experiment``: the diagnostics of paper 000.

``curl`` runs :func:`evalcert.diagnostics.curl_test` (Table 1-2, Fig. 1);
``experiment sparse-recovery`` runs :func:`evalcert.diagnostics.sparse_recovery`
(Tables 3-4) over seeds on a joblib backend.
"""

from __future__ import annotations

import argparse

from evalcert.commands._args import (PLOT_SUFFIXES, add_output_flags, float_range, fraction,
                                     int_range, nonnegative_int, open_probability,
                                     positive_int)
from evalcert.errors import InputError

__all__ = ["register", "run_curl", "run_sparse_recovery"]

# Choice lists, spelled out so that building the parser imports no library module;
# tests/test_startup.py checks them against evalcert.diagnostics.sampling and
# evalcert.parallel.
REGIMES = ("row", "column", "hybrid", "nlogn")
HOLDOUT_SCHEMES = ("entrywise", "row", "column", "L")
BACKENDS = ("loky", "dask", "ray")
#: the parameters each sampling regime uses (evalcert.diagnostics.sampling.sample_training)
REGIME_PARAMS = {"row": ("alpha",), "column": ("beta",), "hybrid": ("alpha", "beta"),
                 "nlogn": ("C",)}


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``curl`` and ``experiment`` verbs.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="evalcert")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["experiment", "sparse-recovery", "--scores", "s.csv",
    ...                           "--C", "2"])
    >>> args.experiment, args.regime, args.C, args.seeds, args.func is run_sparse_recovery
    ('sparse-recovery', 'nlogn', 2.0, 50, True)
    """
    curl = subparsers.add_parser(
        "curl", help="discrete integrability (curl) test of a score matrix per link",
        description="Median and P95 of |Delta| = |s_ij - s_i'j - s_ij' + s_i'j'| over random "
                    "rectangles of observed cells, the same rectangles for identity, probit "
                    "and logit links (paper 000, Sec. 4.2-4.3).")
    curl.add_argument("scores", help="wide CSV/Parquet score matrix (agents x items)")
    curl.add_argument("--rectangles", type=int_range(1, 10_000_000), default=20_000,
                      help="random rectangles, 1..10^7 (default 20000)")
    curl.add_argument("--seed", type=nonnegative_int, default=0)
    curl.add_argument("--boot", type=int_range(0, 100_000), default=0,
                      help="bootstrap resamples of agents and items for CIs of median "
                           "differences (paper: 500; default 0 = none)")
    curl.add_argument("--plot", default=None, help="write the ECDF figure (Fig. 1) here "
                                                   "(.png, .pdf, .svg, ...)")
    curl.add_argument("--json", default=None, help="write the result as JSON here")
    add_output_flags(curl)
    curl.set_defaults(func=run_curl)

    experiment = subparsers.add_parser(
        "experiment", help="the paper's experiments (sparse recovery)",
        description="Experiments of paper 000 on a score matrix.")
    kinds = experiment.add_subparsers(dest="experiment", metavar="EXPERIMENT")
    kinds.required = True
    sparse = kinds.add_parser(
        "sparse-recovery", help="fixed holdout, sparse training designs over seeds",
        description="Hold out cells once, fit the dense reference, then for each seed draw a "
                    "training design (d-core >= d), fit ClippedLinear and report holdout RMSE, "
                    "Spearman, Kendall and ranking AUC (paper 000, Sec. 5-6).")
    sparse.add_argument("--scores", required=True, help="wide CSV/Parquet score matrix")
    sparse.add_argument("--regime", choices=REGIMES, default="nlogn")
    sparse.add_argument("--C", type=float_range(0, 1e6, low_open=True), default=None,
                        help="n log n constant, in (0, 1e6]")
    sparse.add_argument("--alpha", type=fraction, default=None, help="row fraction")
    sparse.add_argument("--beta", type=fraction, default=None, help="column fraction")
    sparse.add_argument("--seeds", type=int_range(1, 100_000), default=50,
                        help="sampling seeds 0..N-1 (default 50)")
    sparse.add_argument("--labels", default=None,
                        help="CSV with agent, good_faith (1/0) [, domain] for the ranking AUC")
    sparse.add_argument("--domain", default=None, help="domain of --labels (default: match)")
    sparse.add_argument("--holdout", type=open_probability, default=0.2,
                        help="held-out fraction in (0, 1) (default 0.2)")
    sparse.add_argument("--holdout-seed", type=nonnegative_int, default=0)
    sparse.add_argument("--holdout-scheme", choices=tuple(HOLDOUT_SCHEMES), default="entrywise")
    sparse.add_argument("--d", type=positive_int, default=3,
                        help="d-core of every design (default 3)")
    sparse.add_argument("--backend", choices=BACKENDS, default="loky")
    sparse.add_argument("--scheduler", default=None,
                        help="dask scheduler address for --backend dask (tcp://host:8786); "
                             "refused with one line if it does not answer within seconds")
    sparse.add_argument("--n-jobs", type=int_range(1, 256), default=None,
                        help="workers, 1..256 (default: all cores)")
    sparse.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    sparse.add_argument("--strict", action="store_true",
                        help="stop at the first failed sparse fit (default: record it, count "
                             "it in the summary and JSON, report it on stderr, go on)")
    sparse.add_argument("--json", default=None, help="write the result as JSON here")
    add_output_flags(sparse)
    sparse.set_defaults(func=run_sparse_recovery)


def run_curl(args: argparse.Namespace) -> int:
    """Run the curl test and print its summary.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = Path(tmp.name) / "scores.csv"  # additive scores: 3 agents x 4 items
    >>> _ = path.write_text("agent,q1,q2,q3,q4\\na,0.5,0.2,-0.1,0.3\\n"
    ...                     "b,0.3,0.0,-0.3,0.1\\nc,0.1,-0.2,-0.5,-0.1\\n")
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="evalcert")
    >>> register(parser.add_subparsers(dest="command"))
    >>> run_curl(parser.parse_args(["curl", str(path), "--rectangles", "100"]))
    Curl test: 100 rectangles (seed 0), same for every link
    ...
    0
    >>> tmp.cleanup()
    """
    from evalcert.io.scores import read_scores
    from evalcert.diagnostics.curl import curl_test
    from evalcert.io.outputs import check_outputs

    check_outputs({"--plot": args.plot, "--json": args.json}, inputs=[args.scores],
                  force=args.force, suffixes={"--plot": PLOT_SUFFIXES})
    S = read_scores(args.scores)
    result = curl_test(S, n_rectangles=args.rectangles, seed=args.seed, n_boot=args.boot)
    print(result.summary())
    if args.plot is not None:
        from evalcert.plots.curl import plot_curl_ecdf

        plot_curl_ecdf({args.scores: result}, args.plot)
        print(f"ECDF written to {args.plot}")
    if args.json is not None:
        result.to_json(args.json)
    return 0


def run_sparse_recovery(args: argparse.Namespace) -> int:
    """Run the sparse-recovery experiment and print its summary.

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np, pandas as pd
    >>> from pathlib import Path
    >>> rng = np.random.default_rng(0)
    >>> scores = np.subtract.outer(rng.normal(0, 0.3, 20), rng.normal(0, 0.3, 15))
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = Path(tmp.name) / "scores.csv"
    >>> pd.DataFrame(np.clip(scores, -1, 1).round(2), index=[f"a{i}" for i in range(20)],
    ...              columns=[f"q{j}" for j in range(15)]).to_csv(path, index_label="agent")
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="evalcert")
    >>> register(parser.add_subparsers(dest="command"))
    >>> run_sparse_recovery(parser.parse_args(
    ...     ["experiment", "sparse-recovery", "--scores", str(path), "--C", "2", "--seeds", "2",
    ...      "--n-jobs", "1", "--no-progress"]))
    Sparse recovery: nlogn (C=2), d-core >= 3, 2 seeds, holdout 20% (seed 0)
    ...
    0
    >>> tmp.cleanup()
    """
    from evalcert.io.scores import read_scores
    from evalcert.diagnostics.experiments import sparse_recovery
    from evalcert.diagnostics.metrics import partition_vector
    from evalcert.io.agent_labels import read_agent_labels
    from evalcert.io.outputs import check_outputs

    if args.scheduler is not None and args.backend != "dask":
        raise InputError("--scheduler is a dask scheduler address: add --backend dask or drop "
                         "--scheduler")
    unused = [f"--{p}" for p in ("C", "alpha", "beta")
              if getattr(args, p) is not None and p not in REGIME_PARAMS[args.regime]]
    if unused:
        needs = " and ".join(f"--{p}" for p in REGIME_PARAMS[args.regime])
        raise InputError(f"{', '.join(unused)} does nothing with --regime {args.regime} "
                         f"(it takes {needs}): drop it or choose another regime")
    if args.domain is not None and args.labels is None:
        raise InputError("--domain selects rows of --labels: add --labels FILE or drop --domain")
    check_outputs({"--json": args.json}, inputs=[args.scores, args.labels], force=args.force)
    S = read_scores(args.scores)
    partition = None
    if args.labels is not None:
        partition = partition_vector(S.agents, read_agent_labels(args.labels, S.agents,
                                                                 args.domain))
    result = sparse_recovery(S, args.regime, C=args.C, alpha=args.alpha, beta=args.beta,
                             seeds=args.seeds, partition=partition,
                             holdout_fraction=args.holdout, holdout_seed=args.holdout_seed,
                             holdout_scheme=args.holdout_scheme, d=args.d,
                             backend=args.backend, n_jobs=args.n_jobs,
                             scheduler=args.scheduler, progress=not args.no_progress,
                             strict=args.strict)
    print(result.summary())
    if args.json is not None:
        result.to_json(args.json)
    return 0
