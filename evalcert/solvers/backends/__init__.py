"""Solver backends: one short module per backend behind one signature.

Every backend solves a standard-form :class:`~evalcert.solvers.certificates.QP`
and returns a :class:`RawSolution` (primal ``x``, row multipliers ``y`` in the
sign convention of :mod:`evalcert.solvers.certificates`, the solver's status
and timings). Whether the answer is accepted is decided afterwards by the
certificate, never by the solver's word.

``BACKENDS`` is filled at import from what is installed: a missing optional
solver (ECOS, say) is left out, not fatal; asking for it raises
:class:`~evalcert.errors.BackendUnavailableError`.
"""

from __future__ import annotations

import functools
import importlib.util

from evalcert.errors import BackendUnavailableError
from evalcert.solvers.backends.base import (CVXPY_SOLVERS, DIRECT_BACKENDS, QPSOLVERS_BACKENDS,
                                           RawSolution, SolveSettings)

__all__ = ["RawSolution", "SolveSettings", "CVXPY_SOLVERS", "QPSOLVERS_BACKENDS",
           "available_backends", "available_qpsolvers", "check_backend", "check_qp_backend",
           "solve_qp"]

@functools.lru_cache(maxsize=None)
def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def available_backends() -> list[str]:
    """Names of the backends whose solver is installed, fastest-first.

    Examples
    --------
    >>> available_backends()[:2]
    ['native', 'osqp-direct']
    """
    names = [n for n, mod in DIRECT_BACKENDS.items() if _installed(mod)]
    if _installed("cvxpy"):
        names += [n for n, (_, mod) in CVXPY_SOLVERS.items() if _installed(mod)]
    return names


def available_qpsolvers() -> list[str]:
    """Names of the ``qpsolvers-<solver>`` backends installed here (a missing
    solver, or qpsolvers itself, is skipped, not fatal).

    Examples
    --------
    >>> names = available_qpsolvers()  # depends on what is installed
    >>> set(names) <= set(QPSOLVERS_BACKENDS), all(n.startswith("qpsolvers-") for n in names)
    (True, True)
    """
    if not _installed("qpsolvers"):
        return []
    return [n for n, (_, mod) in QPSOLVERS_BACKENDS.items() if _installed(mod)]


def solve_qp(name: str, qp, settings: SolveSettings | None = None, x0=None, y0=None,
             cache: dict | None = None) -> RawSolution:
    """Solve a standard-form QP with any backend by name (``native``,
    ``osqp-direct``, a CVXPY solver, or ``qpsolvers-<solver>``).

    The answer is not checked here: pass ``(x, y)`` to
    :func:`~evalcert.solvers.certificates.qp_certificate`.

    Examples
    --------
    Minimise ``x^2/2 - 2x`` subject to ``-1 <= x <= 1`` (optimum on the bound):

    >>> import numpy as np, scipy.sparse as sp
    >>> from evalcert.solvers.certificates import QP, qp_certificate
    >>> qp = QP(P=sp.eye(1, format="csc"), q=np.array([-2.0]), A=sp.eye(1, format="csc"),
    ...         l=np.array([-1.0]), u=np.array([1.0]))
    >>> sol = solve_qp("native", qp)
    >>> sol.ok, np.round(sol.x, 8).tolist(), np.round(sol.y, 8).tolist()
    (True, [1.0], [1.0])
    >>> qp_certificate(qp, sol.x, sol.y).passed
    True
    """
    settings = SolveSettings() if settings is None else settings
    check_qp_backend(name)
    if name in QPSOLVERS_BACKENDS:
        from evalcert.solvers.backends import qpsolvers_
        return qpsolvers_.solve(qp, QPSOLVERS_BACKENDS[name][0], settings, x0=x0, y0=y0)
    if name == "native":
        from evalcert.solvers.backends import native
        return native.solve(qp, settings, x0=x0, y0=y0, cache=cache)
    if name == "osqp-direct":
        from evalcert.solvers.backends import osqp_direct
        return osqp_direct.solve(qp, settings, x0=x0, y0=y0, cache=cache)
    from evalcert.solvers.backends import cvxpy_
    return cvxpy_.solve_qp(qp, name, settings)


def check_backend(name: str) -> str:
    """Return ``name`` if that backend is usable, else raise
    :class:`BackendUnavailableError` listing the ones that are.

    Examples
    --------
    >>> check_backend("native")
    'native'
    >>> check_backend("gurobi")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    evalcert.errors.BackendUnavailableError: unknown solver 'gurobi'; known: native, osqp-direct, ...
    """
    known = list(DIRECT_BACKENDS) + list(CVXPY_SOLVERS)
    if name not in known:
        raise BackendUnavailableError(f"unknown solver {name!r}; known: {', '.join(known)}")
    if name not in available_backends():
        raise BackendUnavailableError(
            f"solver {name!r} is not installed here; available: {', '.join(available_backends())}"
            + (" (pip install ecos)" if name == "ecos" else ""))
    return name


def check_qp_backend(name: str) -> str:
    """:func:`check_backend`, plus the ``qpsolvers-<solver>`` routes: the backends
    that take a standard-form QP (:func:`solve_qp`, ``ClippedLinear``).

    Examples
    --------
    >>> check_qp_backend("native")
    'native'
    """
    if name in QPSOLVERS_BACKENDS:
        if name not in available_qpsolvers():
            raise BackendUnavailableError(
                f"{name} is not installed here (pip install \"evalcert[qp]\"); available: "
                f"{', '.join(available_backends() + available_qpsolvers())}")
        return name
    return check_backend(name)
