"""The clipped-linear (identity-link) additive model, Eq. 7, with certificates.

    min_{theta, b}  sum_{(i,j) in Omega} w_ij (s_ij - (theta_i - b_j))^2
                    + lam (||theta||^2 + ||b||^2)
    s.t.            sum_j b_j = 0,   |theta_i - b_j| <= 1  (box)

Robertson, "Identity-Link IRT for Label-Free LLM Evaluation", Sec. 4.1 and
App. F.4. The fit is a convex QP (see :mod:`evalcert.solvers.clipped_linear_qp`);
every solve is checked by evalcert's own KKT certificate before it is returned.

Example
-------
>>> import numpy as np
>>> from evalcert import ScoreMatrix
>>> from evalcert.solvers import ClippedLinear
>>> S = ScoreMatrix.from_array(np.array([[0.9, 0.5], [0.1, -0.3]]))
>>> model = ClippedLinear(lam=1e-6).fit(S)
>>> bool(model.result_.certificate.passed), int(model.theta_.argmax())
(True, 0)
"""

from __future__ import annotations

import dataclasses
import time
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from evalcert.data import ScoreMatrix, bipartite_components
from evalcert.errors import ConnectivityError, InputError, SolverError
from evalcert.results import (PageMixin, ResultMixin, Stopwatch, Timings, format_table,
                              list_names)
from evalcert.solvers.backends import CVXPY_SOLVERS, check_qp_backend
from evalcert.solvers.backends.base import CostEstimate, SolveSettings, check_cost
from evalcert.solvers.certificates import Certificate, Tolerance, qp_certificate
from evalcert.solvers.clipped_linear_qp import (BOX_MODES, Design, HessianPattern,
                                                binding_constraints, build_qp, centre_free_aux,
                                                initial_point, n_aux, with_scores, with_weights)

__all__ = ["ClippedLinear", "ClippedLinearResult", "ClippedLinearCertificate"]


def as_score_matrix(S: Any) -> ScoreMatrix:
    """Accept a :class:`ScoreMatrix`, a 2-D array or a wide DataFrame."""
    if isinstance(S, ScoreMatrix):
        return S
    if isinstance(S, pd.DataFrame):
        return ScoreMatrix.from_wide(S)
    return ScoreMatrix.from_array(S)


def _count_outside_box(theta: np.ndarray, b: np.ndarray, bounds: tuple[float, float]) -> int:
    """Number of cells with ``theta_i - b_j`` outside ``[lo, hi]``, in O((K + J) log J)."""
    lo, hi = bounds
    b_sorted = np.sort(b)
    below = len(b) - np.searchsorted(b_sorted, theta - lo, side="right")  # b_j > theta_i - lo
    above = np.searchsorted(b_sorted, theta - hi, side="left")            # b_j < theta_i - hi
    return int(below.sum() + above.sum())


def _check_weights(S: ScoreMatrix, rows: np.ndarray, cols: np.ndarray,
                   sample_weight: Any) -> np.ndarray:
    """Per-observed-cell weights in the order of ``S.cells()``, validated.

    ``sample_weight`` is ``None``, one weight per observed cell (shape
    ``(n_observed,)``, the order of ``S.cells()``), or a K x J array (small
    matrices) that must be zero off the observed cells.
    """
    n = len(rows)
    if sample_weight is None:
        return np.ones(n)
    w = np.asarray(sample_weight, dtype=float)
    if w.shape == (n,):
        per_cell = w
    elif w.shape == S.shape:
        per_cell = w[rows, cols]
    else:
        raise InputError(f"sample_weight must have one weight per observed cell ({n},) or the "
                         f"shape of the scores {S.shape}; got {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise InputError("sample_weight must be finite and nonnegative")
    if w.ndim == 2:
        n_stray = int(np.count_nonzero(w > 0)) - int(np.count_nonzero(per_cell > 0))
        if n_stray:
            on = np.zeros(S.shape, dtype=bool)
            on[rows, cols] = True
            r, c = np.argwhere((w > 0) & ~on)[0]
            raise InputError(f"sample_weight is positive on {n_stray} unobserved cell(s), e.g. "
                             f"({S.agents[r]}, {S.items[c]}); weights may only sit on observed "
                             "cells")
    return np.ascontiguousarray(per_cell, dtype=float)


def _require_connected(S: ScoreMatrix, design: Design, keep: np.ndarray) -> None:
    """Raise :class:`ConnectivityError` unless the cells with ``keep`` connect
    every agent and item (O(n_cells); ``S.require_connected`` when all are kept)."""
    if keep.all():
        S.require_connected()
        return
    agent_comp, item_comp = bipartite_components(design.rows[keep], design.cols[keep],
                                                 (design.K, design.J))
    n_comp = int(max(agent_comp.max(), item_comp.max())) + 1
    if n_comp > 1:
        sizes = list(zip(np.bincount(agent_comp, minlength=n_comp).tolist(),
                         np.bincount(item_comp, minlength=n_comp).tolist()))
        raise ConnectivityError(
            f"the cells with positive sample_weight form a disconnected design: {n_comp} "
            f"components of (agents, items) sizes {sizes[:10]}{'...' if n_comp > 10 else ''}; "
            "abilities of different components are not comparable. Give weight to cells that "
            "link them (or fit each component separately)", sizes)


#: the largest ridge weight accepted: the QP's Hessian 2 (D'D + lam I) must stay finite
LAM_MAX = 1e100


@dataclasses.dataclass(frozen=True)
class ClippedLinearCertificate(Certificate):
    """A :class:`Certificate` of an Eq. 7 fit that can re-check itself from data.

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert import ScoreMatrix
    >>> S = ScoreMatrix.from_array(np.array([[0.9, 0.5, np.nan], [0.1, -0.3, 0.0], [1.0, 1.0, 0.8]]))
    >>> cert = ClippedLinear(lam=1e-6).fit(S).result_.certificate
    >>> recomputed = cert.verify(S)  # from the data alone; raises CertificateError if not optimal
    >>> recomputed.passed, recomputed.box, [g["agents"] for g in recomputed.binding]
    (True, 'all', [['agent_2']])
    """

    lam: float = 0.0
    box: str = "all"
    bounds: tuple[float, float] = (-1.0, 1.0)

    @classmethod
    def of(cls, cert: Certificate, lam: float, box: str,
           bounds: tuple[float, float] = (-1.0, 1.0)) -> "ClippedLinearCertificate":
        """Attach the fit's ``lam``, ``box`` and ``bounds`` to a generic certificate."""
        return cls(**{f.name: getattr(cert, f.name) for f in dataclasses.fields(Certificate)},
                   lam=lam, box=box, bounds=bounds)

    def verify(self, S: ScoreMatrix, sample_weight: np.ndarray | None = None,
               tolerance: Tolerance | None = None) -> "ClippedLinearCertificate":
        """Recompute residuals and gap from ``S`` and the stored primal/dual point.

        Independent of the solver: the QP is rebuilt from the observed cells
        of ``S``, ``lam``, ``box`` and ``bounds``. Returns the recomputed
        certificate; raises :class:`~evalcert.errors.CertificateError` if it fails.
        """
        S = as_score_matrix(S)
        design, scores, weights = _cells(S, sample_weight)
        qp = build_qp(design, scores, weights, self.lam, self.box, self.bounds)
        if self.x.shape != (qp.n,) or self.y.shape != (qp.m,):
            raise InputError(f"this certificate is for {len(self.x)} variables; the data give "
                             f"{qp.n}: it belongs to another matrix")
        cert = qp_certificate(qp, self.x, self.y, tolerance or self.tolerance,
                              binding_constraints(design, self.box, self.x, self.y,
                                                  S.agents, S.items, bounds=self.bounds))
        out = ClippedLinearCertificate.of(cert, self.lam, self.box, self.bounds)
        out.raise_if_failed(solver="verify", status="recomputed")
        return out


def _cells(S: ScoreMatrix, sample_weight: Any) -> tuple[Design, np.ndarray, np.ndarray]:
    """The design (row-major cells), scores and validated weights of ``S``
    (whose cells are in row-major order: not checked again here)."""
    rows, cols, scores = S.cells()
    weights = _check_weights(S, rows, cols, sample_weight)
    design = Design.from_cells(S.shape[0], S.shape[1], rows, cols)
    return design, np.ascontiguousarray(scores, dtype=float), weights


@dataclasses.dataclass(frozen=True)
class ClippedLinearResult(PageMixin, ResultMixin):
    """Everything about one Eq. 7 solve.

    Attributes
    ----------
    status : str
        The solver's own status string.
    objective : float
        Eq. 7 at the solution (recomputed by evalcert).
    solver : str
    iterations : int
    timings : Timings
    certificate : ClippedLinearCertificate
    theta, b : ndarray
        Abilities and difficulties.
    agents, items : tuple of str
    lam : float
    box : str
    n_observed : int
        Cells in the objective (positive weight).
    n_clipped : int
        Observed-or-not cells whose prediction left ``bounds`` and was
        clipped (only possible with ``box="none"``).
    bounds : (float, float)
        The score range (``ScoreMatrix.bounds``): the box is
        ``lo <= theta_i - b_j <= hi``.

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert import ScoreMatrix
    >>> S = ScoreMatrix.from_array(np.array([[0.9, 0.5, np.nan], [0.1, -0.3, 0.0], [1.0, 1.0, 0.8]]))
    >>> result = ClippedLinear(lam=1e-6).fit(S).result_
    >>> result.status, result.n_observed, result.certificate.passed
    ('solved', 8, True)
    >>> list(result.ranking()["agent"])  # by ability theta
    ['agent_2', 'agent_0', 'agent_1']
    """

    status: str
    objective: float
    solver: str
    iterations: int
    timings: Timings
    certificate: ClippedLinearCertificate
    theta: np.ndarray
    b: np.ndarray
    agents: tuple[str, ...]
    items: tuple[str, ...]
    lam: float
    box: str
    n_observed: int
    n_clipped: int
    bounds: tuple[float, float] = (-1.0, 1.0)

    def ranking(self) -> pd.DataFrame:
        """Agents sorted by ability, best first."""
        order = np.argsort(-self.theta, kind="stable")
        return pd.DataFrame({"rank": np.arange(1, len(order) + 1),
                             "agent": [self.agents[k] for k in order],
                             "theta": self.theta[order]})

    def to_frame(self, what: str = "agents") -> pd.DataFrame:
        """The estimates as a table: ``"agents"`` (agent, theta; data order) or ``"items"``
        (item, b)."""
        if what == "items":
            return pd.DataFrame({"item": list(self.items), "b": self.b})
        return pd.DataFrame({"agent": list(self.agents), "theta": self.theta})

    def summary(self, max_agents: int = 40) -> str:
        rank = self.ranking().head(max_agents)
        lines = [f"clipped-linear fit (Eq. 7): {len(self.agents)} agents x {len(self.items)} items, "
                 f"{self.n_observed} observed cells, lam={self.lam:g}, box={self.box!r}"
                 f" (scores in [{self.bounds[0]:g}, {self.bounds[1]:g}])",
                 f"solver {self.solver}: status {self.status}, {self.iterations} iterations, "
                 f"objective {self.objective:.10g}", f"timings: {self.timings.summary()}",
                 self.certificate.summary(), ""]
        if self.box == "none":
            lines.append(f"{self.n_clipped} predicted cell(s) outside {list(self.bounds)} were "
                         "clipped")
        for g in self.certificate.binding[:10]:
            if "side" in g:
                lines.append(f"binding {g['side']} box (theta_i - b_j = {g['bound']:+g}): agents "
                             f"{list_names(g['agents'])}; items {list_names(g['items'])}; "
                             f"multiplier {g['multiplier']:.4g}")
            else:
                lines.append(f"binding cell ({g['agent']}, {g['item']}) at {g['bound']:+g}, "
                             f"multiplier {g['multiplier']:.4g}")
        if len(self.certificate.binding) > 10:
            lines.append(f"... {len(self.certificate.binding) - 10} more binding constraints")
        if not self.certificate.binding and self.box != "none":
            lines.append("no box constraint binds")
        lines += ["", "ranking by theta:",
                  format_table(rank.itertuples(index=False), ["rank", "agent", "theta"])]
        return "\n".join(lines)


class ClippedLinear:
    """Clipped-linear additive model ``s_ij = theta_i - b_j``, ``|s_ij| <= 1`` (Eq. 7).

    Parameters
    ----------
    lam : float, default 1e-6
        Ridge weight on ``||theta||^2 + ||b||^2`` (the paper's value).
    box : {"all", "observed", "none"}, default "all"
        ``all``: ``lo <= theta_i - b_j <= hi`` on every cell (App. F.4), with
        ``(lo, hi) = S.bounds`` (``|theta_i - b_j| <= 1`` for the default
        bounds), as ``max theta - min b <= hi`` and ``max b - min theta <= -lo``;
        ``observed``: only on observed cells; ``none``: no box, predictions
        clipped afterwards (and counted in ``result_.n_clipped``).
    solver : str, default "native"
        ``native`` (evalcert's active-set method, no CVXPY), ``osqp-direct``,
        through CVXPY ``osqp``, ``clarabel``, ``scs``, ``ecos``, or through
        qpsolvers ``qpsolvers-piqp``, ``-proxqp``, ``-daqp``, ``-highs``,
        ``-cvxopt`` (``pip install "evalcert[qp]"``; no refit caches).
        ``result_.solver`` says which native path ran: ``direct`` (Schur
        complement factorisations, exact to rounding) on small designs,
        ``pcg`` (preconditioned conjugate gradients, O(cells) per iteration)
        on large ones.
    tolerance : Tolerance, optional
        What the certificate must meet (default abs and rel 1e-6).
    time_limit : float, default 600
        Seconds; a solve that runs out raises
        :class:`~evalcert.errors.SolverError` with status ``"time_limit"``.
    solver_options : dict, optional
        Passed to the solver as they are.
    require_connected : bool, default True
        Raise :class:`~evalcert.errors.ConnectivityError` on a disconnected
        design (abilities of different components are not comparable).
        Checked on every fit (cached by the hash of the observed cells).
    verbose : bool, default False
        Show a progress bar (tqdm, on stderr) for iterative solves that take
        more than a few seconds.

    Attributes
    ----------
    theta_, b_ : ndarray
        Abilities (K,) and difficulties (J,), ``sum(b_) == 0``.
    result_ : ClippedLinearResult

    Examples
    --------
    >>> from evalcert.data import ScoreMatrix
    >>> S = ScoreMatrix.from_array(np.array([[0.9, 0.5, np.nan], [0.1, -0.3, 0.0],
    ...                                      [1.0, 1.0, 0.8]]))
    >>> model = ClippedLinear(lam=1e-6).fit(S)
    >>> model.result_.certificate.passed, int(model.theta_.argmax()), model.predict().shape
    (True, 2, (3, 3))
    >>> bool(abs(model.b_.sum()) < 1e-9)  # the gauge
    True
    """

    def __init__(self, lam: float = 1e-6, box: str = "all", solver: str = "native",
                 tolerance: Tolerance | None = None, time_limit: float = 600.0,
                 solver_options: dict | None = None, require_connected: bool = True,
                 verbose: bool = False):
        self.lam = lam
        self.box = box
        self.solver = solver
        self.tolerance = tolerance
        self.time_limit = time_limit
        self.solver_options = solver_options
        self.require_connected = require_connected
        self.verbose = verbose
        self._program = None
        self._last: tuple[Design, np.ndarray, np.ndarray] | None = None
        self._structure: tuple[tuple, Any, dict] | None = None
        self._connected: tuple[Design, np.ndarray] | None = None
        self._pattern: tuple[Design, HessianPattern] | None = None

    def __getstate__(self) -> dict:
        # Solver caches (a compiled CVXPY problem, SuperLU factorisations) are
        # neither picklable nor worth shipping: a copy refits from scratch.
        state = self.__dict__.copy()
        state.update(_program=None, _structure=None, _last=None, _connected=None, _pattern=None)
        return state

    def _check_params(self) -> None:
        if not (isinstance(self.lam, (int, float)) and 0 <= self.lam <= LAM_MAX):
            # beyond LAM_MAX the Hessian 2 (D'D + lam I) overflows (lam=1e308 -> inf)
            raise InputError(f"lam must be a number in [0, {LAM_MAX:g}], got {self.lam!r}")
        if self.box not in BOX_MODES:
            raise InputError(f"box must be one of {BOX_MODES}, got {self.box!r}")
        if not (isinstance(self.time_limit, (int, float)) and self.time_limit > 0):
            raise InputError(f"time_limit must be a positive number of seconds, got "
                             f"{self.time_limit!r}")
        check_qp_backend(self.solver)

    def fit(self, S: Any, sample_weight: np.ndarray | None = None) -> "ClippedLinear":
        """Fit Eq. 7 to the observed cells of ``S``.

        Everything is built from ``S.cells()``: time and memory grow with the
        observed cells, not with K x J. The box is ``lo <= theta_i - b_j <= hi``
        with ``(lo, hi) = S.bounds``.

        Parameters
        ----------
        S : ScoreMatrix, ndarray or DataFrame
            Scores inside ``S.bounds``, NaN = unobserved.
        sample_weight : ndarray, optional
            Nonnegative multiplicity of each observed cell in the objective
            (bootstrap counts): one per observed cell in the order of
            ``S.cells()``, or a K x J array; 0 drops a cell from the objective.
            The observation pattern, and so the compiled problem, stays that
            of ``S``, so refits with new weights do not recompile.

        Returns
        -------
        self
        """
        self._check_params()
        start = time.perf_counter()
        S = as_score_matrix(S)
        sw = Stopwatch()
        with sw("build"):
            design, scores, weights = _cells(S, sample_weight)
            last = self._structure[0][0] if self._structure is not None else None
            if design.same_pattern(last):
                design = last               # keeps what was derived from it
            if self.require_connected:
                # Checked on every fit unless the very same cells (coordinates,
                # not just the shape or their count) carry weight as last time.
                keep = weights > 0
                if self._connected is None or not design.same_pattern(self._connected[0]) \
                        or not np.array_equal(keep, self._connected[1]):
                    _require_connected(S, design, keep)
                    self._connected = (design, keep)
            cost = check_cost(self.solver, design.K, design.J, design.n_cells, self.box)
            self._check_time(cost, start)
            qp = self._build(design, scores, weights, S.bounds)
        # The time limit covers the whole fit: the solver gets what is left.
        left = max(self.time_limit - (time.perf_counter() - start), 1e-3)
        settings = SolveSettings(tolerance=self.tolerance or Tolerance(), time_limit=left,
                                 options=dict(self.solver_options or {}), verbose=self.verbose)
        raw = self._solve(design, qp, scores, weights, sample_weight is not None, S.bounds,
                          settings, sw)
        if not raw.ok and time.perf_counter() - start >= self.time_limit:
            # "run time limit reached" (OSQP), "user_limit" (CVXPY), an
            # inaccurate SCS answer: whatever the solver calls it, it expired.
            raw = dataclasses.replace(raw, status="time_limit")
        if not raw.ok or raw.x is None or raw.y is None:
            hint = (f"the time limit of {self.time_limit:g} s expired; raise time_limit= or "
                    "use a faster backend (native)" if raw.status == "time_limit" else
                    "try another backend (solver='clarabel' is the most robust)")
            raise SolverError(f"solver {self.solver!r} did not solve the clipped-linear fit: status "
                              f"{raw.status!r} after {raw.iterations} iterations; {hint}",
                              solver=self.solver, status=raw.status)
        with sw("certify"):
            cert = qp_certificate(qp, raw.x, raw.y, settings.tolerance,
                                  binding_constraints(design, self.box, raw.x, raw.y,
                                                      S.agents, S.items, bounds=S.bounds))
            cert = ClippedLinearCertificate.of(cert, float(self.lam), self.box, S.bounds)
        cert.raise_if_failed(solver=self.solver, status=raw.status)
        K, J = design.K, design.J
        theta, b = raw.x[:K].copy(), raw.x[K:K + J].copy()
        self._last = (design, raw.x, raw.y)
        self.theta_, self.b_ = theta, b
        self.agents_, self.items_ = S.agents, S.items
        self.bounds_ = S.bounds
        self.result_ = ClippedLinearResult(
            status=raw.status, objective=cert.primal_objective,
            solver=self.solver if not raw.path else f"{self.solver} ({raw.path})",
            iterations=raw.iterations, timings=sw.timings(), certificate=cert, theta=theta, b=b,
            agents=S.agents, items=S.items, lam=float(self.lam), box=self.box,
            n_observed=int(np.count_nonzero(weights > 0)),
            n_clipped=_count_outside_box(theta, b, S.bounds) if self.box == "none" else 0,
            bounds=S.bounds)
        return self

    def _assume_connected(self, keep: np.ndarray) -> None:
        """Private hook for :func:`~evalcert.diagnostics.bootstrap.bootstrap_fidelity`,
        which checks every resample's connectivity itself: the cells of the last
        fit's design with ``keep`` connect every agent and item, so the next fit
        on exactly that design with exactly those cells weighted skips the
        check. Any other design or weighted set is checked as usual."""
        if self.require_connected and self._structure is not None:
            self._connected = (self._structure[0][0], np.array(keep, dtype=bool))

    def _check_time(self, cost: CostEstimate, start: float) -> None:
        """Refuse up front a fit estimated to take more than twice its time
        limit (a compilation or a factorisation cannot be interrupted)."""
        left = self.time_limit - (time.perf_counter() - start)
        if cost.seconds > 2.0 * left:
            raise SolverError(
                f"solver {self.solver!r} is estimated to need ~{cost.seconds:.3g} s for this fit, "
                f"more than the time limit allows ({self.time_limit:g} s); raise time_limit="
                + ("" if self.solver == "native" else
                   " or use solver='native' (its steps cost O(observed cells))"),
                solver=self.solver, status="time_limit")

    def _build(self, design: Design, scores: np.ndarray, weights: np.ndarray,
               bounds: tuple[float, float]):
        """The QP of this fit. On a refit with the same design, ``lam``, box and
        bounds nothing the design alone determines is rebuilt: with the same
        weights only ``q`` and ``r`` are recomputed (``P``, ``A`` and the
        solvers' factorisations are kept); with new weights (a bootstrap
        replicate) ``P`` gets new values on its kept pattern (the
        :class:`~evalcert.solvers.clipped_linear_qp.HessianPattern`, kept from
        the first weighted fit) and ``A``, ``l``, ``u`` are kept."""
        params = (float(self.lam), self.box, bounds)
        cache: dict = {}
        if self._structure is not None:
            (old, old_weights, old_params), qp, old_cache = self._structure
            if old is design and old_params == params:
                if np.array_equal(old_weights, weights):
                    return with_scores(qp, design, scores, weights)
                # new weights on the same design: P keeps its pattern, so OSQP
                # keeps its symbolic factorisation (it updates P's values)
                cache = {k: v for k, v in old_cache.items() if k == "osqp-direct"}
                if self._pattern is None or self._pattern[0] is not design \
                        or self._pattern[1].n_extra != n_aux(self.box):
                    self._pattern = (design, HessianPattern.of(design, n_aux(self.box)))
                qp = with_weights(qp, design, scores, weights, float(self.lam), self.box,
                                  self._pattern[1])
                self._structure = ((design, weights, params), qp, cache)
                return qp
        if self._pattern is not None and self._pattern[0] is not design:
            self._pattern = None            # another design's: free it
        qp = build_qp(design, scores, weights, float(self.lam), self.box, bounds)
        self._structure = ((design, weights, params), qp, cache)
        return qp

    def _solve(self, design, qp, scores, weights, weighted, bounds, settings, sw):
        warm = (self._last is not None and self._last[0].same_pattern(design)
                and len(self._last[1]) == qp.n and len(self._last[2]) == qp.m
                and settings.warm_start)
        x0 = self._last[1] if warm else None
        y0 = self._last[2] if warm else None
        if self.solver in CVXPY_SOLVERS:
            from evalcert.solvers.backends.cvxpy_ import ClippedLinearProgram
            prog = self._program
            if prog is None or not prog.design.same_pattern(design) or prog.box != self.box \
                    or prog.weighted != weighted or prog.bounds != bounds:
                with sw("build"):
                    prog = self._program = ClippedLinearProgram(design, self.box, weighted,
                                                                bounds)
            raw = prog.solve(scores, weights, float(self.lam), self.solver, settings)
        elif self.solver == "native":
            from evalcert.solvers.backends import native
            cold = initial_point(design, np.zeros(design.K), np.zeros(design.J), self.box,
                                 bounds)
            solve = partial(native.solve, qp, settings,
                            complete=partial(centre_free_aux, design, self.box, bounds=bounds),
                            cache=self._structure[2])
            raw = solve(x0=cold if x0 is None else x0, y0=y0)
            if not raw.ok and raw.status != "time_limit" and x0 is not None:
                # A warm start far from the new optimum (a bootstrap refit) can
                # exhaust the iteration budget; the cold start of a first fit is
                # the second try (cycling itself is resolved inside native).
                raw = solve(x0=cold, y0=None)
        elif self.solver == "osqp-direct":
            from evalcert.solvers.backends import osqp_direct
            raw = osqp_direct.solve(qp, settings, x0=x0, y0=y0, cache=self._structure[2])
        else:
            from evalcert.solvers.backends import solve_qp
            raw = solve_qp(self.solver, qp, settings, x0=x0, y0=y0)
        sw.seconds["compile"] = raw.setup_time
        sw.seconds["solve"] = raw.solve_time
        return raw

    def predict(self) -> np.ndarray:
        """The full K x J matrix ``theta_i - b_j`` (clipped to ``S.bounds`` for
        ``box="none"``). Dense: for large designs use ``theta_`` and ``b_``."""
        if not hasattr(self, "theta_"):
            raise InputError("this ClippedLinear is not fitted yet; call fit(S) first")
        from evalcert.memory import estimate_bytes, require_memory
        require_memory(estimate_bytes((len(self.theta_), len(self.b_))), "predict()'s dense "
                       "K x J matrix", "use theta_[i] - b_[j] for the cells you need")
        pred = self.theta_[:, None] - self.b_[None, :]
        return np.clip(pred, *self.bounds_) if self.box == "none" else pred

    def predict_cells(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """``theta_i - b_j`` at the cells ``(rows[k], cols[k])`` only (clipped to the
        bounds for ``box="none"``, as :meth:`predict`): O(cells), no K x J matrix.

        Examples
        --------
        >>> from evalcert import ClippedLinear, demo_scores
        >>> S = demo_scores()
        >>> m = ClippedLinear().fit(S)
        >>> rows, cols, _ = S.cells()
        >>> bool(np.allclose(m.predict_cells(rows, cols), m.predict()[rows, cols]))
        True
        """
        if not hasattr(self, "theta_"):
            raise InputError("this ClippedLinear is not fitted yet; call fit(S) first")
        rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
        if rows.shape != cols.shape:
            raise InputError(f"rows and cols must have one shape, got {rows.shape} and "
                             f"{cols.shape}")
        K, J = len(self.theta_), len(self.b_)
        if rows.size and (rows.min() < 0 or rows.max() >= K or cols.min() < 0 or cols.max() >= J):
            raise InputError(f"cell indices out of range for a {K} x {J} fit")
        pred = self.theta_[rows] - self.b_[cols]
        return np.clip(pred, *self.bounds_) if self.box == "none" else pred
