"""AlpacaEval ``annotations.json`` as per-(annotator, item) decisions for the audit.

``annotations.json`` is a JSON list of ``{instruction, generator_1, generator_2, annotator,
preference, ...}`` where ``preference`` is 1 (output_1 preferred) or 2 (output_2), 1.5 for
a tie, continuous in [1, 2] for weighted annotators, and null when the annotator gave no
usable answer. Grader = ``annotator``; item = ``<h>|<generator_1>|<generator_2>`` where
``<h>`` is the first 12 hex digits of the SHA-256 of the instruction text (UTF-8); label
``a`` (preference < 1.5), ``b`` (> 1.5) or ``tie`` (= 1.5); a null preference is a missing
decision, counted under ``unparseable``. Continuous preferences are thresholded at 1.5 and
counted in ``source["thresholded"]``.

Example
-------
>>> import json, pathlib, tempfile
>>> p = pathlib.Path(tempfile.mkdtemp()) / "annotations.json"
>>> _ = p.write_text(json.dumps([{"instruction": "Hi", "generator_1": "ref",
...     "generator_2": "m", "annotator": "gpt4", "preference": 2.0}]))
>>> frame, source = read_alpaca_eval(p)
>>> frame.values.tolist()
[['3639efcd08ab|ref|m', 'gpt4', 'b']]
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from pathlib import Path

from evalcert.errors import InputError
from evalcert.io._json import read_json

__all__ = ["read_alpaca_eval", "instruction_hash"]


def instruction_hash(text: str) -> str:
    """First 12 hex digits of SHA-256 of the instruction (UTF-8).

    Examples
    --------
    >>> instruction_hash("Hi")
    '3639efcd08ab'
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def read_alpaca_eval(path: str | Path):
    """Read ``annotations.json`` (a file, or a folder searched for them); ``(frame, source)``.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "annotations.json"
    >>> _ = p.write_text(json.dumps([{"instruction": "Hi", "generator_1": "a",
    ...     "generator_2": "b", "annotator": "x", "preference": 1.5}]))
    >>> read_alpaca_eval(p)[0]["label"].tolist()
    ['tie']
    """
    import pandas as pd

    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder; check the path")
    files = [path] if path.is_file() else sorted(path.rglob("annotations.json"))
    if not files:
        raise InputError(f"{path}: no AlpacaEval annotations.json here")
    rows: list[tuple[str, str, str]] = []
    unparseable: Counter = Counter()
    thresholded = n = 0
    for f in files:
        records = read_json(f)
        if not isinstance(records, list):
            raise InputError(f"{f}: expected a JSON list of annotations")
        for k, rec in enumerate(records, start=1):
            n += 1
            try:
                item = (f"{instruction_hash(str(rec['instruction']))}|{rec['generator_1']}|"
                        f"{rec['generator_2']}")
                grader, pref = str(rec["annotator"]), rec.get("preference")
            except (KeyError, TypeError):
                raise InputError(f"{f}: record {k} lacks instruction, generator_1, "
                                 "generator_2 or annotator; is this AlpacaEval's "
                                 "annotations.json?") from None
            if isinstance(pref, bool) or not isinstance(pref, (int, float)) or \
                    not math.isfinite(pref) or not 1 <= pref <= 2:
                unparseable[str(pref)] += 1
                continue
            if pref not in (1, 1.5, 2):
                thresholded += 1
            rows.append((item, grader, "a" if pref < 1.5 else "b" if pref > 1.5 else "tie"))
    frame = pd.DataFrame(rows, columns=["item", "grader", "label"], dtype=str)
    return frame, {"path": str(path), "format": "alpaca-eval", "rows": n,
                   "unparseable": dict(unparseable), "thresholded": thresholded}
