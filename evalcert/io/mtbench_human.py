"""MT-Bench human judgments (Hugging Face ``lmsys/mt_bench_human_judgments``, split
``human``, CC-BY-4.0), read as votes for the weighted-vote key of paper 003, App. B.

The layout: one row per vote with ``question_id, model_a, model_b, winner, judge,
conversation_a, conversation_b, turn``; ``winner`` is ``model_a``, ``model_b`` or
``tie`` (also ``tie (bothbad)``), ``judge`` names the annotator (``expert_0`` ...,
``author_2`` ...). The conversations are not needed and not read (Parquet: the six
columns only). Files: Parquet (the dataset's own), JSON Lines, a JSON array of records
(FastChat's ``human_judgments.json``; a judge given as ``[model, prompt]`` is its model)
or CSV/TSV. A file without ``turn`` is read as turn 1, and says so.

A winner that is none of those words is counted under ``unparseable`` and the vote left
out, never guessed.

Example
-------
>>> import json, pathlib, tempfile
>>> p = pathlib.Path(tempfile.mkdtemp()) / "human.jsonl"
>>> rows = [{"question_id": 81, "model_a": "x", "model_b": "y", "winner": w, "judge": j,
...          "turn": 1, "conversation_a": [], "conversation_b": []}
...         for w, j in (("model_a", "expert_0"), ("tie (bothbad)", "author_1"))]
>>> _ = p.write_text("".join(json.dumps(r) + "\\n" for r in rows))
>>> votes, source = read_mtbench_human(p)
>>> votes["label"].tolist(), source["rows"]
(['a', 'tie'], 2)
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Sequence

from evalcert.errors import InputError
from evalcert.io.tables import check_file, read_table, table_format

__all__ = ["COLUMNS", "read_mtbench_human", "build_key", "write_key", "parse_panels",
           "parse_min_votes"]

#: the columns read (``turn`` may be absent)
COLUMNS = ("question_id", "model_a", "model_b", "winner", "judge", "turn")
_WINNERS = {"model_a": "a", "model_b": "b", "tie": "tie", "tie (bothbad)": "tie",
            "tie(bothbad)": "tie", "tie_bothbad": "tie"}
_MAX_VOTES = 50_000_000


def _judge(value: Any) -> str:
    if isinstance(value, (list, tuple)) and value:
        return str(value[0])
    return "" if value is None else str(value)


def _records(path: Path) -> list[dict]:
    from evalcert.io._json import iter_jsonl, read_json

    if table_format(path) == "jsonl":
        return [rec for _, rec in iter_jsonl(path)]
    data = read_json(path)
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise InputError(f"{path}: MT-Bench human judgments are a JSON array of records "
                         "(or JSON Lines, Parquet, CSV)")
    return data


def _frame(path: Path) -> Any:
    import pandas as pd

    fmt = table_format(path)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            names = pq.read_schema(path).names
            meta = pq.read_metadata(path)
        except Exception as exc:  # corrupt or not Parquet
            raise InputError(f"{path}: not a readable Parquet file ({exc})") from None
        if meta.num_rows > _MAX_VOTES:
            raise InputError(f"{path}: {meta.num_rows:,} rows; at most {_MAX_VOTES:,} votes "
                             "are read (split the file)")
        cols = [c for c in COLUMNS if c in names]
        frame = pq.read_table(path, columns=cols).to_pandas()
        if "judge" in frame.columns:
            frame["judge"] = frame["judge"].map(_judge)
        return frame
    if fmt in ("jsonl", "json"):
        from evalcert.io.tables import _require_read_memory

        _require_read_memory(path)             # refused before parsing when it cannot fit
        recs = _records(path)
        if len(recs) > _MAX_VOTES:
            raise InputError(f"{path}: {len(recs):,} records; at most {_MAX_VOTES:,} votes")
        keys = set().union(*(r.keys() for r in recs)) if recs else set()
        cols = [c for c in COLUMNS if c in keys]
        return pd.DataFrame([[(_judge(r.get(c)) if c == "judge" else r.get(c)) for c in cols]
                             for r in recs], columns=cols)
    return read_table(path)


def read_mtbench_human(path: str | Path) -> tuple[Any, dict[str, Any]]:
    """Read the votes: a frame ``question_id, model_a, model_b, turn, judge, label``
    (strings; label ``a``, ``b`` or ``tie``) and what was read (rows, unparseable winners
    by value, whether ``turn`` was absent).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "h.csv"
    >>> _ = p.write_text("question_id,model_a,model_b,winner,judge\\n1,x,y,model_b,expert_0\\n"
    ...                  "1,x,y,bad,expert_1\\n")
    >>> votes, source = read_mtbench_human(p)
    >>> votes.values.tolist(), source["unparseable"], source["turn_absent"]
    ([['1', 'x', 'y', '1', 'expert_0', 'b']], {'bad': 1}, True)
    """
    path = Path(path)
    check_file(path)
    frame = _frame(path)
    missing = [c for c in COLUMNS[:5] if c not in frame.columns]
    if missing:
        raise InputError(f"{path}: MT-Bench human judgments need columns {list(COLUMNS)} "
                         f"(turn optional); missing {missing}, found {list(frame.columns)[:8]}")
    turn_absent = "turn" not in frame.columns
    out = (frame.assign(turn="1") if turn_absent else frame)[list(COLUMNS)].copy()
    for c in out.columns:
        out[c] = out[c].map(lambda v: "" if v is None else str(v).strip())
    empty = (out[["question_id", "model_a", "model_b", "judge"]] == "").any(axis=1)
    if empty.any():
        first = int(empty.to_numpy().nonzero()[0][0]) + 1
        raise InputError(f"{path}: {int(empty.sum())} rows lack a question_id, model or "
                         f"judge (first: row {first}); fix or remove them")
    label = out["winner"].str.lower().map(_WINNERS)
    bad = label.isna()
    unparseable = dict(Counter(out.loc[bad, "winner"]))
    votes = out.assign(label=label)[~bad][["question_id", "model_a", "model_b", "turn",
                                            "judge", "label"]].reset_index(drop=True)
    return votes, {"path": str(path), "format": "mtbench-human", "rows": len(out),
                   "votes": len(votes), "unparseable": unparseable,
                   "turn_absent": turn_absent}


def parse_panels(text: str | Sequence[str] | None) -> dict[str, str]:
    """``"experts,authors"`` or ``"experts,gpt4=gpt4"`` -> ``{panel: judge prefix}``.

    Examples
    --------
    >>> parse_panels("experts,gpt=gpt4_pair")
    {'experts': 'expert', 'gpt': 'gpt4_pair'}
    """
    from evalcert.logic.keys import PANELS

    parts = text.split(",") if isinstance(text, str) else list(text or PANELS)
    out: dict[str, str] = {}
    for part in (p.strip() for p in parts):
        name, eq, prefix = part.partition("=")
        name, prefix = name.strip(), prefix.strip()
        if eq and not (name and prefix):
            raise InputError(f"--key entry {part!r}: write NAME or NAME=JUDGE_PREFIX")
        if not eq:
            if name not in PANELS:
                raise InputError(f"--key {name!r}: one of {list(PANELS)}, or NAME=JUDGE_PREFIX "
                                 "(e.g. gpt4=gpt4)")
            prefix = PANELS[name]
        if name in out:
            raise InputError(f"--key names {name!r} twice")
        out[name] = prefix
    return out


def parse_min_votes(text: str | Mapping[str, int] | None) -> dict[str, int] | None:
    """``"experts=2,authors=1"`` -> ``{"experts": 2, "authors": 1}``.

    Examples
    --------
    >>> parse_min_votes("experts=3")
    {'experts': 3}
    """
    if text is None or isinstance(text, Mapping):
        return None if text is None else dict(text)
    out = {}
    for part in text.split(","):
        name, eq, n = part.partition("=")
        if not eq or not n.strip().isdigit():
            raise InputError(f"--min-votes entry {part!r}: write PANEL=N, e.g. experts=2")
        out[name.strip()] = int(n)
    return out


def build_key(path: str | Path, panels: str | Sequence[str] | None = None,
              min_votes: str | Mapping[str, int] | None = None,
              turn: str | int | None = None) -> tuple[Any, dict[str, Any]]:
    """Read the votes of ``path`` and build the weighted-vote key of App. B
    (:func:`evalcert.logic.keys.weighted_vote_key`); ``turn`` keeps one turn.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "h.csv"
    >>> _ = p.write_text("question_id,model_a,model_b,winner,judge,turn\\n"
    ...                  "1,x,y,model_a,expert_0,1\\n1,x,y,tie,expert_1,1\\n")
    >>> key, source = build_key(p, "experts")
    >>> key.rows[0].grades
    ('a',)
    """
    from evalcert.logic.keys import weighted_vote_key

    votes, source = read_mtbench_human(path)
    if turn is not None:
        keep = votes["turn"] == str(turn).strip()
        source["other_turns"] = int((~keep).sum())
        votes = votes[keep]
        if votes.empty:
            raise InputError(f"{path}: no votes of turn {turn}")
    chosen = parse_panels(panels)
    key = weighted_vote_key(votes, chosen, parse_min_votes(min_votes))
    if not len(key):
        from evalcert.results import list_names

        raise InputError(f"{path}: no votes of the panels "
                         + ", ".join(f"{k} ({v}*)" for k, v in chosen.items())
                         + f"; its judges are {list_names(sorted(key.votes_other))} "
                         "(name a panel with --key NAME=JUDGE_PREFIX)")
    return key, source


def write_key(key: Any, out: str | Path) -> int:
    """Write the key in Table I's layout with an ``item`` column named like the pairwise
    reader's (``question_id|model_a|model_b|turn``), CSV or Parquet by the suffix; the
    audit reads it as a wide table (``--graders experts,authors``). Returns the rows.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from evalcert.logic.keys import weighted_vote_key
    >>> key = weighted_vote_key([("1", "x", "y", "1", "expert_0", "b"),
    ...                          ("1", "x", "y", "1", "expert_1", "b")], ["experts"])
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "key.csv"
    >>> write_key(key, out), out.read_text().splitlines()
    (1, ['item,question_id,model_a,model_b,turn,experts', '1|x|y|1,1,x,y,1,b'])
    """
    from evalcert.io.decisions import comparison_items
    from evalcert.io.outputs import write_frame

    frame = key.to_frame()
    frame.insert(0, "item", comparison_items(frame))
    write_frame(frame, Path(out), "the key")
    return len(frame)
