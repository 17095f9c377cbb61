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
]


class EvalcertError(Exception):
    """Base class of every error evalcert raises on purpose."""


class InputError(EvalcertError, ValueError):
    """The data handed to evalcert is malformed; raised before any solver runs.

    The message names the offending rows, cells, labels or graders and says
    what to do about them.
    """


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
