"""Ordinal and partial labels (issue 25, item 5): "correct" widened by a credit table.

Grader ``i``'s credit on the items of true label ``t`` is ``sum_d W[t][d] E^i[t][d]`` for a
credit table ``W`` with entries 0, 1/2 or 1 (``W = I`` is the usual exact match):

* **tolerance** ``K`` (``--tolerance``): ``W[t][d] = 1`` when ``|d - t| <= K`` in the
  declared label order (scores 1-10 with ``K = 1``: a 7 is right on a true 6, 7 or 8);
* **declared bands** (``--bands 1-3,4-7,8-10``): ``W[t][d] = 1`` when ``d`` and ``t`` lie
  in the same band (the bands partition the labels);
* **ties as half-right** (``--ties half``, pairwise ``a``/``b``/``tie`` logs): ``W[t][t] =
  1``, and ``W = 1/2`` between the tie label and any other (a tie on an item whose key is
  ``a``, or an ``a`` on a true tie), 0 between ``a`` and ``b``.

The alarm keeps its statement: no answer key lets every grader earn more than ``x`` of the
credit on the items of every true label. The same three sets apply:

* M=1: the tables ``E^i[t][d]`` of :class:`evalcert.logic.ilp.M1Model` (the closed form of
  :mod:`evalcert.logic.alarms` holds only for ``W = I``);
* M=2: the same tables inside :class:`evalcert.logic.pairs.M2Model`;
* the full joint: the pattern splits of :class:`evalcert.logic.splits.JointModel` (skipped
  decisions allowed; a grader's denominator is the items it decided).

Each is solved exactly by :func:`evalcert.logic.exact.exact_alarm`. With half credit,
credit and denominator are both doubled (integer coefficients ``2 W``; the ratio is
unchanged), so ``T`` is a multiple of ``1 / (2 Q_t)`` for some label: the key search runs
over levels with denominators up to ``2 Q`` (before issue 25's item 4 the whole-Q-complex
level search did, 13 CPU-s at Q = 300, N = 5; ``search="levels"`` keeps it as the
reference). ``W = I`` gives the usual alarms, and bands of one label each
too (tests, with brute forces over every key on small logs).

Bands without key-count bounds equal the usual alarm on the labels merged into their bands
(full joint and M=1: merging the labels of a band in a key never lowers the band's worst
ratio, and a split of merged patterns lifts to the items); the tests check that as well.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

import pulp

from evalcert.errors import InputError
from evalcert.logic.exact import RatioProgram, exact_alarm
from evalcert.logic.qcomplex import qcomplex_bounds, qcomplex_size
from evalcert.logic.result import AlarmResult
from evalcert.logic.summaries import Decisions

__all__ = ["alarm_tolerance", "alarm_bands", "alarm_ties_half", "alarm_credit",
           "parse_bands", "credit_table", "TIE_LABELS"]

#: label names read as "tie" by ``--ties half`` (case-insensitive)
TIE_LABELS = ("tie", "draw")
HALF = Fraction(1, 2)


def parse_bands(text: str | Sequence[Sequence[str]], labels: Sequence[str]) -> list[int]:
    """The band index of every label from ``"1-3,4-7,8-10"`` (ranges ``first-last`` in the
    declared label order, or single labels), or from lists of label names. The bands must
    cover every label once.

    Examples
    --------
    >>> parse_bands("1-3,4-7,8-10", [str(v) for v in range(1, 11)])
    [0, 0, 0, 1, 1, 1, 1, 2, 2, 2]
    >>> parse_bands([["a", "b"], ["tie"]], ["a", "b", "tie"])
    [0, 0, 1]
    """
    labels = [str(v) for v in labels]
    where = {lab: k for k, lab in enumerate(labels)}
    if isinstance(text, str):
        groups = []
        for part in (p.strip() for p in text.split(",")):
            if part in where:
                groups.append([part])
                continue
            cuts = [k for k, ch in enumerate(part) if ch == "-" and part[:k].strip() in where
                    and part[k + 1:].strip() in where]
            if len(cuts) != 1:
                raise InputError(f"--bands {text!r}: {part!r} is not a label or a range "
                                 f"first-last of the declared labels {labels}")
            first, last = where[part[:cuts[0]].strip()], where[part[cuts[0] + 1:].strip()]
            if first > last:
                raise InputError(f"--bands {text!r}: {part!r} runs backwards in the declared "
                                 f"label order {labels}")
            groups.append(labels[first:last + 1])
    else:
        groups = [[str(v) for v in g] for g in text]
    band = [-1] * len(labels)
    for b, group in enumerate(groups):
        for lab in group:
            if lab not in where:
                raise InputError(f"--bands: {lab!r} is not one of the labels {labels}")
            if band[where[lab]] >= 0:
                raise InputError(f"--bands: label {lab!r} is in two bands; give each label "
                                 "one band")
            band[where[lab]] = b
    missing = [lab for lab, b in zip(labels, band) if b < 0]
    if missing:
        raise InputError(f"--bands: labels {missing} are in no band; the bands must cover "
                         f"every label {labels}")
    return band


def credit_table(labels: Sequence[str], *, tolerance: int = 0,
                 bands: str | Sequence[Sequence[str]] | None = None,
                 ties: str | None = None) -> list[list[Fraction]]:
    """The credit table ``W[t][d]`` (module docstring) of one rule: ``tolerance`` steps,
    declared ``bands``, or ``ties="half"``; none of them: ``W = I``.

    Examples
    --------
    >>> [[str(v) for v in row] for row in credit_table(["a", "b", "tie"], ties="half")]
    [['1', '0', '1/2'], ['0', '1', '1/2'], ['1/2', '1/2', '1']]
    >>> credit_table(["1", "2", "3"], bands="1-2,3")[0]
    [Fraction(1, 1), Fraction(1, 1), Fraction(0, 1)]
    """
    r = len(labels)
    if isinstance(tolerance, bool) or not isinstance(tolerance, int) or tolerance < 0:
        raise InputError(f"tolerance {tolerance!r}: give a whole number of label steps >= 0")
    rules = [name for name, on in (("--tolerance", tolerance), ("--bands", bands is not None),
                                   ("--ties half", ties not in (None, "none"))) if on]
    if len(rules) > 1:
        raise InputError(f"{' and '.join(rules)}: give one credit rule at a time")
    one, zero = Fraction(1), Fraction(0)
    if bands is not None:
        band = parse_bands(bands, labels)
        return [[one if band[d] == band[t] else zero for d in range(r)] for t in range(r)]
    if ties not in (None, "none"):
        if ties != "half":
            raise InputError(f"--ties {ties!r}: use half (a tie against a or b counts 1/2) "
                             "or none")
        tie = [k for k, lab in enumerate(labels) if str(lab).lower() in TIE_LABELS]
        if len(tie) != 1:
            raise InputError(f"--ties half needs one tie label ({'/'.join(TIE_LABELS)}) among "
                             f"the labels {list(labels)}; declare them with --labels a,b,tie")
        k = tie[0]
        return [[one if d == t else HALF if k in (d, t) else zero for d in range(r)]
                for t in range(r)]
    return [[one if abs(d - t) <= tolerance else zero for d in range(r)] for t in range(r)]


class _Doubled:
    """The decisions as :func:`exact_alarm` sees them with half credit: ``2 Q`` items (the
    largest doubled denominator), so its level search runs over denominators up to ``2 Q``."""

    def __init__(self, decisions: Decisions):
        self.items = range(2 * len(decisions.items))
        self.labels, self.graders = decisions.labels, decisions.graders
        self.complete = decisions.complete


def _describe_rule(table: list[list[Fraction]]) -> str:
    return "with half credit" if any(v == HALF for row in table for v in row) else \
        "with declared credit"


def alarm_credit(decisions: Decisions, threshold: Any, credit: Sequence[Sequence[Any]], *,
                 m: str | int = "full", lower: Sequence[int] | None = None,
                 upper: Sequence[int] | None = None, solver: str = "highs",
                 verbose: bool = False, progress: bool = False,
                 time_limit: float | None = None, rule: str | None = None,
                 search: str = "keys") -> AlarmResult:
    """Exact alarm with grader credit ``sum_d W[t][d] E[t][d]`` on true label ``t`` for a
    credit table ``credit`` with entries 0, 1/2 or 1 (module docstring), under M=1, M=2 or
    the full joint. ``rule`` names the rule in the result's method. ``search``: ``"keys"``
    (the key search, :class:`~evalcert.logic.search.KeySearch`, also with half credit, whose
    doubled ratios have denominators up to ``2 Q``) or ``"levels"`` (the level search over
    the whole Q-complex: the reference the tests compare against).

    Examples
    --------
    >>> from evalcert.logic.simulate import simulate_decisions
    >>> dec = simulate_decisions(12, 3, 2, seed=0)
    >>> exact = alarm_credit(dec, "0.5", credit_table(dec.labels)).T
    >>> half = alarm_credit(dec, "0.5", [[1, 0, "1/2"], [0, 1, "1/2"], ["1/2", "1/2", 1]]).T
    >>> exact <= half  # more credit can only raise T
    True
    """
    if not isinstance(decisions, Decisions):
        raise InputError("partial credit (--tolerance, --bands, --ties) needs the decisions "
                         "(a judge log), not label counts")
    m = str(m)
    r, n, n_g = len(decisions.labels), len(decisions.items), len(decisions.graders)
    table = [[Fraction(v) for v in row] for row in credit]
    if len(table) != r or any(len(row) != r for row in table) or \
            any(v not in (0, HALF, 1) for row in table for v in row):
        raise InputError(f"credit table: give {r} x {r} entries, each 0, 1/2 or 1")
    scale = 2 if any(v == HALF for row in table for v in row) else 1
    w = [[int(scale * v) for v in row] for row in table]
    lo, hi = qcomplex_bounds(n, r, lower, upper)
    bounded = lower is not None or upper is not None
    if m in ("1", "2") and not decisions.complete:
        raise InputError(f"--on-missing keep leaves skipped decisions; the M={m} axioms need "
                         "every grader on every item: use --m full or --on-missing drop")

    def scaled(expr: Any) -> Any:
        return expr if scale == 1 else scale * expr

    if m == "full":
        from evalcert.logic.splits import JointModel, joint_patterns

        pats, _ = joint_patterns(decisions)

        def build(key: Sequence[int] | None) -> RatioProgram:
            model = JointModel(decisions, key=key, lower=lo if bounded and key is None else None,
                               upper=hi if bounded and key is None else None)
            correct = [[pulp.lpSum(w[t][int(pats[p, i])] * model.x[p][t]
                                   for p in range(len(pats))
                                   if pats[p, i] >= 0 and w[t][int(pats[p, i])])
                        for t in range(r)] for i in range(n_g)]
            if model.den[0] is model.q:          # complete: one shared denominator list
                den = [[scaled(e) for e in model.q]] * n_g if scale != 1 else model.den
            else:
                den = [[scaled(e) for e in row] for row in model.den]
            return RatioProgram(model.prob, model.q, correct, den)
    elif m in ("1", "2"):
        from evalcert.logic.ilp import M1Model
        from evalcert.logic.pairs import M2Model

        counts = decisions.label_counts()

        def build(key: Sequence[int] | None) -> RatioProgram:
            kw = {"key": key, "lower": lo if bounded and key is None else None,
                  "upper": hi if bounded and key is None else None}
            model = M1Model(counts, **kw) if m == "1" else M2Model(decisions, **kw)
            q = list(model.q)
            correct = [[pulp.lpSum(w[t][d] * model.e[i][t][d] for d in range(r) if w[t][d])
                        for t in range(r)] for i in range(n_g)]
            return RatioProgram(model.prob, q, correct, [[scaled(e) for e in q]] * n_g)
    else:
        raise InputError(f"m={m!r}; use 1, 2 or full")
    which = {"1": "M=1", "2": "M=2", "full": "full-joint"}[m]
    return exact_alarm(build, _Doubled(decisions) if scale == 2 else decisions, threshold,
                       upper=Fraction(1), m=int(m) if m != "full" else "full",
                       method=f"{which} ILP, {rule or _describe_rule(table)}",
                       solver=solver, n_keys=qcomplex_size(n, r, lo, hi), verbose=verbose,
                       progress=progress, time_limit=time_limit, key_total=n,
                       search=search)


def alarm_tolerance(decisions: Decisions, threshold: Any, tolerance: int, *,
                    m: str | int = "full", lower: Sequence[int] | None = None,
                    upper: Sequence[int] | None = None, solver: str = "highs",
                    verbose: bool = False, progress: bool = False,
                    time_limit: float | None = None) -> AlarmResult:
    """Exact alarm with a decision correct within ``tolerance`` steps of the true label
    (module docstring), under M=1, M=2 or the full joint.

    Examples
    --------
    >>> from evalcert.logic.simulate import simulate_decisions
    >>> dec = simulate_decisions(20, 3, 2, seed=0)   # 3 ordered labels
    >>> exact = alarm_tolerance(dec, "0.5", 0).T
    >>> within_one = alarm_tolerance(dec, "0.5", 1).T
    >>> exact <= within_one  # a wider "correct" can only raise T
    True
    """
    if not isinstance(decisions, Decisions):
        raise InputError("--tolerance needs the decisions (a judge log), not label counts")
    table = credit_table(decisions.labels, tolerance=tolerance)
    return alarm_credit(decisions, threshold, table, m=m, lower=lower, upper=upper,
                        solver=solver, verbose=verbose, progress=progress,
                        time_limit=time_limit,
                        rule=f"correct within {tolerance} label step(s)")


def alarm_bands(decisions: Decisions, threshold: Any,
                bands: str | Sequence[Sequence[str]], *, m: str | int = "full",
                **options: Any) -> AlarmResult:
    """Exact alarm with a decision correct when it lies in the same declared band as the
    true label (``"1-3,4-7,8-10"``; :func:`parse_bands`), under M=1, M=2 or the full joint;
    ``options`` as in :func:`alarm_credit`.

    Examples
    --------
    >>> from evalcert.logic.simulate import simulate_decisions
    >>> dec = simulate_decisions(20, 3, 2, seed=0)   # labels l0, l1, l2 (say)
    >>> singletons = alarm_bands(dec, "0.5", [[lab] for lab in dec.labels]).T
    >>> singletons == alarm_tolerance(dec, "0.5", 0).T  # one label per band: the usual T
    True
    """
    if not isinstance(decisions, Decisions):
        raise InputError("--bands needs the decisions (a judge log), not label counts")
    table = credit_table(decisions.labels, bands=bands)
    text = bands if isinstance(bands, str) else ",".join("/".join(g) for g in bands)
    return alarm_credit(decisions, threshold, table, m=m,
                        rule=f"correct within the declared bands {text}", **options)


def alarm_ties_half(decisions: Decisions, threshold: Any, *, m: str | int = "full",
                    **options: Any) -> AlarmResult:
    """Exact alarm on a pairwise ``a``/``b``/``tie`` log with ties scored as half-right
    (a tie decision on a true ``a`` or ``b``, or an ``a``/``b`` decision on a true tie,
    earns 1/2), under M=1, M=2 or the full joint; ``options`` as in :func:`alarm_credit`.

    Examples
    --------
    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> half = alarm_ties_half(table1_decisions(), "0.5", m=1)
    >>> half.T >= Fraction(2, 3), half.T.denominator % 2 == 0 or half.T == 1  # T_1 is 2/3
    (True, True)
    """
    if not isinstance(decisions, Decisions):
        raise InputError("--ties needs the decisions (a judge log), not label counts")
    table = credit_table(decisions.labels, ties="half")
    return alarm_credit(decisions, threshold, table, m=m,
                        rule="ties scored as half-right", **options)
