"""``evalcert fit``: the clipped-linear fit (Eq. 7) of a score file, with its certificate."""

from __future__ import annotations

import argparse

from evalcert.commands._args import (HTML_SUFFIXES, add_html_option, add_output_flags,
                                     float_range)
from evalcert.commands._sources import RESULTS_FORMATS, add_source_options, read_score_matrix

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
    p.add_argument("--verbose", action="store_true",
                   help="the solver's own log (and the native solver's progress) on stderr")
    add_html_option(p)
    add_source_options(p)
    add_output_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from evalcert.io.outputs import check_outputs
    from evalcert.quiet import solver_log
    from evalcert.solvers.backends import check_qp_backend
    from evalcert.solvers.clipped_linear import ClippedLinear

    check_outputs({"--json": args.json, "--html": args.html}, inputs=[args.scores],
                  force=args.force, suffixes={"--html": HTML_SUFFIXES})
    check_qp_backend(args.solver)
    S = read_score_matrix(args.scores, args.format, args)
    with solver_log(args.verbose):  # the solver's log on stderr; stdout: the result only
        model = ClippedLinear(lam=args.lam, box=args.box, solver=args.solver,
                              verbose=args.verbose).fit(S)
    print(model.result_.summary())
    if args.json:
        model.result_.to_json(args.json)
        print(f"\nwrote {args.json}")
    if args.html:
        from evalcert.report import write_page

        write_page(model.result_, args.html, scores=S, source=args.scores, fmt=args.format,
                   command=getattr(args, "command_line", None))
        print(f"wrote {args.html}")
    return 0
