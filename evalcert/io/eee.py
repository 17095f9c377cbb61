"""Every Eval Ever (EvalEval coalition) instance-level JSON Lines: read and write.

One record per (model, sample, metric): ``model_id``, ``evaluation_name``,
``evaluation_result_id`` (optional), ``sample_id``, ``evaluation{score, is_correct}``,
``error`` (optional). The matrix:

* model = ``model_id``; item = ``<evaluation_result_id or evaluation_name>|<sample_id>``;
* score = ``evaluation.score``; a record with ``error`` set or no score is a missing
  cell (counted per model, errored ones apart).

:func:`write_eee` writes a matrix back as records with the fields the schema requires
(``input.raw`` and ``input.reference`` empty, ``is_correct`` = score at the upper bound);
reading them back gives the same cells.

Example
-------
>>> import pathlib, tempfile
>>> from evalcert.data import ScoreMatrix
>>> S = ScoreMatrix.from_cells([0, 1], [0, 0], [1.0, 0.0], ["m1", "m2"], ["bench|q1"])
>>> path = pathlib.Path(tempfile.mkdtemp()) / "s.jsonl"
>>> write_eee(S, path)
2
>>> read_eee(path).matrix.cells()[2].tolist()
[1.0, 0.0]
"""

from __future__ import annotations

import json
from pathlib import Path

from evalcert.errors import InputError
from evalcert.io._json import iter_jsonl
from evalcert.io.outputs import writing
from evalcert.io.results import CellCollector, ResultsRead

__all__ = ["read_eee", "write_eee", "SCHEMA_VERSION"]

#: the instance-level schema version written by :func:`write_eee`
SCHEMA_VERSION = "0.3.0"


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(path.rglob("*.jsonl"))


def read_eee(path: str | Path, *, bounds: tuple[float, float] | None = None) -> ResultsRead:
    """Read Every Eval Ever instance-level JSONL (a file or a folder of ``*.jsonl``).

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.jsonl"
    >>> rec = {"model_id": "m", "evaluation_name": "b", "sample_id": "1",
    ...        "evaluation": {"score": 0.0, "is_correct": False}}
    >>> _ = p.write_text(json.dumps(rec) + "\\n")
    >>> read_eee(p).matrix.items
    ('b|1',)
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder; check the path")
    out = CellCollector(str(path), "eee")
    for f in _files(path):
        for number, rec in iter_jsonl(f):
            try:
                model, sample = str(rec["model_id"]), str(rec["sample_id"])
                bench = str(rec.get("evaluation_result_id") or rec["evaluation_name"])
            except (KeyError, TypeError):
                raise InputError(f"{f}: line {number} lacks model_id, sample_id or "
                                 "evaluation_name; is this Every Eval Ever instance-level "
                                 "data?") from None
            item = f"{bench}|{sample}"
            evaluation = rec.get("evaluation") or {}
            score = evaluation.get("score") if isinstance(evaluation, dict) else None
            if rec.get("error") or score is None:
                out.add_missing(model, item, errored=bool(rec.get("error")))
                continue
            if isinstance(score, bool) or not isinstance(score, (int, float)):
                raise InputError(f"{f}: line {number}: evaluation.score {score!r} is not a "
                                 "number")
            out.add(model, item, float(score))
    return out.finish(bounds)


def write_eee(matrix, path: str | Path, *, source: str = "evalcert") -> int:
    """Write ``matrix`` (a :class:`~evalcert.data.ScoreMatrix`) as instance-level JSONL.

    Items named ``<evaluation>|<sample>`` keep both parts; other names get the evaluation
    ``source``. Returns the number of records written.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> from evalcert.data import ScoreMatrix
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "out.jsonl"
    >>> write_eee(ScoreMatrix.from_cells([0], [0], [1.0], ["m"], ["b|7"]), p)
    1
    >>> json.loads(p.read_text())["sample_id"]
    '7'
    """
    rows, cols, scores = matrix.cells()
    high = matrix.bounds[1]
    n = 0
    with writing(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        for r, c, s in zip(rows.tolist(), cols.tolist(), scores.tolist()):
            model, item = matrix.agents[r], matrix.items[c]
            bench, bar, sample = item.partition("|")
            if not bar:
                bench, sample = source, item
            record = {"schema_version": SCHEMA_VERSION,
                      "evaluation_id": f"{source}/{model}", "model_id": model,
                      "evaluation_name": bench, "sample_id": sample,
                      "interaction_type": "single_turn",
                      "input": {"raw": "", "reference": []}, "answer_attribution": [],
                      "evaluation": {"score": s, "is_correct": bool(s >= high)}}
            fh.write(json.dumps(record) + "\n")
            n += 1
    return n
