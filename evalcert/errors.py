"""Typed errors raised by evalcert.

Every error evalcert raises on purpose derives from :class:`EvalcertError`, so a
caller can catch the whole family at once, and from the matching built-in
(``ValueError`` for bad input, ``RuntimeError`` for solver trouble) so code that
does not know evalcert still behaves sensibly.
"""

from __future__ import annotations

__all__ = [
    "EvalcertError",
    "InputError",
    "ConnectivityError",
    "InfeasibleError",
    "SolverError",
    "CertificateError",
    "ConvergenceError",
    "BackendUnavailableError",
    "require_positive",
]


class EvalcertError(Exception):
    """Base class of every error evalcert raises on purpose."""


class InputError(EvalcertError, ValueError):
    """The data handed to evalcert is malformed; raised before any solver runs.

    The message names the offending rows, cells, labels or graders and says
    what to do about them.
    """


def require_positive(name: str, value: object, *, integer: bool = False,
                     allow_inf: bool = False, allow_zero: bool = False) -> object:
    """Return ``value`` if it is a positive number (an int with ``integer``), finite unless
    ``allow_inf``; otherwise raise :class:`InputError` naming ``name`` (``nan`` compares
    false with everything, so a bare ``value > 0`` check lets it through elsewhere).

    Examples
    --------
    >>> require_positive("tol", 1e-6), require_positive("max_iter", 5, integer=True)
    (1e-06, 5)
    >>> require_positive("tol", float("nan"))
    Traceback (most recent call last):
    ...
    evalcert.errors.InputError: tol must be a finite number > 0, got nan
    """
    import numbers
    import math

    kind = "an integer" if integer else "a finite number" if not allow_inf else "a number"
    ok = (isinstance(value, numbers.Integral) if integer else isinstance(value, numbers.Real)) \
        and not isinstance(value, bool)
    if ok:
        number = float(value)  # type: ignore[arg-type]
        ok = not math.isnan(number) and (allow_inf or math.isfinite(number)) \
            and (number >= 0 if allow_zero else number > 0)
    if not ok:
        raise InputError(f"{name} must be {kind} {'>=' if allow_zero else '>'} 0, "
                         f"got {value!r}")
    return value


class ConnectivityError(InputError):
    """The observation design is disconnected (or under-connected).

    Parameters of different components of the bipartite agent-item graph are not
    comparable, so fitting one common scale is meaningless.

    Attributes
    ----------
    component_sizes : list of tuple of int
        ``(n_agents, n_items)`` per connected component, largest first.
    """

    def __init__(self, message: str, component_sizes: list[tuple[int, int]] | None = None):
        super().__init__(message)
        self.component_sizes = list(component_sizes or [])


class InfeasibleError(EvalcertError):
    """The optimisation problem has no feasible point (e.g. non-additive data
    under a hard additivity constraint)."""


class SolverError(EvalcertError, RuntimeError):
    """A solver failed, stopped early, or returned an answer that evalcert does
    not accept.

    Attributes
    ----------
    solver : str
        Name of the backend that ran.
    status : str
        The backend's own status string.
    """

    def __init__(self, message: str, *, solver: str = "", status: str = ""):
        super().__init__(message)
        self.solver = solver
        self.status = status


class CertificateError(SolverError):
    """The solver said "optimal" but evalcert's own certificate check failed
    (residuals or duality gap above tolerance)."""

    def __init__(self, message: str, *, solver: str = "", status: str = "", certificate=None):
        super().__init__(message, solver=solver, status=status)
        self.certificate = certificate


class ConvergenceError(SolverError):
    """An iterative estimator did not converge within its iteration budget."""


class BackendUnavailableError(EvalcertError, ImportError):
    """A requested solver backend is not installed or not known."""
