"""py-irt's JSON Lines response format: read and write.

py-irt (Lalor et al.) reads one JSON object per subject: ``{"subject_id": ..., "responses":
{item_id: 0 or 1, ...}}``. The matrix: model = ``subject_id``, item = the response key,
score = the response; an item a subject did not answer is not a cell; a ``null`` response
is a missing cell (counted).

Example
-------
>>> import pathlib, tempfile
>>> path = pathlib.Path(tempfile.mkdtemp()) / "r.jsonl"
>>> _ = path.write_text('{"subject_id": "m1", "responses": {"q1": 1, "q2": 0}}\\n'
...                     '{"subject_id": "m2", "responses": {"q1": 0}}\\n')
>>> read = read_py_irt(path)
>>> read.matrix.shape, read.matrix.n_observed
((2, 2), 3)
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from evalcert.errors import InputError
from evalcert.io._json import iter_jsonl
from evalcert.io.outputs import writing
from evalcert.io.results import CellCollector, ResultsRead

__all__ = ["read_py_irt", "write_py_irt"]


def read_py_irt(path: str | Path, *, bounds: tuple[float, float] | None = None) -> ResultsRead:
    """Read a py-irt JSONL file.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.jsonl"
    >>> _ = p.write_text('{"subject_id": "m", "responses": {"q": null, "r": 1}}\\n')
    >>> read_py_irt(p).report.missing
    {'m': 1}
    """
    path = Path(path)
    out = CellCollector(str(path), "py-irt")
    for number, rec in iter_jsonl(path):
        if not isinstance(rec, dict) or "subject_id" not in rec or \
                not isinstance(rec.get("responses"), dict):
            raise InputError(f"{path}: line {number} is not {{\"subject_id\", \"responses\": "
                             "{item: 0/1}}; is this a py-irt file?")
        model = str(rec["subject_id"])
        for item, value in rec["responses"].items():
            if value is None:
                out.add_missing(model, str(item))
            elif isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InputError(f"{path}: line {number}: response {value!r} of {item} is not "
                                 "a number (py-irt reads 0/1)")
            else:
                out.add(model, str(item), float(value))
    return out.finish(bounds)


def write_py_irt(matrix, path: str | Path) -> int:
    """Write ``matrix`` as py-irt JSONL (one line per model); scores must be 0/1.

    Returns the number of lines written.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from evalcert.data import ScoreMatrix
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.jsonl"
    >>> write_py_irt(ScoreMatrix.from_cells([0, 0], [0, 1], [1.0, 0.0], ["m"], ["q", "r"]), p)
    1
    >>> p.read_text()
    '{"subject_id": "m", "responses": {"q": 1, "r": 0}}\\n'
    """
    rows, cols, scores = matrix.cells()
    bad = ~np.isin(scores, (0.0, 1.0))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise InputError(f"py-irt reads 0/1 responses; ({matrix.agents[rows[k]]}, "
                         f"{matrix.items[cols[k]]}) = {scores[k]} ({int(bad.sum())} such "
                         "cells); threshold the scores or write --to long")
    starts = np.searchsorted(rows, np.arange(matrix.n_agents + 1))
    with writing(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        for k, model in enumerate(matrix.agents):
            span = slice(starts[k], starts[k + 1])
            responses = {matrix.items[c]: int(s) for c, s in
                         zip(cols[span].tolist(), scores[span].tolist())}
            fh.write(json.dumps({"subject_id": model, "responses": responses}) + "\n")
    return matrix.n_agents
