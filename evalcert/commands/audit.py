"""``evalcert audit``: the no-knowledge alarm of paper 003 on a judge log or a JSON label-count
summary (one call to :func:`evalcert.logic.audit.run_audit`).

Nothing heavy is imported while the parser is built: the library loads inside :func:`run`.
"""

from __future__ import annotations

import argparse
import sys

from evalcert.commands._args import (HTML_SUFFIXES, add_html_option, add_output_flags,
                                     int_range, nonnegative_int)
from evalcert.commands._sources import DECISION_FORMATS

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``audit`` verb.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="evalcert")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["audit", "judges.csv", "--threshold", "0.6"])
    >>> args.threshold, args.m, args.format, args.func is run
    ('0.6', '1', 'auto', True)
    """
    parser = subparsers.add_parser(
        "audit", help="exact no-knowledge alarm for graders (LLM judges) without answer keys",
        description="Fire if no answer key lets every grader be better than THRESHOLD on "
                    "every label; print the exact threshold T, the keys attaining it and the "
                    "binding grader and label. Counts of dropped, skipped and unparseable "
                    "decisions go to stderr and the JSON.")
    # nargs="?": ``audit --plot-per-label LOG`` gives LOG to the flag's optional FILE;
    # run() hands it back to the path (see _stray_path)
    parser.add_argument("path", nargs="?", default=None, help="judge log (CSV/TSV/JSONL/JSON records/Parquet: long "
                                     "item,grader,label; wide item + one column per grader; or "
                                     "pairwise question_id,model_a,model_b,winner,judge), FastChat "
                                     "*_pair.jsonl/*_single.jsonl or AlpacaEval "
                                     "annotations.json (files or folders), or a JSON object "
                                     "{grader: {label: count}}")
    parser.add_argument("--format", default="auto",
                        choices=("auto", "long", "wide", "pairwise") + DECISION_FORMATS,
                        help="table layout, or a judge tool's files: fastchat-pair "
                             "(<judge>/g1 and /g2 are two graders), fastchat-single, "
                             "alpaca-eval (default: detected from the files and columns)")
    parser.add_argument("--item-col", default=None, help="item column (default item)")
    parser.add_argument("--grader-col", default=None,
                        help="grader column (default grader; pairwise: judge)")
    parser.add_argument("--label-col", default=None,
                        help="label column (default label; pairwise: winner)")
    parser.add_argument("--label-map", default=None,
                        help="rename raw labels first, e.g. 0=tie,1=a")
    parser.add_argument("--threshold", default="0.5",
                        help="accuracy level x in [0, 1] (default 0.5)")
    parser.add_argument("--labels", default=None, help="declared labels, e.g. a,b,tie")
    parser.add_argument("--graders", default=None,
                        help="comma-separated graders to audit (every format; default all)")
    parser.add_argument("--m", choices=("1", "2", "full"), default="1",
                        help="1: label counts (closed form); 2: pair counts (ILP); full: the "
                             "joint of all graders' aligned decisions (ILP, the exact truth)")
    parser.add_argument("--on-missing", choices=("error", "drop", "keep"), default="error",
                        help="items some grader skipped: error (default), drop them for every "
                             "grader, or keep them (--m full: each grader judged on the items "
                             "it decided)")
    parser.add_argument("--ilp-solver", "--solver", dest="solver", choices=("highs", "cbc"),
                        default="highs",
                        help="ILP solver for --m 2 / full (--solver: the old spelling)")
    parser.add_argument("--panel", action="store_true",
                        help="print the Sec. IV statement about the graders as a panel")
    parser.add_argument("--plot", default=None,
                        help="write the min-max curve (Fig. 7, aggregated) with T of the "
                             "chosen M here (.png/.pdf/.svg)")
    parser.add_argument("--plot-per-label", nargs="?", const=True, default=None,
                        metavar="FILE",
                        help="per-label min-max curves (Fig. 8, M=1): drawn on the --html "
                             "page, their numbers in the --json, and written to FILE when "
                             "given (.png/.pdf/.svg)")
    parser.add_argument("--pspace", nargs="?", const=True, default=None, metavar="FILE",
                        help="two labels: each grader's M=1 evaluations in P-space (Fig. 2: "
                             "prevalence, two label accuracies), coloured by whether every "
                             "grader can clear THRESHOLD: on the --html page, stage sizes and "
                             "point classes in the --json, and written to FILE when given")
    parser.add_argument("--squares", default=None,
                        help="write the correctness squares (Figs. 5-6) of the first two "
                             "graders at --key (default: the first attaining key) here")
    parser.add_argument("--key", default=None,
                        help="answer-key label counts for --squares, e.g. 8,9,8")
    parser.add_argument("--json", default=None, help="write the result as JSON here")
    add_html_option(parser)
    parser.add_argument("--full-curve", action="store_true",
                        help="include every key's value in the JSON (large at real size)")
    parser.add_argument("--csv", default=None,
                        help="write per-(grader, label) accuracy ranges under the chosen --m "
                             "at the attaining keys: grader, label, key, items, method, "
                             "min/max correct and accuracy with every grader >= T, then the "
                             "same at any level (free_*)")
    parser.add_argument("--bounds", action="store_true",
                        help="print those ranges (and add them to the JSON) without --csv")
    parser.add_argument("--max-keys", type=int_range(1, 1000), default=10, metavar="K",
                        help="attaining keys at which --csv/--bounds ranges are computed "
                             "(default 10)")
    parser.add_argument("--judges", action="store_true",
                        help="per-judge table first: Dawid-Skene accuracy with a bootstrap "
                             "interval, kappa, alpha without the judge, exact accuracy "
                             "ranges at T, and flags (weakest, degenerate, copy)")
    parser.add_argument("--judges-csv", default=None,
                        help="write the per-judge table as CSV here (implies --judges)")
    parser.add_argument("--judges-plot", default=None,
                        help="draw the per-judge table here (.png/.pdf/.svg; implies --judges)")
    parser.add_argument("--estimates", default=None,
                        help="point estimates beside the bounds, checked against T: ds "
                             "(Dawid-Skene), mv (majority vote), e.g. ds,mv (crowd-kit)")
    parser.add_argument("--agreement", action="store_true",
                        help="Fleiss'/Cohen's kappa (statsmodels), Krippendorff's alpha")
    parser.add_argument("--bootstrap", type=int_range(0, 100_000), default=0, metavar="B",
                        help="item bootstrap of T_1 with B resamples (a population statement)")
    parser.add_argument("--seed", type=nonnegative_int, default=0,
                        help="seed of --bootstrap and --population bootstrap (default 0)")
    parser.add_argument("--lower", default=None,
                        help="QC bounds: least items of each label in the key, e.g. 2,2,0")
    parser.add_argument("--upper", default=None,
                        help="QC bounds: most items of each label in the key, e.g. 20,20,10")
    parser.add_argument("--sequence", type=int, default=1, metavar="S",
                        help="audit windows of S consecutive items as R^S labels (App. E)")
    parser.add_argument("--label-thresholds", default=None,
                        help="per-label spec checked under M=1, e.g. a=0.6,b=0.6,tie=0.3")
    parser.add_argument("--grade", default=None,
                        help="overall-accuracy spec checked under M=1 (App. D), e.g. 0.7")
    add_output_flags(parser)
    parser.add_argument("--swapped", action="store_true",
                        help="pairwise logs: merge each comparison shown as A/B and B/A into "
                             "one item judged by <judge>/ab and <judge>/ba, and report each "
                             "judge's consistency under the swap")
    parser.add_argument("--tolerance", type=nonnegative_int, default=0, metavar="K",
                        help="ordinal labels (e.g. scores 1-10 declared in order with "
                             "--labels): a decision within K steps of the true label is "
                             "correct; M=1, 2 and full, exact")
    parser.add_argument("--bands", default=None, metavar="BANDS",
                        help="ordinal labels: a decision in the same declared band as the "
                             "true label is correct, e.g. 1-3,4-7,8-10 (ranges in the "
                             "--labels order); M=1, 2 and full, exact")
    parser.add_argument("--ties", choices=("none", "half"), default="none",
                        help="pairwise a/b/tie logs: half scores a tie against a or b (either "
                             "way) as half-right; M=1, 2 and full, exact (default none)")
    add_population_options(parser)
    parser.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                        help="stop the --m 2 / full search after SECONDS and print the "
                             "proven bounds T in [lo, hi] instead of an exact T")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress bar on stderr (drawn once an audit passes ~3 s)")
    parser.add_argument("--verbose", action="store_true", help="progress of ILP solves, and the ILP solver's own log, on stderr")
    parser.set_defaults(func=run)


def add_population_options(parser: argparse.ArgumentParser) -> None:
    """``--population``, ``--confidence``, ``--resamples`` (a statement about the population
    of items; ``--seed`` seeds the resamples)."""
    parser.add_argument("--population", choices=("none", "bootstrap", "exact"),
                        default="none",
                        help="add a statement about the population the items were drawn "
                             "from: an upper confidence bound on T there. exact: "
                             "Clopper-Pearson through the M=1 map (finite-sample, "
                             "conservative; every M); bootstrap: item resamples refitted "
                             "under the chosen --m (default none)")
    parser.add_argument("--confidence", type=float, default=0.95, metavar="LEVEL",
                        help="confidence level of --population, in (0, 1) (default 0.95)")
    parser.add_argument("--resamples", type=int_range(1, 100_000), default=200, metavar="B",
                        help="item resamples of --population bootstrap (default 200)")


def _stray_path(args: argparse.Namespace, images: tuple[str, ...]) -> None:
    """Give the judge log back to ``args.path`` when an optional-FILE flag took it.

    argparse hands the word after ``--plot-per-label``/``--pspace`` to the flag, so
    ``audit --plot-per-label log.csv`` would leave no path. When the path is missing and
    such a flag holds a name that is not a figure (``.png/.pdf/.svg``), that name is the
    log and the flag had no FILE.
    """
    from evalcert.errors import InputError

    for attr in ("plot_per_label", "pspace"):
        value = getattr(args, attr)
        if args.path is None and isinstance(value, str) and not value.lower().endswith(images):
            args.path = value
            setattr(args, attr, True)
    if args.path is None:
        raise InputError("audit needs a judge log: evalcert audit LOG [options] "
                         "(see evalcert audit --help)")


def run(args: argparse.Namespace) -> int:
    """Check outputs, read the log, run the audit, print its summary and notes.

    Examples
    --------
    Three judges that agree on 6 items (notes such as the rows read go to stderr):

    >>> import tempfile
    >>> from pathlib import Path
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="evalcert")
    >>> register(parser.add_subparsers(dest="command"))
    >>> rows = "".join(f"q{i},g{g},{'ab'[i % 2]}\\n" for i in range(6) for g in range(3))
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     log = Path(tmp) / "judges.csv"
    ...     _ = log.write_text("item,grader,label\\n" + rows)
    ...     run(parser.parse_args(["audit", str(log)]))
    no-knowledge alarm (M=1, closed form): silent at x = 1/2 (0.5000)
    ...
    0
    """
    from evalcert.errors import InputError
    from evalcert.io.outputs import check_outputs
    from evalcert.logic.audit import AuditSpec, run_audit
    from evalcert.quiet import solver_log

    images = (".png", ".pdf", ".svg")
    _stray_path(args, images)
    if args.json == "-":
        raise InputError("--json -: the JSON goes to a file (stdout carries the summary); "
                         "give a path ending .json")
    for flag, value in (("--plot-per-label", args.plot_per_label), ("--pspace", args.pspace)):
        if value is True and args.html is None and args.json is None:
            raise InputError(f"{flag} without FILE puts its figure on the --html page and its "
                             f"numbers in the --json; give {flag} FILE, --html or --json")
    files = {flag: None if value is True else value
             for flag, value in (("--plot-per-label", args.plot_per_label),
                                 ("--pspace", args.pspace))}
    check_outputs({"--json": args.json, "--plot": args.plot, "--csv": args.csv,
                   "--squares": args.squares, "--judges-csv": args.judges_csv,
                   "--judges-plot": args.judges_plot, "--html": args.html,
                   **files},
                  inputs=[args.path], force=args.force,
                  suffixes={"--json": (".json",), "--plot": images, "--csv": (".csv",),
                            "--squares": images, "--judges-csv": (".csv",),
                            "--judges-plot": images, "--html": HTML_SUFFIXES,
                            "--plot-per-label": images, "--pspace": images})
    spec = AuditSpec(
        args.path, args.threshold, m=args.m, fmt=args.format, labels=args.labels,
        graders=args.graders.split(",") if args.graders else None,
        on_missing=args.on_missing, item_col=args.item_col, grader_col=args.grader_col,
        label_col=args.label_col, label_map=args.label_map, solver=args.solver,
        plot=args.plot, csv=args.csv,
        estimators=tuple(args.estimates.split(",")) if args.estimates else (),
        with_agreement=args.agreement, n_boot=args.bootstrap, seed=args.seed,
        lower=args.lower, upper=args.upper, sequence=args.sequence,
        label_thresholds=args.label_thresholds, grade=args.grade, squares=args.squares,
        squares_key=args.key, with_bounds=args.bounds, max_keys=args.max_keys,
        judges=args.judges, judges_csv=args.judges_csv,
        judges_plot=args.judges_plot, swapped=args.swapped, tolerance=args.tolerance,
        bands=args.bands, ties=args.ties, population=args.population,
        confidence=args.confidence, resamples=args.resamples,
        time_limit=args.time_limit,
        progress=not args.no_progress, verbose=args.verbose, page=args.html is not None,
        plot_per_label=args.plot_per_label, pspace=args.pspace)
    with solver_log(args.verbose):  # HiGHS's/CBC's log on stderr; stdout: the result only
        report = run_audit(spec)
    for note in report.notes:
        print(f"evalcert: {note}", file=sys.stderr)
    print(report.summary(panel=args.panel, bounds=args.bounds))
    if args.json is not None:
        report.write_json(args.json, full_curve=args.full_curve)
    if args.html is not None:
        from evalcert.report import write_page

        write_page(report, args.html, source=args.path,
                   command=getattr(args, "command_line", None))
        print(f"wrote {args.html}", file=sys.stderr)
    return 0
