"""From the test to the population (issue 25, item 2): confidence statements about the
no-knowledge threshold of the population the items were drawn from.

The audit's ``T`` is exact for the ``Q`` items at hand. Suppose instead the items are drawn
i.i.d. from a population, and the graders are fixed decision rules (the same judges with
the same prompts; their randomness, if any, is part of the draw). The population has its
own threshold ``T_pop``: the same max-min over answer keys, with the item counts replaced
by the population's frequencies (a key is then a distribution of true labels). If every
grader were correct on more than ``x`` of every label of the population, the true key
would be a consistent point at level ``x``, so ``T_pop >= x``. Hence an upper confidence
bound ``U`` with ``P(T_pop <= U) >= level`` licenses: "with 95% confidence, not every
judge is above ``U`` on every label of the population".

The population sets are nested as the finite ones are (``T_full,pop <= T_2,pop <=
T_1,pop``: each is a relaxation of the next), so an upper bound on ``T_1,pop`` bounds all
three.

Two statements:

``exact`` (finite-sample, conservative; complete decisions)
    Under M=1 the population threshold is a closed form of the graders' label frequencies
    ``p_i[t]`` (grader ``i`` says ``t`` on a random item)::

        T_1,pop = sum_t min_i p_i[t]                       (population_threshold)

    (``max_kappa min_t min(1, m_t / kappa_t)`` with ``m_t = min_i p_i[t]`` over key
    distributions ``kappa``: ``kappa ~ m`` attains ``sum m``, and ``min_t m_t / kappa_t <=
    sum_t m_t / sum_t kappa_t`` for every ``kappa``.) Each count ``c_i[t]`` is
    Binomial(Q, ``p_i[t]``); its one-sided Clopper-Pearson upper bound ``U_i[t]`` at level
    ``1 - alpha / (N R)`` satisfies ``P(p_i[t] > U_i[t]) <= alpha / (N R)`` exactly (the
    Clopper-Pearson bound is conservative for every ``p``), so by Bonferroni
    ``P(some p_i[t] > U_i[t]) <= alpha``. The map ``p -> sum_t min_i p[i][t]`` is
    non-decreasing in every coordinate (a sum of minima of coordinates), so on the event
    ``p <= U`` (coordinate-wise) ``T_1,pop <= sum_t min_i U_i[t]``; and ``T_1,pop <= 1``.
    Hence ``U = min(1, sum_t min_i U_i[t])`` has ``P(T_pop <= U) >= 1 - alpha`` for
    ``T_1``, ``T_2`` and ``T_full`` of the population, at every ``Q``, with no
    approximation. It is conservative (Bonferroni, and the relaxation for M=2/full).
    Assumes: items i.i.d. from the population; graders fixed; every grader decides every
    item (skips would make ``p_i`` a sub-distribution of decided items; not covered).

``bootstrap`` (large-sample approximation; any M, skips allowed for the full joint)
    ``B`` item resamples (with replacement, ``Q`` each) are refitted exactly under the
    chosen M (M=1 by an integer closed form, vectorised; M=2 and the full joint by their
    ILPs, warm-started from the full sample's item-level key: each resampled item keeps
    the true label that key gave it, a consistent point of the resample whose exact value
    is a proven lower bound for the refit). The basic (reverse-percentile) bound
    ``U = 2 T - T*_(alpha)`` is reported, ``T*_(alpha)`` the lower ``alpha`` quantile of the
    resampled thresholds: ``T`` is a max-min of frequencies and biased low, and the basic
    bound adds that bias back, where the plain percentile bound would not (the tests check
    coverage by simulation). Assumes: items i.i.d.; graders fixed; the resampled spread of
    ``T`` mimics its spread around ``T_pop`` (no finite-sample guarantee; rough when
    ``Q`` is small or labels are rare).

Refits run through joblib (honouring an enclosing ``joblib.parallel_config``; one process
by default), with a progress bar on stderr once they pass ~3 s.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from evalcert.errors import InputError
from evalcert.logic.summaries import Decisions, LabelCounts
from evalcert.progress import DELAY, progress_bar
from evalcert.results import ResultMixin

__all__ = ["PopulationBound", "population_threshold", "m1_thresholds", "exact_upper",
           "bootstrap_upper", "population_bounds", "METHODS", "ASSUMES"]

METHODS = ("bootstrap", "exact")
#: what each statement assumes, in words (the JSON's ``assumes``)
ASSUMES = {
    "exact": "items drawn i.i.d. from the population; the graders fixed; every grader "
             "decides every item; finite-sample (Clopper-Pearson with Bonferroni over "
             "graders x labels, through the M=1 threshold map, which bounds M=2 and the "
             "full joint too)",
    "bootstrap": "items drawn i.i.d. from the population; the graders fixed; large-sample "
                 "approximation (basic bootstrap of the exact refits: the resampled spread "
                 "of T mimics its spread around the population's T)",
}
_WHICH = {"1": "T_1", "2": "T_2", "full": "T_full"}


@dataclasses.dataclass(frozen=True)
class PopulationBound(ResultMixin):
    """An upper confidence bound on the population's threshold under one M.

    Attributes
    ----------
    m : ``"1"``, ``"2"`` or ``"full"``
    level : confidence level
    method : ``"exact"`` or ``"bootstrap"``
    T_upper : float
        ``P(T_pop <= T_upper) >= level`` (exactly for ``exact``; approximately for
        ``bootstrap``).
    T_sample : Fraction
        The test's own exact ``T`` under this M.
    n_items : int
    assumes : str
    detail : dict
        ``exact``: the per-(grader, label) Clopper-Pearson bounds and their level;
        ``bootstrap``: resamples, seed, quantiles of the refitted ``T``, warm starts.

    Examples
    --------
    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> bound = population_bounds(table1_decisions(), ["1"], "exact")[0]
    >>> bound.m, bound.method, round(bound.T_upper, 4), bound.T_sample
    ('1', 'exact', 1.0, Fraction(2, 3))
    """

    m: str
    level: float
    method: str
    T_upper: float
    T_sample: Fraction
    n_items: int
    assumes: str
    detail: dict[str, Any] = dataclasses.field(default_factory=dict)

    def sentence(self) -> str:
        """One sentence for the report."""
        how = ("finite-sample, Clopper-Pearson through the M=1 map" if self.method == "exact"
               else f"basic bootstrap of {self.detail.get('resamples', '?')} exact refits")
        return (f"population ({how}): with {self.level:.0%} confidence, {_WHICH[self.m]} of "
                f"the population these {self.n_items:,} items were drawn from is at most "
                f"{self.T_upper:.4f}, so not every judge is above {self.T_upper:.1%} on every "
                f"label there (this test: {self.T_sample} = {float(self.T_sample):.4f}; "
                "assumes items i.i.d., judges fixed)")

    def summary(self) -> str:
        return self.sentence()

    def to_dict(self) -> dict[str, Any]:
        return {"m": self.m, "level": self.level, "method": self.method,
                "T_upper": self.T_upper, "T_sample": str(self.T_sample),
                "n_items": self.n_items, "assumes": self.assumes, "detail": self.detail}


def population_threshold(freqs: Any) -> Any:
    """``T_1`` of a population: ``sum_t min_i p[i][t]`` for grader label frequencies
    ``freqs`` ``(N, R)`` (module docstring); exact for Fractions.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> population_threshold([[F(1, 2), F(1, 2)], [F(1, 4), F(3, 4)]])
    Fraction(3, 4)
    """
    rows = [list(r) for r in freqs]
    return sum((min(col) for col in zip(*rows)), type(rows[0][0])(0))


def m1_thresholds(counts: np.ndarray, n_items: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``T_1`` (no key bounds) of many label-count tables at once: ``counts`` is
    ``(B, N, R)`` with every row summing to ``n_items``; returns numerators and
    denominators ``(B,)`` (``T = num / den``).

    ``T_1`` is the largest ``t`` with ``sum_l floor(m_l / t) >= Q`` (``m_l = min_i
    counts[i, l]``; :mod:`evalcert.logic.alarms`), a breakpoint ``m_l / k``. For each label
    the smallest such ``k`` lies in ``[ceil(Q m_l / S), ceil((Q + R) m_l / S)]`` (``S =
    sum m``: the floors lose less than one each), a window of at most ``R + 2`` integers,
    all checked; ``T = 1`` when ``S >= Q``. Equal to
    :func:`~evalcert.logic.alarms.alarm_threshold` (tests).

    Examples
    --------
    >>> num, den = m1_thresholds(np.array([[[5, 10, 10], [4, 18, 3]]]), 25)
    >>> int(num[0]), int(den[0])  # MT-Bench: 2/3
    (2, 3)
    """
    c = np.asarray(counts, dtype=np.int64)
    m = c.min(axis=1)                                   # (B, R)
    s = m.sum(axis=1)
    n_b, r = m.shape
    num, den = np.zeros(n_b, dtype=np.int64), np.ones(n_b, dtype=np.int64)
    q = int(n_items)
    for l in range(r):
        ml = m[:, l]
        live = ml > 0
        safe_ml, safe_s = np.where(live, ml, 1), np.where(s > 0, s, 1)
        k0 = (q * safe_ml + safe_s - 1) // safe_s
        found = np.zeros(n_b, dtype=np.int64)
        for d in range(r + 2):
            k = k0 + d
            total = (m * k[:, None] // safe_ml[:, None]).sum(axis=1)
            hit = live & (found == 0) & (total >= q)
            found[hit] = k[hit]
        better = live & (found > 0) & (ml * den > num * found)
        num[better], den[better] = ml[better], found[better]
    one = s >= q
    num[one], den[one] = 1, 1
    g = np.gcd(num, den)
    g[g == 0] = 1
    return num // g, den // g


def exact_upper(counts: LabelCounts, level: float = 0.95) -> tuple[float, dict[str, Any]]:
    """The finite-sample upper bound ``min(1, sum_t min_i U_i[t])`` on ``T_1`` (hence
    ``T_2``, ``T_full``) of the population, ``U_i[t]`` the one-sided Clopper-Pearson bounds
    at ``1 - (1 - level) / (N R)`` (module docstring: proof of the direction).

    Examples
    --------
    >>> from evalcert.logic.summaries import label_counts
    >>> big = label_counts({"x": {"a": 700, "b": 300}, "y": {"a": 400, "b": 600}})
    >>> upper, detail = exact_upper(big)
    >>> 0.7 < upper < 0.8, detail["per_test_level"]  # the population's T_1 near 0.7
    (True, 0.9875)
    """
    from scipy.stats import beta

    arr = np.asarray(counts.array, dtype=np.int64)
    n, (n_g, r) = counts.n_items, arr.shape
    if n < 1:
        raise InputError("a population bound needs at least one item")
    each = 1 - (1 - level) / (n_g * r)
    with np.errstate(all="ignore"):
        up = np.where(arr >= n, 1.0, beta.ppf(each, arr + 1, np.maximum(n - arr, 1)))
    up = np.minimum(np.nextafter(up, 2.0), 1.0)        # round outwards (a bound, not a point)
    upper = float(min(1.0, up.min(axis=0).sum()))
    return upper, {"per_test_level": round(each, 12),
                   "label_upper": {g: {lab: float(v) for lab, v in zip(counts.labels, row)}
                                   for g, row in zip(counts.graders, up)}}


def _full_split(dec: Decisions, solver: str) -> tuple[np.ndarray, np.ndarray | None]:
    """The distinct joint patterns ``(P, N)`` and a split ``(P, R)`` of their items by true
    label: the full sample's answer key (the full-joint LP point rounded to an exact key
    and improved by local search, :func:`~evalcert.logic.splits.joint_start`), or None."""
    from evalcert.logic.alarms import alarm_threshold
    from evalcert.logic.splits import improve_split, joint_patterns, joint_start

    pats, _ = joint_patterns(dec)
    top = alarm_threshold(dec.label_counts()) if dec.complete else Fraction(1)
    start = joint_start(dec, top, solver)
    if start is None:
        return pats, None
    return pats, improve_split(pats, np.asarray(start[2], dtype=np.int64))


def _warm(pats: np.ndarray, split: np.ndarray, improve: bool = True
          ) -> tuple[Fraction, tuple[int, ...], np.ndarray]:
    """``(value, key counts, split)`` of a split ``(P, R)`` of pattern items by true label
    (improved by the local search :func:`~evalcert.logic.splits.improve_split` when
    ``improve``): a consistent point of the full joint (and so of M=2), its value exact."""
    from evalcert.logic.splits import improve_split

    if improve:
        split = improve_split(pats, split)
    vals = []
    for i in range(pats.shape[1]):
        for t in range(split.shape[1]):
            den = int(split[pats[:, i] >= 0, t].sum())
            if den:
                vals.append(Fraction(int(split[pats[:, i] == t, t].sum()), den))
    return min(vals, default=Fraction(1)), tuple(int(v) for v in split.sum(axis=0)), split


def _resample(pats: np.ndarray, cells: np.ndarray, labels: tuple[str, ...],
              graders: tuple[str, ...]) -> tuple[Decisions, np.ndarray, np.ndarray]:
    """The resample with ``cells[p, t]`` items of pattern ``p`` and true label ``t`` (or
    ``cells[p]`` items of pattern ``p``): its decisions, patterns and split."""
    cells = cells.reshape(len(pats), -1)
    w = cells.sum(axis=1)
    rows = np.repeat(pats, w, axis=0)
    dec = Decisions(tuple(str(k) for k in range(len(rows))), graders, labels,
                    tuple(tuple(int(v) for v in row) for row in rows))
    return dec, pats[w > 0], cells[w > 0]


def _refit(cells: np.ndarray, pats: np.ndarray, labels: tuple[str, ...],
           graders: tuple[str, ...], m: str, solver: str,
           warm: bool) -> tuple[Fraction, bool, bool]:
    """Exact ``T`` under M=2 or the full joint on one resample (``cells``: item counts per
    pattern and true label of the full sample's key), warm-started (``warm``) from that key:
    every resampled item keeps the true label the full sample's key gave it. Returns ``T``,
    whether the warm start was used, and whether CBC had to refit after a HiGHS error."""
    from evalcert.logic.joint import alarm_full
    from evalcert.logic.pairs import alarm_m2
    from evalcert.logic.splits import joint_patterns

    dec, sub_pats, sub_split = _resample(pats, cells, labels, graders)
    start = None
    if warm:
        own, _ = joint_patterns(dec)
        if own.shape == sub_pats.shape and (own == sub_pats).all():   # same pattern order
            start = _warm(sub_pats, sub_split)
    from evalcert.errors import SolverError

    run = alarm_full if m == "full" else alarm_m2
    try:
        return run(dec, "0", solver=solver, max_checks=0, max_binding_keys=0,
                   start=start).T, start is not None, False
    except SolverError:
        if solver == "cbc":
            raise
    # HiGHS 1.16 stops with 'Solve error' on some fixed-key MILPs of small logs (one in
    # tests/data/logic/highs_solve_error.csv): refit by the level search with CBC, exact too
    return run(dec, "0", solver="cbc", max_checks=0, max_binding_keys=0).T, False, True


def bootstrap_upper(decisions: Decisions, m: str, t_sample: Fraction, *,
                    level: float = 0.95, resamples: int = 200, seed: int = 0,
                    solver: str = "highs", progress: bool = False) -> tuple[float, dict]:
    """Basic-bootstrap upper bound ``2 T - T*_(alpha)`` on the population's ``T`` under
    ``m`` (``"1"``, ``"2"``, ``"full"``) from ``resamples`` exact refits (module docstring).

    Items are resampled through their distinct joint patterns (``Q`` items drawn with
    replacement is a multinomial draw of ``Q`` over the patterns; with the full sample's key,
    over the (pattern, true label) cells), so the cost grows with the patterns, not ``Q``.

    Examples
    --------
    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> from fractions import Fraction
    >>> upper, detail = bootstrap_upper(table1_decisions(), "1", Fraction(2, 3),
    ...                                 resamples=100)
    >>> upper >= 2 / 3, detail["resamples"]
    (True, 100)
    """
    import joblib

    from evalcert.logic.splits import joint_patterns

    m = str(m)
    n, r = len(decisions.items), len(decisions.labels)
    if n < 1:
        raise InputError("a population bound needs at least one item")
    rng = np.random.default_rng(seed)
    warm_used = by_cbc = 0
    if m == "1":
        if not decisions.complete:
            raise InputError("the M=1 bootstrap needs every grader on every item; use --m "
                             "full with --on-missing keep")
        pats, counts = joint_patterns(decisions)
        onehot = (pats[:, :, None] == np.arange(r)).astype(np.int64)      # (P, N, R)
        values = np.empty(resamples)
        bar = progress_bar(progress, resamples, "population bootstrap (M=1)", unit="resample",
                           delay=DELAY)
        step = max(1, min(4096, 2_000_000 // len(pats)))
        for lo in range(0, resamples, step):
            size = min(step, resamples - lo)
            weights = rng.multinomial(n, counts / n, size=size)           # (b, P)
            num, den = m1_thresholds(np.einsum("bp,pnr->bnr", weights, onehot), n)
            values[lo:lo + size] = num / den
            bar.update(size)
        bar.close()
    elif m in ("2", "full"):
        if m == "2" and not decisions.complete:
            raise InputError("the M=2 bootstrap needs every grader on every item")
        pats, split = _full_split(decisions, solver)
        if split is None:
            _, counts = joint_patterns(decisions)
            split = counts[:, None]
        probs = (split / n).ravel()
        draws = (rng.multinomial(n, probs).reshape(split.shape) for _ in range(resamples))
        tasks = (joblib.delayed(_refit)(cells, pats, decisions.labels, decisions.graders, m,
                                        solver, split.shape[1] == r) for cells in draws)
        bar = progress_bar(progress, resamples, f"population bootstrap ({_WHICH[m]} refits)",
                           unit="refit", delay=DELAY)
        out = []
        for t_val, used, fell_back in joblib.Parallel(return_as="generator")(tasks):
            out.append(t_val)
            warm_used += used
            by_cbc += fell_back
            bar.update(1)
        bar.close()
        values = np.array([float(v) for v in out])
    else:
        raise InputError(f"m={m!r}; use 1, 2 or full")
    alpha = 1 - level
    low = float(np.quantile(values, alpha, method="inverted_cdf"))
    upper = float(min(1.0, max(0.0, 2 * float(t_sample) - low)))
    return upper, {"resamples": resamples, "seed": seed, "interval": "basic",
                   "t_star_low": low,
                   "t_star_high": float(np.quantile(values, level, method="inverted_cdf")),
                   "t_star_mean": float(values.mean()), "warm_starts": warm_used,
                   "refits_by_cbc": by_cbc}


def population_bounds(data: Decisions | LabelCounts, ms: Sequence[str], method: str,
                      t_sample: dict[str, Fraction] | None = None, *, level: float = 0.95,
                      resamples: int = 200, seed: int = 0, solver: str = "highs",
                      progress: bool = False) -> tuple[PopulationBound, ...]:
    """Upper confidence bounds on the population's ``T`` under each M in ``ms`` (``"1"``,
    ``"2"``, ``"full"``), by ``method`` (``"exact"`` or ``"bootstrap"``); ``t_sample`` holds
    the test's exact ``T`` per M when already computed (else computed here).

    Examples
    --------
    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> b = population_bounds(table1_decisions(), ["1"], "bootstrap", resamples=50)[0]
    >>> b.method, b.detail["resamples"], b.T_upper >= float(b.T_sample)
    ('bootstrap', 50, True)
    """
    if method not in METHODS:
        raise InputError(f"--population {method!r}: use bootstrap, exact or none")
    if not 0 < level < 1:
        raise InputError(f"--confidence {level}: give a level strictly between 0 and 1, "
                         "e.g. 0.95")
    if isinstance(resamples, bool) or not isinstance(resamples, int) or \
            not 1 <= resamples <= 100_000:
        raise InputError(f"--resamples {resamples!r}: give 1 to 100,000 resamples")
    t_sample = dict(t_sample or {})
    ms = [str(v) for v in ms]
    out = []
    for m in ms:
        if m not in _WHICH:
            raise InputError(f"m={m!r}; use 1, 2 or full")
        if m not in t_sample:
            t_sample[m] = _threshold(data, m, solver)
        n = data.n_items if isinstance(data, LabelCounts) else len(data.items)
        if method == "exact":
            if isinstance(data, Decisions) and not data.complete:
                raise InputError("--population exact needs every grader on every item (a "
                                 "skipped decision is not a label frequency); use --population "
                                 "bootstrap, or --on-missing drop")
            counts = data if isinstance(data, LabelCounts) else data.label_counts()
            upper, detail = exact_upper(counts, level)
            if m != "1":
                detail = {**detail, "through": "T_1 (the population's T_2 and T_full are "
                                               "at most its T_1)"}
        else:
            if not isinstance(data, Decisions):
                raise InputError("--population bootstrap resamples items: it needs the "
                                 "decisions (a judge log), not label counts; use --population "
                                 "exact")
            upper, detail = bootstrap_upper(data, m, t_sample[m], level=level,
                                            resamples=resamples, seed=seed, solver=solver,
                                            progress=progress)
        out.append(PopulationBound(m, level, method, upper, t_sample[m], n, ASSUMES[method],
                                   detail))
    return tuple(out)


def _threshold(data: Decisions | LabelCounts, m: str, solver: str) -> Fraction:
    from evalcert.logic.alarms import alarm_threshold

    if m == "1":
        return alarm_threshold(data.label_counts() if isinstance(data, Decisions) else data)
    if not isinstance(data, Decisions):
        raise InputError(f"--m {m} needs the decisions (a judge log), not label counts")
    from evalcert.logic.joint import full_alarm_threshold
    from evalcert.logic.pairs import m2_alarm_threshold

    return (full_alarm_threshold if m == "full" else m2_alarm_threshold)(data, solver=solver)
