"""The exact alarm driver shared by M=2 and the full joint (paper 003, App. C extended).

:func:`exact_alarm` takes a model builder (a :class:`RatioProgram`: the consistent set, the key's
label counts, and per (grader, label) the ``correct`` and ``den`` expressions) and returns
the exact threshold ``T = max min_{i,t} correct / den`` with attaining keys and binding
(grader, label) pairs. ``T`` is searched by :class:`evalcert.logic.search.KeySearch` (answer
keys listed from the LP relaxation, each decided by a fixed-key MILP; HiGHS), or by the level
search :func:`evalcert.logic.levels.max_ratio` over the whole Q-complex (``search="levels"``,
or ``solver="cbc"``). With skipped items (``den`` not a key count) the key search still
applies: a fixed key bounds every denominator, and each fixed-key MILP carries convex-hull
cuts of ``ceil(T * den)`` over the denominator's range at that key
(:func:`evalcert.logic.levels.ceil_hull`). Before, skipped items took the level search
(whole-Q-complex MILPs, 5-9 s each near ``T`` at Q = 200, N = 4).

Binding pairs at a key are decided by feasibility, not by maximising a slack: a
(grader, label) cell binds iff no consistent point at level ``T`` puts it strictly above
``T`` (``b * correct - a * den >= 1`` for ``T = a / b`` is infeasible) and some point gives
it a denominator ``>= 1`` (a cell with no decided item has no accuracy and makes no demand;
decided exactly, by a second feasibility check when no point seen so far has one). Cells
that a point already found puts above ``T`` need no solve: the witness of ``T`` is reused at
its key (no MILP to find a first point there), and before each "above" MILP a local move
from the points seen (``nudge``, for the full joint one exchange of two items between two
labels, :func:`evalcert.logic.search.exchange_above`) may find a point that puts the cell
above; what it returns is evaluated through the model's own expressions. With a time
limit, every HiGHS solve gets what is left of it (:attr:`evalcert.logic.ilp.HighsModel.
deadline`), so one MILP cannot overrun it. Every feasible point is re-checked
in integer arithmetic; infeasibility answers are the solver's (zero gap), and a solver stop
raises :class:`evalcert.errors.SolverError` instead of returning a ``T``.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from fractions import Fraction
from typing import Any, Callable, Sequence

import numpy as np
import pulp

from evalcert.errors import CertificateError, SolverError
from evalcert.logic.result import AlarmResult
from evalcert.logic.ilp import run_solver
from evalcert.logic.levels import check_integer_solution, linear_value, max_ratio
from evalcert.logic.search import KeySearch
from evalcert.logic.summaries import Decisions, as_threshold
from evalcert.progress import DELAY, progress_bar

__all__ = ["RatioProgram", "exact_alarm", "lp_levels"]


class _OutOfTime(Exception):
    """The key search passed its time limit (caught in :func:`exact_alarm`)."""


def _left(time_limit: float | None, since: float) -> float | None:
    """What is left of ``time_limit`` seconds started at ``since`` (at least 1 ns)."""
    return None if time_limit is None else max(time_limit - (time.perf_counter() - since), 1e-9)


def _int(expr: Any, values: dict[str, int]) -> int:
    if isinstance(expr, (int, np.integer)):
        return int(expr)
    return int(linear_value(expr, values))


@dataclasses.dataclass
class RatioProgram:
    """What the exact driver maximises: ``min_{i,t} correct[i][t] / den[i][t]`` over the
    integer points of ``prob``, whose answer key's label counts are ``q``.

    Every alarm that runs on :func:`exact_alarm` (M=2, the full joint, chained windows)
    hands it a builder ``key -> RatioProgram`` (``key=None``: the key is free).

    Attributes
    ----------
    prob : pulp.LpProblem
        The consistent set (no objective needed).
    q : list of PuLP expressions
        The key's label counts.
    correct, den : list (per grader) of list (per label) of PuLP expressions or ints
        Items grader ``i`` got right on label ``t``, and those it decided (``den = q[t]``
        with complete decisions); a cell with ``den = 0`` makes no demand.

    Examples
    --------
    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> from evalcert.logic.joint import JointModel
    >>> model = JointModel(table1_decisions())
    >>> program = RatioProgram(model.prob, model.q, model.correct, model.den)
    >>> len(program.q), len(program.correct)  # 3 labels, 2 graders
    (3, 2)
    """

    prob: pulp.LpProblem
    q: list[Any]
    correct: list[list[Any]]
    den: list[list[Any]]


def _evaluate(spec: RatioProgram, what: str) -> tuple[tuple[int, ...], np.ndarray, np.ndarray,
                                                Fraction, dict[str, int]]:
    values = check_integer_solution(spec.prob, what)
    key = tuple(_int(e, values) for e in spec.q)
    corr = np.array([[_int(e, values) for e in row] for row in spec.correct], dtype=np.int64)
    den = np.array([[_int(e, values) for e in row] for row in spec.den], dtype=np.int64)
    ratios = [Fraction(int(c), int(d)) for c, d in zip(corr.ravel(), den.ravel()) if d > 0]
    return key, corr, den, min(ratios) if ratios else Fraction(1), values


def _add_level(spec: RatioProgram, f: Fraction, relax: bool = False) -> None:
    """``den * f <= correct`` for every (grader, label), through integer auxiliaries
    ``D = den`` and ``M >= f * D``, ``correct >= M`` (valid since ``correct`` is an integer:
    the solver can branch on the few ``D``, ``M`` instead of the many pattern splits;
    graders sharing one denominator share ``D`` and ``M``)."""
    cat = "Continuous" if relax else "Integer"
    shared: dict[int, Any] = {}
    for i, row in enumerate(spec.correct):
        for t, corr in enumerate(row):
            den = spec.den[i][t]
            if isinstance(den, (int, np.integer)):
                spec.prob += f.denominator * corr >= f.numerator * int(den), f"level_{i}_{t}"
                continue
            if id(den) not in shared:
                d = spec.prob.add_variable(f"D_{i}_{t}", 0, None, cat=cat)
                mm = spec.prob.add_variable(f"M_{i}_{t}", 0, None, cat=cat)
                spec.prob += d == den, f"den_{i}_{t}"
                spec.prob += f.denominator * mm >= f.numerator * d, f"level_{i}_{t}"
                shared[id(den)] = mm
            spec.prob += corr >= shared[id(den)], f"reach_{i}_{t}"


def _relaxed(build: Callable[[Sequence[int] | None], RatioProgram], level: Fraction,
             solver: str) -> RatioProgram | None:
    spec = build(None)
    for var in spec.prob.variables():
        var.cat = "Continuous"
    spec.prob += pulp.lpSum([])
    _add_level(spec, level, relax=True)
    status, _ = run_solver(spec.prob, solver)
    return None if status == "Infeasible" else spec


def lp_levels(build: Callable[[Sequence[int] | None], RatioProgram], upper: Fraction, max_den: int,
              solver: str = "highs", steps: int = 24) -> tuple[Fraction, Fraction | None]:
    """Bisection on the LP relaxation: ``(lo, hi)`` with the LP feasible at ``lo`` and
    infeasible at ``hi`` (``None`` if it never was), denominators ``<= max_den``. The
    integer program is infeasible wherever its relaxation is, so ``T < hi``.

    Examples
    --------
    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> from evalcert.logic.joint import _joint_builder
    >>> lo, hi = lp_levels(_joint_builder(table1_decisions()), Fraction(1), 25)
    >>> lo < hi and hi > Fraction(5, 8)  # T = 5/8 lies below the LP's infeasible level
    True
    """
    lo, hi, found = Fraction(0), upper, None
    for _ in range(steps):
        mid = ((lo + hi) / 2).limit_denominator(max_den)
        if not lo < mid < hi:
            break
        if _relaxed(build, mid, solver) is None:
            hi = found = mid
        else:
            lo = mid
    return lo, found


def exact_alarm(build: Callable[[Sequence[int] | None], RatioProgram], decisions: Decisions,
                threshold: Any, *, upper: Fraction, m: int | str, method: str,
                solver: str = "highs", candidates: Callable[[Fraction], Any] | None = None,
                n_keys: int | None = None, max_checks: int = 200, max_binding_keys: int = 3,
                verbose: bool = False,
                describe: Callable[[tuple[int, ...], Any], dict[str, Any]] | None = None,
                start: tuple[Fraction, tuple[int, ...], Any] | None = None,
                improve: Callable[[Any], tuple[Fraction, tuple[int, ...], Any]] | None = None,
                search: str = "keys", max_keys: int = 2000, progress: bool = False,
                time_limit: float | None = None,
                nudge: Callable[[Any, int, int, Fraction], Any] | None = None,
                key_total: int | None = None, key_search: type[KeySearch] = KeySearch
                ) -> AlarmResult:
    """Alarm from a model builder: exact ``T``, attaining keys and binding (grader, label)
    pairs by fixed-key ILPs, every feasible point re-checked.

    ``search="keys"`` (with HiGHS) lists the keys the LP relaxation allows and decides them
    one by one (:class:`KeySearch`, at most ``max_keys`` before it bisects levels with
    whole-Q-complex MILPs); ``search="levels"`` (also the path for CBC) searches levels over
    the whole Q-complex (:func:`max_ratio`). Both are exact and agree (tests), with complete
    decisions and with skipped items.

    ``candidates(T)`` returns ``(count, keys)`` of keys that may attain ``T`` (a superset, e.g.
    the M=1 keys with ``v(q) >= T``); without it only the witness key is listed.
    ``start``: ``(value, key, split)`` of a point known to be consistent (a lower bound).
    ``describe(key, values_or_split)`` turns the witness at ``T`` into the result's
    ``witness`` dict. ``progress``: a bar on stderr once the search passes ~3 s (at once
    with ``verbose``) with the keys decided and the proven bounds ``T in [lo, hi]``.
    ``time_limit`` (seconds, key search only): past it the search stops and the result
    carries the proven bounds (``T`` the best re-checked point, ``T_upper`` the lowest
    level known unattainable or the upper bound given; no attaining-key list, no binding
    pairs) instead of raising. ``key_search``: the :class:`KeySearch` class (the full joint
    with skipped items passes :class:`~evalcert.logic.missing.SkipKeySearch`). ``improve(values)`` may turn a solver's point into a better consistent
    point ``(value, key, point)`` (a local search), re-checked exactly by the caller.
    ``nudge(point, i, t, T)`` may return a point at the same key that puts cell ``(i, t)``
    strictly above ``T`` and keeps every cell at ``T`` (a joint split, e.g.
    :func:`~evalcert.logic.search.exchange_above`) or ``None``: the binding check tries it
    from the witness before a MILP, and re-checks what it returns through the model's own
    expressions (a heuristic point that fails the check is dropped, never trusted).
    ``key_total``: the key's total when ``decisions.items`` counts more (the largest
    denominator, e.g. ``2 Q`` with half credit); default ``len(decisions.items)``.

    Examples
    --------
    The full-joint alarm, driven by hand (:func:`~evalcert.logic.joint.alarm_full` adds a
    start point, the M=1 candidate keys and a local search):

    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> from evalcert.logic.joint import JointModel
    >>> dec = table1_decisions()
    >>> def build(key):
    ...     model = JointModel(dec, key=key)
    ...     return RatioProgram(model.prob, model.q, model.correct, model.den)
    >>> result = exact_alarm(build, dec, "0.5", upper=Fraction(1), m="full",
    ...                      method="full-joint ILP")
    >>> result.T, result.attaining_keys[0] in {(6, 16, 3), (8, 14, 3)}  # a witness key
    (Fraction(5, 8), True)
    """
    x = as_threshold(threshold)
    t0 = time.perf_counter()
    found: dict[Fraction, tuple[tuple[int, ...], Any]] = {}
    n_solves = 0

    def solve(spec: RatioProgram, what: str) -> tuple[tuple[int, ...], np.ndarray, np.ndarray,
                                               Fraction] | None:
        nonlocal n_solves
        n_solves += 1
        status, _ = run_solver(spec.prob, solver)
        return None if status == "Infeasible" else _evaluate(spec, what)

    def accept(out: tuple, f: Fraction) -> Fraction:
        """Store an exactly re-checked point reaching ``f``; return its (improved) value."""
        if out[3] < f:
            raise CertificateError(f"{method}: the solver's point reaches only {out[3]} < {f}")
        found[out[3]] = (out[0], out[4])
        if improve is not None:
            better = improve(out[4])
            if better[0] > out[3]:
                found[better[0]] = (better[1], better[2])
                return better[0]
        return out[3]

    def feasible(f: Fraction) -> Fraction | None:
        spec = build(None)
        spec.prob += pulp.lpSum([])
        _add_level(spec, f)
        out = solve(spec, f"{method} at level {f}")
        if verbose:
            print(f"  level {f}: {'feasible' if out else 'infeasible'} "
                  f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
        return None if out is None else accept(out, f)

    n = len(decisions.items)
    attained = Fraction(0)
    if start is not None:
        attained = start[0]
        found[attained] = (start[1], start[2])
    finder, kspec = None, None
    if search == "keys" and solver == "highs":
        kspec = build(None)
        finder = key_search(kspec.prob, kspec.q, kspec.correct, kspec.den,
                            n if key_total is None else key_total, max_keys=max_keys, max_den=n)
        bar = progress_bar(progress or verbose, desc=method, unit="key",
                           delay=0.0 if verbose else DELAY)
        state = {"lo": attained, "hi": upper, "keys": 0}

        def step(best: Fraction, hi: Fraction, n_decided: int) -> None:
            bar.update(n_decided - state["keys"])
            state.update(lo=best, hi=hi, keys=n_decided)
            bar.set_postfix_str(f"T in [{best}, {hi}]")
            if time_limit is not None and time.perf_counter() - t0 >= time_limit:
                raise _OutOfTime()

        finder.on_step = step
        if time_limit is not None:  # every HiGHS solve stops at the deadline
            finder.model.deadline = t0 + time_limit
        try:
            t_val, n_keys_decided = finder.run(attained, upper, lambda values, f: accept(
                _evaluate(kspec, f"{method} at level {f}"), f))
        except (_OutOfTime, SolverError) as stop:
            bar.close()
            if isinstance(stop, SolverError) and not (
                    time_limit is not None and stop.status == "time_limit"):
                raise
            lo = max(found) if found else Fraction(0)  # every key attains 0
            return AlarmResult(
                threshold=x, fires=x >= state["hi"], T=lo,
                attaining_keys=(found[lo][0],) if found else (),
                n_attaining=None, binding=(), m=m, n_keys=n_keys, labels=decisions.labels,
                graders=decisions.graders,
                # time_limit here is what was left of the caller's limit: say the search's
                # own seconds, not a number the user never gave
                method=f"{method} ({solver}; stopped at the time limit after "
                       f"{time.perf_counter() - t0:.1f} s of key search)",
                n_solves=n_solves + finder.model.n_mip, seconds=time.perf_counter() - t0,
                witness=describe(*found[lo]) if describe is not None and found else None,
                T_upper=state["hi"])
        bar.close()
        n_solves += finder.model.n_mip
        if verbose:
            print(f"  key search: T = {t_val}, {n_keys_decided} keys decided "
                  f"({finder.model.n_lp} LPs, {finder.model.n_mip} MILPs, "
                  f"{time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    else:
        _, bound = lp_levels(build, upper, n, solver)
        t_val, _ = max_ratio(feasible, upper, n, infeasible_above=bound, attained=attained)
    if t_val not in found:  # T = 0 without a feasible call yet: get a witness
        feasible(t_val)

    def at_key(key: tuple[int, ...], what: str, require: Sequence[tuple[str, int, int]] = ()):
        """Fixed-key MILP at level T, or None when infeasible. ``require``: cells ``(kind,
        i, t)`` with ``kind`` ``"above"`` (``b * correct - a * den >= 1`` for ``T = a / b``:
        strictly above T) or ``"den"`` (``den >= 1``)."""
        nonlocal n_solves
        if time_limit is not None:
            left = time_limit - (time.perf_counter() - t0)
            if left <= 0:
                raise _OutOfTime()
        spec = kspec if finder is not None else build(key)
        rows = []
        for kind, i, t in require:
            corr, den = spec.correct[i][t], spec.den[i][t]
            if kind == "above" and finder is not None and den is spec.q[t]:
                # the key fixes den = key[t]: b * correct >= a * key[t] + 1 is, on integers,
                # correct >= floor(a * key[t] / b) + 1 (a bound the LP sees whole)
                rows.append(([(corr, 1)], t_val.numerator * key[t] // t_val.denominator + 1))
                continue
            rows.append(([(corr, t_val.denominator), (den, -t_val.numerator)] if
                         kind == "above" else [(den, 1)], 1))
        if finder is None:
            _add_level(spec, t_val)
            spec.prob += pulp.lpSum([])
            for k, (terms, lower) in enumerate(rows):
                spec.prob += pulp.lpSum(c * e for e, c in terms) >= lower, f"require_{k}"
            return solve(spec, what)
        n_solves += 1
        return _evaluate(kspec, what) if finder.solve_at(key, t_val, require=rows) else None

    keys: list[tuple[int, ...]] = []
    points: dict[tuple[int, ...], tuple] = {}
    n_att: int | None
    n_cand, cand = candidates(t_val) if candidates is not None else (None, ())
    late = ""  # what the time limit left undecided after T was exact
    if t_val == 0 and n_cand is not None:  # every key attains 0
        n_att, keys = n_cand, list(cand)
    elif n_cand is not None and n_cand <= max_checks:
        try:
            for key in map(tuple, cand):
                out = at_key(key, f"{method} at key {key}")
                if out is not None:
                    keys.append(key)
                    points[key] = out
            n_att = len(keys)
        except (_OutOfTime, SolverError) as stop:
            if isinstance(stop, SolverError) and stop.status != "time_limit":
                raise
            late = "attaining keys and binding pairs"
            keys, n_att = [found[t_val][0]], None
    else:
        keys, n_att = [found[t_val][0]], None
    binding: dict[tuple[str, str], None] = {}
    try:
        for key in (keys[:max_binding_keys] if t_val > 0 and not late else []):
            first = points.get(key) or _known_point(kspec or build(key), key, found[t_val]) \
                or at_key(key, f"{method} at key {key}")
            if first is None:  # a re-checked point attains T at this key
                raise CertificateError(f"{method}: the solver calls key {key} infeasible at "
                                       f"{t_val}, which an exactly checked point attains")
            tries = None
            if nudge is not None and first is not None and tuple(found[t_val][0]) == key:
                tries = _nudger(kspec or build(key), key, t_val, found[t_val][1], nudge)
            for i, t in _binding_cells(key, t_val, first, at_key, method, decisions, tries):
                binding[(decisions.graders[i], decisions.labels[t])] = None
    except (_OutOfTime, SolverError) as stop:
        if isinstance(stop, SolverError) and stop.status != "time_limit":
            raise
        late = late or "binding pairs"
    if late:
        method += f"; T exact, {late} not all decided within the time limit"
    witness = describe(*found[t_val]) if describe is not None else None
    return AlarmResult(threshold=x, fires=x >= t_val, T=t_val, attaining_keys=tuple(keys),
                       n_attaining=n_att, binding=tuple(binding), m=m, n_keys=n_keys,
                       labels=decisions.labels, graders=decisions.graders,
                       method=f"{method} ({solver})", n_solves=n_solves,
                       seconds=time.perf_counter() - t0, witness=witness)


def _known_point(spec: RatioProgram, key: tuple[int, ...], known: tuple[tuple[int, ...], Any]
                 ) -> tuple | None:
    """``(key, correct, den, value)`` of the exactly checked witness point ``known = (key,
    point)`` when it lies at ``key`` (``point``: a solver's integer values by name, or a joint
    split ``x[p][t]``), so the binding check at the witness key needs no MILP to find one;
    ``None`` when it lies elsewhere or the program does not name its variables that way."""
    if tuple(known[0]) != tuple(key):
        return None
    point = known[1]
    values = point if isinstance(point, dict) else {
        f"x_{p}_{t}": int(v) for (p, t), v in np.ndenumerate(np.asarray(point))}
    try:
        got = tuple(_int(e, values) for e in spec.q)
        corr = np.array([[_int(e, values) for e in row] for row in spec.correct], dtype=np.int64)
        den = np.array([[_int(e, values) for e in row] for row in spec.den], dtype=np.int64)
    except KeyError:
        return None
    if got != tuple(key):
        return None
    return got, corr, den


def _nudger(spec: RatioProgram, key: tuple[int, ...], level: Fraction, start: Any,
            nudge: Callable[[Any, int, int, Fraction], Any]) -> Callable[[int, int], tuple | None]:
    """``tries(i, t)``: a point at ``key`` with every cell at ``level`` and cell ``(i, t)``
    strictly above it, from ``nudge`` applied to the points seen so far (the witness
    first), evaluated exactly through ``spec``; ``None`` when none is found."""
    a, b = level.numerator, level.denominator
    seen = [start]

    def tries(i: int, t: int) -> tuple | None:
        for point in list(seen):
            new = nudge(point, i, t, level)
            if new is None:
                continue
            out = _known_point(spec, key, (key, new))
            if out is None:
                continue
            corr, den = out[1], out[2]
            if (den[i, t] >= 1 and b * corr[i, t] - a * den[i, t] >= 1
                    and ((b * corr >= a * den) | (den == 0)).all()):
                seen.append(new)
                return out
        return None

    return tries


def _binding_cells(key: tuple[int, ...], level: Fraction, first: tuple, at_key: Callable,
                   method: str, decisions: Decisions,
                   tries: Callable[[int, int], tuple | None] | None = None
                   ) -> list[tuple[int, int]]:
    """(grader, label) cells binding at ``key``: no point at ``level`` puts the cell strictly
    above it, and some point gives it a denominator >= 1 (module docstring). ``first`` is a
    point at the key (from :func:`_evaluate`); each point found marks every cell it puts
    above ``level`` (or gives a denominator) as decided, so most cells need no solve."""
    a, b = level.numerator, level.denominator
    above = np.zeros(first[1].shape, dtype=bool)
    has_den = np.zeros(first[1].shape, dtype=bool)

    def see(out: tuple) -> None:
        above[:] |= (b * out[1] > a * out[2]) & (out[2] > 0)
        has_den[:] |= out[2] > 0

    see(first)
    cells = []
    for i, t in np.ndindex(*above.shape):
        if above[i, t] or (decisions.complete and key[t] == 0):  # den = key[t] = 0: no demand
            continue
        who = f"{method} binding {decisions.graders[i]}/{decisions.labels[t]} at {key}"
        out = tries(i, t) if tries is not None else None  # a local move first, then a MILP
        if out is None:
            out = at_key(key, who, [("above", i, t)])
        if out is not None:
            see(out)
            if not above[i, t]:
                raise CertificateError(f"{who}: the solver's point does not put the cell "
                                       f"above {level} (exact check)")
            continue
        if not has_den[i, t]:  # can the cell have a decided item at all at this key?
            out = at_key(key, who, [("den", i, t)])
            if out is not None:
                see(out)
        if has_den[i, t]:
            cells.append((int(i), int(t)))
    return cells
