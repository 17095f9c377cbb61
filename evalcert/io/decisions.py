"""Readers of judge logs for the audit: long, wide and pairwise tables, and label counts.

Every table goes through :func:`evalcert.io.tables.read_table` (CSV, TSV, Parquet, JSON Lines,
JSON list of records), so broken files are refused the same way everywhere. Formats:

* ``long`` -- one row per decision: ``item, grader, label`` (other names through
  ``item_col``/``grader_col``/``label_col``);
* ``wide`` -- ``item`` plus one column per grader; an empty cell is a skipped decision;
* ``pairwise`` -- MT-Bench / Chatbot-Arena judgments ``question_id, model_a, model_b,
  winner, judge`` (optional ``turn``). The item is the comparison
  ``question_id|model_a|model_b[|turn]`` (question ids repeat across pairs; a ``|`` or
  ``\\`` inside a part is written ``\\|`` or ``\\\\``, so distinct comparisons keep
  distinct names), the grader is
  the judge, and ``winner`` maps to ``a``, ``b`` or ``tie`` (``model_a``, ``model_b``,
  ``tie``, ``tie (bothbad)``, ...). Any other winner is counted as unparseable and treated
  as a skipped decision, never guessed.

Label-count summaries are JSON objects ``{grader: {label: count}}`` (or
``{"labels": [...], "counts": {...}}``), read with duplicate keys refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from evalcert.errors import InputError
from evalcert.logic.summaries import (Decisions, LabelCounts, decisions_from_frame,
                                      label_counts)
from evalcert.io.tables import check_file, load_json, read_table, table_format

__all__ = ["FORMATS", "PAIRWISE_COLUMNS", "WINNERS", "parse_label_map", "read_decisions",
           "comparison_items",
           "read_label_counts", "load_audit_input"]

FORMATS = ("auto", "long", "wide", "pairwise", "fastchat-pair", "fastchat-single",
           "alpaca-eval")
#: the judge-log formats of the tools, read by evalcert.io (FastChat, AlpacaEval)
TOOL_FORMATS = FORMATS[4:]
PAIRWISE_COLUMNS = ("question_id", "model_a", "model_b", "winner", "judge")
#: pairwise ``winner`` values (lower case, stripped) and the label each means
WINNERS = {"model_a": "a", "a": "a", "model_b": "b", "b": "b", "tie": "tie",
           "tie (bothbad)": "tie", "tie(bothbad)": "tie", "tie_bothbad": "tie",
           "tie (inference)": "tie"}
PAIRWISE_LABELS = ("a", "b", "tie")


def parse_label_map(text: str | Mapping[str, str] | None) -> dict[str, str] | None:
    """``"0=tie,1=a"`` -> ``{"0": "tie", "1": "a"}`` (a mapping is returned as a dict).

    Examples
    --------
    >>> parse_label_map("0=tie, 1 = a")
    {'0': 'tie', '1': 'a'}
    """
    if text is None or isinstance(text, Mapping):
        return None if text is None else {str(k): str(v) for k, v in text.items()}
    out: dict[str, str] = {}
    for part in text.split(","):
        raw, eq, label = part.partition("=")
        if not eq or not raw.strip() or not label.strip():
            raise InputError(f"--label-map entry {part!r} is not RAW=LABEL; write e.g. "
                             "--label-map 0=tie,1=a")
        if raw.strip() in out:
            raise InputError(f"--label-map maps {raw.strip()!r} twice; map each value once")
        out[raw.strip()] = label.strip()
    return out


def _strict_json(path: Path) -> Any:
    def no_duplicates(pairs: list) -> dict:
        keys = [k for k, _ in pairs]
        dup = sorted({k for k in keys if keys.count(k) > 1})
        if dup:
            raise InputError(f"{path}: duplicate keys {dup[:5]} in one JSON object; each "
                             "grader and label once (a JSON reader would keep only the last)")
        return dict(pairs)

    check_file(Path(path))                     # not a FIFO or device: it could block forever
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read label-count JSON {path}: {exc}") from None
    return load_json(path, text, object_pairs_hook=no_duplicates)


def read_label_counts(path: str | Path, labels: Sequence[str] | str | None = None) -> LabelCounts:
    """Read a JSON summary: ``{grader: {label: count}}`` or
    ``{"labels": [...], "counts": {grader: {label: count}}}``; duplicate keys are refused.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "counts.json"
    >>> _ = path.write_text(json.dumps({"x": {"a": 2, "b": 1}, "y": {"a": 1, "b": 2}}))
    >>> read_label_counts(path).counts
    ((2, 1), (1, 2))
    """
    data = _strict_json(Path(path))
    if isinstance(data, dict) and "counts" in data:
        labels = labels if labels is not None else data.get("labels")
        data = data["counts"]
    if not isinstance(data, dict):
        raise InputError(f"{path}: label counts must be a JSON object {{grader: {{label: "
                         "count}}}; a list of records is a decision table (use .jsonl)")
    return label_counts(data, labels=labels)


def _detect(columns: Sequence[str], item_col: str, grader_col: str) -> str:
    if {"model_a", "model_b", "winner"} <= set(columns):
        return "pairwise"
    if grader_col in columns:
        return "long"
    if item_col in columns:
        return "wide"
    return "long"  # read_table names the missing columns


def _pairwise(path: Path, frame: Any, grader_col: str | None, label_col: str | None,
              label_map: Mapping[str, str] | None) -> tuple[Any, dict[str, int]]:
    judge, winner = grader_col or "judge", label_col or "winner"
    absent = [c for c in ("question_id", "model_a", "model_b", winner, judge)
              if c not in frame.columns]
    if absent:
        raise InputError(f"{path}: pairwise format needs columns {list(PAIRWISE_COLUMNS)} "
                         f"(optional turn); missing {absent}, found {list(frame.columns)[:8]}")
    item = comparison_items(frame)
    raw = frame[winner].str.strip()
    if label_map:
        raw = raw.map(lambda v: label_map.get(v, v))
    label = raw.map(lambda v: v if v in PAIRWISE_LABELS else WINNERS.get(v.lower()))
    bad = label.isna()
    unparseable = {str(k): int(v) for k, v in raw[bad].value_counts().items()}
    out = frame.assign(item=item, grader=frame[judge], label=label)[["item", "grader", "label"]]
    return out[~bad], unparseable


def comparison_items(frame: Any) -> Any:
    """The item name of each pairwise row: ``question_id|model_a|model_b[|turn]``.

    The parts are joined with ``|``, each with ``\\`` and ``|`` escaped first, so two
    different comparisons never get one name (``"q|1", "a", "b"`` vs ``"q", "1|a", "b"``).

    Examples
    --------
    >>> import pandas as pd
    >>> comparison_items(pd.DataFrame({"question_id": ["82"], "model_a": ["x|y"],
    ...                                "model_b": ["z"], "turn": ["1"]})).tolist()
    ['82|x\\\\|y|z|1']
    """
    parts = [frame["question_id"], frame["model_a"], frame["model_b"]]
    if "turn" in frame.columns:
        parts.append(frame["turn"])
    escaped = [p.astype(str).str.strip().str.replace("\\", "\\\\", regex=False)
               .str.replace("|", "\\|", regex=False) for p in parts]
    item = escaped[0]
    for p in escaped[1:]:
        item = item + "|" + p
    return item


def _same_fields(path: Path) -> None:
    """Refuse JSON records with different field sets (mixed formats in one file)."""
    records = load_json(path, path.read_text(encoding="utf-8"),
                        lines=table_format(path) == "jsonl")
    first = set(records[0])
    for k, rec in enumerate(records[1:], start=2):
        if set(rec) != first:
            raise InputError(f"{path}: record {k} has fields {sorted(rec)[:6]} but record 1 "
                             f"has {sorted(first)[:6]} (mixed formats?); give one table "
                             "layout per file")


def read_decisions(path: str | Path, labels: Sequence[str] | str | None = None,
                   on_missing: str = "error", graders: Sequence[str] | None = None, *,
                   format: str = "auto", item_col: str | None = None,
                   grader_col: str | None = None, label_col: str | None = None,
                   label_map: str | Mapping[str, str] | None = None) -> Decisions:
    """Read a judge log (CSV/TSV/Parquet/JSONL/JSON records) into :class:`Decisions`.

    Parameters
    ----------
    path : path-like
    labels, on_missing, graders :
        As in :func:`evalcert.logic.decisions_from_frame`; ``graders`` selects graders in
        every format (wide: the grader columns).
    format : {"auto", "long", "wide", "pairwise", "fastchat-pair", "fastchat-single", "alpaca-eval"}
        ``auto``: a FastChat or AlpacaEval judgment file (or folder) is detected by
        :func:`evalcert.io.detect.detect_format`; else pairwise if the columns include
        ``model_a, model_b, winner``; long if they include the grader column; wide if they
        include the item column.
    item_col, grader_col, label_col : str, optional
        Column names when they are not ``item``/``grader``/``label`` (pairwise:
        ``grader_col`` defaults to ``judge`` and ``label_col`` to ``winner``).
    label_map : ``"RAW=LABEL,..."`` or mapping, optional
        Rename raw labels (pairwise: raw winners) before validation, e.g. ``0=tie``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "j.jsonl"
    >>> _ = p.write_text('{"question_id": 1, "model_a": "x", "model_b": "y", '
    ...                  '"winner": "model_a", "judge": "gpt4"}\\n')
    >>> d = read_decisions(p, format="pairwise")
    >>> d.items, d.labels, d.codes
    (('1|x|y',), ('a', 'b', 'tie'), ((0,),))
    """
    path = Path(path)
    if format not in FORMATS:
        raise InputError(f"format={format!r}; use one of {FORMATS}")
    if format in TOOL_FORMATS or (format == "auto" and (path.is_dir() or path.suffix.lower()
                                                          in (".json", ".jsonl"))):
        from evalcert.io.detect import detect_format, read_judgments

        tool = format if format != "auto" else detect_format(path)
        if tool in TOOL_FORMATS:
            if item_col or grader_col or label_col:
                raise InputError(f"--item-col/--grader-col/--label-col do not apply to {tool} "
                                 "files: their columns are fixed")
            frame, source = read_judgments(path, tool)
            if labels is None and tool != "fastchat-single":
                labels = PAIRWISE_LABELS
            return decisions_from_frame(frame, labels=labels, on_missing=on_missing,
                                        graders=graders, label_map=parse_label_map(label_map),
                                        source=source)
        if tool is not None and tool != "arena":   # Arena battles: the pairwise layout below
            raise InputError(f"{path} holds {tool} data, not judge decisions; read it with "
                             "evalcert convert or the verb for results")
    frame = read_table(path)
    if table_format(path) in ("jsonl", "json"):
        _same_fields(path)
    fmt = _detect(list(frame.columns), item_col or "item", grader_col or "grader") \
        if format == "auto" else format
    lmap = parse_label_map(label_map)
    unparseable: dict[str, int] = {}
    if fmt == "pairwise":
        if item_col is not None:
            raise InputError("--item-col does not apply to the pairwise format: the item is "
                             "question_id|model_a|model_b[|turn]")
        long, unparseable = _pairwise(path, frame, grader_col, label_col, lmap)
        labels = labels if labels is not None else PAIRWISE_LABELS
        lmap = None
    elif fmt == "wide":
        icol = item_col or "item"
        if icol not in frame.columns:
            read_table(path, required=[icol])  # raises with the header-row hint
        cols = list(graders) if graders is not None else [c for c in frame.columns if c != icol]
        absent = [c for c in cols if c not in frame.columns]
        if absent or not cols:
            raise InputError(f"{path}: wide decision table lacks grader columns "
                             f"{absent or cols}; it has {list(frame.columns)[:10]}")
        blank = [c for c in cols if (frame[c].str.strip() == "").all()]
        if blank:
            raise InputError(f"{path}: graders {blank} decided none of the {len(frame)} items "
                             "(empty columns); drop them (--graders) or fix the file")
        if {"grader", "label"} <= set(cols):
            raise InputError(f"{path}: --format wide, but the columns {list(frame.columns)[:8]} "
                             "look like a long table (one row per decision: item, grader, "
                             "label); use --format long (or auto)")
        # melt into names no column can have, then rename: a grader column named
        # "label" or "grader" must not collide with them
        long = frame[[icol, *cols]].melt(id_vars=icol, value_vars=cols,
                                         var_name="\0grader", value_name="\0label")
        long = long.rename(columns={icol: "item", "\0grader": "grader", "\0label": "label"})
        long = long[long["label"].str.strip() != ""]  # an empty cell is a skipped decision
    else:
        names = {item_col or "item": "item", grader_col or "grader": "grader",
                 label_col or "label": "label"}
        absent = [c for c in names if c not in frame.columns]
        if absent:
            hint = (" (the first row looks like data: does the file lack a header row?)"
                    if len(absent) == len(names) else "")
            raise InputError(f"{path}: long format needs columns {list(names)}; missing "
                             f"{absent}, found {list(frame.columns)[:8]}{hint}; map names with "
                             "--item-col/--grader-col/--label-col or pick --format")
        long = frame.rename(columns=names)
    source = {"path": str(path), "format": f"{fmt} ({table_format(path)})", "rows": len(frame),
              "unparseable": unparseable}
    return decisions_from_frame(long, labels=labels, on_missing=on_missing, graders=graders,
                                label_map=lmap, source=source)


def load_audit_input(path: str | Path, labels: Sequence[str] | str | None = None,
                     on_missing: str = "error", graders: Sequence[str] | None = None,
                     **kwargs: Any) -> LabelCounts | Decisions:
    """A ``.json`` object is read as label counts (``graders`` selects among them); any
    other file (and a ``.json`` list of records) as decisions via :func:`read_decisions`.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "counts.json").write_text(json.dumps({"x": {"a": 2, "b": 1}}))
    >>> _ = (folder / "log.csv").write_text("item,grader,label\\nq1,x,a\\nq2,x,b\\n")
    >>> type(load_audit_input(folder / "counts.json")).__name__, type(load_audit_input(folder / "log.csv")).__name__
    ('LabelCounts', 'Decisions')
    """
    path = Path(path)
    if path.suffix.lower() == ".json" and path.is_file():
        data = _strict_json(path)
        if isinstance(data, dict):
            counts = read_label_counts(path, labels=labels)
            if kwargs.get("format", "auto") not in ("auto", None):
                raise InputError(f"{path} holds label counts, not a {kwargs['format']} table")
            if graders is None:
                return counts
            unknown = [g for g in graders if g not in counts.graders]
            if unknown:
                raise InputError(f"unknown graders {unknown}; the file has "
                                 f"{list(counts.graders)}")
            keep = [counts.graders.index(g) for g in graders]
            return LabelCounts(counts.labels, tuple(graders),
                               tuple(counts.counts[i] for i in keep))
    return read_decisions(path, labels=labels, on_missing=on_missing, graders=graders, **kwargs)
