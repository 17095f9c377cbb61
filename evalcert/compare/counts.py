"""Pairwise outcomes aggregated to (pair, outcome) counts: the input of Bradley-Terry.

A battle log of N rows (``model_a, model_b, winner``) becomes one row per
unordered pair of models that met, with three counts: wins of the first model,
wins of the second, ties. Readers stream a file batch by batch through
:class:`CountsBuilder`, so memory grows with the number of pairs (~8,000 for
the Chatbot Arena), never with the number of battles; every later step (fits,
bootstrap refits) costs O(pairs).

Example
-------
>>> counts = PairwiseCounts.from_battles(["gpt", "llama", "gpt"], ["llama", "gpt", "mixtral"],
...                                      ["model_a", "tie", "model_b"])
>>> counts.models, counts.n_battles, counts.table().tolist()
(('gpt', 'llama', 'mixtral'), 3, [[1, 0, 1], [0, 1, 0]])
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

import numpy as np

from evalcert.errors import InputError
from evalcert.results import ResultMixin

__all__ = ["PairwiseCounts", "CountsBuilder", "OUTCOMES", "outcome_code"]

#: outcome codes: 0 = the first-named model wins, 1 = the second wins, 2 = tie
OUTCOMES = ("a", "b", "tie")
_WINNER_WORDS = {"model_a": 0, "a": 0, "model_b": 1, "b": 1, "tie": 2, "tie (bothbad)": 2,
                 "draw": 2, "tie(bothbad)": 2, "bothbad": 2}


def outcome_code(word: str) -> int:
    """The outcome code of a ``winner`` cell, or -1 when the word is not one evalcert knows.

    ``model_a``/``a`` -> 0, ``model_b``/``b`` -> 1, ``tie``, ``tie (bothbad)``, ``draw`` -> 2
    (case-insensitive).

    Examples
    --------
    >>> [outcome_code(w) for w in ("model_a", "B", "tie (bothbad)", "left")]
    [0, 1, 2, -1]
    """
    return _WINNER_WORDS.get(str(word).strip().lower(), -1)


@dataclasses.dataclass(frozen=True)
class PairwiseCounts(ResultMixin):
    """Outcome counts per unordered pair of models (``i < j`` in ``models``' order).

    Attributes
    ----------
    models : tuple of str
        Model names, in order of first appearance.
    i, j : numpy.ndarray
        int64 indices of the two models of each pair, ``i < j``.
    wins_i, wins_j, ties : numpy.ndarray
        int64 counts per pair.
    dropped : dict
        Rows read but not counted, by reason (e.g. ``self-battle``), so nothing is
        dropped silently.
    judges : tuple of str
        Judge names when the log was read with a judge column (else empty).
    judge : numpy.ndarray or None
        Judge index of each row; rows are then unique per (pair, judge) and a pair may
        repeat (:meth:`pooled` sums over judges).

    Examples
    --------
    >>> c = PairwiseCounts.from_battles(["a", "b"], ["b", "c"], ["tie", "model_b"])
    >>> c.n_models, c.n_pairs, c.per_model()["ties"].tolist()
    (3, 2, [1, 1, 0])
    """

    models: tuple[str, ...]
    i: np.ndarray = dataclasses.field(repr=False)
    j: np.ndarray = dataclasses.field(repr=False)
    wins_i: np.ndarray = dataclasses.field(repr=False)
    wins_j: np.ndarray = dataclasses.field(repr=False)
    ties: np.ndarray = dataclasses.field(repr=False)
    dropped: Mapping[str, int] = dataclasses.field(default_factory=dict)
    judges: tuple[str, ...] = ()
    judge: np.ndarray | None = dataclasses.field(default=None, repr=False)

    def pooled(self) -> "PairwiseCounts":
        """The counts summed over judges: one row per pair (``self`` when there are no judges).

        Examples
        --------
        >>> b = CountsBuilder()
        >>> b.add(b.codes(["x", "x"]), b.codes(["y", "y"]), np.array([0, 1]),
        ...       judge=b.judge_codes(["j1", "j2"]))
        >>> c = b.build()
        >>> c.judges, c.table().tolist(), c.pooled().table().tolist()
        (('j1', 'j2'), [[1, 0, 0], [0, 1, 0]], [[1, 1, 0]])
        """
        if self.judge is None:
            return self
        key = self.i * len(self.models) + self.j
        pairs, slot = np.unique(key, return_inverse=True)
        table = np.zeros((len(pairs), 3), dtype=np.int64)
        np.add.at(table, slot, self.table())
        K = len(self.models)
        return PairwiseCounts(self.models, (pairs // K).astype(np.int64),
                              (pairs % K).astype(np.int64), table[:, 0].copy(),
                              table[:, 1].copy(), table[:, 2].copy(), dict(self.dropped))

    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def n_pairs(self) -> int:
        return len(self.i)

    @property
    def n_battles(self) -> int:
        return int(self.wins_i.sum() + self.wins_j.sum() + self.ties.sum())

    def table(self) -> np.ndarray:
        """``(n_pairs, 3)`` int64 counts: wins of ``i``, wins of ``j``, ties."""
        return np.column_stack([self.wins_i, self.wins_j, self.ties])

    def per_model(self) -> dict[str, np.ndarray]:
        """Wins, losses and ties of every model (arrays aligned with ``models``)."""
        K = self.n_models
        wins = (np.bincount(self.i, self.wins_i, K) + np.bincount(self.j, self.wins_j, K))
        losses = (np.bincount(self.i, self.wins_j, K) + np.bincount(self.j, self.wins_i, K))
        ties = np.bincount(self.i, self.ties, K) + np.bincount(self.j, self.ties, K)
        return {"wins": wins.astype(np.int64), "losses": losses.astype(np.int64),
                "ties": ties.astype(np.int64)}

    def summary(self) -> str:
        dropped = ", ".join(f"{n} {why}" for why, n in self.dropped.items() if n)
        return (f"{self.n_battles} battles of {self.n_models} models on {self.n_pairs} pairs"
                + (f" ({dropped} not counted)" if dropped else ""))

    def to_dict(self) -> dict:
        return {"models": list(self.models), "n_battles": self.n_battles,
                "n_pairs": self.n_pairs, "dropped": dict(self.dropped)}

    @classmethod
    def from_battles(cls, model_a: Sequence[str], model_b: Sequence[str],
                     winner: Sequence[str]) -> "PairwiseCounts":
        """Aggregate a small in-memory battle log (names and ``winner`` words).

        Examples
        --------
        >>> c = PairwiseCounts.from_battles(["x", "y"], ["y", "x"], ["model_a", "model_a"])
        >>> c.table().tolist()
        [[1, 1, 0]]
        """
        if not (len(model_a) == len(model_b) == len(winner)):
            raise InputError(f"model_a, model_b and winner differ in length "
                             f"({len(model_a)}, {len(model_b)}, {len(winner)})")
        builder = CountsBuilder()
        codes = np.array([outcome_code(w) for w in winner], dtype=np.int64)
        if (codes < 0).any():
            bad = sorted({str(w) for w, c in zip(winner, codes) if c < 0})
            raise InputError(f"{int((codes < 0).sum())} winner values not understood "
                             f"(e.g. {bad[:3]}); use model_a, model_b, tie or tie (bothbad)")
        builder.add(builder.codes(model_a), builder.codes(model_b), codes)
        return builder.build()


class CountsBuilder:
    """Accumulate battles batch by batch into :class:`PairwiseCounts` in O(pairs) memory.

    ``codes(names)`` maps names to stable integer codes (first appearance);
    ``add(a, b, outcome, weight)`` adds a batch of coded battles; ``drop(reason, n)``
    records rows not counted; ``build()`` returns the counts.

    Examples
    --------
    >>> b = CountsBuilder()
    >>> b.add(b.codes(["m1", "m2"]), b.codes(["m2", "m1"]), np.array([0, 2]))
    >>> b.build().table().tolist()
    [[1, 0, 1]]
    """

    #: aggregated rows kept before the running table is compacted
    _COMPACT = 1 << 20
    #: largest dense (pair, outcome) table a batch is counted in
    _DENSE = 1 << 24

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.judge_index: dict[str, int] = {}
        self._judged = False
        self._keys: list[np.ndarray] = []
        self._weights: list[np.ndarray] = []
        self._pending = 0
        self.dropped: dict[str, int] = {}

    def codes(self, names: Sequence[str]) -> np.ndarray:
        """Integer codes of ``names`` (new names get the next codes)."""
        index = self.index
        return np.fromiter((index.setdefault(n, len(index)) for n in names), dtype=np.int64,
                           count=len(names))

    def judge_codes(self, names: Sequence[str]) -> np.ndarray:
        """Integer codes of judge names (new names get the next codes)."""
        index = self.judge_index
        return np.fromiter((index.setdefault(n, len(index)) for n in names), dtype=np.int64,
                           count=len(names))

    def drop(self, reason: str, n: int) -> None:
        if n:
            self.dropped[reason] = self.dropped.get(reason, 0) + int(n)

    def add(self, a: np.ndarray, b: np.ndarray, outcome: np.ndarray,
            weight: np.ndarray | None = None, judge: np.ndarray | None = None) -> None:
        """Add coded battles (with judge codes, if any); self-battles (``a == b``) are dropped
        and counted."""
        a, b, outcome = (np.asarray(x, dtype=np.int64) for x in (a, b, outcome))
        if judge is not None:
            self._judged = True
            judge = np.asarray(judge, dtype=np.int64)
        K = max(int(a.max()), int(b.max())) + 1 if len(a) else 0
        L = int(judge.max()) + 1 if judge is not None and len(judge) else 1
        if L * K * K * 4 <= self._DENSE:
            # count directed (judge, a, b, outcome) cells in one pass, O(battles), then fold
            # (b, a) onto (a, b) with the winner swapped on the small L x K x K x 4 table
            index = (a * K + b) * 4 + outcome
            if judge is not None:
                index += judge * (K * K * 4)
            D = np.bincount(index, weights=weight, minlength=L * K * K * 4).reshape(L, K, K, 4)
            diag = np.arange(K)
            self.drop("self-battle", int(round(float(D[:, diag, diag].sum()))))
            folded = D + D.transpose(0, 2, 1, 3)[..., [1, 0, 2, 3]]
            folded[:, np.tril_indices(K)[0], np.tril_indices(K)[1]] = 0
            flat = np.flatnonzero(folded)
            w = folded.ravel()[flat].astype(float)
            cell, out = np.divmod(flat, 4)
            jk, hi_ = np.divmod(cell, K)
            jj, lo_ = np.divmod(jk, K)
            keys = (jj << 44) | (lo_ << 23) | (hi_ << 2) | out
        else:
            if judge is None:
                judge = np.zeros(len(a), dtype=np.int64)
            same = a == b
            if same.any():
                self.drop("self-battle",
                          int(same.sum()) if weight is None else int(weight[same].sum()))
                keep = ~same
                a, b, outcome, judge = a[keep], b[keep], outcome[keep], judge[keep]
                weight = None if weight is None else weight[keep]
            swap = a > b
            lo, hi = np.where(swap, b, a), np.where(swap, a, b)
            outcome = np.where(swap & (outcome < 2), 1 - outcome, outcome)
            key = (judge << 44) | (lo << 23) | (hi << 2) | outcome   # 2^19 judges, 2^21 models
            keys, inverse = np.unique(key, return_inverse=True)
            w = np.bincount(inverse, weights=weight, minlength=len(keys))
        self._keys.append(keys)
        self._weights.append(w)
        self._pending += len(keys)
        if self._pending > self._COMPACT:
            self._compact()

    def _compact(self) -> None:
        if len(self._keys) > 1:
            keys, inverse = np.unique(np.concatenate(self._keys), return_inverse=True)
            self._keys = [keys]
            self._weights = [np.bincount(inverse, weights=np.concatenate(self._weights),
                                         minlength=len(keys))]
        self._pending = len(self._keys[0]) if self._keys else 0

    def build(self) -> PairwiseCounts:
        """The :class:`PairwiseCounts` of everything added."""
        if len(self.index) >= 1 << 21 or len(self.judge_index) >= 1 << 19:
            raise InputError(f"{len(self.index)} distinct models and {len(self.judge_index)} "
                             "judges; at most 2^21 models and 2^19 judges are supported")
        self._compact()
        models = tuple(self.index)
        if not self._keys or len(self._keys[0]) == 0:
            dropped = ", ".join(f"{n} {why}" for why, n in self.dropped.items())
            raise InputError("no battle between two different models to count"
                             + (f" ({dropped} rows not counted)" if dropped else "")
                             + "; the log needs rows with model_a != model_b and a winner")
        keys, w = self._keys[0], np.rint(self._weights[0]).astype(np.int64)
        pair_key = keys >> 2
        pairs, first = np.unique(pair_key, return_index=True)
        slot = np.searchsorted(pairs, pair_key)
        table = np.zeros((len(pairs), 3), dtype=np.int64)
        np.add.at(table, (slot, keys & 3), w)
        low21 = (1 << 21) - 1
        i, j = (pairs >> 21) & low21, pairs & low21
        judged = self._judged
        return PairwiseCounts(models, i.astype(np.int64), j.astype(np.int64),
                              table[:, 0].copy(), table[:, 1].copy(), table[:, 2].copy(),
                              dict(self.dropped), tuple(self.judge_index) if judged else (),
                              (pairs >> 42).astype(np.int64) if judged else None)
