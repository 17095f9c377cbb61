"""``evalcert fit``: the clipped-linear fit (Eq. 7) of a score file, with its certificate."""

from __future__ import annotations

import argparse
import sys

from evalcert.commands._args import add_output_flags, float_range
from evalcert.commands._sources import RESULTS_FORMATS, add_source_options, source_options

#: backend names (``evalcert.solvers.backends``); a missing solver is refused at run time
SOLVERS = ("native", "osqp-direct", "osqp", "clarabel", "scs", "ecos", "qpsolvers-piqp",
           "qpsolvers-proxqp", "qpsolvers-daqp", "qpsolvers-highs", "qpsolvers-cvxopt")
#: largest ridge weight the CLI takes: ``evalcert.solvers.clipped_linear.LAM_MAX``, spelled
#: out so the parser imports no solver (tests/test_startup.py checks they agree)
MAX_LAM = 1e100


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "fit", help="fit the clipped-linear model s_ij = theta_i - b_j, |s_ij| <= 1 (Eq. 7)",
        description="Fit the clipped-linear additive model to a score file and print the "
                    "ranking, the objective, the certificate verdict and the binding box "
                    "constraints.")
    p.add_argument("scores", help="CSV or Parquet file of scores in [-1, 1]")
    p.add_argument("--format", choices=("auto", "wide", "long") + RESULTS_FORMATS,
                   default="auto",
                   help="auto (default): a tool's files (lm-eval, helm, inspect, eee, py-irt) "
                        "are detected, any other table is wide; wide: one row per agent "
                        "(first column = names); long: agent,item,score")
    p.add_argument("--lam", type=float_range(0, MAX_LAM), default=1e-6,
                   help=f"ridge weight in [0, {MAX_LAM:g}] (default 1e-6)")
    p.add_argument("--box", choices=["all", "observed", "none"], default="all",
                   help="where |theta_i - b_j| <= 1 is enforced (default all cells)")
    p.add_argument("--solver", default="native", choices=SOLVERS,
                   help="backend (default native; osqp..ecos go through CVXPY, qpsolvers-* "
                        "through qpsolvers)")
    p.add_argument("--json", metavar="OUT", help="write the full result as JSON")
    add_source_options(p)
    add_output_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from evalcert.io.scores import read_scores
    from evalcert.io.outputs import check_outputs
    from evalcert.solvers.backends import check_qp_backend
    from evalcert.solvers.clipped_linear import ClippedLinear

    check_outputs({"--json": args.json}, inputs=[args.scores], force=args.force)
    check_qp_backend(args.solver)
    fmt = args.format
    if fmt not in ("wide", "long"):
        from evalcert.io.detect import detect_format

        tool = detect_format(args.scores) if fmt == "auto" else fmt
        if tool is None:
            fmt = "wide"
        else:
            from evalcert.io.detect import read_results

            if args.format == "auto":
                print(f"evalcert: {args.scores}: read as {tool} (detected)", file=sys.stderr)
            read = read_results(args.scores, tool, **source_options(args))
            print("evalcert: " + read.summary().replace("\n", "\nevalcert: "), file=sys.stderr)
            S = read.matrix
    if fmt in ("wide", "long"):
        from evalcert.progress import heartbeat

        with heartbeat(f"reading {args.scores}"):             # says so past 3 s
            S = read_scores(args.scores, format=fmt)
    model = ClippedLinear(lam=args.lam, box=args.box, solver=args.solver).fit(S)
    print(model.result_.summary())
    if args.json:
        model.result_.to_json(args.json)
        print(f"\nwrote {args.json}")
    return 0
