"""Convert a tool's files into evalcert's long table (or Every Eval Ever / py-irt JSONL).

Results become ``model,item,score`` rows, judge logs ``item,grader,label`` rows, Arena
battles the comparisons table of :mod:`evalcert.io.arena`; CSV or Parquet by the output's
suffix. ``to="eee"`` and ``to="py-irt"`` write results in those tools' JSONL instead.

Example
-------
>>> import json, pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "r.jsonl").write_text(json.dumps({"subject_id": "m", "responses": {"q": 1}}) + "\\n")
>>> done = convert(folder / "r.jsonl", folder / "long.csv")
>>> done.rows, (folder / "long.csv").read_text().splitlines()
(1, ['model,item,score', 'm,q,1.0'])
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from evalcert.errors import InputError
from evalcert.io.outputs import write_frame
from evalcert.results import ResultMixin

__all__ = ["convert", "Converted", "TARGETS", "VOTES_FORMAT"]

TARGETS = ("long", "eee", "py-irt")
#: raw MT-Bench human votes -> the weighted-vote key of paper 003, App. B (never detected:
#: auto-detection reads that layout as a pairwise log, one grader per annotator)
VOTES_FORMAT = "mtbench-human"


@dataclasses.dataclass(frozen=True)
class Converted(ResultMixin):
    """What :func:`convert` read and wrote.

    Attributes
    ----------
    format, kind : str
        The tool format read and its kind (results, decisions, comparisons).
    out, to : str
        The file written and its layout.
    rows : int
        Rows (records) written.
    read : str
        The reader's report (models, items, cells, missing and errored per model, skips).

    Examples
    --------
    >>> print(Converted("helm", "results", "out.csv", "long", 25, "read helm ...").summary())
    read helm ...
    wrote 25 rows (long) to out.csv
    """

    format: str
    kind: str
    out: str
    to: str
    rows: int
    read: str

    def summary(self) -> str:
        return f"{self.read}\nwrote {self.rows} rows ({self.to}) to {self.out}"


def convert(path: str | Path, out: str | Path, *, format: str = "auto", to: str = "long",
            **options: Any) -> Converted:
    """Read ``path`` (any tool format) and write it to ``out``.

    Parameters
    ----------
    path, out : path-like
    format : str
        A format of :data:`evalcert.io.detect.FORMATS` or ``auto``.
    to : {"long", "eee", "py-irt"}
        ``long``: CSV/Parquet table; ``eee``/``py-irt``: those JSONL layouts (results only).
    **options
        The reader's options (``metric``, ``filter``, ``stat``, ``epochs``, ...).

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "r.jsonl").write_text(json.dumps({"subject_id": "m", "responses": {"q": 0}}) + "\\n")
    >>> convert(folder / "r.jsonl", folder / "back.jsonl", to="py-irt").rows
    1
    """
    from evalcert.io.detect import (detect_format, kind_of, read_comparisons, read_judgments,
                                    read_results)

    path, out = Path(path), Path(out)
    if to not in TARGETS:
        raise InputError(f"--to {to}: use one of {', '.join(TARGETS)}")
    if format == VOTES_FORMAT:
        return _convert_votes(path, out, to, **options)
    if format == "auto":
        found = detect_format(path)
        if found is None:
            raise InputError(f"{path}: not a file of a known tool; pick --format")
        format = found
    kind = kind_of(format)
    if to != "long" and kind != "results":
        raise InputError(f"--to {to} writes per-item results; {format} holds {kind} "
                         "(write --to long)")
    if kind == "results":
        read = read_results(path, format, **options)
        if to == "long":
            frame = read.to_long()
            write_frame(frame, out, "the long table")
            rows = len(frame)
        elif to == "eee":
            from evalcert.io.eee import write_eee

            rows = write_eee(read.matrix, out)
        else:
            from evalcert.io.py_irt import write_py_irt

            rows = write_py_irt(read.matrix, out)
        text = read.summary()
    elif kind == "decisions":
        given = {k: v for k, v in options.items() if v is not None and v is not False}
        if given:
            raise InputError(f"{', '.join('--' + k.replace('_', '-') for k in given)} does not "
                             f"apply to {format} judge logs")
        frame, source = read_judgments(path, format)
        write_frame(frame, out, "the long table")
        rows = len(frame)
        text = (f"read {source['format']} from {path}: {source['rows']} rows, "
                f"{frame['grader'].nunique()} graders, {frame['item'].nunique()} items, "
                f"{rows} decisions; unparseable (missing) decisions: "
                f"{source['unparseable'] or 'none'}")
    else:
        frame = read_comparisons(path)
        frame = frame.to_frame() if hasattr(frame, "to_frame") else frame
        write_frame(frame, out, "the long table")
        rows = len(frame)
        text = f"read {format} from {path}: {rows} comparisons"
    return Converted(format=format, kind=kind, out=str(out), to=to, rows=int(rows), read=text)


def _convert_votes(path: Path, out: Path, to: str, *, key: Any = None, min_votes: Any = None,
                   turn: Any = None, **options: Any) -> Converted:
    """MT-Bench human votes -> the weighted-vote key in Table I's layout (App. B)."""
    from evalcert.io.mtbench_human import build_key, write_key

    given = {k: v for k, v in options.items() if v is not None and v is not False}
    if given:
        raise InputError(f"{', '.join('--' + k.replace('_', '-') for k in given)} does not "
                         f"apply to {VOTES_FORMAT} votes")
    if to != "long":
        raise InputError(f"--to {to}: {VOTES_FORMAT} votes become an answer-key table "
                         "(.csv/.parquet); drop --to")
    built, source = build_key(path, key, min_votes, turn)
    rows = write_key(built, out)
    skipped = (f"; {source['other_turns']} votes of other turns left out"
               if "other_turns" in source else "")
    text = (f"read {VOTES_FORMAT} from {path}: {source['rows']} rows, {source['votes']} "
            f"votes; unparseable winners: {source['unparseable'] or 'none'}"
            + ("; no turn column: every vote read as turn 1" if source["turn_absent"] else "")
            + skipped + "\n" + built.summary())
    return Converted(format=VOTES_FORMAT, kind="votes", out=str(out), to="key", rows=rows,
                     read=text)
