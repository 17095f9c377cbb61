"""The backends the benchmark compares, each behind one signature.

A :class:`Backend` is a name, the kind of problem it solves (``"qp"`` or
``"ilp"``) and a picklable function ``solve(problem, settings) -> Attempt``.
An :class:`Attempt` is what the backend *claims*: its status, its primal/dual
points (QPs) or exact value (ILPs), and timings. The runner never trusts it:
success is decided by evalcert's own certificate (:mod:`evalcert.benchmarking.runner`).

QP backends run the clipped-linear fit the way :class:`~evalcert.solvers.ClippedLinear`
does, so the numbers describe evalcert as users run it:

``native``           :func:`evalcert.solvers.backends.native.solve`, warm-started
                     from the previous refit of a batch;
``osqp-direct``      :func:`evalcert.solvers.backends.osqp_direct.solve`, warm-started;
``cvxpy-<solver>``   :class:`~evalcert.solvers.backends.cvxpy_.ClippedLinearProgram`
                     (DPP; compiled once per batch) with OSQP, Clarabel, SCS or ECOS;
``qpsolvers-<solver>``  :mod:`evalcert.solvers.backends.qpsolvers_` on the standard-form
                     QP: PIQP, ProxQP, DAQP, HiGHS, CVXOPT (those installed).

ILP backends call the logic module's per-key ILPs through PuLP:
``pulp-highs`` (``pulp.HiGHS``, highspy) and ``pulp-cbc`` (``pulp.PULP_CBC_CMD``).

To benchmark something else (a new solver, or a deliberately broken one in a
test), build a ``Backend`` with your own function and pass it to
:func:`~evalcert.benchmarking.runner.run_benchmark`.
"""

from __future__ import annotations

import dataclasses
import time
from fractions import Fraction
from functools import partial
from typing import Any, Callable

import numpy as np

from evalcert.benchmarking.families import IlpProblem, QPProblem, StandardQP
from evalcert.errors import BackendUnavailableError
from evalcert.solvers.backends import (CVXPY_SOLVERS, QPSOLVERS_BACKENDS, available_backends,
                                       available_qpsolvers)
from evalcert.solvers.backends.base import RawSolution, SolveSettings, solver_options
from evalcert.solvers.clipped_linear_qp import centre_free_aux, initial_point

__all__ = ["Attempt", "Backend", "solve_native", "solve_osqp_direct", "solve_cvxpy",
           "solve_qpsolvers", "solve_pulp", "qp_backends", "ilp_backends", "default_backends", "select_backends",
           "solver_parameters"]


@dataclasses.dataclass(frozen=True)
class Attempt:
    """What a backend reports on one problem, before evalcert checks it.

    Attributes
    ----------
    status : str
        The solver's status (of the first failing solve of a batch, else the last).
    ok : bool
        The solver's own claim of success on every solve.
    iterations : int
        Summed over the batch (-1 when the solver does not say).
    build, compile, solve : float
        Seconds spent writing the model, compiling/setting it up, and in the solver.
    points : tuple of (x, y)
        QPs: the primal/dual point of every solve of the batch, in order.
    value : Fraction, optional
        ILPs: the exact objective recomputed from the integer solution.

    Examples
    --------
    >>> from evalcert.benchmarking import clipped_linear_family
    >>> from evalcert.solvers.backends import SolveSettings
    >>> problem = clipped_linear_family([(4, 6)], seeds=[0])[0]
    >>> attempt = select_backends(["native"])[0].solve(problem, SolveSettings())
    >>> attempt.status, attempt.ok, len(attempt.points)  # one (x, y) point per solve
    ('solved', True, 1)
    """

    status: str
    ok: bool
    iterations: int
    build: float
    compile: float
    solve: float
    points: tuple[tuple[np.ndarray | None, np.ndarray | None], ...] = ()
    value: Fraction | None = None


@dataclasses.dataclass(frozen=True)
class Backend:
    """A named solve function for one kind of problem.

    Attributes
    ----------
    name : str
    kind : {"qp", "ilp"}
    solve : callable
        ``solve(problem, settings: SolveSettings) -> Attempt``; must be
        picklable (a module-level function or a ``functools.partial`` of one)
        to run on joblib workers.

    Examples
    --------
    >>> from evalcert.benchmarking import clipped_linear_family
    >>> from evalcert.solvers.backends import SolveSettings
    >>> backend = select_backends(["native"])[0]
    >>> attempt = backend.solve(clipped_linear_family([(4, 6)], seeds=[0])[0], SolveSettings())
    >>> backend.name, attempt.ok  # the solver's word; evalcert's certificate decides success
    ('native', True)
    """

    name: str
    kind: str
    solve: Callable[[Any, SolveSettings], Attempt]


Step = Callable[[np.ndarray, Any, Any], tuple[RawSolution, float]]


def _batch(problem: QPProblem | StandardQP, settings: SolveSettings, step: Step,
           build: float = 0.0) -> Attempt:
    """Run ``step(weights, x0, y0) -> (solution, build seconds)`` over the batch,
    warm-starting each refit from the previous one and stopping at the first failure
    or when the batch has used up ``settings.time_limit``."""
    start = time.perf_counter()
    points: list[tuple[np.ndarray | None, np.ndarray | None]] = []
    compile_s = solve_s = 0.0
    iters = 0
    raw = None
    x0 = y0 = None
    for weights in problem.batch():
        raw, built = step(weights, x0, y0)
        build += built
        compile_s += raw.setup_time
        solve_s += raw.solve_time
        iters += max(raw.iterations, 0)
        points.append((raw.x, raw.y))
        if not raw.ok or time.perf_counter() - start > settings.time_limit:
            break
        if settings.warm_start:
            x0, y0 = raw.x, raw.y
    if raw is None:
        status, ok = "empty batch", False
    elif raw.ok and len(points) < len(problem.batch()):
        status, ok = f"time limit after {len(points)} of {len(problem.batch())} refits", False
    else:
        status, ok = raw.status, raw.ok
    return Attempt(status=status, ok=ok,
                   iterations=iters, build=build, compile=compile_s, solve=solve_s,
                   points=tuple(points))


def _standard_form(problem: QPProblem | StandardQP, solve: Callable[..., RawSolution]) -> Step:
    """A step that builds the standard-form QP (timed as build) and calls ``solve``."""
    design = problem.design()

    def step(weights, x0, y0):
        start = time.perf_counter()
        qp = problem.qp(weights, design)
        built = time.perf_counter() - start
        return solve(qp, x0, y0), built

    return step


def solve_native(problem: QPProblem | StandardQP, settings: SolveSettings) -> Attempt:
    """evalcert's active-set method (:mod:`evalcert.solvers.backends.native`); on
    clipped-linear fits with :class:`~evalcert.solvers.ClippedLinear`'s start and
    auxiliary completion.

    Examples
    --------
    >>> from evalcert.benchmarking.families import clipped_linear_family
    >>> problem = clipped_linear_family([(4, 6)], seeds=[0])[0]
    >>> attempt = solve_native(problem, SolveSettings())
    >>> attempt.status, attempt.ok, len(attempt.points)
    ('solved', True, 1)
    """
    from evalcert.solvers.backends import native

    if isinstance(problem, StandardQP):
        return _batch(problem, settings, _standard_form(
            problem, lambda qp, x0, y0: native.solve(qp, settings, x0=x0, y0=y0)))
    design = problem.design()
    start = initial_point(design, np.zeros(design.K), np.zeros(design.J), problem.box)
    complete = partial(centre_free_aux, design, problem.box)
    return _batch(problem, settings, _standard_form(
        problem, lambda qp, x0, y0: native.solve(qp, settings, x0=start if x0 is None else x0,
                                                 y0=y0, complete=complete)))


def solve_osqp_direct(problem: QPProblem | StandardQP, settings: SolveSettings) -> Attempt:
    """OSQP on the sparse standard-form QP (:mod:`evalcert.solvers.backends.osqp_direct`).

    Examples
    --------
    >>> from evalcert.benchmarking.families import clipped_linear_family
    >>> problem = clipped_linear_family([(4, 6)], seeds=[0])[0]
    >>> attempt = solve_osqp_direct(problem, SolveSettings())
    >>> attempt.ok, len(attempt.points)
    (True, 1)
    """
    from evalcert.solvers.backends import osqp_direct

    return _batch(problem, settings, _standard_form(
        problem, lambda qp, x0, y0: osqp_direct.solve(qp, settings, x0=x0, y0=y0)))


def solve_cvxpy(problem: QPProblem | StandardQP, settings: SolveSettings,
                solver: str) -> Attempt:
    """``ClippedLinearProgram`` through CVXPY with ``solver`` (a key of ``CVXPY_SOLVERS``);
    a :class:`StandardQP` goes through the generic ``solve_qp``.

    Writing the CVXPY expressions is *build*; CVXPY's canonicalisation (first
    solve) and parameter updates are *compile*; the solver's own time is *solve*.
    CVXPY warm-starts only unweighted re-solves (see :mod:`evalcert.solvers.backends.cvxpy_`).

    Examples
    --------
    >>> from evalcert.benchmarking.families import clipped_linear_family
    >>> problem = clipped_linear_family([(4, 6)], seeds=[0])[0]
    >>> attempt = solve_cvxpy(problem, SolveSettings(), "clarabel")
    >>> attempt.status, attempt.ok
    ('optimal', True)
    """
    from evalcert.solvers.backends.cvxpy_ import ClippedLinearProgram, solve_qp

    if isinstance(problem, StandardQP):
        return _batch(problem, settings,
                      lambda weights, x0, y0: (solve_qp(problem.data, solver, settings), 0.0))
    start = time.perf_counter()
    prog = ClippedLinearProgram(problem.design(), problem.box, problem.weighted)
    build = time.perf_counter() - start
    scores = problem.scores()
    return _batch(problem, settings,
                  lambda weights, x0, y0: (prog.solve(scores, weights, problem.lam, solver,
                                                      settings), 0.0),
                  build=build)


def solve_qpsolvers(problem: QPProblem | StandardQP, settings: SolveSettings,
                    solver: str) -> Attempt:
    """The standard-form QP through qpsolvers with ``solver`` (a key of
    :data:`evalcert.solvers.backends.qpsolvers_.SOLVERS`), warm-started from the
    previous refit's primal where the solver takes one.

    Examples
    --------
    >>> from evalcert.benchmarking.families import clipped_linear_family
    >>> problem = clipped_linear_family([(4, 6)], seeds=[0])[0]
    >>> solver = "piqp" if "qpsolvers-piqp" in available_qpsolvers() else None
    >>> solver is None or solve_qpsolvers(problem, SolveSettings(), solver).ok
    True
    """
    from evalcert.solvers.backends import qpsolvers_

    return _batch(problem, settings, _standard_form(
        problem, lambda qp, x0, y0: qpsolvers_.solve(qp, solver, settings, x0=x0)))


def solve_pulp(problem: IlpProblem, settings: SolveSettings, solver: str) -> Attempt:
    """The per-key ILP through PuLP with ``solver`` (``"highs"`` or ``"cbc"``).

    PuLP builds the model inside the logic function; *build* is the wall time
    outside the solver call, *solve* the solver call (model hand-over included).

    Examples
    --------
    >>> from evalcert.benchmarking.families import ilp_family
    >>> problem = ilp_family(1, [8], seeds=[0])[0]
    >>> attempt = solve_pulp(problem, SolveSettings(), "highs")
    >>> attempt.status, attempt.value == problem.bound()  # M=1: the closed form is exact
    ('Optimal', True)
    """
    from evalcert.logic.ilp import best_min_accuracy_ilp
    from evalcert.logic.pairs import m2_best_min_accuracy

    start = time.perf_counter()
    if problem.m == 1:
        res = best_min_accuracy_ilp(problem.decisions.label_counts(), problem.key, solver=solver)
    else:
        res = m2_best_min_accuracy(problem.decisions, problem.key, solver=solver)
    total = time.perf_counter() - start
    return Attempt(status=res.status, ok=res.status == "Optimal", iterations=-1,
                   build=total - res.seconds, compile=0.0, solve=res.seconds, value=res.value)


def qp_backends() -> list[Backend]:
    """The installed QP backends, in the order of :func:`available_backends`.

    Examples
    --------
    >>> backends = qp_backends()
    >>> [b.name for b in backends][:2], {b.kind for b in backends}
    (['native', 'osqp-direct'], {'qp'})
    """
    out = []
    for name in available_backends():
        if name == "native":
            out.append(Backend("native", "qp", solve_native))
        elif name == "osqp-direct":
            out.append(Backend("osqp-direct", "qp", solve_osqp_direct))
        elif name in CVXPY_SOLVERS:
            out.append(Backend(f"cvxpy-{name}", "qp", partial(solve_cvxpy, solver=name)))
    out += [Backend(name, "qp", partial(solve_qpsolvers, solver=QPSOLVERS_BACKENDS[name][0]))
            for name in available_qpsolvers()]
    return out


def ilp_backends() -> list[Backend]:
    """PuLP with HiGHS and with CBC, where available.

    Examples
    --------
    >>> backends = ilp_backends()
    >>> "pulp-highs" in [b.name for b in backends], {b.kind for b in backends}
    (True, {'ilp'})
    """
    from evalcert.logic.ilp import SOLVERS

    return [Backend(f"pulp-{name}", "ilp", partial(solve_pulp, solver=name))
            for name, make in SOLVERS.items() if make().available()]


def default_backends() -> list[Backend]:
    """Every installed backend of both kinds.

    Examples
    --------
    >>> names = [b.name for b in default_backends()]
    >>> names[:2], "pulp-highs" in names
    (['native', 'osqp-direct'], True)
    """
    return qp_backends() + ilp_backends()


def select_backends(names: list[str] | None) -> list[Backend]:
    """The installed backends named in ``names`` (all when ``None``), in that order.

    Examples
    --------
    >>> [(b.name, b.kind) for b in select_backends(["native", "pulp-highs"])]
    [('native', 'qp'), ('pulp-highs', 'ilp')]
    """
    known = {b.name: b for b in default_backends()}
    if names is None:
        return list(known.values())
    missing = [n for n in names if n not in known]
    if missing:
        raise BackendUnavailableError(f"unknown or uninstalled benchmark backends {missing}; "
                                      f"available here: {', '.join(known)}")
    return [known[n] for n in names]


def solver_parameters(backend: str, settings: SolveSettings) -> dict:
    """The parameters ``backend`` (a benchmark name) is given for ``settings``:
    :func:`~evalcert.solvers.backends.base.solver_options` for evalcert's own
    routes, :func:`evalcert.solvers.backends.qpsolvers_.options` for qpsolvers.

    Examples
    --------
    >>> solver_parameters("native", SolveSettings())
    {'max_iter': 200}
    >>> solver_parameters("cvxpy-scs", SolveSettings())["eps_abs"]  # 100x the tier 1e-6
    1e-08
    """
    if backend in QPSOLVERS_BACKENDS:
        from evalcert.solvers.backends import qpsolvers_
        return qpsolvers_.options(QPSOLVERS_BACKENDS[backend][0], settings)
    return solver_options(backend.removeprefix("cvxpy-"), settings)
