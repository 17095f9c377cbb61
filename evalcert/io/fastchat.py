"""FastChat ``llm_judge`` (MT-Bench) judgments as per-(grader, item) decisions for the audit.

* ``*_pair.jsonl`` rows ``question_id, model_1, model_2, g1_winner, g2_winner, judge:
  [model, prompt], turn``. FastChat asks the judge twice, with the answers in both orders,
  and maps both verdicts back to the models; each judge therefore gives two graders,
  ``<judge>/g1`` (model_1 shown first) and ``<judge>/g2`` (model_2 shown first), so that
  position bias is audited like any other disagreement. Item =
  ``<question_id>|<model_1>|<model_2>|<turn>``; label ``a`` (model_1 won), ``b``
  (model_2) or ``tie``; a verdict ``error`` (the judge's answer had no verdict) is a
  missing decision, counted under ``unparseable``.
* ``*_single.jsonl`` rows ``question_id, model, judge, score, turn``: grader = the judge
  model, item = ``<question_id>|<model>|<turn>``, label = the score 1-10; ``-1`` (no score
  parsed) is a missing decision, counted.

Both readers return ``(frame, source)``: the long table ``item, grader, label`` (strings)
and the facts for :func:`evalcert.logic.summaries.decisions_from_frame`'s report.

Example
-------
>>> import json, pathlib, tempfile
>>> p = pathlib.Path(tempfile.mkdtemp()) / "gpt-4_pair.jsonl"
>>> _ = p.write_text(json.dumps({"question_id": 81, "model_1": "x", "model_2": "y",
...     "g1_winner": "model_1", "g2_winner": "tie", "judge": ["gpt-4", "pair-v2"],
...     "turn": 1}) + "\\n")
>>> frame, source = read_fastchat_pair(p)
>>> frame.values.tolist()
[['81|x|y|1', 'gpt-4/g1', 'a'], ['81|x|y|1', 'gpt-4/g2', 'tie']]
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from evalcert.errors import InputError
from evalcert.io._json import iter_jsonl

__all__ = ["read_fastchat_pair", "read_fastchat_single", "PAIR_WINNERS"]

#: FastChat's verdicts and the label each is; ``error`` (and anything else) is missing
PAIR_WINNERS = {"model_1": "a", "model_2": "b", "tie": "tie"}


def _files(path: Path, suffix: str) -> list[Path]:
    if not path.exists():
        raise InputError(f"{path}: no such file or folder; check the path")
    if path.is_file():
        return [path]
    found = sorted(path.rglob(f"*{suffix}"))
    if not found:
        raise InputError(f"{path}: no FastChat judgment files *{suffix} here")
    return found


def _judge(value, where: str) -> str:
    if isinstance(value, (list, tuple)) and value:
        return str(value[0])
    if isinstance(value, str) and value:
        return value
    raise InputError(f"{where}: judge {value!r} is not [model, prompt]")


def read_fastchat_pair(path: str | Path):
    """Read ``*_pair.jsonl`` (a file or a folder); return ``(frame, source)``.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "j_pair.jsonl"
    >>> _ = p.write_text(json.dumps({"question_id": 1, "model_1": "x", "model_2": "y",
    ...     "g1_winner": "error", "g2_winner": "model_2", "judge": ["gpt-4", "pair-v2"]}) + "\\n")
    >>> frame, source = read_fastchat_pair(p)
    >>> len(frame), source["unparseable"]
    (1, {'error': 1})
    """
    import pandas as pd

    path = Path(path)
    rows: list[tuple[str, str, str]] = []
    unparseable: Counter = Counter()
    n = 0
    for f in _files(path, "_pair.jsonl"):
        for number, rec in iter_jsonl(f):
            n += 1
            try:
                item = f"{rec['question_id']}|{rec['model_1']}|{rec['model_2']}|" \
                       f"{rec.get('turn', 1)}"
                judge = _judge(rec["judge"], f"{f}: line {number}")
                verdicts = (rec["g1_winner"], rec["g2_winner"])
            except (KeyError, TypeError):
                raise InputError(f"{f}: line {number} lacks question_id, model_1, model_2, "
                                 "g1_winner, g2_winner or judge; is this a FastChat "
                                 "*_pair.jsonl?") from None
            for order, verdict in zip(("g1", "g2"), verdicts):
                label = PAIR_WINNERS.get(str(verdict).strip().lower())
                if label is None:
                    unparseable[str(verdict)] += 1
                else:
                    rows.append((item, f"{judge}/{order}", label))
    frame = pd.DataFrame(rows, columns=["item", "grader", "label"], dtype=str)
    return frame, {"path": str(path), "format": "fastchat-pair", "rows": n,
                   "unparseable": dict(unparseable)}


def read_fastchat_single(path: str | Path):
    """Read ``*_single.jsonl`` (a file or a folder); return ``(frame, source)``.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "j_single.jsonl"
    >>> _ = p.write_text(json.dumps({"question_id": 1, "model": "x", "score": 7,
    ...                              "judge": ["gpt-4", "single-v1"], "turn": 1}) + "\\n")
    >>> read_fastchat_single(p)[0].values.tolist()
    [['1|x|1', 'gpt-4', '7']]
    """
    import pandas as pd

    path = Path(path)
    rows: list[tuple[str, str, str]] = []
    unparseable: Counter = Counter()
    n = 0
    for f in _files(path, "_single.jsonl"):
        for number, rec in iter_jsonl(f):
            n += 1
            try:
                item = f"{rec['question_id']}|{rec['model']}|{rec.get('turn', 1)}"
                judge = _judge(rec["judge"], f"{f}: line {number}")
                score = rec["score"]
            except (KeyError, TypeError):
                raise InputError(f"{f}: line {number} lacks question_id, model, judge or "
                                 "score; is this a FastChat *_single.jsonl?") from None
            if isinstance(score, bool) or not isinstance(score, (int, float)) or score < 0:
                unparseable[str(score)] += 1
                continue
            rows.append((item, judge, f"{score:g}"))
    frame = pd.DataFrame(rows, columns=["item", "grader", "label"], dtype=str)
    return frame, {"path": str(path), "format": "fastchat-single", "rows": n,
                   "unparseable": dict(unparseable)}
