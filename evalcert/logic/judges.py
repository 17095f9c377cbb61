"""Which judge is broken, and how sure (issue 25): one row per judge of a panel.

For every judge the table puts side by side

* what is **estimated**: its Dawid-Skene accuracy (overall, ``sum_t pi_t P(says t | t)``,
  and per label) with an item-bootstrap percentile interval; its agreement with the rest
  (mean Cohen's kappa with each other judge, statsmodels; Krippendorff's alpha of the panel
  without it, krippendorff);
* what is **certain** (exact, no model): its range of possible accuracy per label at the
  attaining keys with every judge at least ``T`` (:mod:`evalcert.logic.bounds`), and whether
  it binds ``T`` (no consistent evaluation puts it above ``T`` on some label);
* what is **degenerate**: one label on (nearly) everything while the others spread their
  labels, or a near-copy of another judge (same label on nearly every shared item).

The flag of a row is ``"degenerate"``, ``"copy"``, ``"weakest"`` or None. ``"weakest"`` goes
to the judge with the lowest Dawid-Skene accuracy only when its bootstrap interval lies
wholly more than ``WEAKEST_GAP`` (0.05) below the median accuracy of the others (a clear
gap, estimated; a judge a few points below a good panel is not "broken"); the exact part of
the verdict says whether it is also certain (it binds ``T``).

Dawid-Skene is fitted here by EM on the joint decision patterns with counts (the same fit as
crowd-kit's, initialised by majority vote; cross-checked in the tests), because a bootstrap
resample of items is then just new pattern counts, and all resamples are fitted at once
(one batched EM): 200 refits cost about as much as one crowd-kit fit.
"""

from __future__ import annotations

import dataclasses
import itertools
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from evalcert.errors import InputError
from evalcert.logic.summaries import Decisions
from evalcert.results import ResultMixin, format_table

__all__ = ["JudgeRow", "JudgeTable", "judge_table", "dawid_skene", "FLAGS"]

FLAGS = ("weakest", "degenerate", "copy")
#: a judge saying one label on at least this share of its items is degenerate ...
DEGENERATE_SHARE = 0.95
#: ... when the other judges give that label this much less often on average
DEGENERATE_GAP = 0.2
#: "weakest" needs its whole bootstrap interval this far below the others' median accuracy
WEAKEST_GAP = 0.05
#: two judges agreeing on at least this share of the items both decided are near-copies ...
COPY_AGREEMENT = 0.98
#: ... when the panel's other pairs agree this much less on average
COPY_GAP = 0.1


def dawid_skene(patterns: np.ndarray, weights: np.ndarray, n_labels: int, *,
                n_iter: int = 100, tol: float = 1e-9) -> tuple[np.ndarray, np.ndarray]:
    """Dawid & Skene (1979) EM on joint decision patterns ``(P, N)`` (``-1`` = skipped) with
    item counts ``weights`` ``(P,)``, or ``(B, P)`` for B fits at once (bootstrap
    resamples); returns the label prior ``(R,)`` and confusion matrices ``(N, R, R)``
    (``[i, t, l] = P(judge i says l | truth t)``), with a leading ``B`` axis for 2-D
    weights; started from majority vote.

    Examples
    --------
    >>> pats = np.array([[0, 0, 0], [1, 1, 1], [0, 0, 1]])
    >>> prior, conf = dawid_skene(pats, np.array([10, 10, 5]), 2)
    >>> bool(conf[2, 0, 0] < conf[0, 0, 0])  # judge 2 errs on the third pattern
    True
    """
    pats = np.asarray(patterns, dtype=np.int64)
    w = np.asarray(weights, dtype=float)
    single = w.ndim == 1
    w = w[None] if single else w                                          # (B, P)
    said = np.stack([(pats == t) for t in range(n_labels)], axis=2).astype(float)  # (P, N, R)
    n_b, (n_p, n_g) = w.shape[0], pats.shape
    flat = said.reshape(n_p, n_g * n_labels)
    post = said.sum(axis=1) + 1e-9
    post = np.broadcast_to(post / post.sum(axis=1, keepdims=True), w.shape + (n_labels,))
    prior = conf = None
    for _ in range(n_iter):
        wp = post * w[:, :, None]                                         # (B, P, R)
        prior = wp.sum(axis=1) / np.maximum(w.sum(axis=1, keepdims=True), 1e-300)
        # conf[b, i, t, l] = sum_p wp[b, p, t] said[p, i, l], as one matrix product
        conf = (wp.transpose(0, 2, 1) @ flat).reshape(n_b, n_labels, n_g, n_labels) \
            .transpose(0, 2, 1, 3) + 1e-12
        conf /= conf.sum(axis=3, keepdims=True)
        logc = np.log(conf).transpose(0, 1, 3, 2).reshape(n_b, n_g * n_labels, n_labels)
        loglik = flat @ logc + np.log(prior + 1e-300)[:, None, :]
        loglik -= loglik.max(axis=2, keepdims=True)
        new = np.exp(loglik)
        new /= new.sum(axis=2, keepdims=True)
        done = np.abs(new - post).max() < tol
        post = new
        if done:
            break
    return (prior[0], conf[0]) if single else (prior, conf)


@dataclasses.dataclass(frozen=True)
class JudgeRow(ResultMixin):
    """One judge of the panel (see the module docstring).

    Attributes
    ----------
    judge : str
    ds_accuracy : float
        Dawid-Skene accuracy ``sum_t pi_t P(says t | t)`` (estimated).
    ds_ci_low, ds_ci_high : float or None
        Item-bootstrap percentile interval of ``ds_accuracy`` (None without a bootstrap).
    ds_per_label : dict
        ``{label: P(says label | label)}`` (estimated).
    kappa_mean : float or None
        Mean Cohen's kappa with each other judge.
    alpha_without : float or None
        Krippendorff's alpha (nominal) of the panel without this judge (None with < 3
        judges).
    min_accuracy, max_accuracy : Fraction or None
        Exact, at the listed attaining keys with every judge at least ``T``: the smallest
        accuracy the judge can have on any label, and the largest its worst label can
        reach (``min_l max acc_l``, an exact upper bound; ``= T`` when it binds).
    per_label : dict
        ``{label: [min, max]}`` exact accuracy ranges (strings of fractions).
    binds : bool
        No consistent evaluation puts it above ``T`` on some label (certain).
    swap_consistency : float or None
        Share of swapped presentations judged the same (where orders are known).
    top_label_share : float
        Share of its decided items given its most used label.
    flag : str or None
        ``"weakest"``, ``"degenerate"``, ``"copy"`` or None.
    reason : str
        Why the flag (empty without one).

    Examples
    --------
    >>> from evalcert.logic.simulate import simulate_decisions
    >>> row = judge_table(simulate_decisions(200, 2, 3, seed=0), n_boot=0).rows[0]
    >>> row.judge, 0 <= row.ds_accuracy <= 1, row.ds_ci_low is None
    ('judge0', True, True)
    """

    judge: str
    ds_accuracy: float
    ds_ci_low: float | None
    ds_ci_high: float | None
    ds_per_label: dict[str, float]
    kappa_mean: float | None
    alpha_without: float | None
    min_accuracy: Fraction | None
    max_accuracy: Fraction | None
    per_label: dict[str, list[str]] | None
    binds: bool
    swap_consistency: float | None
    top_label_share: float
    flag: str | None
    reason: str

    def summary(self) -> str:
        return f"{self.judge}: {self.flag or '-'} {self.reason}".rstrip()


@dataclasses.dataclass(frozen=True)
class JudgeTable(ResultMixin):
    """The per-judge table and its plain verdict.

    Attributes
    ----------
    rows : tuple of JudgeRow
    T : Fraction or None
        The alarm's exact threshold the bounds refer to.
    n_boot, seed, level : the bootstrap of the Dawid-Skene accuracies
    verdict : tuple of str
        Plain sentences, flagged judges first.

    Examples
    --------
    >>> from evalcert.logic.simulate import simulate_decisions
    >>> table = judge_table(simulate_decisions(200, 2, 3, seed=0), n_boot=20)
    >>> [row["judge"] for row in table.to_dict()], table.summary().splitlines()[0][:20]
    (['judge0', 'judge1', 'judge2'], 'no judge is clearly ')
    """

    rows: tuple[JudgeRow, ...]
    T: Fraction | None
    n_boot: int
    seed: int
    level: float
    verdict: tuple[str, ...]

    def summary(self) -> str:
        def f(v: Any) -> str:
            return "-" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))

        order = sorted(self.rows, key=lambda r: (r.flag is None, r.ds_accuracy))
        table = [[r.judge, r.flag or "", f(r.ds_accuracy),
                  f"[{f(r.ds_ci_low)}, {f(r.ds_ci_high)}]", f(r.kappa_mean),
                  f(r.alpha_without), f(r.min_accuracy), f(r.max_accuracy),
                  "yes" if r.binds else "", f(r.swap_consistency)] for r in order]
        head = ["judge", "flag", "DS acc", f"{self.level:.0%} CI", "kappa", "alpha w/o",
                "min acc", "max worst", "binds T", "swap"]
        return "\n".join(self.verdict) + "\n" + format_table(table, head)

    def to_dict(self) -> list[dict[str, Any]]:  # type: ignore[override]
        keys = ("judge", "ds_accuracy", "ds_ci_low", "ds_ci_high", "kappa_mean",
                "alpha_without", "min_accuracy", "max_accuracy", "swap_consistency", "flag")
        out = []
        for r in self.rows:
            row = {k: getattr(r, k) for k in keys}
            for k in ("min_accuracy", "max_accuracy"):
                row[k] = None if row[k] is None else str(row[k])
            row.update(ds_per_label=r.ds_per_label, per_label=r.per_label, binds=r.binds,
                       top_label_share=r.top_label_share, reason=r.reason)
            out.append(row)
        return out

    def csv_rows(self) -> list[dict[str, Any]]:
        """Flat rows for a CSV (per-label maps as ``label=value;...``)."""
        rows = []
        for row in self.to_dict():
            flat = dict(row)
            flat["ds_per_label"] = ";".join(f"{k}={v:.4f}" for k, v in row["ds_per_label"].items())
            flat["per_label"] = ";".join(f"{k}=[{a},{b}]" for k, (a, b) in
                                         (row["per_label"] or {}).items())
            rows.append(flat)
        return rows


def _kappas(arr: np.ndarray, r: int) -> np.ndarray:
    from statsmodels.stats.inter_rater import cohens_kappa

    n = arr.shape[1]
    out = np.full((n, n), np.nan)
    for i, j in itertools.combinations(range(n), 2):
        both = (arr[:, i] >= 0) & (arr[:, j] >= 0)
        tab = np.zeros((r, r), dtype=np.int64)
        np.add.at(tab, (arr[both, i], arr[both, j]), 1)
        if both.sum() == 0:
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            out[i, j] = out[j, i] = float(cohens_kappa(tab, return_results=False))
    return out


def _alpha(arr: np.ndarray, r: int) -> float | None:
    import krippendorff

    if arr.shape[1] < 2:
        return None
    data = np.where(arr >= 0, arr, np.nan).T.astype(float)
    try:
        return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal",
                                        value_domain=list(range(r))))
    except ValueError:  # one value in the whole table
        return None


def _exact_ranges(bounds: Any, judge: str, labels: Sequence[str]
                  ) -> tuple[Fraction | None, Fraction | None, dict[str, list[str]] | None]:
    if bounds is None:
        return None, None, None
    lo: dict[str, Fraction] = {}
    hi: dict[str, Fraction] = {}
    for row in bounds.rows():
        if row["grader"] != judge or row["min_accuracy"] in (None, ""):
            continue
        a, b = Fraction(row["min_accuracy"]), Fraction(row["max_accuracy"])
        lab = row["label"]
        lo[lab] = min(lo.get(lab, a), a)
        hi[lab] = max(hi.get(lab, b), b)
    if not lo:
        return None, None, None
    per = {lab: [str(lo[lab]), str(hi[lab])] for lab in labels if lab in lo}
    return min(lo.values()), min(hi.values()), per


def judge_table(decisions: Decisions, result: Any = None, bounds: Any = None, *,
                n_boot: int = 200, seed: int = 0, level: float = 0.95,
                swap: dict[str, float] | None = None) -> JudgeTable:
    """The per-judge table of a panel (module docstring).

    Parameters
    ----------
    decisions : Decisions
    result : AlarmResult or None
        The alarm whose ``T`` and binding pairs give the certain part.
    bounds : LabelBounds or None
        Exact per-(judge, label) ranges at ``T`` (:func:`evalcert.logic.bounds.label_bounds`).
    n_boot, seed, level : item bootstrap of the Dawid-Skene accuracies (0: no interval)
    swap : ``{judge: share of swapped presentations judged the same}``

    Examples
    --------
    >>> from evalcert.logic.simulate import simulate_decisions
    >>> dec = simulate_decisions(300, 3, 4, seed=1, acc_low=0.8, acc_high=0.9)
    >>> table = judge_table(dec, n_boot=50)
    >>> [r.flag for r in table.rows]  # four good judges: nobody flagged
    [None, None, None, None]
    """
    if not isinstance(decisions, Decisions):
        raise InputError("the per-judge table needs the decisions (a judge log), not label "
                         "counts")
    if len(decisions.graders) < 2:
        raise InputError("the per-judge table needs at least two judges")
    if not 0 <= n_boot <= 100_000:
        raise InputError(f"n_boot={n_boot}: give 0 to 100,000 resamples")
    arr = decisions.array
    r, n = len(decisions.labels), len(decisions.graders)
    pats, inverse, counts = np.unique(arr, axis=0, return_inverse=True, return_counts=True)
    prior, conf = dawid_skene(pats, counts, r)
    acc = np.einsum("t,itt->i", prior, conf)
    lo_ci = hi_ci = None
    if n_boot:
        rng = np.random.default_rng(seed)
        w = rng.multinomial(len(arr), counts / counts.sum(), size=n_boot)    # (B, P)
        pb, cb = dawid_skene(pats, w, r)
        boots = np.einsum("bt,bitt->bi", pb, cb)
        lo_ci, hi_ci = np.quantile(boots, [(1 - level) / 2, (1 + level) / 2], axis=0)
    kap = _kappas(arr, r)
    alphas = [(_alpha(np.delete(arr, i, axis=1), r) if n >= 3 else None) for i in range(n)]
    decided = arr >= 0
    shares = np.array([np.bincount(arr[decided[:, i], i], minlength=r) / max(decided[:, i].sum(), 1)
                       for i in range(n)])                                     # (N, R)
    top = shares.argmax(axis=1)
    flags: dict[int, tuple[str, str]] = {}
    for i in range(n):
        others = np.delete(shares[:, top[i]], i).mean()
        if shares[i, top[i]] >= DEGENERATE_SHARE and others <= shares[i, top[i]] - DEGENERATE_GAP:
            flags[i] = ("degenerate", f"says {decisions.labels[top[i]]!r} on "
                        f"{shares[i, top[i]]:.0%} of its items (the others: {others:.0%})")
    agree = np.full((n, n), np.nan)
    for i, j in itertools.combinations(range(n), 2):
        both = decided[:, i] & decided[:, j]
        if both.sum() >= 10:
            agree[i, j] = agree[j, i] = float((arr[both, i] == arr[both, j]).mean())
    for i, j in itertools.combinations(range(n), 2):
        if np.isnan(agree[i, j]) or agree[i, j] < COPY_AGREEMENT:
            continue
        rest = [agree[a, b] for a, b in itertools.combinations(range(n), 2)
                if {a, b} != {i, j} and not np.isnan(agree[a, b])]
        if rest and np.mean(rest) > agree[i, j] - COPY_GAP:
            continue
        for a, b in ((i, j), (j, i)):
            if a not in flags:
                flags[a] = ("copy", f"near-copy of {decisions.graders[b]}: the same label on "
                            f"{agree[a, b]:.1%} of the items both decided (other pairs: "
                            f"{np.mean(rest) if rest else float('nan'):.1%})")
    binding = {g for g, _ in (result.binding if result is not None else ())}
    T = result.T if result is not None else None
    candidates = [i for i in range(n) if i not in flags]
    if len(candidates) >= 2:
        w = min(candidates, key=lambda i: acc[i])
        rest = np.median([acc[i] for i in range(n) if i != w])
        top_w = hi_ci[w] if hi_ci is not None else acc[w]
        if top_w < rest - WEAKEST_GAP:
            how = "certain: it binds T" if decisions.graders[w] in binding else \
                "estimated (Dawid-Skene); the exact bounds do not single it out"
            flags[w] = ("weakest", f"Dawid-Skene accuracy {acc[w]:.3f} is "
                        f"{rest - acc[w]:.3f} below the others' median {rest:.3f}"
                        + (f" ({level:.0%} interval up to {top_w:.3f})"
                           if hi_ci is not None else "") + f"; {how}")
    rows = []
    for i, g in enumerate(decisions.graders):
        mn, mx, per = _exact_ranges(bounds, g, decisions.labels)
        ks = np.delete(kap[i], i)
        flag, reason = flags.get(i, (None, ""))
        rows.append(JudgeRow(
            judge=g, ds_accuracy=float(acc[i]),
            ds_ci_low=None if lo_ci is None else float(lo_ci[i]),
            ds_ci_high=None if hi_ci is None else float(hi_ci[i]),
            ds_per_label={lab: float(conf[i, t, t]) for t, lab in enumerate(decisions.labels)},
            kappa_mean=None if np.isnan(ks).all() else float(np.nanmean(ks)),
            alpha_without=alphas[i], min_accuracy=mn, max_accuracy=mx, per_label=per,
            binds=g in binding, swap_consistency=None if swap is None else swap.get(g),
            top_label_share=float(shares[i, top[i]]), flag=flag, reason=reason))
    verdict = [f"{decisions.graders[i]}: {flags[i][0]} ({flags[i][1]})" for i in sorted(flags)]
    if not any(f == "weakest" for f, _ in flags.values()):
        verdict.append("no judge is clearly weakest: no Dawid-Skene interval lies wholly "
                       f"{WEAKEST_GAP} below the others' median")
    if binding and T is not None:
        verdict.append(f"certain (exact): {', '.join(sorted(binding))} bind T = {T}: at the "
                       "attaining keys no consistent evaluation with every judge >= T puts "
                       "them above T on every label")
    return JudgeTable(tuple(rows), T, n_boot, seed, level, tuple(verdict))
