"""``evalcert compare`` and ``evalcert rank``: which model is better, and how sure.

``compare RESULTS`` runs :func:`evalcert.compare` on a per-item score table (paired
tests on shared items, adjusted p-values, rank intervals); ``rank PAIRWISE`` runs
:func:`evalcert.rank` on a pairwise log (Chatbot Arena battles, judge verdicts:
Bradley-Terry with a certificate and bootstrap intervals).
"""

from __future__ import annotations

import argparse

from evalcert.commands._args import (HTML_SUFFIXES, PLOT_SUFFIXES, add_html_option,
                                     add_output_flags, float_range, int_range, nonnegative_int,
                                     open_probability)
from evalcert.commands._finish import finish
from evalcert.commands._sources import RESULTS_FORMATS, add_source_options, read_score_matrix
from evalcert.errors import InputError

__all__ = ["register", "run_compare", "run_rank"]

# Choice lists spelled out so that building the parser imports no library module
# (tests/compare/test_cli.py checks them against evalcert.compare).
TESTS = ("auto", "mcnemar", "t", "wilcoxon")
ADJUST = ("holm", "bh")
TIES = ("half", "davidson")
BACKENDS = ("loky", "dask", "ray")
IRT_MODELS = ("rasch", "2pl")


def _parallel_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=nonnegative_int, default=0, help="bootstrap seed")
    parser.add_argument("--alpha", type=open_probability, default=0.05,
                        help="1 - confidence level of tests and intervals (default 0.05)")
    parser.add_argument("--backend", choices=BACKENDS, default="loky",
                        help="joblib backend of the bootstrap (default loky)")
    parser.add_argument("--scheduler", default=None,
                        help="dask scheduler address for --backend dask (tcp://host:8786)")
    parser.add_argument("--n-jobs", type=int_range(1, 256), default=None,
                        help="bootstrap workers, 1..256 (default: all cores)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument("--json", default=None, help="write the result as JSON here")
    parser.add_argument("--plot", default=None, help="write the figure here (.png, .pdf, .svg)")
    add_html_option(parser)
    add_output_flags(parser)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``compare`` and ``rank`` verbs.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="evalcert")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["rank", "battles.parquet", "--bootstrap", "100"])
    >>> args.bootstrap, args.ties, args.func is run_rank
    (100, 'half', True)
    """
    compare = subparsers.add_parser(
        "compare", help="paired tests of every pair of models and rank intervals",
        description="For every pair of models, on the items both answered: the difference in "
                    "mean score with a paired (or cluster-robust) interval, the exact McNemar "
                    "test (0/1 scores) or a paired t / Wilcoxon test (graded), Holm or "
                    "Benjamini-Hochberg adjusted p-values and the minimum detectable "
                    "difference; each model's rank with a simultaneous interval (item "
                    "bootstrap, or IRT abilities with --irt).")
    compare.add_argument("results", help="per-item scores: a tool's results (lm-eval, HELM, "
                                         "Inspect, EEE, py-irt) or a CSV/TSV/Parquet/JSONL "
                                         "table, wide (model + one column per item) or long "
                                         "(agent,item,score)")
    compare.add_argument("--format", choices=("auto", "wide", "long") + RESULTS_FORMATS,
                         default="auto",
                         help="auto (default: a tool's files when recognised, said on "
                              "stderr; else a wide table), wide, long, or a tool's name")
    add_source_options(compare)
    compare.add_argument("--groups", default=None,
                         help="table with columns item and group (--group-column): cluster "
                              "items (turns of one question, a task) for cluster-robust "
                              "intervals")
    compare.add_argument("--group-column", default="group",
                         help="column of --groups holding the cluster (default group)")
    compare.add_argument("--group-sep", default=None,
                         help="cluster items by their name up to the first SEP (e.g. '/' "
                              "groups q12/turn1 and q12/turn2)")
    compare.add_argument("--test", choices=TESTS, default="auto",
                         help="auto (default): exact McNemar for 0/1 scores, paired t otherwise")
    compare.add_argument("--adjust", choices=ADJUST, default="holm",
                         help="multiplicity adjustment: holm (family-wise, default) or bh "
                              "(false discovery rate)")
    compare.add_argument("--power", type=open_probability, default=0.8,
                         help="power of the minimum detectable difference (default 0.8)")
    compare.add_argument("--boot", type=int_range(0, 100_000), default=1000,
                         help="item bootstrap resamples for rank intervals (default 1000)")
    compare.add_argument("--irt", choices=IRT_MODELS, default=None,
                         help="also rank by IRT abilities with their standard errors")
    _parallel_flags(compare)
    compare.set_defaults(func=run_compare)

    rank = subparsers.add_parser(
        "rank", help="Bradley-Terry leaderboard from pairwise outcomes, with a certificate",
        description="Bradley-Terry by maximum likelihood on battles aggregated per pair (ties "
                    "half a win each way, or Davidson's model), scores centred at 0 and on the "
                    "Arena's Elo scale, a certificate bounding the distance to the optimum, "
                    "and bootstrap intervals over battles. A log where the MLE does not exist "
                    "is refused, naming the models (or fit with --prior-sd).")
    rank.add_argument("pairwise", help="battle log: Chatbot Arena clean_battle_*.json, "
                                       "or CSV/TSV/JSONL/JSON/Parquet with model_a, model_b, "
                                       "winner")
    rank.add_argument("--ties", choices=TIES, default="half",
                      help="half (default, the Arena convention) or davidson")
    rank.add_argument("--prior-sd", type=float_range(0, 1e6, low_open=True), default=None,
                      help="Gaussian prior N(0, SD^2) on log-strengths (MAP fit)")
    rank.add_argument("--bootstrap", type=int_range(0, 1_000_000), default=0,
                      help="bootstrap refits over battles for intervals (default 0)")
    rank.add_argument("--anony-only", action="store_true",
                      help="Arena logs: keep only anonymous battles")
    rank.add_argument("--language", default=None, help="Arena logs: keep only this language")
    rank.add_argument("--model-a", default="model_a", help="column of the first model")
    rank.add_argument("--model-b", default="model_b", help="column of the second model")
    rank.add_argument("--winner", default="winner", help="column of the outcome")
    rank.add_argument("--judge-column", default=None,
                      help="column naming the judge of each battle (counts kept per judge)")
    rank.add_argument("--judge-weighted", action="store_true",
                      help="fit each judge's reliability jointly (needs --judge-column)")
    rank.add_argument("--reliability-sd", type=float_range(0, 1e6, low_open=True), default=1.0,
                      help="prior SD of judge reliabilities around 1 (default 1)")
    _parallel_flags(rank)
    rank.set_defaults(func=run_rank)


def _check_outputs(args: argparse.Namespace, source: str) -> None:
    from evalcert.io.outputs import check_outputs

    check_outputs({"--plot": args.plot, "--json": args.json, "--html": args.html},
                  inputs=[source], force=args.force,
                  suffixes={"--plot": PLOT_SUFFIXES, "--html": HTML_SUFFIXES})


def _groups(args: argparse.Namespace, items) -> dict | None:
    if args.groups is not None and args.group_sep is not None:
        raise InputError("--groups and --group-sep both define clusters: give one")
    if args.group_sep is not None:
        if not args.group_sep:
            raise InputError("--group-sep must be a non-empty separator")
        return {item: item.split(args.group_sep, 1)[0] for item in items}
    if args.groups is None:
        return None
    from evalcert.io.tables import read_table

    table = read_table(args.groups, required=("item", args.group_column))
    if table["item"].duplicated().any():
        dup = table["item"][table["item"].duplicated()].iloc[0]
        raise InputError(f"{args.groups}: item {dup!r} is listed more than once; give each "
                         "item one group")
    groups = dict(zip(table["item"], table[args.group_column]))
    unknown = set(groups) - set(items)
    if unknown:
        print(f"evalcert: note: {len(unknown)} items of {args.groups} are not in the results "
              "(ignored)", file=__import__("sys").stderr)
    return groups


def run_compare(args: argparse.Namespace) -> int:
    """Compare every pair of models; print the summary.

    Examples
    --------
    >>> import argparse, tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = Path(tmp.name) / "results.csv"
    >>> _ = path.write_text("model,q1,q2,q3,q4,q5\\na,1,1,1,0,1\\nb,0,1,0,0,1\\n")
    >>> parser = argparse.ArgumentParser(prog="evalcert")
    >>> register(parser.add_subparsers(dest="command"))
    >>> run_compare(parser.parse_args(["compare", str(path), "--boot", "50", "--n-jobs", "1",
    ...                                "--no-progress"]))
    Paired comparison of 2 models on 5 items: exact McNemar test, holm adjustment over 1 pairs; ...
    0
    >>> tmp.cleanup()
    """
    from evalcert.compare.paired import compare

    _check_outputs(args, args.results)
    S = read_score_matrix(args.results, args.format, args, bounds=(-1e300, 1e300))
    result = compare(S, groups=_groups(args, S.items), test=args.test, adjust=args.adjust,
                     alpha=args.alpha, power=args.power, n_boot=args.boot, seed=args.seed,
                     irt=args.irt, n_jobs=args.n_jobs, backend=args.backend,
                     scheduler=args.scheduler, progress=not args.no_progress)
    print(result.summary())

    def plot(path: str) -> None:
        from evalcert.plots.compare import plot_compare

        plot_compare(result, path)

    return finish(args, result, plot=plot,
                  page={"scores": S, "source": args.results, "fmt": args.format,
                        "read": getattr(args, "read_description", None)})


def run_rank(args: argparse.Namespace) -> int:
    """Fit Bradley-Terry to a pairwise log; print the leaderboard.

    Examples
    --------
    >>> import argparse, tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = Path(tmp.name) / "battles.csv"
    >>> _ = path.write_text("model_a,model_b,winner\\na,b,model_a\\nb,c,model_a\\n"
    ...                     "c,a,model_a\\na,c,tie\\n")
    >>> parser = argparse.ArgumentParser(prog="evalcert")
    >>> register(parser.add_subparsers(dest="command"))
    >>> run_rank(parser.parse_args(["rank", str(path)]))
    Bradley-Terry ranking of 3 models from 4 battles on 3 pairs ...
    0
    >>> tmp.cleanup()
    """
    from evalcert.compare.leaderboard import rank
    from evalcert.io.arena import read_arena

    _check_outputs(args, args.pairwise)
    if args.judge_weighted and args.judge_column is None:
        raise InputError("--judge-weighted needs --judge-column NAME (the column naming each "
                         "battle's judge)")
    counts = read_arena(args.pairwise, anony_only=args.anony_only, language=args.language,
                        model_a=args.model_a, model_b=args.model_b, winner=args.winner,
                        judge=args.judge_column)
    result = rank(counts, ties=args.ties, prior_sd=args.prior_sd, n_boot=args.bootstrap,
                  alpha=args.alpha, seed=args.seed, n_jobs=args.n_jobs, backend=args.backend,
                  scheduler=args.scheduler, progress=not args.no_progress,
                  judge_weighted=args.judge_weighted, reliability_sd=args.reliability_sd)
    print(result.summary())

    def plot(path: str) -> None:
        from evalcert.plots.compare import plot_rank

        plot_rank(result, path)

    return finish(args, result, plot=plot, page={"source": args.pairwise})
