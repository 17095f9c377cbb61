"""The shared signature of the backends: settings in, a raw solution out."""

from __future__ import annotations

import dataclasses

import numpy as np

from evalcert.errors import require_positive
from evalcert.quiet import solver_log_enabled
from evalcert.solvers.certificates import Tolerance

__all__ = ["CVXPY_SOLVERS", "DIRECT_BACKENDS", "QPSOLVERS_BACKENDS", "RawSolution", "SolveSettings",
           "solver_options", "CostEstimate", "estimate_cost",
           "check_cost"]

#: Backends that go through CVXPY, mapped to CVXPY's solver name and the
#: Python module that provides it.
CVXPY_SOLVERS = {"osqp": ("OSQP", "osqp"), "clarabel": ("CLARABEL", "clarabel"),
                 "scs": ("SCS", "scs"), "ecos": ("ECOS", "ecos")}

#: Backends that do not use CVXPY.
DIRECT_BACKENDS = {"native": "scipy", "osqp-direct": "osqp"}

#: Backends through qpsolvers (:mod:`evalcert.solvers.backends.qpsolvers_`),
#: named ``qpsolvers-<solver>``, mapped to qpsolvers' solver name and the module
#: that provides the solver. Offered by :func:`available_qpsolvers` (the
#: benchmark, :func:`solve_qp` and ``ClippedLinear(solver=...)`` take them);
#: the hand-written routes add refit caches (native factorisations, OSQP's
#: set-up workspace, CVXPY's compiled DPP problem) that these do not have.
QPSOLVERS_BACKENDS = {"qpsolvers-piqp": ("piqp", "piqp"),
                      "qpsolvers-proxqp": ("proxqp", "proxsuite"),
                      "qpsolvers-daqp": ("daqp", "daqp"),
                      "qpsolvers-highs": ("highs", "highspy"),
                      "qpsolvers-cvxopt": ("cvxopt", "cvxopt")}



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
    verbose : bool
        Show progress (tqdm on stderr) for iterative solves past a few seconds.

    Examples
    --------
    >>> settings = SolveSettings(time_limit=10.0, options={"polish": False})
    >>> settings.max_iter, settings.warm_start, settings.tolerance.abs_tol > 0
    (200000, True, True)
    >>> solver_options("osqp", settings)["polish"]  # options override the mapped ones
    False
    """

    tolerance: Tolerance = Tolerance()
    time_limit: float = 600.0
    max_iter: int = 200_000
    warm_start: bool = True
    options: dict = dataclasses.field(default_factory=dict)
    verbose: bool = False

    def __post_init__(self) -> None:
        require_positive("time_limit", self.time_limit, allow_inf=True)
        require_positive("max_iter", self.max_iter, integer=True)


@dataclasses.dataclass(frozen=True)
class RawSolution:
    """What a backend returns, before evalcert checks it.

    ``ok`` is the solver's own claim of success; ``x``/``y`` may be ``None``
    when it produced nothing. ``path`` names the method a backend picked
    (the native solver's ``direct`` or ``pcg``), empty when it has one.

    Examples
    --------
    >>> sol = RawSolution(x=np.array([1.0]), y=np.array([1.0]), status="solved", ok=True,
    ...                   iterations=3, setup_time=0.0, solve_time=0.001)
    >>> sol.ok, sol.status, sol.path
    (True, 'solved', '')
    """

    x: np.ndarray | None
    y: np.ndarray | None
    status: str
    ok: bool
    iterations: int
    setup_time: float
    solve_time: float
    path: str = ""


def solver_options(backend: str, settings: SolveSettings) -> dict:
    """Map ``settings`` to one backend's own parameter names.

    The solver is asked for 100x more accuracy than the certificate demands,
    since solvers measure residuals on scaled problems.

    Examples
    --------
    >>> from evalcert.solvers.certificates import Tolerance
    >>> opts = solver_options("osqp", SolveSettings(tolerance=Tolerance(1e-6, 1e-6)))
    >>> bool(abs(opts["eps_abs"] - 1e-8) < 1e-20), opts["polish"]
    (True, True)
    """
    eps = min(settings.tolerance.abs_tol, settings.tolerance.rel_tol) * 1e-2
    table = {
        "osqp": {"eps_abs": eps, "eps_rel": eps, "max_iter": settings.max_iter,
                 "polish": True, "time_limit": settings.time_limit},
        "osqp-direct": {"eps_abs": eps, "eps_rel": eps, "max_iter": settings.max_iter,
                        "polishing": True, "time_limit": settings.time_limit,
                        "verbose": solver_log_enabled()},
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


@dataclasses.dataclass(frozen=True)
class CostEstimate:
    """Rough peak memory (bytes) and time (seconds, 2 shared cores) of one
    clipped-linear fit, from its size alone (see :func:`estimate_cost`).

    Examples
    --------
    >>> est = estimate_cost("native", 100, 50, 2000)
    >>> est.backend, est.nbytes  # 130 bytes a cell + 200 a variable
    ('native', 290000)
    """

    backend: str
    nbytes: int
    seconds: float


#: Measured on the project's 2-core machine (benchmarks/bench_scale.py): bytes
#: per observed cell of each backend's largest structures, and a dense
#: (K + J) x (K + J) array for CVXPY, whose canonicalisation of a parameter in
#: the objective is dense (shared/SOLVER_NOTES.md).
_BYTES_PER_CELL = {"native": 130, "osqp-direct": 400, "cvxpy": 1500}


def estimate_cost(backend: str, n_agents: int, n_items: int, n_cells: int,
                  box: str = "all") -> CostEstimate:
    """Estimate the peak memory and time of a clipped-linear fit before it starts.

    ``native`` (PCG path on large designs): a few arrays per cell and per
    variable, ``~(130 n_cells + 200 (K + J))`` bytes (whole-process peaks measured
    by ``benchmarks/bench_scale.py`` after the in-place certificate: 130 bytes a cell
    at 2 x 10^7 cells, data included), and ``O(n_cells)`` per iteration. ``osqp-direct``: OSQP factorises the KKT matrix; eliminating
    item ``j`` joins its ``d_j`` agents, so the factor holds about
    ``min(K^2 / 2, sum_j d_j^2 / 2)`` extra entries (``d_j = n_cells / J`` on
    average) and costs ``~sum_j d_j^2 + K^3 / 3`` flops. CVXPY backends:
    besides the cells, a dense ``(K + J)``-square coefficient array (the data
    parameter sits in the objective). Numbers are rough (a factor of 2-3);
    they are meant to refuse a fit that cannot finish, not to predict one.

    Examples
    --------
    >>> estimate_cost("cvxpy-osqp", 5000, 5000, 25_000_000).nbytes > 2 ** 30
    True
    """
    K, J, c = int(n_agents), int(n_items), int(n_cells)
    n = K + J
    if box == "observed":
        c = 2 * c       # one constraint row per cell on top of the objective
    if backend == "native":
        return CostEstimate(backend, _BYTES_PER_CELL[backend] * c + 200 * n,
                            2e-8 * c * 60 + 1e-6 * n)
    if backend == "osqp-direct":
        deg = c / max(J, 1)
        fill = min(K * K / 2.0, J * deg * deg / 2.0)
        flops = J * deg * deg + min(K, deg * J) ** 3 / 3.0
        return CostEstimate(backend, int(_BYTES_PER_CELL[backend] * c + 24 * fill + 400 * n),
                            flops / 5e8 + 2e-6 * c * 50)
    dense = 8.0 * (n + 2) * n * 3
    return CostEstimate(backend, int(_BYTES_PER_CELL["cvxpy"] * c + dense + 400 * n),
                        2e-6 * c * 20 + dense / 2e9)


#: Fits estimated below this size are not checked against the available memory.
SMALL_FIT_BYTES = 64 * 2 ** 20
#: share of the available memory a whole fit (its estimated working set) may use
WHOLE_FIT_FRACTION = 0.8


def check_cost(backend: str, n_agents: int, n_items: int, n_cells: int, box: str = "all",
               time_limit: float | None = None) -> CostEstimate:
    """:func:`estimate_cost`, then refuse a fit that would not fit in memory.

    Raises :class:`~evalcert.errors.InputError` (via
    :func:`evalcert.memory.require_memory`) with the estimate and the backend
    that would fit, before anything large is allocated.

    Examples
    --------
    >>> check_cost("native", 100, 50, 2000).nbytes < SMALL_FIT_BYTES  # small: not checked
    True
    """
    from evalcert.memory import format_bytes, memory_available, require_memory

    est = estimate_cost(backend, n_agents, n_items, n_cells, box)
    if est.nbytes < SMALL_FIT_BYTES:
        return est                  # nothing to check: spare the refits reading /proc
    native = estimate_cost("native", n_agents, n_items, n_cells, box)
    # the estimate covers the fit's whole working set (measured peaks: 0.76-0.9 of it at
    # 10^5..2 x 10^7 cells, benchmarks/bench_scale.py), not one allocation: allow 80%
    fits = native.nbytes <= WHOLE_FIT_FRACTION * memory_available()
    instead = (f"solver='native' needs about {format_bytes(native.nbytes)}, which fits"
               if fits and backend != "native" else
               "no backend fits this design here: use a machine with more memory or fit a "
               "subsample of the cells")
    require_memory(est.nbytes, f"the {backend} clipped-linear fit of {n_agents} x {n_items} with "
                   f"{n_cells} observed cells (box={box!r})", instead,
                   fraction=WHOLE_FIT_FRACTION)
    return est
