"""``evalcert convert``: a tool's files (lm-eval, HELM, Inspect, EEE, py-irt, FastChat,
AlpacaEval, Arena) -> evalcert's long table, or EEE / py-irt JSONL (one call to
:func:`evalcert.io.convert.convert`)."""

from __future__ import annotations

import argparse
import sys

from evalcert.commands._args import add_output_flags
from evalcert.commands._sources import TOOL_FORMATS, add_source_options, source_options

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``convert`` verb.

    Examples
    --------
    >>> parser = argparse.ArgumentParser(prog="evalcert")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["convert", "runs/", "--out", "long.csv", "--filter", "none"])
    >>> args.format, args.to, args.filter
    ('auto', 'long', 'none')
    """
    p = subparsers.add_parser(
        "convert", help="read a tool's result or judgment files; write the long table",
        description="Read lm-eval sample logs, HELM runs, Inspect logs, Every Eval Ever or "
                    "py-irt JSONL (model,item,score), FastChat or AlpacaEval judgments "
                    "(item,grader,label) or the Arena battle dump, and write them as CSV or "
                    "Parquet (--to long) or as EEE / py-irt JSONL. What was read (models, "
                    "items, cells, missing and errored cells per model, skipped rows and "
                    "why) is printed.")
    p.add_argument("path", help="a file or a folder of the tool's files")
    p.add_argument("--format", default="auto", choices=("auto",) + TOOL_FORMATS
                   + ("mtbench-human",),
                   help="the tool (default: detected, and said on stderr); mtbench-human: "
                        "raw MT-Bench human votes -> the weighted-vote answer key (paper 003, "
                        "App. B), never detected")
    p.add_argument("--to", default="long", choices=("long", "eee", "py-irt"),
                   help="long: CSV/Parquet table (default); eee, py-irt: JSONL (results)")
    p.add_argument("--out", required=True, help="output file (.csv/.parquet, or .jsonl)")
    add_output_flags(p)
    add_source_options(p)
    _add_key_options(p)
    p.set_defaults(func=run)


def _add_key_options(p: argparse.ArgumentParser) -> None:
    """The options of ``--format mtbench-human`` (the App. B key)."""
    g = p.add_argument_group("MT-Bench human votes (--format mtbench-human)")
    g.add_argument("--key", default=None, metavar="PANELS",
                   help="key columns, each a panel of judges: experts (judges expert_*), "
                        "authors (author_*) or NAME=JUDGE_PREFIX (default experts,authors)")
    g.add_argument("--min-votes", default=None, metavar="PANEL=N,...",
                   help="fewest votes a panel needs to grade a comparison (default "
                        "experts=2,authors=1, as App. B reads)")
    g.add_argument("--turn", default=None, help="keep the votes of one turn (e.g. 1)")


def run(args: argparse.Namespace) -> int:
    """Check the output, convert, print what was read and written.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "r.jsonl").write_text(json.dumps({"subject_id": "m", "responses": {"q": 1}}) + "\\n")
    >>> parser = argparse.ArgumentParser(prog="evalcert")
    >>> register(parser.add_subparsers(dest="command"))
    >>> run(parser.parse_args(["convert", str(folder / "r.jsonl"), "--format", "py-irt",
    ...                        "--out", str(folder / "long.csv")]))
    read py-irt from ...r.jsonl: 1 models x 1 items, 1 scored cells
    wrote 1 rows (long) to ...long.csv
    0
    """
    from evalcert.io.convert import convert
    from evalcert.io.detect import detect_format
    from evalcert.io.outputs import check_outputs

    suffixes = (".csv", ".parquet", ".pq") if args.to == "long" else (".jsonl",)
    check_outputs({"--out": args.out}, inputs=[args.path], force=args.force,
                  suffixes={"--out": suffixes})
    fmt = args.format
    if fmt == "auto":
        fmt = detect_format(args.path) or "auto"
        if fmt != "auto":
            print(f"evalcert: {args.path}: read as {fmt} (detected; pick --format to change)",
                  file=sys.stderr)
    options = source_options(args)
    keyed = {"key": args.key, "min_votes": args.min_votes, "turn": args.turn}
    if fmt == "mtbench-human":
        options.update(keyed)
    elif any(v is not None for v in keyed.values()):
        from evalcert.errors import InputError

        raise InputError("--key, --min-votes and --turn build the App. B key from raw votes: "
                         "add --format mtbench-human")
    done = convert(args.path, args.out, format=fmt, to=args.to, **options)
    print(done.summary())
    return 0
