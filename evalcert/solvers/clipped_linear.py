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
>>> bool(model.result_.certificate.passed), model.theta_.argmax()
(True, np.int64(0))
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from evalcert.data import ScoreMatrix
from evalcert.errors import InputError, SolverError
from evalcert.results import ResultMixin, Stopwatch, Timings, format_table
from evalcert.solvers.backends import CVXPY_SOLVERS, check_backend
from evalcert.solvers.backends.base import SolveSettings
from evalcert.solvers.certificates import Certificate, Tolerance, qp_certificate
from evalcert.solvers.clipped_linear_qp import (BOX_MODES, Design, binding_constraints,
                                                build_qp, centre_free_aux, initial_point,
                                                with_scores)

__all__ = ["ClippedLinear", "ClippedLinearResult", "ClippedLinearCertificate"]


def as_score_matrix(S: Any) -> ScoreMatrix:
    """Accept a :class:`ScoreMatrix`, a 2-D array or a wide DataFrame."""
    if isinstance(S, ScoreMatrix):
        return S
    if isinstance(S, pd.DataFrame):
        return ScoreMatrix.from_wide(S)
    return ScoreMatrix.from_array(S)


def _count_outside_box(theta: np.ndarray, b: np.ndarray) -> int:
    """Number of cells with ``|theta_i - b_j| > 1``, in O((K + J) log J)."""
    b_sorted = np.sort(b)
    below = np.searchsorted(b_sorted, theta - 1.0, side="left")      # b_j < theta_i - 1
    above = len(b) - np.searchsorted(b_sorted, theta + 1.0, side="right")  # b_j > theta_i + 1
    return int(below.sum() + above.sum())


def _check_weights(S: ScoreMatrix, sample_weight: Any) -> np.ndarray:
    """Per-observed-cell weights (row-major), validated."""
    obs = S.observed
    if sample_weight is None:
        return np.ones(int(obs.sum()))
    w = np.asarray(sample_weight, dtype=float)
    if w.shape != S.shape:
        raise InputError(f"sample_weight must have the shape of the scores {S.shape}; got {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise InputError("sample_weight must be finite and nonnegative")
    stray = np.argwhere((w > 0) & ~obs)
    if len(stray):
        r, c = stray[0]
        raise InputError(f"sample_weight is positive on {len(stray)} unobserved cell(s), e.g. "
                         f"({S.agents[r]}, {S.items[c]}); weights may only sit on observed cells")
    return w[obs]


@dataclasses.dataclass(frozen=True)
class ClippedLinearCertificate(Certificate):
    """A :class:`Certificate` of an Eq. 7 fit that can re-check itself from data."""

    lam: float = 0.0
    box: str = "all"

    @classmethod
    def of(cls, cert: Certificate, lam: float, box: str) -> "ClippedLinearCertificate":
        """Attach the fit's ``lam`` and ``box`` to a generic certificate."""
        return cls(**{f.name: getattr(cert, f.name) for f in dataclasses.fields(Certificate)},
                   lam=lam, box=box)

    def verify(self, S: ScoreMatrix, sample_weight: np.ndarray | None = None,
               tolerance: Tolerance | None = None) -> "ClippedLinearCertificate":
        """Recompute residuals and gap from ``S`` and the stored primal/dual point.

        Independent of the solver: the QP is rebuilt from the scores, ``lam``
        and ``box``. Returns the recomputed certificate; raises
        :class:`~evalcert.errors.CertificateError` if it fails.
        """
        S = as_score_matrix(S)
        weights = _check_weights(S, sample_weight)
        design = Design.from_mask(S.observed)
        qp = build_qp(design, S.cells()[2], weights, self.lam, self.box)
        if self.x.shape != (qp.n,):
            raise InputError(f"this certificate is for {len(self.x)} variables; the data give "
                             f"{qp.n}: it belongs to another matrix")
        cert = qp_certificate(qp, self.x, self.y, tolerance or self.tolerance,
                              binding_constraints(design, self.box, self.x, self.y,
                                                  S.agents, S.items))
        out = ClippedLinearCertificate.of(cert, self.lam, self.box)
        out.raise_if_failed(solver="verify", status="recomputed")
        return out


@dataclasses.dataclass(frozen=True)
class ClippedLinearResult(ResultMixin):
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
        Observed-or-not cells whose prediction left [-1, 1] and was clipped
        (only possible with ``box="none"``).
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

    def ranking(self) -> pd.DataFrame:
        """Agents sorted by ability, best first."""
        order = np.argsort(-self.theta, kind="stable")
        return pd.DataFrame({"rank": np.arange(1, len(order) + 1),
                             "agent": [self.agents[k] for k in order],
                             "theta": self.theta[order]})

    def summary(self, max_agents: int = 40) -> str:
        rank = self.ranking().head(max_agents)
        lines = [f"clipped-linear fit (Eq. 7): {len(self.agents)} agents x {len(self.items)} items, "
                 f"{self.n_observed} observed cells, lam={self.lam:g}, box={self.box!r}",
                 f"solver {self.solver}: status {self.status}, {self.iterations} iterations, "
                 f"objective {self.objective:.10g}", f"timings: {self.timings.summary()}",
                 self.certificate.summary(), ""]
        if self.box == "none":
            lines.append(f"{self.n_clipped} predicted cell(s) outside [-1, 1] were clipped")
        for g in self.certificate.binding[:10]:
            if "side" in g:
                lines.append(f"binding {g['side']} box (theta_i - b_j = {g['bound']:+.0f}): agents "
                             f"{g['agents']}, items {g['items'][:6]}{'...' if len(g['items']) > 6 else ''}"
                             f", multiplier {g['multiplier']:.4g}")
            else:
                lines.append(f"binding cell ({g['agent']}, {g['item']}) at {g['bound']:+.0f}, "
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
        ``all``: ``|theta_i - b_j| <= 1`` on every cell (App. F.4), as
        ``max theta - min b <= 1`` and ``max b - min theta <= 1``;
        ``observed``: only on observed cells; ``none``: no box, predictions
        clipped afterwards (and counted in ``result_.n_clipped``).
    solver : str, default "native"
        ``native`` (evalcert's active-set method, no CVXPY), ``osqp-direct``,
        or through CVXPY ``osqp``, ``clarabel``, ``scs``, ``ecos``.
    tolerance : Tolerance, optional
        What the certificate must meet (default abs and rel 1e-6).
    time_limit : float, default 600
    solver_options : dict, optional
        Passed to the solver as they are.
    require_connected : bool, default True
        Raise :class:`~evalcert.errors.ConnectivityError` on a disconnected
        design (abilities of different components are not comparable).

    Attributes
    ----------
    theta_, b_ : ndarray
        Abilities (K,) and difficulties (J,), ``sum(b_) == 0``.
    result_ : ClippedLinearResult
    """

    def __init__(self, lam: float = 1e-6, box: str = "all", solver: str = "native",
                 tolerance: Tolerance | None = None, time_limit: float = 600.0,
                 solver_options: dict | None = None, require_connected: bool = True):
        self.lam = lam
        self.box = box
        self.solver = solver
        self.tolerance = tolerance
        self.time_limit = time_limit
        self.solver_options = solver_options
        self.require_connected = require_connected
        self._program = None
        self._last: tuple[str, np.ndarray, np.ndarray] | None = None
        self._structure: tuple[tuple, Any, dict] | None = None
        self._connected_key: tuple | None = None

    def __getstate__(self) -> dict:
        # Solver caches (a compiled CVXPY problem, SuperLU factorisations) are
        # neither picklable nor worth shipping: a copy refits from scratch.
        state = self.__dict__.copy()
        state.update(_program=None, _structure=None, _last=None, _connected_key=None)
        return state

    def _check_params(self) -> None:
        if not (isinstance(self.lam, (int, float)) and np.isfinite(self.lam) and self.lam >= 0):
            raise InputError(f"lam must be a finite number >= 0, got {self.lam!r}")
        if self.box not in BOX_MODES:
            raise InputError(f"box must be one of {BOX_MODES}, got {self.box!r}")
        check_backend(self.solver)

    def fit(self, S: Any, sample_weight: np.ndarray | None = None) -> "ClippedLinear":
        """Fit Eq. 7 to the observed cells of ``S``.

        Parameters
        ----------
        S : ScoreMatrix, ndarray or DataFrame
            Scores in [-1, 1], NaN = unobserved.
        sample_weight : ndarray, shape (K, J), optional
            Nonnegative multiplicity of each observed cell in the objective
            (bootstrap counts); 0 drops a cell from the objective. The
            observation pattern, and so the compiled problem, stays that of
            ``S``, so refits with new weights do not recompile.

        Returns
        -------
        self
        """
        self._check_params()
        S = as_score_matrix(S)
        weights = _check_weights(S, sample_weight)
        if self.require_connected:
            key = (S.shape, np.packbits(weights > 0).tobytes())
            if key != self._connected_key:
                used = np.zeros(S.shape, dtype=bool)
                used[S.observed] = weights > 0
                S.require_connected(used)
                self._connected_key = key
        sw = Stopwatch()
        settings = SolveSettings(tolerance=self.tolerance or Tolerance(), time_limit=self.time_limit,
                                 options=dict(self.solver_options or {}))
        with sw("build"):
            qp, design, scores = self._build(S, weights)
        raw = self._solve(design, qp, scores, weights, sample_weight is not None, settings, sw)
        if not raw.ok or raw.x is None or raw.y is None:
            raise SolverError(f"solver {self.solver!r} did not solve the clipped-linear fit: status "
                              f"{raw.status!r} after {raw.iterations} iterations; try another "
                              "backend (solver='clarabel' is the most robust)",
                              solver=self.solver, status=raw.status)
        with sw("certify"):
            cert = qp_certificate(qp, raw.x, raw.y, settings.tolerance,
                                  binding_constraints(design, self.box, raw.x, raw.y,
                                                      S.agents, S.items))
            cert = ClippedLinearCertificate.of(cert, float(self.lam), self.box)
        cert.raise_if_failed(solver=self.solver, status=raw.status)
        K, J = design.K, design.J
        theta, b = raw.x[:K].copy(), raw.x[K:K + J].copy()
        self._last = (design.key, raw.x, raw.y)
        self.theta_, self.b_ = theta, b
        self.agents_, self.items_ = S.agents, S.items
        self.result_ = ClippedLinearResult(
            status=raw.status, objective=cert.primal_objective, solver=self.solver,
            iterations=raw.iterations, timings=sw.timings(), certificate=cert, theta=theta, b=b,
            agents=S.agents, items=S.items, lam=float(self.lam), box=self.box,
            n_observed=int((weights > 0).sum()),
            n_clipped=_count_outside_box(theta, b) if self.box == "none" else 0)
        return self

    def _build(self, S: ScoreMatrix, weights: np.ndarray):
        """The QP of this fit; on a refit with the same design, weights and
        ``lam`` only ``q`` and ``r`` are recomputed (``P`` and ``A`` are kept,
        and so are the native solver's factorisations)."""
        rows, cols, scores = S.cells()
        key = (S.shape, rows.tobytes(), cols.tobytes(), weights.tobytes(), float(self.lam),
               self.box)
        if self._structure is not None and self._structure[0] == key:
            _, (design, qp), _ = self._structure
            qp = with_scores(qp, design, scores, weights)
        else:
            design = Design.from_cells(S.shape[0], S.shape[1], rows, cols)
            qp = build_qp(design, scores, weights, float(self.lam), self.box)
            self._structure = (key, (design, qp), {})
        return qp, design, scores

    def _solve(self, design, qp, scores, weights, weighted, settings, sw):
        warm = (self._last is not None and self._last[0] == design.key
                and len(self._last[1]) == qp.n and settings.warm_start)
        x0 = self._last[1] if warm else None
        y0 = self._last[2] if warm else None
        if self.solver in CVXPY_SOLVERS:
            from evalcert.solvers.backends.cvxpy_ import ClippedLinearProgram
            prog = self._program
            if prog is None or prog.design.key != design.key or prog.box != self.box \
                    or prog.weighted != weighted:
                with sw("build"):
                    prog = self._program = ClippedLinearProgram(design, self.box, weighted)
            raw = prog.solve(scores, weights, float(self.lam), self.solver, settings)
        elif self.solver == "native":
            from evalcert.solvers.backends import native
            cold = initial_point(design, np.zeros(design.K), np.zeros(design.J), self.box)
            solve = partial(native.solve, qp, settings,
                            complete=partial(centre_free_aux, design, self.box),
                            cache=self._structure[2])
            raw = solve(x0=cold if x0 is None else x0, y0=y0)
            if raw.status == "cycling" and x0 is not None:
                # The active-set method can cycle from a warm start far from the
                # new optimum (seen on ~1% of bootstrap refits); the cold start
                # of a first fit is the documented second try.
                raw = solve(x0=cold, y0=None)
        else:
            from evalcert.solvers.backends import osqp_direct
            raw = osqp_direct.solve(qp, settings, x0=x0, y0=y0, cache=self._structure[2])
        sw.seconds["compile"] = raw.setup_time
        sw.seconds["solve"] = raw.solve_time
        return raw

    def predict(self) -> np.ndarray:
        """The full K x J matrix ``theta_i - b_j`` (clipped to [-1, 1] for ``box="none"``)."""
        if not hasattr(self, "theta_"):
            raise InputError("this ClippedLinear is not fitted yet; call fit(S) first")
        pred = self.theta_[:, None] - self.b_[None, :]
        return np.clip(pred, -1.0, 1.0) if self.box == "none" else pred
