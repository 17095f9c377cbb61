"""An answer key from raw pairwise votes by weighted vote (paper 003, App. B, Table I).

App. B builds the ``experts`` and ``authors`` columns of Table I from the MT-Bench human
judgments: for each comparison (question, pair of models, turn), every vote of the panel
counts ``1`` for the model it picks, and a ``tie`` vote is split into two ``1/2`` votes,
one for each model. The comparison's grade is the model with more weight, and ``tie``
when the weights are equal ("two experts voting (model a, tie) is a preference for model
a"). Since a tie vote adds ``1/2`` to both sides, the grade is the sign of
``#a - #b``: tie votes never move it, and they decide nothing alone except a tie.

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
comparisons are chosen; which 25 of the 1,200 the paper chose App. B does not say, so
the row set is not reproducible from the layout (tests/logic/test_keys.py builds votes
that give Table I and checks the columns, the caption's (4, 14, 7) and authors'
(5, 10, 10)). The gpt4 column is one judge's verdict per comparison (the dataset's
``gpt4_pair`` split), not a weighted vote.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from fractions import Fraction
from typing import Any, Iterable, Mapping, Sequence

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
    """The weighted-vote key of every comparison (App. B).

    Attributes
    ----------
    panels : tuple of str
        The key's columns (``experts``, ``authors``).
    min_votes : tuple of int
        Fewest votes each panel needs for a grade.
    rows : tuple of KeyRow
        One per comparison with at least one vote of a panel, sorted by
        (turn, question, models).
    votes_used : tuple of int
        Votes of each panel counted.
    votes_other : dict
        Votes of judges in no panel, by judge (not used).
    flipped : int
        Votes cast with the models in the other order, swapped to the comparison's.

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
    rows: tuple[KeyRow, ...]
    votes_used: tuple[int, ...]
    votes_other: dict[str, int]
    flipped: int

    def graded(self, panel: str) -> int:
        """Comparisons the panel grades."""
        p = self.panels.index(panel)
        return sum(r.grades[p] is not None for r in self.rows)

    def label_counts(self, panel: str) -> dict[str, int]:
        """``{a, b, tie: count}`` of the panel's grades (Table I's caption: 4, 14, 7)."""
        p = self.panels.index(panel)
        got = Counter(r.grades[p] for r in self.rows if r.grades[p] is not None)
        return {lab: got.get(lab, 0) for lab in VOTE_LABELS}

    def to_frame(self) -> Any:
        """Table I's layout: ``question_id, model_a, model_b, turn`` and one column per panel
        (empty where the panel has no grade)."""
        import pandas as pd

        return pd.DataFrame(
            [(r.question_id, r.model_a, r.model_b, r.turn,
              *[g if g is not None else "" for g in r.grades]) for r in self.rows],
            columns=["question_id", "model_a", "model_b", "turn", *self.panels], dtype=str)

    def summary(self) -> str:
        rows = [[p, n, self.graded(p), len(self.rows) - self.graded(p), m,
                 *self.label_counts(p).values()]
                for p, n, m in zip(self.panels, self.votes_used, self.min_votes)]
        complete = sum(all(g is not None for g in r.grades) for r in self.rows)
        text = (f"weighted-vote key (App. B): {len(self.rows)} comparison"
                f"{'s' * (len(self.rows) != 1)}, {complete} graded by every panel; "
                f"{self.flipped} panel vote{'s' * (self.flipped != 1)} cast with the models "
                "in the other order turned round\n"
                + format_table(rows, ["panel", "votes", "graded", "too few votes",
                                      "min votes", "a", "b", "tie"]))
        if self.votes_other:
            n = sum(self.votes_other.values())
            text += (f"\n{n} votes of judges in no panel not used: "
                     + list_names(sorted(self.votes_other)))
        return text


def _as_votes(votes: Any) -> list[Vote]:
    if hasattr(votes, "itertuples"):                 # a DataFrame with the Vote fields
        names = [f.name for f in dataclasses.fields(Vote)]
        missing = [c for c in names if c not in votes.columns]
        if missing:
            raise InputError(f"votes need columns {names}; missing {missing}")
        return [Vote(*map(str, row)) for row in votes[names].itertuples(index=False)]
    return [v if isinstance(v, Vote) else Vote(*map(str, v)) for v in votes]


def _parse_min(min_votes: Mapping[str, int] | None, panels: Sequence[str]) -> tuple[int, ...]:
    given = dict(min_votes or {})
    unknown = sorted(set(given) - set(panels))
    if unknown:
        raise InputError(f"min votes for {unknown}: not a panel of {list(panels)}")
    out = tuple(int(given.get(p, MIN_VOTES.get(p, 1))) for p in panels)
    if min(out, default=1) < 1:
        raise InputError(f"min votes {dict(zip(panels, out))}: each panel needs >= 1 vote")
    return out


def weighted_vote_key(votes: Any, panels: Mapping[str, str] | Sequence[str] = PANELS,
                      min_votes: Mapping[str, int] | None = None) -> VoteKey:
    """Build the weighted-vote key of App. B, one grade per (comparison, panel).

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
    groups: dict[tuple[str, str, frozenset[str]], list[Vote]] = defaultdict(list)
    other: Counter = Counter()
    for v in _as_votes(votes):
        if v.label not in VOTE_LABELS:
            raise InputError(f"vote {v.label!r} of {v.judge} on question {v.question_id}: "
                             f"one of {list(VOTE_LABELS)}")
        if v.model_a == v.model_b:
            raise InputError(f"question {v.question_id}: {v.model_a} against itself is not "
                             "a comparison")
        groups[(v.turn, v.question_id, frozenset((v.model_a, v.model_b)))].append(v)
    rows, used, flipped = [], [0] * len(names), 0
    for (turn, qid, _), group in groups.items():
        order = Counter((v.model_a, v.model_b) for v in group)
        # most votes' orientation; between equals, the models in sorted order
        orient = max(order, key=lambda ab: (order[ab], ab[0] < ab[1]))
        by_panel: dict[str, list[str]] = defaultdict(list)
        for v in group:
            panel = panel_of(v.judge, panels)
            if panel is None:
                other[v.judge] += 1
                continue
            same = (v.model_a, v.model_b) == orient
            flipped += not same
            by_panel[panel].append(v.label if same else _SWAP[v.label])
        if not by_panel:
            continue
        grades, weights, counts = [], [], []
        for p, name in enumerate(names):
            got = by_panel.get(name, [])
            used[p] += len(got)
            weights.append(vote_weights(got))
            counts.append(len(got))
            grades.append(weighted_vote(got) if len(got) >= mins[p] else None)
        rows.append(KeyRow(qid, orient[0], orient[1], turn, tuple(grades), tuple(weights),
                           tuple(counts)))
    rows.sort(key=lambda r: (_natural(r.turn), _natural(r.question_id), r.model_a, r.model_b))
    return VoteKey(names, mins, tuple(rows), tuple(used), dict(sorted(other.items())),
                   flipped)


def _natural(text: str) -> tuple[int, int | str]:
    """Sort numbers as numbers (question 82 before 105), other text after them."""
    return (0, int(text)) if text.isdigit() else (1, text)
