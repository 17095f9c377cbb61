"""``evalcert.compare``: is model A better than model B on the items both answered?

For every pair of models, on their shared items ``j`` (both scored), with
``d_j = x_aj - x_bj``:

* ``diff`` = mean of ``d_j`` and a paired ``1 - alpha`` interval ``diff +- t se``,
  ``se = sd(d) / sqrt(n)`` (``t`` on ``n - 1`` degrees of freedom). With items clustered
  by a group (turns of one question, a task), the cluster-robust (CR1) standard error
  ``se^2 = G / (G - 1) sum_g (sum_{j in g} (d_j - diff))^2 / n^2`` and ``t`` on
  ``G - 1`` degrees of freedom;
* ``p_value``: the exact McNemar test for 0/1 scores (two-sided binomial test of the
  ``n10`` items only A solved against the ``n01`` only B solved, p = 1/2; equal to
  ``scipy.stats.binomtest(n10, n10 + n01).pvalue``), the paired t-test or Wilcoxon's
  signed-rank test for graded scores, the cluster-robust t-test with groups;
* ``p_adjusted``: Holm (family-wise) or Benjamini-Hochberg (false discovery rate) over
  all pairs;
* ``mdd``: the minimum detectable difference, ``(t_{1-alpha/2} + t_{power}) se``: the
  smallest true difference this many shared items would detect with the given power.

Ranks: each model's mean score over its items, its rank, and a simultaneous
``1 - alpha`` interval for all ranks from an item (or cluster) bootstrap, max-t over all
pairwise differences (:mod:`evalcert.compare.rank_intervals`); with ``irt=`` the same
from IRT abilities and their standard errors (Bonferroni).

Example
-------
>>> from evalcert.data import ScoreMatrix
>>> rng = np.random.default_rng(0)
>>> X = (rng.random((3, 200)) < np.array([[0.8], [0.6], [0.58]])).astype(float)
>>> res = compare(ScoreMatrix.from_array(X, agents=["a", "b", "c"], bounds=(0, 1)), n_boot=200)
>>> res.test, [r["model"] for r in res.to_dict()["ranks"]]
('exact McNemar', ['a', 'b', 'c'])
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping, Sequence

import numpy as np
from scipy import stats

from evalcert.compare.rank_intervals import (ADJUST, adjust_pvalues, rank_from_draws,
                                             rank_from_se, ranks_of)
from evalcert.errors import InputError
from evalcert.results import PageMixin, ResultMixin, format_table

__all__ = ["compare", "CompareResult", "TESTS"]

TESTS = ("auto", "mcnemar", "t", "wilcoxon")
_TEST_NAMES = {"mcnemar": "exact McNemar", "t": "paired t", "wilcoxon": "Wilcoxon signed-rank",
               "cluster": "cluster-robust t"}
#: most bootstrap replicates; dense score cells held at once in compare
MAX_BOOT = 100_000
_MAX_DENSE = 5 * 10 ** 7
#: most pairs of models compared at once (each is a test)
MAX_PAIRS = 200_000


@dataclasses.dataclass(frozen=True)
class CompareResult(PageMixin, ResultMixin):
    """Paired comparisons of every pair of models and rank intervals.

    ``pairs`` rows: ``model_a, model_b, n_shared, diff, ci_low, ci_high, p_value,
    p_adjusted, mdd`` (``model_a`` is the better-ranked one); ``ranks`` rows: ``model,
    score, rank, rank_ci_low, rank_ci_high``; ``irt_ranks`` the same from IRT abilities.

    Examples
    --------
    >>> from evalcert.data import ScoreMatrix
    >>> S = ScoreMatrix.from_array(np.array([[1, 1, 0, 1.], [0, 1, 0, 0.]]), bounds=(0, 1))
    >>> pairs, ranks = compare(S, n_boot=0).to_frames()
    >>> pairs[["n_shared", "diff"]].values.tolist(), ranks["rank"].tolist()
    ([[4.0, 0.5]], [1, 2])
    """

    pairs: tuple[dict, ...]
    ranks: tuple[dict, ...]
    irt_ranks: tuple[dict, ...] | None
    test: str
    adjust: str
    alpha: float
    power: float
    n_boot: int
    n_items: int
    n_groups: int | None
    rank_method: str
    irt_model: str | None

    def to_dict(self) -> dict[str, Any]:
        from evalcert.results import to_jsonable
        out = {"pairs": list(self.pairs), "ranks": list(self.ranks), "test": self.test,
               "adjust": self.adjust, "alpha": self.alpha, "power": self.power,
               "n_boot": self.n_boot, "n_items": self.n_items, "n_groups": self.n_groups,
               "rank_method": self.rank_method}
        if self.irt_ranks is not None:
            out["irt_ranks"] = list(self.irt_ranks)
            out["irt_model"] = self.irt_model
        return to_jsonable(out)

    def to_frames(self):
        """``(pairs, ranks)`` as pandas DataFrames."""
        import pandas as pd
        return pd.DataFrame(list(self.pairs)), pd.DataFrame(list(self.ranks))

    def to_frame(self, what: str = "ranks") -> Any:
        """One table as a DataFrame: ``"ranks"`` (one row per model, best first),
        ``"pairs"`` (one row per pair) or ``"irt_ranks"`` (with ``irt=``)."""
        import pandas as pd
        if what not in ("ranks", "pairs", "irt_ranks"):
            raise ValueError(f"what must be 'ranks', 'pairs' or 'irt_ranks', not {what!r}")
        rows = getattr(self, what)
        if rows is None:
            raise ValueError("no IRT ranks: compare(..., irt='rasch' or '2pl') computes them")
        return pd.DataFrame(list(rows))

    def summary(self) -> str:
        level = f"{100 * (1 - self.alpha):g}%"
        n_sig = sum(p["p_adjusted"] < self.alpha for p in self.pairs)
        groups = f" in {self.n_groups} clusters" if self.n_groups else ""
        lines = [f"Paired comparison of {len(self.ranks)} models on {self.n_items} items{groups}: "
                 f"{self.test} test, {self.adjust} adjustment over {len(self.pairs)} pairs; "
                 f"{n_sig} differ at {self.alpha:g}",
                 f"ranks: {self.rank_method}, {level} simultaneous intervals"]
        lines.append(format_table(
            [[r["rank"], f"{r['rank_ci_low']}-{r['rank_ci_high']}", r["model"], r["score"]]
             for r in self.ranks], ["rank", "rank CI", "model", "score"]))
        shown = sorted(self.pairs, key=lambda p: p["p_value"])[:20]
        lines.append(f"pairs (smallest p first{', 20 shown' if len(self.pairs) > 20 else ''}):")
        lines.append(format_table(
            [[p["model_a"], p["model_b"], p["n_shared"], p["diff"],
              f"{p['ci_low']:.4f} .. {p['ci_high']:.4f}", p["p_value"], p["p_adjusted"], p["mdd"]]
             for p in shown],
            ["model_a", "model_b", "n", "diff", f"{level} CI", "p", "p_adj", "mdd"]))
        if self.irt_ranks is not None:
            lines.append(f"IRT ({self.irt_model}) abilities, Bonferroni-simultaneous rank intervals:")
            lines.append(format_table(
                [[r["rank"], f"{r['rank_ci_low']}-{r['rank_ci_high']}", r["model"], r["score"]]
                 for r in self.irt_ranks], ["rank", "rank CI", "model", "ability"]))
        return "\n".join(lines)


def _group_codes(groups, items: Sequence[str]) -> np.ndarray | None:
    if groups is None:
        return None
    if isinstance(groups, Mapping):
        missing = [it for it in items if it not in groups]
        if missing:
            raise InputError(f"{len(missing)} items have no group (e.g. {missing[:3]}); give "
                             "every item a group")
        labels = [groups[it] for it in items]
    else:
        labels = list(groups)
        if len(labels) != len(items):
            raise InputError(f"groups has {len(labels)} entries for {len(items)} items")
    _, codes = np.unique(np.asarray(labels, dtype=str), return_inverse=True)
    return codes.astype(np.int64)


def _pair_stats(d: np.ndarray, g: np.ndarray | None, binary: bool, test: str, alpha: float,
                power: float):
    n = len(d)
    diff = float(d.mean())
    if g is not None:
        gu, gi = np.unique(g, return_inverse=True)
        G = len(gu)
        resid = np.bincount(gi, d - diff, G)
        se = math.sqrt(G / (G - 1) * float(resid @ resid)) / n if G > 1 else math.nan
        df = G - 1
    else:
        se = float(d.std(ddof=1)) / math.sqrt(n) if n > 1 else math.nan
        df = n - 1
    if df >= 1 and math.isfinite(se):
        tq = float(stats.t.ppf(1 - alpha / 2, df))
        lo, hi = diff - tq * se, diff + tq * se
        mdd = (tq + float(stats.t.ppf(power, df))) * se
    else:
        lo = hi = mdd = math.nan
    if g is not None:
        if se > 0:
            p = float(2 * stats.t.sf(abs(diff) / se, df))
        else:
            p = 1.0 if diff == 0 else 0.0
    elif test == "mcnemar":
        n10, n01 = int((d > 0).sum()), int((d < 0).sum())
        k, m = min(n10, n01), n10 + n01
        p = min(1.0, 2.0 * float(stats.binom.cdf(k, m, 0.5))) if m else 1.0
    elif test == "wilcoxon":
        p = float(stats.wilcoxon(d).pvalue) if np.any(d != 0) else 1.0
    else:
        if se > 0:
            p = float(2 * stats.t.sf(abs(diff) / se, df))
        else:
            p = 1.0 if diff == 0 else 0.0
    return diff, lo, hi, p, mdd


def _boot_means(block, X: np.ndarray, M: np.ndarray, groups: np.ndarray | None) -> np.ndarray:
    """Means of every model over ``n`` item (cluster) resamples; ``block = (seed, n)``."""
    seed, n = block
    rng = np.random.default_rng(seed)
    J = X.shape[1]
    if groups is None:
        W = rng.multinomial(J, np.full(J, 1.0 / J), size=n).astype(float)
    else:
        G = int(groups.max()) + 1
        Wg = rng.multinomial(G, np.full(G, 1.0 / G), size=n).astype(float)
        W = Wg[:, groups]
    XM = np.where(M, X, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (W @ XM.T) / (W @ M.T.astype(float))


def compare(S: Any, *, groups: Sequence[Any] | Mapping[str, Any] | None = None,
            test: str = "auto", adjust: str = "holm", alpha: float = 0.05, power: float = 0.8,
            n_boot: int = 1000, seed: int = 0, irt: str | None = None, n_jobs: int | None = 1,
            backend: str = "loky", scheduler: str | None = None,
            progress: bool = False) -> CompareResult:
    """Compare every pair of models on their shared items; rank them with intervals.

    Parameters
    ----------
    S : ScoreMatrix
        Models x items scores (``evalcert.read_scores``); missing cells are allowed.
    groups : sequence or mapping, optional
        Cluster of every item (aligned with ``S.items``, or item -> cluster): intervals and
        p-values become cluster-robust, and the bootstrap resamples clusters.
    test : {"auto", "mcnemar", "t", "wilcoxon"}
        ``auto``: exact McNemar when every score is 0 or 1, else the paired t-test.
    adjust : {"holm", "bh"}
        Multiplicity adjustment of ``p_adjusted``.
    alpha, power : float
        Size of tests and intervals; power of the minimum detectable difference.
    n_boot : int
        Item bootstrap replicates for the rank intervals.
    irt : {"rasch", "2pl", ...}, optional
        Also rank by IRT abilities with their standard errors (0/1 scores).
    seed, n_jobs, backend, scheduler, progress
        Bootstrap randomness and :func:`evalcert.parallel.parallel_map` options.

    Raises
    ------
    InputError
        One model, a pair without shared items, a test that does not fit the scores.

    Examples
    --------
    >>> from evalcert.data import ScoreMatrix
    >>> S = ScoreMatrix.from_array(np.array([[1, 1, 1, 0, 1, 1.], [0, 1, 0, 0, 1, 0.]]),
    ...                            agents=["a", "b"], bounds=(0, 1))
    >>> res = compare(S, n_boot=100)
    >>> p = res.to_dict()["pairs"][0]
    >>> p["model_a"], p["n_shared"], p["diff"], round(p["p_value"], 4)   # binomtest(3, 3)
    ('a', 6, 0.5, 0.25)
    """
    if test not in TESTS:
        raise InputError(f"test must be one of {TESTS}, got {test!r}")
    if adjust not in ADJUST:
        raise InputError(f"adjust must be one of {ADJUST}, got {adjust!r}")
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise InputError(f"alpha and power must be in (0, 1), got {alpha!r} and {power!r}")
    if not (isinstance(n_boot, (int, np.integer)) and 0 <= n_boot <= MAX_BOOT):
        raise InputError(f"n_boot must be an integer in [0, {MAX_BOOT}], got {n_boot!r}")
    models, items = tuple(S.agents), tuple(S.items)
    K, J = len(models), len(items)
    if K < 2:
        raise InputError(f"only one model ({models[0] if models else 'none'}) in the results; "
                         "a comparison needs at least two")
    if K * (K - 1) // 2 > MAX_PAIRS:
        raise InputError(f"{K} models make {K * (K - 1) // 2} pairs, more than compare tests at "
                         f"once ({MAX_PAIRS}); compare a subset of the models")
    if K * J > _MAX_DENSE:
        raise InputError(f"{K} models x {J} items = {K * J} cells is more than compare holds "
                         f"({_MAX_DENSE}); compare fewer models or items at a time")
    g = _group_codes(groups, items)
    rows, cols, vals = S.cells()
    X = np.full((K, J), np.nan)
    X[rows, cols] = vals
    M = ~np.isnan(X)
    binary = bool(np.isin(vals, (0.0, 1.0)).all())
    if test == "auto":
        test = "mcnemar" if binary else "t"
    if test == "mcnemar" and not binary:
        raise InputError("the exact McNemar test needs 0/1 scores; these are graded: use "
                         "test='t' or 'wilcoxon' (--test t / wilcoxon)")
    shared = M.astype(np.int64) @ M.T.astype(np.int64)
    lonely = [(models[a], models[b]) for a in range(K) for b in range(a + 1, K)
              if shared[a, b] < 2]
    if lonely:
        raise InputError(f"{len(lonely)} pairs of models share fewer than 2 scored items "
                         f"(e.g. {lonely[0][0]} and {lonely[0][1]}: {shared[models.index(lonely[0][0]), models.index(lonely[0][1])]}); "
                         "paired comparisons need items both models answered - score them on "
                         "common items or drop one of each such pair")
    score = np.nanmean(X, axis=1)
    order = np.lexsort((np.arange(K), -score))
    pairs = []
    for x, a in enumerate(order):
        for b in order[x + 1:]:
            both = M[a] & M[b]
            d = X[a, both] - X[b, both]
            diff, lo, hi, p, mdd = _pair_stats(d, None if g is None else g[both], binary, test,
                                               alpha, power)
            pairs.append({"model_a": models[a], "model_b": models[b], "n_shared": int(both.sum()),
                          "diff": diff, "ci_low": lo, "ci_high": hi, "p_value": p,
                          "p_adjusted": math.nan, "mdd": mdd})
    p_adj = adjust_pvalues(np.array([p["p_value"] for p in pairs]), adjust)
    for p, q in zip(pairs, p_adj):
        p["p_adjusted"] = float(q)
    if n_boot:
        from evalcert.parallel import parallel_map

        n_blocks = min(n_boot, max(1, math.ceil(n_boot / 100)))
        sizes = [len(b) for b in np.array_split(np.arange(n_boot), n_blocks)]
        seeds = np.random.SeedSequence(seed).spawn(n_blocks)
        draws = np.vstack(parallel_map(_boot_means, list(zip(seeds, sizes)), shared=(X, M, g),
                                       backend=backend, n_jobs=n_jobs, scheduler=scheduler,
                                       progress=progress, desc="item bootstrap"))
        draws = draws[np.isfinite(draws).all(axis=1)]
        rank, r_lo, r_hi, _ = rank_from_draws(score, draws, alpha)
        method = f"{'cluster' if g is not None else 'item'} bootstrap ({n_boot} resamples, max-t)"
    else:
        rank = ranks_of(score)
        r_lo, r_hi = np.ones(K, int), np.full(K, K)
        method = "no bootstrap (n_boot=0): rank intervals are [1, K]"
    ranks = tuple({"model": models[k], "score": float(score[k]), "rank": int(rank[k]),
                   "rank_ci_low": int(r_lo[k]), "rank_ci_high": int(r_hi[k])} for k in order)
    irt_ranks = _irt_ranks(X, M, models, irt, alpha, binary) if irt else None
    return CompareResult(tuple(pairs), ranks, irt_ranks, _TEST_NAMES["cluster" if g is not None
                                                                    else test],
                         adjust, float(alpha), float(power), int(n_boot), J,
                         None if g is None else int(g.max()) + 1, method, irt)


def _irt_ranks(X, M, models, irt: str, alpha: float, binary: bool):
    if not binary:
        raise InputError(f"IRT rank intervals (irt={irt!r}) need 0/1 scores; these are graded")
    from evalcert.irt import fit_irt

    est = fit_irt(np.where(M, X, np.nan), model=irt)
    theta = np.asarray(est.abilities_, dtype=float)
    se = np.asarray(est.result_.standard_errors.get("abilities", np.full(len(theta), np.nan)),
                    dtype=float)
    if not np.isfinite(se).all():
        raise InputError(f"the {irt} fit gave no finite standard errors for every ability "
                         "(a model with all items right or wrong?); drop those models or use "
                         "the bootstrap rank intervals")
    rank, lo, hi, _ = rank_from_se(theta, se, alpha)
    order = np.lexsort((np.arange(len(theta)), -theta))
    return tuple({"model": models[k], "score": float(theta[k]), "rank": int(rank[k]),
                  "rank_ci_low": int(lo[k]), "rank_ci_high": int(hi[k]),
                  "se": float(se[k])} for k in order)
