"""An answer key from raw pairwise votes by weighted vote (paper 003, App. B, Table I).

App. B builds the ``experts`` and ``authors`` columns of Table I from the MT-Bench human
judgments: for each comparison (question, pair of models, turn), every vote of the panel
counts ``1`` for the model it picks, and a ``tie`` vote is split into two ``1/2`` votes,
one for each model. The comparison's grade is the model with more weight, and ``tie``
when the weights are equal ("two experts voting (model a, tie) is a preference for model
a"). Since a tie vote adds ``1/2`` to both sides, the grade is the sign of
``#a - #b``: tie votes never move it (only tie votes: a tie).

The paper allows comparisons "that had just grades by one author" for the authors panel,
which reads as: the experts panel needs at least two votes. That is
:data:`MIN_VOTES` (``experts`` 2, ``authors`` 1); a comparison with fewer votes of a
panel has no grade from that panel (``None``), counted in the result, never dropped
silently.

Votes of one comparison may come in either order of the two models (``model_a``,
``model_b`` swapped): every vote is turned to the comparison's orientation held by most
of its votes (ties between orientations: the models in sorted order), its ``a``/``b``
swapped when it was cast the other way. The result therefore does not depend on the
order of the votes (tested).

What the public layout gives of Table I: both columns row by row, once the 25 turn-1
comparisons are chosen; which 25 of the turn-1 comparisons the paper chose App. B does
not say, so
the row set is not reproducible from the layout (tests/logic/test_keys.py builds votes
that give Table I and checks the columns, the caption's (4, 14, 7) and authors'
(5, 10, 10)). The gpt4 column is one judge's verdict per comparison (the dataset's
``gpt4_pair`` split), not a weighted vote.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from evalcert.errors import InputError
from evalcert.results import ResultMixin, format_table, list_names

__all__ = ["VOTE_LABELS", "PANELS", "MIN_VOTES", "vote_weights", "weighted_vote",
           "panel_of", "Vote", "KeyRow", "VoteKey", "weighted_vote_key"]

#: the three grades of a pairwise comparison
VOTE_LABELS = ("a", "b", "tie")
#: Table I's panels and the judge-name prefix of each (``expert_0``, ``author_2``)
PANELS = {"experts": "expert", "authors": "author"}
#: fewest votes a panel needs for a grade (App. B: authors may grade with one vote)
MIN_VOTES = {"experts": 2, "authors": 1}
_HALF = Fraction(1, 2)
_SWAP = {"a": "b", "b": "a", "tie": "tie"}


def vote_weights(votes: Iterable[str]) -> tuple[Fraction, Fraction]:
    """App. B's weights ``(w_a, w_b)``: 1 to the model picked, 1/2 to each on a tie.

    Examples
    --------
    >>> vote_weights(["a", "tie"])
    (Fraction(3, 2), Fraction(1, 2))
    """
    w_a = w_b = Fraction(0)
    for v in votes:
        if v == "a":
            w_a += 1
        elif v == "b":
            w_b += 1
        elif v == "tie":
            w_a += _HALF
            w_b += _HALF
        else:
            raise InputError(f"vote {v!r}: a pairwise vote is one of {list(VOTE_LABELS)}")
    return w_a, w_b


def weighted_vote(votes: Iterable[str]) -> str:
    """The grade of one comparison: the heavier side, ``tie`` when the weights are equal.

    Examples
    --------
    >>> weighted_vote(["a", "tie"]), weighted_vote(["a", "b"]), weighted_vote(["tie"])
    ('a', 'tie', 'tie')
    """
    votes = list(votes)
    if not votes:
        raise InputError("a weighted vote needs at least one vote")
    w_a, w_b = vote_weights(votes)
    return "a" if w_a > w_b else "b" if w_b > w_a else "tie"


def panel_of(judge: str, panels: Mapping[str, str] = PANELS) -> str | None:
    """The panel whose judge-name prefix ``judge`` starts with (the first that matches).

    Examples
    --------
    >>> panel_of("expert_12"), panel_of("author_2"), panel_of("gpt4_pair")
    ('experts', 'authors', None)
    """
    for name, prefix in panels.items():
        if judge.startswith(prefix):
            return name
    return None


@dataclasses.dataclass(frozen=True)
class Vote:
    """One human vote of the public layout (``winner`` already read as a, b or tie).

    Examples
    --------
    >>> Vote("82", "gpt-4", "claude-v1", "1", "expert_0", "b").label
    'b'
    """

    question_id: str
    model_a: str
    model_b: str
    turn: str
    judge: str
    label: str


@dataclasses.dataclass(frozen=True)
class KeyRow:
    """One comparison of the key: its orientation and, per panel, the grade (None when the
    panel has fewer than its minimum votes), the exact weights and the number of votes.

    Examples
    --------
    >>> row = weighted_vote_key([("1", "x", "y", "1", "author_0", "tie")], ["authors"]).rows[0]
    >>> row.grades, row.weights, row.n_votes
    (('tie',), ((Fraction(1, 2), Fraction(1, 2)),), (1,))
    """

    question_id: str
    model_a: str
    model_b: str
    turn: str
    grades: tuple[str | None, ...]
    weights: tuple[tuple[Fraction, Fraction], ...]
    n_votes: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class VoteKey(ResultMixin):
    """The weighted-vote key of every comparison (App. B), one row per comparison with at
    least one vote of a panel, sorted by (turn, question, models).

    Attributes
    ----------
    panels : tuple of str
        The key's columns (``experts``, ``authors``).
    min_votes : tuple of int
        Fewest votes each panel needs for a grade.
    question_id, model_a, model_b, turn : ndarray of str, shape (C,)
        Each comparison, in the orientation held by most of its votes.
    counts : ndarray of int64, shape (C, P, 3)
        Per comparison and panel, the votes for ``a``, ``b`` and ``tie`` in that
        orientation; the weights are ``(n_a + n_tie/2, n_b + n_tie/2)``, exactly.
    codes : ndarray of int8, shape (C, P)
        The grade: 0 ``a``, 1 ``b``, 2 ``tie``, -1 none (fewer than the minimum votes).
    votes_used : tuple of int
        Votes of each panel counted.
    votes_other : dict
        Votes of judges in no panel, by judge (not used).
    flipped : int
        Panel votes cast with the models in the other order, swapped to the comparison's.

    Examples
    --------
    >>> votes = [Vote("82", "gpt-4", "claude-v1", "1", "expert_0", "b"),
    ...          Vote("82", "claude-v1", "gpt-4", "1", "expert_1", "tie"),
    ...          Vote("82", "gpt-4", "claude-v1", "1", "author_0", "a")]
    >>> key = weighted_vote_key(votes)
    >>> key.rows[0].grades, key.flipped
    (('b', 'a'), 1)
    """

    panels: tuple[str, ...]
    min_votes: tuple[int, ...]
    question_id: np.ndarray
    model_a: np.ndarray
    model_b: np.ndarray
    turn: np.ndarray
    counts: np.ndarray
    codes: np.ndarray
    votes_used: tuple[int, ...]
    votes_other: dict[str, int]
    flipped: int

    def __len__(self) -> int:
        return int(len(self.codes))

    @property
    def rows(self) -> tuple[KeyRow, ...]:
        """Every comparison as a :class:`KeyRow` (exact weights as Fractions)."""
        out = []
        for k in range(len(self)):
            c = self.counts[k].tolist()
            out.append(KeyRow(
                str(self.question_id[k]), str(self.model_a[k]), str(self.model_b[k]),
                str(self.turn[k]),
                tuple(None if g < 0 else VOTE_LABELS[g] for g in self.codes[k].tolist()),
                tuple((a + Fraction(t, 2), b + Fraction(t, 2)) for a, b, t in c),
                tuple(sum(x) for x in c)))
        return tuple(out)

    def graded(self, panel: str) -> int:
        """Comparisons the panel grades."""
        return int((self.codes[:, self.panels.index(panel)] >= 0).sum())

    def label_counts(self, panel: str) -> dict[str, int]:
        """``{a, b, tie: count}`` of the panel's grades (Table I's caption: 4, 14, 7)."""
        col = self.codes[:, self.panels.index(panel)]
        return {lab: int((col == k).sum()) for k, lab in enumerate(VOTE_LABELS)}

    def to_frame(self) -> Any:
        """Table I's layout: ``question_id, model_a, model_b, turn`` and one column per panel
        (empty where the panel has no grade)."""
        import pandas as pd

        names = np.array(VOTE_LABELS + ("",), dtype=object)
        cols = {"question_id": self.question_id, "model_a": self.model_a,
                "model_b": self.model_b, "turn": self.turn}
        cols.update({p: names[self.codes[:, k]] for k, p in enumerate(self.panels)})
        return pd.DataFrame(cols, dtype=str)

    def summary(self) -> str:
        rows = [[p, n, self.graded(p), len(self) - self.graded(p), m,
                 *self.label_counts(p).values()]
                for p, n, m in zip(self.panels, self.votes_used, self.min_votes)]
        complete = int((self.codes >= 0).all(axis=1).sum())
        text = (f"weighted-vote key (App. B): {len(self)} comparison"
                f"{'s' * (len(self) != 1)}, {complete} graded by every panel; "
                f"{self.flipped} panel vote{'s' * (self.flipped != 1)} cast with the models "
                "in the other order turned round\n"
                + format_table(rows, ["panel", "votes", "graded", "too few votes",
                                      "min votes", "a", "b", "tie"]))
        if self.votes_other:
            n = sum(self.votes_other.values())
            text += (f"\n{n} votes of judges in no panel not used: "
                     + list_names(sorted(self.votes_other)))
        return text


def _as_frame(votes: Any) -> Any:
    import pandas as pd

    names = [f.name for f in dataclasses.fields(Vote)]
    if hasattr(votes, "columns"):                     # a DataFrame with the Vote fields
        missing = [c for c in names if c not in votes.columns]
        if missing:
            raise InputError(f"votes need columns {names}; missing {missing}")
        return votes[names].astype(str).reset_index(drop=True)
    rows = [dataclasses.astuple(v) if isinstance(v, Vote) else tuple(v) for v in votes]
    if any(len(r) != len(names) for r in rows):
        raise InputError(f"each vote is ({', '.join(names)})")
    return pd.DataFrame(rows, columns=names, dtype=object).astype(str)


def _parse_min(min_votes: Mapping[str, int] | None, panels: Sequence[str]) -> tuple[int, ...]:
    given = dict(min_votes or {})
    unknown = sorted(set(given) - set(panels))
    if unknown:
        raise InputError(f"min votes for {unknown}: not a panel of {list(panels)}")
    out = tuple(int(given.get(p, MIN_VOTES.get(p, 1))) for p in panels)
    if min(out, default=1) < 1:
        raise InputError(f"min votes {dict(zip(panels, out))}: each panel needs >= 1 vote")
    return out


def _natural_rank(values: Any) -> np.ndarray:
    """Rank of each distinct value, numbers first and as numbers (question 82 before 105),
    then text."""
    text = np.asarray(values, dtype=str)
    digits = np.char.isdigit(text) & (np.char.str_len(text) <= 18)
    num = np.where(digits, text, "0").astype(np.int64)
    rank = np.empty(len(text), dtype=np.int64)
    rank[np.lexsort((text, num, ~digits))] = np.arange(len(text))
    return rank


def weighted_vote_key(votes: Any, panels: Mapping[str, str] | Sequence[str] = PANELS,
                      min_votes: Mapping[str, int] | None = None) -> VoteKey:
    """Build the weighted-vote key of App. B, one grade per (comparison, panel).

    Vectorised over the votes: each (comparison, panel) keeps its counts of ``a``, ``b`` and
    ``tie`` votes, whose weights ``(n_a + n_tie/2, n_b + n_tie/2)`` compare exactly as
    ``n_a`` against ``n_b`` (tested against :func:`weighted_vote`, which adds Fractions).

    Parameters
    ----------
    votes : iterable of Vote (or of 6-tuples in its field order) or a DataFrame with the
        columns ``question_id, model_a, model_b, turn, judge, label``
    panels : {name: judge-name prefix}, or names of :data:`PANELS`
    min_votes : {panel: fewest votes for a grade}; default :data:`MIN_VOTES` (else 1)

    Examples
    --------
    Two experts voting (model a, tie) prefer model a; one author's tie is a tie:

    >>> votes = [("91", "x", "y", "1", "expert_0", "a"), ("91", "x", "y", "1", "expert_3", "tie"),
    ...          ("91", "x", "y", "1", "author_1", "tie")]
    >>> key = weighted_vote_key(votes)
    >>> key.panels, key.rows[0].grades, key.rows[0].weights[0]
    (('experts', 'authors'), ('a', 'tie'), (Fraction(3, 2), Fraction(1, 2)))
    """
    if not isinstance(panels, Mapping):
        unknown = [p for p in panels if p not in PANELS]
        if unknown:
            raise InputError(f"panels {unknown}: give NAME=PREFIX for panels other than "
                             f"{list(PANELS)}")
        panels = {p: PANELS[p] for p in panels}
    if not panels:
        raise InputError("give at least one panel (e.g. experts)")
    names = tuple(panels)
    mins = _parse_min(min_votes, names)
    import pandas as pd

    v = _as_frame(votes)
    n = len(v)
    lab = v["label"]
    is_a, is_b = (lab == "a").to_numpy(bool), (lab == "b").to_numpy(bool)
    bad = ~(is_a | is_b | (lab == "tie").to_numpy(bool))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise InputError(f"vote {lab[k]!r} of {v['judge'][k]} on question "
                         f"{v['question_id'][k]}: one of {list(VOTE_LABELS)} "
                         f"({int(bad.sum())} such votes)")
    # integer codes for every name; models in sorted order, so codes compare like names
    mcode, models = pd.factorize(np.concatenate([v["model_a"].to_numpy(object),
                                                 v["model_b"].to_numpy(object)]), sort=True)
    ca, cb = mcode[:n], mcode[n:]
    if (ca == cb).any():
        k = int(np.flatnonzero(ca == cb)[0])
        raise InputError(f"question {v['question_id'][k]}: {models[ca[k]]} against itself is "
                         "not a comparison")
    qcode, questions = pd.factorize(v["question_id"])
    tcode, turns = pd.factorize(v["turn"])
    jcode, judges = pd.factorize(v["judge"])
    # panel of each judge (the first prefix that matches), one test per distinct judge
    found = [panel_of(str(j), panels) for j in judges]
    jpanel = np.array([-1 if f is None else names.index(f) for f in found], dtype=np.int64)
    panel = jpanel[jcode]
    sorted_ab = ca < cb
    lo, hi = np.minimum(ca, cb), np.maximum(ca, cb)
    group = pd.DataFrame({"t": tcode, "q": qcode, "lo": lo, "hi": hi}).groupby(
        ["t", "q", "lo", "hi"], sort=False).ngroup().to_numpy()
    n_groups = int(group.max()) + 1 if n else 0
    # orientation held by most votes of the comparison (all judges); equal: sorted order
    n_sorted = np.bincount(group, weights=sorted_ab, minlength=n_groups)
    keep_sorted = 2 * n_sorted >= np.bincount(group, minlength=n_groups)
    as_cast = sorted_ab == keep_sorted[group]          # the vote's order is the comparison's
    code = np.where(is_a, 0, np.where(is_b, 1, 2))
    code = np.where(as_cast | (code == 2), code, 1 - code)
    mine = panel >= 0
    counts = np.zeros((n_groups, len(names), 3), dtype=np.int64)
    np.add.at(counts, (group[mine], panel[mine], code[mine]), 1)
    total = counts.sum(axis=2)
    has = total.sum(axis=1) > 0
    counts, total = counts[has], total[has]
    codes = np.where(counts[:, :, 0] > counts[:, :, 1], 0,
                     np.where(counts[:, :, 1] > counts[:, :, 0], 1, 2)).astype(np.int8)
    codes[total < np.array(mins)[None, :]] = -1
    first = np.full(n_groups, -1, dtype=np.int64)
    first[group[::-1]] = np.arange(n)[::-1]            # a vote of each comparison
    first, ks = first[has], keep_sorted[has]
    a_side = np.where(ks, lo[first], hi[first])
    b_side = np.where(ks, hi[first], lo[first])
    q_rank, t_rank = _natural_rank(questions)[qcode[first]], _natural_rank(turns)[tcode[first]]
    order = np.lexsort((b_side, a_side, q_rank, t_rank))
    per_judge = np.bincount(jcode, minlength=len(judges))
    other = {str(judges[k]): int(per_judge[k]) for k in np.flatnonzero(jpanel < 0)}
    models = np.asarray(models, dtype=object)
    return VoteKey(names, mins, np.asarray(questions, dtype=object)[qcode[first]][order],
                   models[a_side][order], models[b_side][order],
                   np.asarray(turns, dtype=object)[tcode[first]][order],
                   counts[order], codes[order],
                   tuple(int(x) for x in np.bincount(panel[mine], minlength=len(names))),
                   dict(sorted(other.items())), int((mine & ~as_cast).sum()))
