"""TVD-MI scores from judge decisions (paper 000, App. B, Eq. 11).

For item ``j``, agent ``i`` and partner ``k != i``, a critic rates same-item
pairs (draws from P) and cross-item pairs (draws from Q); ``TPR_ikj`` and
``FPR_ikj`` are its mean verdicts on the P and the Q draws, and

    s_ij = mean_{k != i} (TPR_ikj - FPR_ikj)                      (Eq. 11)

over the partners with a valid term. Failed critic calls are missing: they
are dropped from the means, counted and reported; a term with no valid P or
no valid Q draw is missing, and a cell with no valid term is unobserved.

Holdout before scoring: a held-out ``(agent, item)`` cell contributes to no
training score. Its own terms are excluded (App. B) and, by default, so are
the terms where it is the *partner* of another agent on that item, since
those compare against the held-out response. Held-out cells get their test
score from every valid partner.

:func:`evalcert.io.tvdmi.read_tvdmi_examples` reads the per-item JSON files of
``llm-peer-prediction`` (``tvd_mi_individual_examples/tvd_mi_example_<j>.json``)
and rebuilds the ``derived/`` score matrices. Those files store one
``f(P) - f(Q)`` per pair with failed calls already written as 0, so the reader
keeps that convention (the failures are only counted, from ``metadata``).

Example
-------
>>> import pandas as pd
>>> table = pd.DataFrame({"item": ["q"] * 4, "agent": ["a", "a", "b", "b"],
...                       "partner": ["b", "b", "a", "a"], "draw": ["P", "Q"] * 2,
...                       "outcome": [1.0, 0.0, 0.25, 0.0]})
>>> tvdmi_scores(table).scores.tolist()
[[1.0], [0.25]]
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

from evalcert.data import ScoreMatrix
from evalcert.errors import InputError
from evalcert.results import ResultMixin, format_table

__all__ = ["TVDMIScores", "scores_from_pairwise", "pairwise_from_outcomes", "tvdmi_scores",
           "TVDMIExamples"]


@dataclasses.dataclass(frozen=True)
class TVDMIScores(ResultMixin):
    """Scores built from pairwise judge terms.

    Attributes
    ----------
    agents, items : tuple of str
    scores : ndarray, shape (K, J)
        Training scores (NaN = held out or no valid term).
    holdout_scores : ndarray, shape (K, J)
        Test scores of held-out cells (NaN elsewhere).
    holdout : ndarray of bool, shape (K, J)
    n_calls, n_failed_calls : int
        Critic calls in the input and failed ones (0 for pairwise input).
    n_missing_terms : int
        Agent-partner-item terms without a valid P or Q verdict.
    n_excluded_terms : int
        Valid terms left out of training scores by the holdout.
    n_unscored_cells : int
        Cells (outside the holdout) without any valid term.

    Examples
    --------
    >>> import pandas as pd
    >>> table = pd.DataFrame({"item": ["q"] * 4, "agent": ["a", "a", "b", "b"],
    ...                       "partner": ["b", "b", "a", "a"], "draw": ["P", "Q"] * 2,
    ...                       "outcome": [1.0, 0.0, 0.25, 0.0]})
    >>> result = tvdmi_scores(table)
    >>> result.agents, result.items, result.scores.tolist()
    (('a', 'b'), ('q',), [[1.0], [0.25]])
    """

    agents: tuple[str, ...]
    items: tuple[str, ...]
    scores: np.ndarray
    holdout_scores: np.ndarray
    holdout: np.ndarray
    n_calls: int
    n_failed_calls: int
    n_missing_terms: int
    n_excluded_terms: int
    n_unscored_cells: int

    def matrix(self, bounds: tuple[float, float] = (-1.0, 1.0)) -> ScoreMatrix:
        """Training scores as a :class:`ScoreMatrix`."""
        return ScoreMatrix(self.scores, self.agents, self.items, bounds)

    def to_frame(self) -> Any:
        """Agents x items training scores (NaN where unscored)."""
        import pandas as pd

        return pd.DataFrame(self.scores, index=pd.Index(self.agents, name="agent"),
                            columns=list(self.items))

    def summary(self) -> str:
        K, J = self.scores.shape
        rows = [("critic calls", self.n_calls), ("failed calls (missing)", self.n_failed_calls),
                ("missing agent-partner terms", self.n_missing_terms),
                ("terms excluded by the holdout", self.n_excluded_terms),
                ("held-out cells", int(self.holdout.sum())),
                ("unscored cells", self.n_unscored_cells)]
        return f"TVD-MI scores: {K} agents x {J} items\n" + format_table(rows, ["", "count"])


def scores_from_pairwise(pairwise: np.ndarray, agents: tuple[str, ...], items: tuple[str, ...],
                         holdout: np.ndarray | None = None, exclude_partners: bool = True,
                         n_calls: int = 0, n_failed_calls: int = 0) -> TVDMIScores:
    """Average pairwise terms into scores, holding out before scoring (Eq. 11, App. B).

    Parameters
    ----------
    pairwise : ndarray, shape (J, K, K)
        ``pairwise[j, i, k] = TPR_ikj - FPR_ikj``; NaN = missing; the diagonal is ignored.
    agents, items : tuple of str
    holdout : ndarray of bool, shape (K, J), optional
        Held-out (agent, item) cells.
    exclude_partners : bool
        Also drop terms whose partner cell ``(k, j)`` is held out.
    n_calls, n_failed_calls : int
        Passed through to the result.

    Examples
    --------
    Two agents on one item; each agent's score averages its terms against its partners:

    >>> pairwise = np.full((1, 2, 2), np.nan)
    >>> pairwise[0, 0, 1], pairwise[0, 1, 0] = 0.6, 0.2
    >>> scores_from_pairwise(pairwise, ("a", "b"), ("q",)).scores.tolist()
    [[0.6], [0.2]]
    """
    D = np.array(pairwise, dtype=float)
    J, K = len(items), len(agents)
    if D.shape != (J, K, K):
        raise InputError(f"pairwise terms must have shape (items, agents, agents) = {(J, K, K)}; "
                         f"got {D.shape}")
    D[:, np.arange(K), np.arange(K)] = np.nan
    holdout = np.zeros((K, J), bool) if holdout is None else np.asarray(holdout)
    if holdout.shape != (K, J) or holdout.dtype != bool:
        raise InputError(f"holdout must be a boolean (agents x items) array of shape {(K, J)}; "
                         f"got {holdout.dtype} {holdout.shape}")
    valid = ~np.isnan(D)
    held = holdout.T
    keep = valid & ~held[:, :, None]
    if exclude_partners:
        keep &= ~held[:, None, :]
    with np.errstate(invalid="ignore"):
        full = (np.nansum(D, axis=2) / valid.sum(axis=2)).T
        train = (np.where(keep, D, 0.0).sum(axis=2) / keep.sum(axis=2)).T
    return TVDMIScores(tuple(agents), tuple(items), train, np.where(holdout, full, np.nan),
                       holdout, int(n_calls), int(n_failed_calls),
                       int((~valid).sum() - J * K), int((valid & ~keep).sum()),
                       int((np.isnan(train) & ~holdout).sum()))


def pairwise_from_outcomes(table: pd.DataFrame) -> tuple[np.ndarray, tuple, tuple, int, int]:
    """``TPR - FPR`` per (item, agent, partner) from a long table of critic outcomes.

    Columns: ``item``, ``agent``, ``partner``, ``draw`` (``P`` same-item pair,
    ``Q`` cross-item pair) and ``outcome`` (critic verdict, NaN = failed call).
    Returns ``(pairwise, agents, items, n_calls, n_failed_calls)``; agents and
    items keep their order of first appearance.

    Examples
    --------
    >>> table = pd.DataFrame({"item": ["q"] * 4, "agent": ["a", "a", "b", "b"],
    ...                       "partner": ["b", "b", "a", "a"], "draw": ["P", "Q"] * 2,
    ...                       "outcome": [1.0, 0.0, 0.25, 0.0]})
    >>> pairwise, agents, items, n_calls, n_failed = pairwise_from_outcomes(table)
    >>> pairwise.shape, float(pairwise[0, 0, 1]), float(pairwise[0, 1, 0]), agents, items, n_calls
    ((1, 2, 2), 1.0, 0.25, ('a', 'b'), ('q',), 4)
    """
    need = {"item", "agent", "partner", "draw", "outcome"}
    if need - set(table.columns):
        raise InputError(f"the outcome table lacks column(s) {sorted(need - set(table.columns))}")
    bad = sorted(set(table["draw"].astype(str)) - {"P", "Q"})
    if bad:
        raise InputError(f"draw must be 'P' (same item) or 'Q' (other item); got {bad[:5]}")
    frame = table.assign(agent=table["agent"].astype(str), partner=table["partner"].astype(str),
                         item=table["item"].astype(str), draw=table["draw"].astype(str),
                         outcome=pd.to_numeric(table["outcome"], errors="raise"))
    agents = tuple(dict.fromkeys(list(frame["agent"]) + list(frame["partner"])))
    items = tuple(dict.fromkeys(frame["item"]))
    rate = frame.groupby(["item", "agent", "partner", "draw"], sort=False)["outcome"].mean()
    rate = rate.unstack("draw").reindex(columns=["P", "Q"])
    term = (rate["P"] - rate["Q"]).reset_index(name="term")
    ai = {a: k for k, a in enumerate(agents)}
    ii = {t: k for k, t in enumerate(items)}
    D = np.full((len(items), len(agents), len(agents)), np.nan)
    D[term["item"].map(ii), term["agent"].map(ai), term["partner"].map(ai)] = term["term"]
    return D, agents, items, len(frame), int(frame["outcome"].isna().sum())


def tvdmi_scores(table: pd.DataFrame, holdout: np.ndarray | None = None,
                 exclude_partners: bool = True) -> TVDMIScores:
    """Eq. 11 scores from a long table of critic outcomes (see :func:`pairwise_from_outcomes`).

    Examples
    --------
    >>> table = pd.DataFrame({"item": ["q"] * 4, "agent": ["a", "a", "b", "b"],
    ...                       "partner": ["b", "b", "a", "a"], "draw": ["P", "Q"] * 2,
    ...                       "outcome": [1.0, 0.0, 0.25, 0.0]})
    >>> res = tvdmi_scores(table)
    >>> res.scores.tolist(), res.agents, res.items, res.n_calls
    ([[1.0], [0.25]], ('a', 'b'), ('q',), 4)
    """
    D, agents, items, n_calls, n_failed = pairwise_from_outcomes(table)
    return scores_from_pairwise(D, agents, items, holdout, exclude_partners, n_calls, n_failed)


@dataclasses.dataclass(frozen=True)
class TVDMIExamples(ResultMixin):
    """Per-item judge data of one ``llm-peer-prediction`` domain.

    Attributes
    ----------
    agents : tuple of str
        ``condition_keys`` (the same in every file).
    items : tuple of str
        ``item_<example_idx>``, sorted by index.
    pairwise : ndarray, shape (J, K, K)
        ``tvd_mi_matrix`` per item (failed calls stored as 0); not in ``to_dict``.
    n_calls, n_failed_calls : int
        From ``metadata``: ``K (K - 1)`` P and Q calls per item, minus those made.

    Examples
    --------
    >>> pairwise = np.array([[[0.0, 0.5], [0.3, 0.0]], [[0.0, 0.1], [0.2, 0.0]]])  # 2 items
    >>> examples = TVDMIExamples(("a", "b"), ("item_0", "item_1"), pairwise, n_calls=8)
    >>> examples.scores().scores.tolist()  # agent x item: M[i][k] over partners k != i
    [[0.5, 0.1], [0.3, 0.2]]
    """

    agents: tuple[str, ...]
    items: tuple[str, ...]
    pairwise: np.ndarray = dataclasses.field(repr=False)
    n_calls: int = 0
    n_failed_calls: int = 0

    def scores(self, holdout: np.ndarray | None = None,
               exclude_partners: bool = True) -> TVDMIScores:
        """Directional scores ``mean_{k != i} M[i][k]`` (``tvd_mi_scores``) with a holdout."""
        return scores_from_pairwise(self.pairwise, self.agents, self.items, holdout,
                                    exclude_partners, self.n_calls, self.n_failed_calls)

    def bidirectional(self) -> ScoreMatrix:
        """``mean_{k != i} (M[i][k] + M[k][i]) / 2`` (``tvd_mi_bidirectional``)."""
        sym = (self.pairwise + self.pairwise.transpose(0, 2, 1)) / 2.0
        return scores_from_pairwise(sym, self.agents, self.items).matrix()

    def summary(self) -> str:
        return (f"{len(self.agents)} agents x {len(self.items)} items; {self.n_calls} critic "
                f"calls, {self.n_failed_calls} failed (stored as 0 in tvd_mi_matrix)")
