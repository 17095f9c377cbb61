"""``evalcert demo``: the main jobs on data shipped inside the package."""

from __future__ import annotations

import argparse

from evalcert.commands._args import add_output_flags
from evalcert.commands.fit import SOLVERS


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo", help="fit the shipped demo matrix and audit the shipped MT-Bench judges",
        description="Fit the clipped-linear model to the shipped synthetic 30 x 200 TVD-MI-like "
                    "matrix (with saturation), print the fit and its certificate, then run the "
                    "no-knowledge alarm on the paper's MT-Bench Table I.")
    p.add_argument("--solver", default="native", choices=SOLVERS,
                   help="backend for the fit (default native)")
    p.add_argument("--json", metavar="OUT", help="write the fit result as JSON")
    add_output_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from evalcert.datasets.demo import demo_scores
    from evalcert.logic import mtbench_demo
    from evalcert.io.outputs import check_outputs
    from evalcert.solvers.backends import check_backend
    from evalcert.solvers.clipped_linear import ClippedLinear

    check_outputs({"--json": args.json}, force=args.force)
    check_backend(args.solver)
    S = demo_scores()
    model = ClippedLinear(solver=args.solver).fit(S)
    print("== 1. clipped-linear fit of the shipped demo matrix ==")
    print(model.result_.summary(max_agents=10))
    verified = model.result_.certificate.verify(S)
    print(f"\ncertificate re-verified from the data: relative gap {verified.relative_gap:.2e}")
    if args.json:
        model.result_.to_json(args.json)
        print(f"wrote {args.json}")
    print("\n== 2. no-knowledge alarm on MT-Bench Table I (paper 003) ==")
    print(mtbench_demo().summary())
    return 0
