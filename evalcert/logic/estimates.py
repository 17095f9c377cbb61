"""Point estimates beside the logical bounds: Dawid-Skene and majority vote through crowd-kit,
inter-rater agreement through statsmodels and krippendorff, and an item bootstrap of T.

The logic bounds what any estimate may claim. An estimate that puts every grader at or
above ``a`` on every label is logically possible only if ``a <= T`` (``T`` of the M used:
no answer key is consistent with more), so every estimate is checked against ``T`` and the
report says when it lies outside the logically consistent set. The hard labels of an
estimate are one answer key for the items; the evaluation they induce (correct counts per
grader and label) is computed exactly and is consistent by construction.

crowd-kit, statsmodels and krippendorff are imported only when these functions run.
"""

from __future__ import annotations

import dataclasses
import warnings
from fractions import Fraction
from typing import Any, Sequence

import numpy as np
import pandas as pd

from evalcert.errors import BackendUnavailableError, InputError
from evalcert.logic.summaries import Decisions
from evalcert.results import ResultMixin, format_table

__all__ = ["Estimate", "Agreement", "estimate", "accuracies_consistent", "agreement",
           "bootstrap_t"]

ESTIMATORS = ("ds", "mv")
#: what each estimator runs, for progress messages
ESTIMATOR_NAMES = {"ds": "Dawid-Skene EM (crowd-kit)", "mv": "majority vote (crowd-kit)"}


def _import(module: str, package: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise BackendUnavailableError(f"{package} is not installed; pip install {package} "
                                      "(or evalcert[estimates])") from None


@dataclasses.dataclass(frozen=True)
class Estimate(ResultMixin):
    """One point estimate of the answer key and of the graders' accuracies.

    Attributes
    ----------
    method : str
        ``"Dawid-Skene (crowd-kit)"`` or ``"majority vote (crowd-kit)"``.
    key : tuple of int
        Label counts of the estimate's hard labels.
    correct, decided : dict
        ``{grader: per-label counts}`` at those hard labels: items of each true label the
        grader got right, and decided (exact ints).
    hard_min : Fraction
        ``min correct / decided`` over graders and non-empty labels, at the hard labels.
    model_accuracy : dict or None
        Dawid-Skene's own ``P(says l | truth l)`` per grader and label (floats).
    claimed_min : float
        What the estimate claims every grader reaches on every label (Dawid-Skene: the
        smallest model accuracy; majority vote: ``hard_min``).
    consistent : bool
        What ``checked`` says was checked holds. Dawid-Skene: one answer key gives every
        grader at least its Dawid-Skene accuracy (rounded down to 1/1000) on every label at
        once, under the full-joint axioms (an exact MILP over the whole evaluation, not only
        its minimum). Majority vote: its hard labels are an answer key, so its evaluation is
        a point of the consistent set by construction, and ``hard_min <= T``.
    T : Fraction
    checked : str
        The check, in words.

    Examples
    --------
    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> e = estimate(table1_decisions(), Fraction(5, 8), "mv")
    >>> e.method, e.key, e.hard_min, e.consistent
    ('majority vote (crowd-kit)', (7, 16, 2), Fraction(9, 16), True)
    """

    method: str
    key: tuple[int, ...]
    correct: dict[str, tuple[int, ...]]
    decided: dict[str, tuple[int, ...]]
    hard_min: Fraction
    model_accuracy: dict[str, tuple[float, ...]] | None
    claimed_min: float
    consistent: bool
    T: Fraction
    checked: str = ""

    def summary(self) -> str:
        verdict = "holds" if self.consistent else "FAILS: no answer key allows it"
        return (f"{self.method}: key {self.key}; claims every grader >= {self.claimed_min:.4f} "
                f"on every label vs T = {self.T} ({float(self.T):.4f}); checked: "
                f"{self.checked}: {verdict}; at its hard labels the worst (grader, label) "
                f"accuracy is {self.hard_min}")


def _long(dec: Decisions) -> pd.DataFrame:
    arr = dec.array
    k, i = np.nonzero(arr >= 0)
    return pd.DataFrame({"task": np.asarray(dec.items, dtype=object)[k],
                         "worker": np.asarray(dec.graders, dtype=object)[i],
                         "label": np.asarray(dec.labels, dtype=object)[arr[k, i]]})


def accuracies_consistent(decisions: Decisions, levels: dict[str, Sequence[Fraction]],
                          solver: str = "highs") -> bool:
    """Whether one answer key gives every grader ``i`` at least ``levels[i][t]`` accuracy on
    every label ``t`` it decided items of, under the full-joint axioms (exact MILP on
    :class:`evalcert.logic.splits.JointModel`; a label without items makes no demand).

    Examples
    --------
    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> dec = table1_decisions()
    >>> accuracies_consistent(dec, {"authors": [Fraction(5, 8)] * 3, "gpt4": [Fraction(5, 8)] * 3})
    True
    >>> accuracies_consistent(dec, {"authors": [Fraction(2, 3)] * 3, "gpt4": [Fraction(2, 3)] * 3})
    False
    """
    import pulp

    from evalcert.logic.ilp import run_solver
    from evalcert.logic.splits import JointModel

    model = JointModel(decisions)
    for i, g in enumerate(decisions.graders):
        for t, f in enumerate(levels[g]):
            f = Fraction(f)
            model.prob += (f.denominator * model.correct[i][t]
                           >= f.numerator * model.den[i][t]), f"claim_{i}_{t}"
    model.prob += pulp.lpSum([])
    status, _ = run_solver(model.prob, solver)
    return status == "Optimal"


def estimate(decisions: Decisions, T: Fraction, method: str = "ds", *, n_iter: int = 100,
             solver: str = "highs") -> Estimate:
    """Dawid-Skene (``"ds"``) or majority vote (``"mv"``) through crowd-kit, checked against
    the alarm threshold ``T``.

    Examples
    --------
    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> e = estimate(table1_decisions(), Fraction(5, 8), "mv")
    >>> e.consistent
    True
    """
    if method not in ESTIMATORS:
        raise InputError(f"estimator {method!r}; use one of {ESTIMATORS}")
    agg = _import("crowdkit.aggregation", "crowd-kit")
    frame = _long(decisions)
    with warnings.catch_warnings():  # crowd-kit's own pandas deprecation notices
        warnings.filterwarnings("ignore", module="crowdkit")
        if method == "ds":
            model = agg.DawidSkene(n_iter=n_iter).fit(frame)
            labels, name = model.labels_, "Dawid-Skene (crowd-kit)"
        else:
            model, name = None, "majority vote (crowd-kit)"
            labels = agg.MajorityVote().fit_predict(frame)
    # one vectorised lookup (a Python loop over labels[item] took 30 s at 333,334 items)
    truth = pd.Index(decisions.labels).get_indexer(
        labels.reindex(pd.Index(decisions.items, dtype=object)).to_numpy(dtype=object))
    arr, r = decisions.array, len(decisions.labels)
    correct, decided, ratios = {}, {}, []
    for i, g in enumerate(decisions.graders):
        c = tuple(int(((truth == t) & (arr[:, i] == t)).sum()) for t in range(r))
        d = tuple(int(((truth == t) & (arr[:, i] >= 0)).sum()) for t in range(r))
        correct[g], decided[g] = c, d
        ratios += [Fraction(a, b) for a, b in zip(c, d) if b > 0]
    hard_min = min(ratios)
    acc = None
    claimed = float(hard_min)
    if model is not None:
        err = model.errors_
        acc = {g: tuple(float(err.loc[(g, lab), lab]) if (g, lab) in err.index else float("nan")
                        for lab in decisions.labels) for g in decisions.graders}
        present = set(labels)
        claimed = min(a for g in acc for lab, a in zip(decisions.labels, acc[g])
                      if lab in present and not np.isnan(a))
    key = tuple(int((truth == t).sum()) for t in range(r))
    if acc is None:
        checked = ("its hard labels are an answer key, so its evaluation is a point of the "
                   f"consistent set by construction, and its worst cell {hard_min} <= T")
        ok = hard_min <= T
    else:
        levels = {g: [Fraction(int(np.floor(a * 1000 + 1e-9)), 1000) if not np.isnan(a)
                      and lab in present else Fraction(0)
                      for lab, a in zip(decisions.labels, acc[g])] for g in decisions.graders}
        checked = ("one answer key gives every grader at least its Dawid-Skene accuracy "
                   "(rounded down to 1/1000) on every label at once, under the full-joint "
                   "axioms (exact MILP)")
        ok = accuracies_consistent(decisions, levels, solver)
    return Estimate(name, key, correct, decided, hard_min, acc, claimed, ok, T, checked)


@dataclasses.dataclass(frozen=True)
class Agreement(ResultMixin):
    """Inter-rater agreement: Fleiss' kappa (complete decisions), Cohen's kappa per pair of
    graders (statsmodels) and Krippendorff's alpha, nominal (krippendorff).

    Examples
    --------
    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> stats = agreement(table1_decisions())
    >>> round(stats.fleiss_kappa, 4), round(stats.krippendorff_alpha, 4)
    (0.2527, 0.2677)
    """

    fleiss_kappa: float | None
    cohen_kappa: dict[str, float]
    krippendorff_alpha: float

    def summary(self) -> str:
        rows = [[pair, f"{k:.4f}"] for pair, k in self.cohen_kappa.items()]
        fk = "n/a (skipped items)" if self.fleiss_kappa is None else f"{self.fleiss_kappa:.4f}"
        return (f"Fleiss' kappa {fk}; Krippendorff's alpha (nominal) "
                f"{self.krippendorff_alpha:.4f}\n" + format_table(rows, ["pair", "Cohen's kappa"]))


def agreement(decisions: Decisions) -> Agreement:
    """Agreement statistics from statsmodels and krippendorff (not by hand).

    Examples
    --------
    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> stats = agreement(table1_decisions())  # 25 items, graders authors and gpt4
    >>> {pair: round(k, 4) for pair, k in stats.cohen_kappa.items()}
    {'authors~gpt4': 0.3125}
    """
    arr, r = decisions.array, len(decisions.labels)
    if len(decisions.graders) < 2:
        raise InputError(f"agreement needs two graders or more; the file has "
                         f"{len(decisions.graders)} ({', '.join(decisions.graders)}): drop "
                         "--agreement or add graders")
    shared = ((arr >= 0).sum(1) >= 2).any()
    if not shared:
        raise InputError("agreement needs an item decided by two graders or more; no two "
                         "graders decided the same item: drop --agreement")
    ir = _import("statsmodels.stats.inter_rater", "statsmodels")
    kr = _import("krippendorff", "krippendorff")
    fleiss = None
    if decisions.complete:
        table, _ = ir.aggregate_raters(arr, n_cat=r)
        fleiss = float(ir.fleiss_kappa(table, method="fleiss"))
    cohen = {}
    for i in range(len(decisions.graders)):
        for j in range(i + 1, len(decisions.graders)):
            both = (arr[:, i] >= 0) & (arr[:, j] >= 0)
            tab = np.zeros((r, r), dtype=np.int64)
            np.add.at(tab, (arr[both, i], arr[both, j]), 1)
            kappa = ir.cohens_kappa(tab, return_results=False)
            cohen[f"{decisions.graders[i]}~{decisions.graders[j]}"] = float(kappa)
    data = np.where(arr >= 0, arr, np.nan).T.astype(float)
    alpha = float(kr.alpha(reliability_data=data, level_of_measurement="nominal",
                           value_domain=list(range(r))))
    return Agreement(fleiss, cohen, alpha)


def bootstrap_t(decisions: Decisions, n_boot: int = 200, seed: int = 0,
                level: float = 0.95) -> dict[str, Any]:
    """Item bootstrap of the M=1 threshold ``T_1``: how ``T_1`` varies over tests of the same
    size drawn like this one. A statement about the population of tests, not about this
    test (whose ``T`` is exact); M=2/full are not bootstrapped (each needs ILPs).

    Examples
    --------
    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> boot = bootstrap_t(table1_decisions(), n_boot=20, seed=0)
    >>> boot["statistic"], boot["n_boot"], [round(v, 4) for v in boot["interval"]]
    ('T_1 (M=1)', 20, [0.45, 0.7737])
    """
    from evalcert.logic.alarms import alarm_threshold
    from evalcert.logic.summaries import LabelCounts

    if n_boot < 1:
        raise InputError(f"n_boot={n_boot}; give at least 1 bootstrap replicate")
    arr = decisions.array
    if (arr < 0).any():
        raise InputError("the bootstrap of T_1 needs every grader on every item")
    rng = np.random.default_rng(seed)
    r, q = len(decisions.labels), len(decisions.items)
    values = []
    for _ in range(n_boot):
        sample = arr[rng.integers(0, q, size=q)]
        counts = tuple(tuple(int(v) for v in np.bincount(sample[:, i], minlength=r))
                       for i in range(sample.shape[1]))
        values.append(alarm_threshold(LabelCounts(decisions.labels, decisions.graders, counts)))
    vals = np.array([float(v) for v in values])
    lo, hi = np.quantile(vals, [(1 - level) / 2, (1 + level) / 2])
    return {"statistic": "T_1 (M=1)", "n_boot": n_boot, "seed": seed, "level": level,
            "mean": float(vals.mean()), "interval": [float(lo), float(hi)],
            "meaning": "population statement: spread of T_1 over tests drawn like this one "
                       "(items resampled with replacement); this test's T is exact"}
