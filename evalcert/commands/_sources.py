"""The ``--format`` values and options of the tools' files, shared by the verbs.

Spelled out here so that building the parser imports no reader
(``tests/io/test_detect.py`` checks them against :mod:`evalcert.io.detect`).

>>> import argparse
>>> p = argparse.ArgumentParser()
>>> add_source_options(p)
>>> source_options(p.parse_args(["--metric", "acc", "--epochs", "first"]))["metric"]
'acc'
"""

from __future__ import annotations

import argparse

__all__ = ["RESULTS_FORMATS", "DECISION_FORMATS", "TOOL_FORMATS", "add_source_options",
           "source_options", "read_score_matrix"]

RESULTS_FORMATS = ("lm-eval", "helm", "inspect", "eee", "py-irt")
DECISION_FORMATS = ("fastchat-pair", "fastchat-single", "alpaca-eval")
TOOL_FORMATS = RESULTS_FORMATS + DECISION_FORMATS + ("arena",)


def add_source_options(p: argparse.ArgumentParser) -> None:
    """The per-tool options (lm-eval, HELM, Inspect).

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> add_source_options(p)
    >>> p.parse_args(["--all-runs"]).all_runs
    True
    """
    g = p.add_argument_group("tool files (lm-eval, helm, inspect)")
    g.add_argument("--metric", default=None,
                   help="lm-eval: per-row metric (default the first of each row's metrics)")
    g.add_argument("--filter", default=None,
                   help="lm-eval: filter to read (required when a task has several)")
    g.add_argument("--tasks", default=None, help="lm-eval: comma-separated tasks to read")
    g.add_argument("--all-runs", action="store_true",
                   help="lm-eval: read every run as <model>@<date> (default the newest)")
    g.add_argument("--stat", default=None, help="helm: per-instance stat (default exact_match)")
    g.add_argument("--scorer", default=None, help="inspect: scorer (default the first)")
    g.add_argument("--score-key", default=None, help="inspect: key of dict-valued scores")
    g.add_argument("--epochs", choices=("mean", "first", "keep"), default=None,
                   help="inspect: several epochs -> mean (default), first, or keep each")


def source_options(args: argparse.Namespace) -> dict:
    """The options given (``None`` for those not given).

    Examples
    --------
    >>> source_options(argparse.Namespace(tasks="a,b"))["tasks"]
    ['a', 'b']
    """
    tasks = getattr(args, "tasks", None)
    return {"metric": getattr(args, "metric", None), "filter": getattr(args, "filter", None),
            "tasks": tasks.split(",") if tasks else None,
            "all_runs": getattr(args, "all_runs", False),
            "stat": getattr(args, "stat", None), "scorer": getattr(args, "scorer", None),
            "score_key": getattr(args, "score_key", None),
            "epochs": getattr(args, "epochs", None)}


def read_score_matrix(path: str, fmt: str, args: argparse.Namespace,
                      bounds: tuple[float, float] = (-1.0, 1.0)):
    """The per-(model, item) scores of ``path`` for ``fit`` and ``compare``.

    ``fmt`` is ``wide``/``long`` (a table, :func:`evalcert.io.scores.read_scores`), a tool's
    name (:data:`RESULTS_FORMATS`) or ``auto``: a tool's files when they are recognised (and
    stderr says which tool, and what was read), else a wide table. ``bounds`` applies to
    tables; a tool's scores keep the reader's bounds.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "s.csv"
    >>> _ = path.write_text("agent,q1,q2\\nm1,0.5,1\\nm2,0,-1\\n")
    >>> read_score_matrix(str(path), "auto", argparse.Namespace()).shape
    (2, 2)
    """
    import sys

    if fmt not in ("wide", "long"):
        from evalcert.io.detect import detect_format, read_results

        tool = detect_format(path) if fmt == "auto" else fmt
        if tool is not None:
            if fmt == "auto":
                print(f"evalcert: {path}: read as {tool} (detected)", file=sys.stderr)
            read = read_results(path, tool, **source_options(args))
            print("evalcert: " + read.summary().replace("\n", "\nevalcert: "), file=sys.stderr)
            args.read_description = read.summary().replace("\n", "; ")    # for --html
            return read.matrix
        fmt = "wide"
    from evalcert.io.scores import read_scores
    from evalcert.progress import heartbeat

    with heartbeat(f"reading {path}"):                             # says so past 3 s
        return read_scores(path, format=fmt, bounds=bounds)
