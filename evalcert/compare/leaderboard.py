"""``evalcert.rank``: a Bradley-Terry leaderboard with a certificate and bootstrap intervals.

The fit is :func:`~evalcert.compare.bradley_terry.fit_bradley_terry` on counts
aggregated per pair; intervals come from a bootstrap over battles done on the counts:
resampling N battles with replacement is the same as drawing the (pair, outcome) counts
from a multinomial with the observed proportions, so each refit costs O(pairs) and is
warm-started at the fit. Replicates run in blocks on :func:`evalcert.parallel.parallel_map`
(loky, Dask or Ray); each block has its own seed from ``numpy.random.SeedSequence``, so the
intervals do not depend on the number of workers.

Example
-------
>>> import pandas as pd
>>> log = pd.DataFrame({"model_a": ["a", "b", "c", "a", "b", "c"] * 5,
...                     "model_b": ["b", "c", "a", "c", "a", "b"] * 5,
...                     "winner": ["model_a", "model_a", "model_b", "model_a", "tie", "model_a"] * 5})
>>> res = rank(log, n_boot=50, n_jobs=1)
>>> [r["model"] for r in res.to_dict()["ranks"]], res.certificate.proves_optimum
(['a', 'b', 'c'], True)
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import numpy as np

from evalcert.compare.bradley_terry import (TIES, BTCertificate, _problem, check_mle_exists,
                                            fit_bradley_terry, refit_counts)
from evalcert.compare.counts import PairwiseCounts
from evalcert.compare.rank_intervals import rank_from_draws, ranks_of
from evalcert.errors import InputError
from evalcert.results import PageMixin, ResultMixin, format_table

__all__ = ["rank", "RankResult", "ELO_SCALE", "ELO_BASE"]

#: Elo points per unit of log-strength (the Arena's 400 / ln 10) and the Elo of score 0
ELO_SCALE = 400 / math.log(10)
ELO_BASE = 1000.0
#: most bootstrap replicates accepted
MAX_BOOT = 1_000_000


@dataclasses.dataclass(frozen=True)
class RankResult(PageMixin, ResultMixin):
    """A Bradley-Terry leaderboard.

    Attributes
    ----------
    models : tuple of str
        In order of ``score`` (best first).
    score : numpy.ndarray
        Log-strengths centred at 0.
    elo : numpy.ndarray
        ``ELO_SCALE * score + ELO_BASE``.
    ci_low, ci_high : numpy.ndarray
        Percentile bootstrap interval of ``score`` (NaN without a bootstrap).
    rank, rank_ci_low, rank_ci_high : numpy.ndarray
        Rank (1 = best) and a simultaneous ``1 - alpha`` interval for all ranks at once
        (max-t over bootstrap differences; without a bootstrap, equal to ``rank``).
    wins, losses, ties : numpy.ndarray
        Per model.
    certificate : BTCertificate
        Evidence that ``score`` is the optimum.

    Examples
    --------
    >>> c = PairwiseCounts.from_battles(["a", "b", "c", "a", "c"], ["b", "c", "a", "c", "b"],
    ...                                 ["model_a", "model_a", "model_b", "tie", "model_a"])
    >>> res = rank(c)
    >>> res.to_frame()[["model", "rank"]].values.tolist()
    [['a', 1], ['c', 2], ['b', 3]]
    """

    models: tuple[str, ...]
    score: np.ndarray
    elo: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    rank: np.ndarray
    rank_ci_low: np.ndarray
    rank_ci_high: np.ndarray
    wins: np.ndarray
    losses: np.ndarray
    ties: np.ndarray
    ties_model: str
    tie_parameter: float | None
    prior_sd: float | None
    loglik: float
    iterations: int
    certificate: BTCertificate
    n_battles: int
    n_pairs: int
    dropped: dict
    n_boot: int
    n_boot_failed: int
    alpha: float
    seconds: dict
    judge_reliability: tuple = ()

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for k, m in enumerate(self.models):
            out.append({"model": m, "score": float(self.score[k]), "elo": float(self.elo[k]),
                        "rank": int(self.rank[k]), "rank_ci_low": int(self.rank_ci_low[k]),
                        "rank_ci_high": int(self.rank_ci_high[k]),
                        "ci_low": float(self.ci_low[k]), "ci_high": float(self.ci_high[k]),
                        "elo_ci_low": float(ELO_SCALE * self.ci_low[k] + ELO_BASE),
                        "elo_ci_high": float(ELO_SCALE * self.ci_high[k] + ELO_BASE),
                        "wins": int(self.wins[k]), "losses": int(self.losses[k]),
                        "ties": int(self.ties[k])})
        return out

    def to_dict(self) -> dict[str, Any]:
        from evalcert.results import to_jsonable
        return to_jsonable({
            "ranks": self.rows(), "ties_model": self.ties_model,
            "tie_parameter": self.tie_parameter, "prior_sd": self.prior_sd,
            "loglik": self.loglik, "iterations": self.iterations,
            "certificate": self.certificate.to_dict(), "n_battles": self.n_battles,
            "n_pairs": self.n_pairs, "dropped": self.dropped, "n_boot": self.n_boot,
            "n_boot_failed": self.n_boot_failed, "alpha": self.alpha, "seconds": self.seconds,
            "judges": list(self.judge_reliability)})

    def to_frame(self):
        import pandas as pd
        return pd.DataFrame(self.rows())

    def summary(self) -> str:
        ties = ("ties as half a win each way" if self.ties_model == "half" else
                f"Davidson ties (nu = {math.exp(self.tie_parameter):.4g})")
        head = [f"Bradley-Terry ranking of {len(self.models)} models from {self.n_battles} "
                f"battles on {self.n_pairs} pairs ({ties}"
                + (f", prior N(0, {self.prior_sd:g}^2)" if self.prior_sd else ", maximum likelihood")
                + ")"]
        if any(self.dropped.values()):
            head.append("not counted: " + ", ".join(f"{n} {why}" for why, n in self.dropped.items()))
        head.append(self.certificate.summary()
                    + (" (given the judges' reliabilities)" if self.judge_reliability else ""))
        if self.judge_reliability:
            head.append("judge reliabilities (verdicts): " + ", ".join(
                f"{r['judge']} {r['reliability']:.3g} ({r['n_verdicts']})"
                for r in self.judge_reliability[:10])
                + (f" and {len(self.judge_reliability) - 10} more"
                   if len(self.judge_reliability) > 10 else ""))
        if self.n_boot:
            head.append(f"{self.n_boot} bootstrap refits over battles"
                        + (f" ({self.n_boot_failed} resamples without an MLE left out)"
                           if self.n_boot_failed else "")
                        + f"; {100 * (1 - self.alpha):g}% intervals, rank intervals simultaneous")
        rows = [[r["rank"], f"{r['rank_ci_low']}-{r['rank_ci_high']}", r["model"], r["score"],
                 r["elo"], f"{r['elo_ci_low']:.1f} .. {r['elo_ci_high']:.1f}" if self.n_boot else "",
                 r["wins"], r["losses"], r["ties"]] for r in self.rows()]
        table = format_table(rows, ["rank", "rank CI", "model", "score", "elo", "elo CI",
                                    "wins", "losses", "ties"])
        return "\n".join(head) + "\n" + table


def _as_counts(data: Any) -> PairwiseCounts:
    if isinstance(data, PairwiseCounts):
        return data
    if hasattr(data, "columns"):
        missing = {"model_a", "model_b", "winner"} - set(map(str, data.columns))
        if missing:
            raise InputError(f"the battle table lacks column(s) {sorted(missing)}; it needs "
                             "model_a, model_b, winner")
        return PairwiseCounts.from_battles(data["model_a"].astype(str).tolist(),
                                           data["model_b"].astype(str).tolist(),
                                           data["winner"].astype(str).tolist())
    raise InputError(f"rank() takes PairwiseCounts or a table with model_a, model_b, winner; "
                     f"got {type(data).__name__} (read files with evalcert.io.arena.read_arena "
                     "or evalcert.io.pairwise.read_pairwise)")


def _exists(i, j, table, K) -> bool:
    """Cheap necessary check for a resample: every model won and lost something."""
    half_i = table[:, 0] + table[:, 2]
    half_j = table[:, 1] + table[:, 2]
    wins = np.bincount(i, half_i, K) + np.bincount(j, half_j, K)
    losses = np.bincount(i, half_j, K) + np.bincount(j, half_i, K)
    return bool((wins > 0).all() and (losses > 0).all())


def _multinomial(rng: np.random.Generator, total: int, prob: np.ndarray) -> np.ndarray:
    """An exact ``Multinomial(total, prob)`` draw in O(categories): independent Poisson counts
    of mean ``lam prob`` summing to ``s <= total`` (redrawn otherwise; ``lam`` is 4 standard
    deviations below ``total``) are a ``Multinomial(s, prob)`` draw given ``s``; the other
    ``total - s`` battles are drawn one by one from ``prob``."""
    lam = total - 4 * math.sqrt(total)
    if lam < 1000:
        return rng.multinomial(total, prob)
    cdf = np.cumsum(prob)
    while True:
        x = rng.poisson(lam * prob)
        s = int(x.sum())
        if s <= total:
            break
    rest = np.searchsorted(cdf, rng.random(total - s) * cdf[-1], side="right")
    return x + np.bincount(np.minimum(rest, len(prob) - 1), minlength=len(prob))


def _boot_block(block: tuple[np.random.SeedSequence, int], table: np.ndarray, i: np.ndarray,
                j: np.ndarray, K: int, ties: str, lam: float, start: np.ndarray) -> np.ndarray:
    """``n`` multinomial resamples of the counts (``block = (seed, n)``), refitted warm; rows
    of NaN where the resample has no MLE."""
    from threadpoolctl import threadpool_limits

    seed, n = block
    rng = np.random.default_rng(seed)
    total = int(table.sum())
    prob = (table / total).ravel()
    out = np.full((n, len(start)), np.nan)
    with threadpool_limits(1):
        for b in range(n):
            draw = _multinomial(rng, total, prob).reshape(table.shape)
            if lam == 0 and not _exists(i, j, draw, K):
                continue
            x = refit_counts(draw, i, j, K, ties, lam, start)
            if x is not None:
                out[b] = x
    return out


def rank(data: Any, *, ties: str = "half", prior_sd: float | None = None, n_boot: int = 0,
         alpha: float = 0.05, seed: int = 0, n_jobs: int | None = 1, backend: str = "loky",
         scheduler: str | None = None, progress: bool = False, judge_weighted: bool = False,
         reliability_sd: float = 1.0) -> RankResult:
    """Rank models by Bradley-Terry on pairwise outcomes, with a certificate and intervals.

    Parameters
    ----------
    data : PairwiseCounts or pandas.DataFrame
        Counts (from :func:`evalcert.io.arena.read_arena` or
        :func:`evalcert.io.pairwise.read_pairwise`), or a battle table with columns
        ``model_a, model_b, winner`` (``model_a``, ``model_b``, ``tie``, ``tie (bothbad)``).
    ties : {"half", "davidson"}
        Ties as half a win each way (Chatbot Arena) or Davidson's model.
    prior_sd : float, optional
        Gaussian prior on log-strengths (MAP); without it a log with no MLE is refused.
    n_boot : int
        Bootstrap refits over battles (0 = none).
    alpha : float
        1 - confidence level of the intervals.
    seed, n_jobs, backend, scheduler, progress
        Bootstrap randomness and :func:`evalcert.parallel.parallel_map` options.
    judge_weighted : bool
        Fit each judge's reliability jointly (:func:`evalcert.compare.judges.fit_judge_weighted`;
        counts read with a judge column, ties half, no bootstrap).
    reliability_sd : float
        Prior standard deviation of the reliabilities around 1.

    Raises
    ------
    InputError, ConnectivityError
        One model, no battles, or no MLE (models named).

    Examples
    --------
    >>> from evalcert.compare.counts import PairwiseCounts
    >>> c = PairwiseCounts.from_battles(["a", "b", "c", "a"] * 3, ["b", "c", "a", "c"] * 3,
    ...                                 ["model_a", "model_a", "model_a", "tie"] * 3)
    >>> res = rank(c)
    >>> res.models[0], round(float(res.elo.mean()), 6)
    ('a', 1000.0)
    """
    if ties not in TIES:
        raise InputError(f"ties must be one of {TIES}, got {ties!r}")
    if not (isinstance(n_boot, (int, np.integer)) and 0 <= n_boot <= MAX_BOOT):
        raise InputError(f"n_boot must be an integer in [0, {MAX_BOOT}], got {n_boot!r}")
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be in (0, 1), got {alpha!r}")
    t0 = time.perf_counter()
    counts = _as_counts(data)
    judges: tuple = ()
    if judge_weighted:
        if ties != "half" or n_boot:
            raise InputError("the judge-weighted fit takes ties as half wins and has no "
                             "bootstrap yet: drop --ties davidson / --bootstrap, or the judge "
                             "weighting")
        from evalcert.compare.judges import fit_judge_weighted

        fit = fit_judge_weighted(counts, reliability_sd=reliability_sd, prior_sd=prior_sd)
        judges = tuple({"judge": name, "reliability": fit.reliability[name],
                        "n_verdicts": fit.n_verdicts[name]}
                       for name in sorted(fit.reliability, key=lambda k: -fit.reliability[k]))
        fit = _JudgedFit(fit.theta, None, math.nan, fit.rounds, fit.certificate)
        counts = counts.pooled()
    else:
        counts = counts.pooled()
        if prior_sd is None:
            check_mle_exists(counts, ties)
        fit = fit_bradley_terry(counts, ties=ties, prior_sd=prior_sd, check=False)
    t_fit = time.perf_counter() - t0
    K = counts.n_models
    score = fit.theta
    draws = np.empty((0, K))
    n_failed = 0
    if n_boot:
        from evalcert.parallel import parallel_map

        i, j, _ = _problem(counts, ties)
        start = np.append(score, fit.eta) if ties == "davidson" else score
        lam = 0.0 if prior_sd is None else 1.0 / prior_sd ** 2
        n_blocks = min(n_boot, max(1, math.ceil(n_boot / 25)))
        sizes = [len(b) for b in np.array_split(np.arange(n_boot), n_blocks)]
        seeds = np.random.SeedSequence(seed).spawn(n_blocks)
        blocks = parallel_map(_boot_block, list(zip(seeds, sizes)),
                              shared=(counts.table(), i, j, K, ties, lam, start),
                              backend=backend, n_jobs=n_jobs, scheduler=scheduler,
                              progress=progress, desc="bootstrap refits")
        allx = np.vstack(blocks)
        ok = np.isfinite(allx).all(axis=1)
        n_failed = int((~ok).sum())
        draws = allx[ok, :K]
    if len(draws) >= 2:
        lo, hi = np.quantile(draws, [alpha / 2, 1 - alpha / 2], axis=0)
        r, r_lo, r_hi, _ = rank_from_draws(score, draws, alpha)
    else:
        lo = hi = np.full(K, np.nan)
        r = ranks_of(score)
        r_lo, r_hi = r.copy(), r.copy()
    per = counts.per_model()
    order = np.lexsort((np.arange(K), -score))
    pick = lambda a: np.asarray(a)[order]  # noqa: E731
    return RankResult(
        tuple(counts.models[k] for k in order), pick(score), pick(ELO_SCALE * score + ELO_BASE),
        pick(lo), pick(hi), pick(r), pick(r_lo), pick(r_hi), pick(per["wins"]),
        pick(per["losses"]), pick(per["ties"]), ties, fit.eta, prior_sd, fit.loglik,
        fit.iterations, fit.certificate, counts.n_battles, counts.n_pairs, dict(counts.dropped),
        int(n_boot), n_failed, float(alpha),
        {"fit": t_fit, "bootstrap": time.perf_counter() - t0 - t_fit}, judges)


@dataclasses.dataclass(frozen=True)
class _JudgedFit:
    theta: np.ndarray
    eta: None
    loglik: float
    iterations: int
    certificate: BTCertificate

