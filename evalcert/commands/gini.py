"""``evalcert gini``: the Gini projection onto the additive manifold (Prop. 4.1) of a scores
file, with its Huber-dual certificate (one call to :func:`evalcert.solvers.gini_projection.gini_projection`)."""

from __future__ import annotations

import argparse

from evalcert.commands._args import add_output_flags, float_range
from evalcert.commands.fit import MAX_LAM
from evalcert.errors import InputError

__all__ = ["register", "run"]

#: ridge weight of the penalised form when ``--lam`` is not given
DEFAULT_LAM = 5e-7


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``gini`` verb.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="evalcert")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["gini", "scores.csv", "--penalised"])
    >>> args.penalised, args.lam, args.solver, args.func is run
    (True, None, 'clarabel', True)
    """
    parser = subparsers.add_parser(
        "gini", help="Gini projection onto the additive manifold (Prop. 4.1) with a certificate",
        description="Complete the observed scores to the additive matrix s = theta - b in [-1, 1] "
                    "of least sum s^2, and certify it with the Huber dual (App. F.4). Noisy "
                    "(non-additive) scores need --penalised.")
    parser.add_argument("path", help="scores CSV or Parquet (wide: agent + one column per item)")
    parser.add_argument("--format", choices=("wide", "long"), default="wide",
                        help="wide (default) or long (agent,item,score)")
    parser.add_argument("--method", choices=("additive", "rectangles"), default=None,
                        help="additive: s = theta - b (any size, the default); rectangles: "
                             "explicit rectangle constraints (small matrices); not with "
                             "--penalised")
    parser.add_argument("--penalised", action="store_true",
                        help="fit the penalised form of App. F.4 (= Eq. 7 / 2) for noisy data")
    parser.add_argument("--lam", type=float_range(0, MAX_LAM), default=None,
                        help=f"ridge weight of the penalised form, in [0, {MAX_LAM:g}] "
                             f"(default {DEFAULT_LAM:g}); needs --penalised")
    parser.add_argument("--solver", default="clarabel", help="backend (default clarabel)")
    parser.add_argument("--json", default=None, help="write the result as JSON here")
    parser.add_argument("--verbose", action="store_true", help="the solver's own log on stderr")
    add_output_flags(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the projection and print the result's summary.

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
    >>> run(parser.parse_args(["gini", str(path)]))
    Gini projection (Prop. 4.1)...
    Huber-dual certificate PASSED, u* curl-free ...
    0
    >>> tmp.cleanup()
    """
    from evalcert.io.scores import read_scores
    from evalcert.io.outputs import check_outputs
    from evalcert.solvers.backends import check_backend

    if args.lam is not None and not args.penalised:
        raise InputError("--lam is the ridge weight of the penalised form only: add "
                         "--penalised or drop --lam")
    if args.method is not None and args.penalised:
        raise InputError("--method does nothing with --penalised (the penalised form is one "
                         "QP): drop --method or --penalised")
    check_outputs({"--json": args.json}, inputs=[args.path], force=args.force)
    check_backend(args.solver)
    S = read_scores(args.path, format=args.format)
    from evalcert.quiet import solver_log
    from evalcert.solvers.gini_projection import gini_projection  # CVXPY: after the checks

    with solver_log(args.verbose):  # the solver's log on stderr; stdout: the result only
        result = gini_projection(S, args.method or "additive", penalised=args.penalised,
                                 lam=DEFAULT_LAM if args.lam is None else args.lam,
                                 solver=args.solver)
    print(result.summary())
    if args.json is not None:
        result.to_json(args.json)
        print(f"result written to {args.json}")
    return 0
