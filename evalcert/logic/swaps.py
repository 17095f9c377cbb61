"""One comparison shown in both answer orders (issue 25, item 3).

MT-Bench and FastChat ask a judge about each pair of answers twice, once as A/B and once as
B/A. Read as a pairwise log, the two presentations are the items ``q|A|B`` and ``q|B|A``
(``question_id|model_a|model_b[|turn]``), where ``"a"`` means opposite answers. Here they
become **one** item (the models in sorted order) with **two** decisions from the same judge:
the graders ``<judge>/ab`` (the presentation in that order) and ``<judge>/ba`` (the swapped
one, its ``a``/``b`` flipped back so both mean the same answer). A judge's swap consistency
is the share of items seen in both orders on which its two decisions agree (position bias
shows as a low value).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from evalcert.errors import InputError
from evalcert.logic.summaries import Decisions
from evalcert.results import ResultMixin

__all__ = ["SwapMerge", "merge_swapped"]


@dataclasses.dataclass(frozen=True)
class SwapMerge(ResultMixin):
    """Decisions with each comparison's two presentations merged.

    Attributes
    ----------
    decisions : Decisions
        One item per comparison; graders ``<judge>/ab`` and ``<judge>/ba`` (``-1`` where
        the comparison was shown in one order only).
    swap_consistency : dict
        ``{judge: share of items seen in both orders judged the same}``.
    n_both : dict
        ``{judge: items it judged in both orders}``.
    items_before, items_after : int

    Examples
    --------
    >>> import pandas as pd
    >>> from evalcert.logic.summaries import decisions_from_frame
    >>> log = pd.DataFrame({"item": ["1|x|y", "1|y|x", "2|x|y", "2|y|x"], "grader": "gpt4",
    ...                     "label": ["a", "b", "a", "a"]})
    >>> merged = merge_swapped(decisions_from_frame(log, labels="a,b,tie"))
    >>> merged.decisions.items, merged.decisions.graders, merged.swap_consistency
    (('1|x|y', '2|x|y'), ('gpt4/ab', 'gpt4/ba'), {'gpt4': 0.5})
    """

    decisions: Decisions
    swap_consistency: dict[str, float]
    n_both: dict[str, int]
    items_before: int
    items_after: int

    def summary(self) -> str:
        rates = ", ".join(f"{g} {v:.1%} of {self.n_both[g]}"
                          for g, v in self.swap_consistency.items())
        return (f"swapped presentations merged: {self.items_before} items -> "
                f"{self.items_after} comparisons; swap consistency: {rates or '-'}")


def merge_swapped(decisions: Decisions) -> SwapMerge:
    """Merge the A/B and B/A presentations of each comparison (module docstring).

    Items must be named ``question_id|model_a|model_b[|turn]`` (the pairwise reader's
    names) and the labels must include ``a`` and ``b`` (other labels, e.g. ``tie``, mean the
    same in both orders).

    Examples
    --------
    >>> import pandas as pd
    >>> from evalcert.logic.summaries import decisions_from_frame
    >>> log = pd.DataFrame({"item": ["7|x|y", "7|y|x"], "grader": "judge",
    ...                     "label": ["a", "b"]})  # x wins in both orders
    >>> merged = merge_swapped(decisions_from_frame(log, labels="a,b,tie"))
    >>> merged.decisions.codes, merged.swap_consistency
    (((0, 0),), {'judge': 1.0})
    """
    parts = [item.split("|") for item in decisions.items]
    if not all(len(p) in (3, 4) for p in parts):
        bad = next(i for i, p in zip(decisions.items, parts) if len(p) not in (3, 4))
        raise InputError(f"--swapped needs pairwise items question_id|model_a|model_b[|turn] "
                         f"(e.g. from --format pairwise); item {bad!r} is not one")
    labels = decisions.labels
    if "a" not in labels or "b" not in labels:
        raise InputError(f"--swapped needs the labels a and b; got {list(labels)}")
    flip = np.arange(len(labels))
    flip[labels.index("a")], flip[labels.index("b")] = labels.index("b"), labels.index("a")
    canon, swapped = [], []
    for p in parts:
        first, second = sorted((p[1], p[2]))
        canon.append("|".join([p[0], first, second, *p[3:]]))
        swapped.append(p[1] != first)
    names = list(dict.fromkeys(canon))
    index = {name: k for k, name in enumerate(names)}
    arr = decisions.array
    n_g = len(decisions.graders)
    out = np.full((len(names), 2 * n_g), -1, dtype=np.int64)
    for k, (name, sw) in enumerate(zip(canon, swapped)):
        row = arr[k]
        cols = np.arange(n_g) * 2 + (1 if sw else 0)
        out[index[name], cols] = np.where(row >= 0, flip[np.maximum(row, 0)] if sw else row, -1)
    graders = tuple(f"{g}/{o}" for g in decisions.graders for o in ("ab", "ba"))
    consistency, both = {}, {}
    for i, g in enumerate(decisions.graders):
        ab, ba = out[:, 2 * i], out[:, 2 * i + 1]
        seen = (ab >= 0) & (ba >= 0)
        both[g] = int(seen.sum())
        if both[g]:
            consistency[g] = float((ab[seen] == ba[seen]).mean())
    merged = Decisions(tuple(names), graders, labels, tuple(map(tuple, out.tolist())),
                       decisions.report)
    return SwapMerge(merged, consistency, both, len(decisions.items), len(names))


def apply_on_missing(decisions: Decisions, on_missing: str) -> tuple[Decisions, int]:
    """After a merge: items shown in one order only have skipped decisions; ``"error"``
    refuses them, ``"drop"`` drops them (returns how many), ``"keep"`` keeps them."""
    arr = decisions.array
    partial = (arr < 0).any(axis=1)
    if not partial.any() or on_missing == "keep":
        return decisions, 0
    if on_missing == "error":
        raise InputError(f"{int(partial.sum())} comparisons were shown in one order only, so "
                         "their <judge>/ab or /ba decision is missing; use --on-missing drop "
                         "(drop them) or keep (--m full)")
    keep = ~partial
    codes: Any = tuple(map(tuple, arr[keep].tolist()))
    items = tuple(np.asarray(decisions.items, dtype=object)[keep].tolist())
    return Decisions(items, decisions.graders, decisions.labels, codes,
                     decisions.report), int(partial.sum())
