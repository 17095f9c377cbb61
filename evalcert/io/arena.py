"""Reader of the Chatbot Arena battle log (``clean_battle_*.json`` and its Parquet form).

The Arena dump is one JSON array of about 1.8e6 battle records (2 GB), each with
``model_a, model_b, winner`` (``model_a``, ``model_b``, ``tie``, ``tie (bothbad)``) and
metadata (``judge``, ``turn``, ``anony``, ``language``, ``tstamp``, ``conv_metadata``,
...). :func:`read_arena` streams it element by element
(:func:`evalcert.io.pairwise.iter_json_array`, constant memory) and aggregates at once
to per-pair counts; the Parquet form (same columns) is read column-wise in batches.
Both end in :class:`~evalcert.compare.counts.PairwiseCounts` for :func:`evalcert.rank`.

Example
-------
>>> import json, pathlib, tempfile
>>> path = pathlib.Path(tempfile.mkdtemp()) / "clean_battle_20240814.json"
>>> _ = path.write_text(json.dumps([
...     {"model_a": "gpt-4", "model_b": "vicuna", "winner": "model_a", "anony": True,
...      "language": "English", "turn": 1, "judge": "u1", "conv_metadata": {"turns": 1}},
...     {"model_a": "vicuna", "model_b": "gpt-4", "winner": "tie (bothbad)", "anony": False,
...      "language": "German", "turn": 2, "judge": "u2"}]))
>>> read_arena(path).table().tolist()
[[1, 0, 1]]
>>> read_arena(path, anony_only=True).dropped
{'filtered out (anony=True)': 1}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalcert.compare.counts import PairwiseCounts

__all__ = ["read_arena"]


def read_arena(path: str | Path, *, anony_only: bool = False, language: str | None = None,
               **options: Any) -> PairwiseCounts:
    """Read a Chatbot Arena battle log (JSON array, JSON Lines or Parquet) into counts.

    Parameters
    ----------
    path : str or Path
        ``clean_battle_*.json`` (streamed in constant memory), ``.jsonl`` or ``.parquet``
        (file or folder).
    anony_only : bool
        Keep only anonymous battles (the leaderboard's default filter).
    language : str, optional
        Keep only battles in this language (e.g. ``"English"``).
    **options
        Passed to :func:`evalcert.io.pairwise.read_pairwise` (``where=`` more filters,
        ``batch_rows=``, column names).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import pandas as pd
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "battles.parquet"
    >>> pd.DataFrame({"model_a": ["a", "b"], "model_b": ["b", "a"],
    ...               "winner": ["model_b", "tie"]}).to_parquet(path)
    >>> read_arena(path).table().tolist()
    [[0, 1, 1]]
    """
    from evalcert.io.pairwise import read_pairwise

    where = dict(options.pop("where", None) or {})
    if anony_only:
        where["anony"] = True
    if language is not None:
        where["language"] = language
    return read_pairwise(path, where=where, **options)
