"""The shared signature of the backends: settings in, a raw solution out."""

from __future__ import annotations

import dataclasses

import numpy as np

from evalcert.solvers.certificates import Tolerance

__all__ = ["RawSolution", "SolveSettings", "solver_options"]


@dataclasses.dataclass(frozen=True)
class SolveSettings:
    """What every backend is told.

    Attributes
    ----------
    tolerance : Tolerance
        The accuracy evalcert's certificate will demand; each backend maps it
        to its own parameters (:func:`solver_options`), one notch tighter.
    time_limit : float
        Seconds.
    max_iter : int
        Iteration budget for iterative solvers.
    warm_start : bool
        Reuse the previous solution/factorisation when the solver can.
    options : dict
        Extra keyword arguments passed to the solver as they are.
    """

    tolerance: Tolerance = Tolerance()
    time_limit: float = 600.0
    max_iter: int = 200_000
    warm_start: bool = True
    options: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class RawSolution:
    """What a backend returns, before evalcert checks it.

    ``ok`` is the solver's own claim of success; ``x``/``y`` may be ``None``
    when it produced nothing.
    """

    x: np.ndarray | None
    y: np.ndarray | None
    status: str
    ok: bool
    iterations: int
    setup_time: float
    solve_time: float


def solver_options(backend: str, settings: SolveSettings) -> dict:
    """Map ``settings`` to one backend's own parameter names.

    The solver is asked for 100x more accuracy than the certificate demands,
    since solvers measure residuals on scaled problems.
    """
    eps = min(settings.tolerance.abs_tol, settings.tolerance.rel_tol) * 1e-2
    table = {
        "osqp": {"eps_abs": eps, "eps_rel": eps, "max_iter": settings.max_iter,
                 "polish": True, "time_limit": settings.time_limit},
        "osqp-direct": {"eps_abs": eps, "eps_rel": eps, "max_iter": settings.max_iter,
                        "polishing": True, "time_limit": settings.time_limit, "verbose": False},
        "clarabel": {"tol_gap_abs": eps, "tol_gap_rel": eps, "tol_feas": eps,
                     "max_iter": 500, "time_limit": settings.time_limit},
        "scs": {"eps_abs": eps, "eps_rel": eps, "max_iters": settings.max_iter,
                "time_limit_secs": settings.time_limit},
        "ecos": {"abstol": eps, "reltol": eps, "feastol": eps, "max_iters": 500},
        "native": {"max_iter": 200},
    }
    opts = dict(table[backend])
    opts.update(settings.options)
    return opts
