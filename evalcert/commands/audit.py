"""``evalcert audit``: the no-knowledge alarm of paper 003 on a decisions CSV or a JSON
label-count summary (one call to :func:`evalcert.logic.alarm` or
:func:`evalcert.logic.alarm_m2`)."""

from __future__ import annotations

import argparse

from evalcert.errors import InputError

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``audit`` verb."""
    parser = subparsers.add_parser(
        "audit", help="exact no-knowledge alarm for graders (LLM judges) without answer keys",
        description="Fire if no answer key lets every grader be better than THRESHOLD on "
                    "every label; print the exact threshold T, the keys attaining it and the "
                    "binding grader and label.")
    parser.add_argument("path", help="decisions CSV (item,grader,label, or wide: item + one "
                                     "column per grader) or JSON {grader: {label: count}}")
    parser.add_argument("--threshold", default="0.5",
                        help="accuracy level x in [0, 1] (default 0.5)")
    parser.add_argument("--labels", default=None, help="declared labels, e.g. a,b,tie")
    parser.add_argument("--graders", default=None,
                        help="wide CSV only: comma-separated grader columns (default: all "
                             "columns but item)")
    parser.add_argument("--m", type=int, choices=(1, 2), default=1,
                        help="1: label counts (closed form); 2: pair counts (ILP, needs a CSV)")
    parser.add_argument("--on-missing", choices=("error", "drop"), default="error",
                        help="items some grader skipped: error (default) or drop them")
    parser.add_argument("--solver", choices=("highs", "cbc"), default="highs",
                        help="ILP solver for --m 2")
    parser.add_argument("--plot", default=None, help="write the min-max curve (Fig. 7) here")
    parser.add_argument("--json", default=None, help="write the result as JSON here")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the audit and print the result's summary."""
    from evalcert.logic import alarm, alarm_m2, load_audit_input
    from evalcert.logic.summaries import Decisions

    graders = args.graders.split(",") if args.graders else None
    data = load_audit_input(args.path, labels=args.labels, on_missing=args.on_missing,
                            graders=graders)
    if args.m == 2:
        if not isinstance(data, Decisions):
            raise InputError("--m 2 needs question-aligned decisions (a CSV), not label counts")
        result = alarm_m2(data, args.threshold, solver=args.solver)
    else:
        result = alarm(data, args.threshold, curves=args.plot is not None)
    print(result.summary())
    if args.plot is not None:
        from evalcert.plots.alarms import plot_minmax_curve

        curve = result if result.curve is not None else alarm(data, args.threshold)
        plot_minmax_curve(curve, args.plot, threshold=float(result.threshold))
        print(f"min-max curve written to {args.plot}")
    if args.json is not None:
        result.to_json(args.json)
    return 0
