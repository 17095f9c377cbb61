"""``evalcert gini``: the Gini projection onto the additive manifold (Prop. 4.1) of a scores
file, with its Huber-dual certificate (one call to :func:`evalcert.solvers.gini_projection.gini_projection`)."""

from __future__ import annotations

import argparse

from evalcert.data import read_scores
from evalcert.solvers.gini_projection import gini_projection

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``gini`` verb."""
    parser = subparsers.add_parser(
        "gini", help="Gini projection onto the additive manifold (Prop. 4.1) with a certificate",
        description="Complete the observed scores to the additive matrix s = theta - b in [-1, 1] "
                    "of least sum s^2, and certify it with the Huber dual (App. F.4). Noisy "
                    "(non-additive) scores need --penalised.")
    parser.add_argument("path", help="scores CSV or Parquet (wide: agent + one column per item)")
    parser.add_argument("--format", choices=("wide", "long"), default="wide",
                        help="wide (default) or long (agent,item,score)")
    parser.add_argument("--method", choices=("additive", "rectangles"), default="additive",
                        help="additive: s = theta - b (any size); rectangles: explicit "
                             "rectangle constraints (small matrices)")
    parser.add_argument("--penalised", action="store_true",
                        help="fit the penalised form of App. F.4 (= Eq. 7 / 2) for noisy data")
    parser.add_argument("--lam", type=float, default=5e-7,
                        help="ridge weight of the penalised form (default 5e-7)")
    parser.add_argument("--solver", default="clarabel", help="backend (default clarabel)")
    parser.add_argument("--json", default=None, help="write the result as JSON here")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the projection and print the result's summary."""
    S = read_scores(args.path, format=args.format)
    result = gini_projection(S, args.method, penalised=args.penalised, lam=args.lam,
                             solver=args.solver)
    print(result.summary())
    if args.json is not None:
        result.to_json(args.json)
        print(f"result written to {args.json}")
    return 0
