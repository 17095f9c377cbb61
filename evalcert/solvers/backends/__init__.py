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
from evalcert.solvers.backends.base import RawSolution, SolveSettings

__all__ = ["RawSolution", "SolveSettings", "CVXPY_SOLVERS", "available_backends",
           "check_backend"]

#: Backends that go through CVXPY, mapped to CVXPY's solver name and the
#: Python module that provides it.
CVXPY_SOLVERS = {"osqp": ("OSQP", "osqp"), "clarabel": ("CLARABEL", "clarabel"),
                 "scs": ("SCS", "scs"), "ecos": ("ECOS", "ecos")}

#: Backends that do not use CVXPY.
DIRECT_BACKENDS = {"native": "scipy", "osqp-direct": "osqp"}


@functools.lru_cache(maxsize=None)
def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def available_backends() -> list[str]:
    """Names of the backends whose solver is installed, fastest-first."""
    names = [n for n, mod in DIRECT_BACKENDS.items() if _installed(mod)]
    if _installed("cvxpy"):
        names += [n for n, (_, mod) in CVXPY_SOLVERS.items() if _installed(mod)]
    return names


def check_backend(name: str) -> str:
    """Return ``name`` if that backend is usable, else raise
    :class:`BackendUnavailableError` listing the ones that are."""
    known = list(DIRECT_BACKENDS) + list(CVXPY_SOLVERS)
    if name not in known:
        raise BackendUnavailableError(f"unknown solver {name!r}; known: {', '.join(known)}")
    if name not in available_backends():
        raise BackendUnavailableError(
            f"solver {name!r} is not installed here; available: {', '.join(available_backends())}"
            + (" (pip install ecos)" if name == "ecos" else ""))
    return name
