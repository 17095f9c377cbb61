"""Sequence-aligned summaries (paper 003, App. E): the logic of single-question summaries
applied to runs of consecutive questions.

For a test of ``Q`` items in a fixed order, the ``Q - S + 1`` windows of ``S`` consecutive
items become the new items, and a grader's ``S`` labels in a window become one of ``R^S``
labels (``"a|b"`` for ``S = 2``). Every alarm then applies unchanged: the answer key is the
key of the windows, and a grader's accuracy on the label ``"a|b"`` is how often it got both
items of an ``(a, b)`` window right.
"""

from __future__ import annotations

import itertools

import numpy as np

from evalcert.errors import InputError
from evalcert.logic.summaries import Decisions

__all__ = ["sequence_aligned", "MAX_SEQUENCE_LABELS"]

#: most labels ``R^S`` a sequence-aligned summary may have
MAX_SEQUENCE_LABELS = 64


def sequence_aligned(decisions: Decisions, size: int = 2) -> Decisions:
    """Windows of ``size`` consecutive items (in the decisions' item order) as new items with
    ``R^size`` labels; a window with a skipped decision is skipped (``-1``) for that grader.

    Examples
    --------
    >>> from evalcert.logic import decisions_from_frame
    >>> import pandas as pd
    >>> d = decisions_from_frame(pd.DataFrame({"item": [1, 2, 3], "grader": "x",
    ...                                        "label": ["a", "b", "b"]}), labels="a,b")
    >>> s = sequence_aligned(d)
    >>> s.items, s.labels, s.codes
    (('1|2', '2|3'), ('a|a', 'a|b', 'b|a', 'b|b'), ((1,), (3,)))
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise InputError(f"sequence size {size!r}; give an integer >= 1")
    r, q = len(decisions.labels), len(decisions.items)
    if size > q:
        raise InputError(f"sequence size {size} exceeds the {q} items")
    if r ** size > MAX_SEQUENCE_LABELS:
        raise InputError(f"R^S = {r}^{size} = {r ** size} sequence labels (limit "
                         f"{MAX_SEQUENCE_LABELS}); use a shorter sequence or fewer labels")
    if size == 1:
        return decisions
    arr = decisions.array
    n_win = q - size + 1
    codes = np.zeros((n_win, arr.shape[1]), dtype=np.int64)
    skipped = np.zeros_like(codes, dtype=bool)
    for s in range(size):
        part = arr[s:s + n_win]
        codes = codes * r + np.maximum(part, 0)
        skipped |= part < 0
    codes[skipped] = -1
    items = tuple("|".join(decisions.items[k:k + size]) for k in range(n_win))
    labels = tuple("|".join(t) for t in itertools.product(decisions.labels, repeat=size))
    return Decisions(items, decisions.graders, labels, tuple(map(tuple, codes.tolist())),
                     decisions.report)
