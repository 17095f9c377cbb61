"""``evalcert fit``: the clipped-linear fit (Eq. 7) of a score file, with its certificate."""

from __future__ import annotations

import argparse

from evalcert.data import read_scores
from evalcert.solvers.backends import available_backends
from evalcert.solvers.clipped_linear import ClippedLinear


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "fit", help="fit the clipped-linear model s_ij = theta_i - b_j, |s_ij| <= 1 (Eq. 7)",
        description="Fit the clipped-linear additive model to a score file and print the "
                    "ranking, the objective, the certificate verdict and the binding box "
                    "constraints.")
    p.add_argument("scores", help="CSV or Parquet file of scores in [-1, 1]")
    p.add_argument("--format", choices=["wide", "long"], default="wide",
                   help="wide: one row per agent (first column = names); long: agent,item,score")
    p.add_argument("--lam", type=float, default=1e-6, help="ridge weight (default 1e-6)")
    p.add_argument("--box", choices=["all", "observed", "none"], default="all",
                   help="where |theta_i - b_j| <= 1 is enforced (default all cells)")
    p.add_argument("--solver", default="native", choices=available_backends(),
                   help="backend (default native)")
    p.add_argument("--json", metavar="OUT", help="write the full result as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    S = read_scores(args.scores, format=args.format)
    model = ClippedLinear(lam=args.lam, box=args.box, solver=args.solver).fit(S)
    print(model.result_.summary())
    if args.json:
        model.result_.to_json(args.json)
        print(f"\nwrote {args.json}")
    return 0
