"""Eq. 7 of the identity-link IRT paper as a standard-form QP.

Variables ``z = [theta (K); b (J); aux]``. With observed cells ``c = (i, j)``,
scores ``s_c`` and multiplicities ``w_c`` (1 for a plain fit, bootstrap counts
otherwise), the objective is

    sum_c w_c (s_c - (theta_i - b_j))^2 + lam (||theta||^2 + ||b||^2)
      = 1/2 z'(2 D'WD + 2 lam I)z - 2 (W s)'D z + s'Ws

where ``D`` has one row ``e_i - e_{K+j}`` per observed cell. Constraints:

* gauge ``sum_j b_j = 0`` (row 0, always);
* ``box="all"``: ``|theta_i - b_j| <= 1`` on every cell (App. F.4), written with
  two auxiliary scalars ``c_hi`` (= max theta) and ``c_lo`` (= min theta) as
  ``theta_i <= c_hi``, ``b_j >= c_hi - 1``, ``theta_i >= c_lo``, ``b_j <= c_lo + 1``:
  ``2(K + J)`` rows instead of ``2 K J``, the same feasible set in ``(theta, b)``
  because ``max_{ij} theta_i - b_j = max theta - min b``;
* ``box="observed"``: ``-1 <= theta_i - b_j <= 1`` on observed cells only;
* ``box="none"``: no box (predictions are clipped afterwards and counted).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from evalcert.errors import InputError
from evalcert.solvers.certificates import QP

__all__ = ["Design", "BOX_MODES", "build_qp", "with_scores", "binding_constraints",
           "initial_point", "centre_free_aux", "hessian"]

Box = Literal["all", "observed", "none"]
Bounds = tuple[float, float]
BOX_MODES = ("all", "observed", "none")


@dataclasses.dataclass(frozen=True, eq=False)
class Design:
    """The observation pattern of a fit: which cells enter the objective.

    Built from the observed cells only: nothing here is K x J.

    Attributes
    ----------
    K, J : int
        Numbers of agents and items.
    rows, cols : ndarray of int64
        Observed cells in row-major order, no repeats.

    Examples
    --------
    >>> d = Design.from_cells(2, 2, [0, 0, 1], [0, 1, 1])  # cell (1, 0) unobserved
    >>> d.n_cells, d.D.toarray().tolist()  # one row e_i - e_{K+j} per cell
    (3, [[1.0, 0.0, -1.0, 0.0], [1.0, 0.0, 0.0, -1.0], [0.0, 1.0, 0.0, -1.0]])
    >>> d.same_pattern(Design.from_mask(np.array([[True, True], [False, True]])))
    True
    """

    K: int
    J: int
    rows: np.ndarray
    cols: np.ndarray

    @classmethod
    def from_mask(cls, mask: np.ndarray) -> "Design":
        """The design of the True cells of a boolean K x J mask (small matrices)."""
        rows, cols = np.nonzero(mask)
        return cls.from_cells(mask.shape[0], mask.shape[1], rows, cols)

    @classmethod
    def from_cells(cls, K: int, J: int, rows: np.ndarray, cols: np.ndarray) -> "Design":
        """The design of cells ``(rows[k], cols[k])`` (row-major order, no repeats: the
        order of :meth:`evalcert.data.ScoreMatrix.cells`, which sorts any input)."""
        return cls(int(K), int(J), np.ascontiguousarray(rows, dtype=np.int64),
                   np.ascontiguousarray(cols, dtype=np.int64))

    @functools.cached_property
    def key(self) -> str:
        """Hash of ``(K, J, rows, cols)``: equal keys mean the same pattern."""
        digest = hashlib.blake2b(np.asarray([self.K, self.J], dtype=np.int64).tobytes(),
                                 digest_size=20)
        digest.update(memoryview(self.rows))
        digest.update(memoryview(self.cols))
        return digest.hexdigest()

    def same_pattern(self, other: "Design | None") -> bool:
        """Whether ``other`` observes exactly the same cells (O(n_cells), no hashing)."""
        return other is not None and (other is self or (
            (self.K, self.J) == (other.K, other.J) and np.array_equal(self.rows, other.rows)
            and np.array_equal(self.cols, other.cols)))

    @property
    def n_cells(self) -> int:
        return len(self.rows)

    @functools.cached_property
    def D(self) -> sp.csr_matrix:
        """The cell-difference matrix, shape ``(n_cells, K + J)``: one row
        ``e_i - e_{K+j}`` per cell (built on first use, O(n_cells))."""
        n = self.n_cells
        indices = np.empty(2 * n, dtype=np.int64)
        indices[0::2], indices[1::2] = self.rows, self.K + self.cols
        data = np.tile(np.array([1.0, -1.0]), n)
        return sp.csr_matrix((data, indices, np.arange(0, 2 * n + 1, 2)),
                             shape=(n, self.K + self.J))


def hessian(design: Design, weights: np.ndarray | None, lam: float,
            n_extra: int = 0) -> sp.csc_matrix:
    """``P = 2 (D'WD + lam I)`` (padded with ``n_extra`` zero rows/columns) in O(n_cells).

    ``D'WD`` is the weighted Laplacian of the bipartite agent-item graph: the
    diagonal holds each agent's and item's total weight and the off-diagonal
    blocks ``-w_ij``. The CSC arrays are written directly (sorted indices,
    zero weights kept as explicit entries so the pattern depends on the design
    only), with no sparse product and no sort: the item columns come from one
    CSR -> CSC transpose of the cells (a counting sort in C) that carries the
    weights along. ``weights=None`` (or all ones) is a plain fit: no weight
    array is read or gathered.

    Examples
    --------
    >>> d = Design.from_cells(2, 2, [0, 0, 1], [0, 1, 1])
    >>> hessian(d, None, 0.0).toarray()
    array([[ 4.,  0., -2., -2.],
           [ 0.,  2.,  0., -2.],
           [-2.,  0.,  2.,  0.],
           [-2., -2.,  0.,  4.]])
    """
    K, J, n = design.K, design.J, design.n_cells
    rows, cols = design.rows, design.cols
    w = None if weights is None else np.asarray(weights, dtype=float)
    unit = w is None or n == 0 or (float(w.min()) == 1.0 and float(w.max()) == 1.0)
    deg_r = np.bincount(rows, minlength=K)
    deg_c = np.bincount(cols, minlength=J)
    nnz = 2 * n + K + J
    itype = np.int32 if nnz < 2 ** 31 - 1 and K + J + n_extra < 2 ** 31 - 1 else np.int64
    data = np.empty(nnz)
    indices = np.empty(nnz, dtype=itype)
    # agent columns: the diagonal, then the agent's cells (row-major order)
    row_ptr = np.r_[0, np.cumsum(deg_r)]
    diag = row_ptr[:-1] + np.arange(K)
    cells = np.ones(n + K, dtype=bool)
    cells[diag] = False
    block, idx = data[:n + K], indices[:n + K]
    block[diag] = 2.0 * ((deg_r if unit else np.bincount(rows, weights=w, minlength=K)) + lam)
    idx[diag] = np.arange(K)
    block[cells] = -2.0 if unit else -2.0 * w
    idx[cells] = cols
    idx[cells] += K
    # item columns: the item's cells (rows ascending), then the diagonal
    by_item = sp.csr_matrix((np.ones(n, dtype=bool) if unit else w, cols.astype(itype),
                             row_ptr.astype(itype)), shape=(K, J)).tocsc()
    diag = np.cumsum(deg_c) + np.arange(J)
    cells = np.ones(n + J, dtype=bool)
    cells[diag] = False
    block, idx = data[n + K:], indices[n + K:]
    block[diag] = 2.0 * ((deg_c if unit else np.bincount(cols, weights=w, minlength=J)) + lam)
    idx[diag] = K + np.arange(J)
    block[cells] = -2.0 if unit else -2.0 * by_item.data
    idx[cells] = by_item.indices
    del by_item, cells
    indptr = np.r_[0, np.cumsum(np.r_[deg_r + 1, deg_c + 1, np.zeros(n_extra, dtype=np.int64)])]
    size = K + J + n_extra
    return sp.csc_matrix((data, indices, indptr.astype(itype)), shape=(size, size))


def n_aux(box: str) -> int:
    return 2 if box == "all" else 0


def _all_cells_box(K: int, J: int) -> sp.csc_matrix:
    """The constraint matrix of ``box="all"``, written as CSC arrays in O(K + J):
    row 0 the gauge ``sum_j b_j``, rows ``1 + v`` the differences
    ``x_v - c_hi`` and rows ``1 + K + J + v`` ``x_v - c_lo`` for every agent and
    item ``v`` (columns ``K + J`` and ``K + J + 1`` are ``c_hi``, ``c_lo``)."""
    V = K + J
    itype = np.int32 if 3 * V + 2 < 2 ** 31 - 1 else np.int64
    v = np.arange(V, dtype=itype)
    agents = np.stack([1 + v[:K], 1 + V + v[:K]], axis=1).ravel()
    items = np.stack([np.zeros(J, dtype=itype), 1 + v[K:], 1 + V + v[K:]], axis=1).ravel()
    indices = np.concatenate([agents, items, 1 + v, 1 + V + v])
    data = np.r_[np.ones(2 * K + 3 * J), -np.ones(2 * V)]
    indptr = np.r_[0, 2 * np.arange(1, K + 1), 2 * K + 3 * np.arange(1, J + 1),
                   2 * K + 3 * J + V, 2 * K + 3 * J + 2 * V].astype(itype)
    return sp.csc_matrix((data, indices, indptr), shape=(1 + 2 * V, V + 2))


def _constraints(design: Design, box: str, bounds: Bounds) -> tuple[sp.csc_matrix, np.ndarray,
                                                                     np.ndarray]:
    K, J = design.K, design.J
    lo, hi = bounds
    if box == "all":
        lower = np.r_[0.0, np.full(K, -np.inf), np.full(J, -hi), np.zeros(K), np.full(J, -np.inf)]
        upper = np.r_[0.0, np.zeros(K), np.full(J, np.inf), np.full(K, np.inf), np.full(J, -lo)]
        return _all_cells_box(K, J), lower, upper
    n = K + J + n_aux(box)
    gauge = sp.csr_matrix((np.ones(J), (np.zeros(J, dtype=int), K + np.arange(J))), shape=(1, n))
    blocks = [gauge]
    lower = [np.zeros(1)]
    upper = [np.zeros(1)]
    if box == "observed":
        blocks.append(design.D)
        lower.append(np.full(design.n_cells, lo))
        upper.append(np.full(design.n_cells, hi))
    elif box != "none":
        raise InputError(f"box must be one of {BOX_MODES}, got {box!r}")
    A = sp.vstack(blocks).tocsc()
    return A, np.concatenate(lower), np.concatenate(upper)


def build_qp(design: Design, scores: np.ndarray, weights: np.ndarray | None, lam: float,
             box: Box, bounds: Bounds = (-1.0, 1.0)) -> QP:
    """The QP of Eq. 7 for ``design`` with cell ``scores`` and ``weights``.

    Costs O(n_cells + K + J) time and memory (see :func:`hessian`).

    Parameters
    ----------
    design : Design
    scores, weights : ndarray, shape (design.n_cells,)
        ``weights=None`` is a plain fit (every weight 1), with no weight array.
    lam : float
        Ridge weight (``>= 0``).
    box : {"all", "observed", "none"}
    bounds : (float, float)
        The box is ``lo <= theta_i - b_j <= hi`` (``ScoreMatrix.bounds``;
        ``(-1, 1)`` is Eq. 7's ``|theta_i - b_j| <= 1``).

    Examples
    --------
    >>> d = Design.from_cells(2, 2, [0, 0, 1], [0, 1, 1])
    >>> qp = build_qp(d, np.array([0.5, 0.2, -0.1]), np.ones(3), 0.0, "all")
    >>> qp.n, qp.m, qp.x_bound  # theta, b, c_hi, c_lo; gauge + 2 (K + J) box rows
    (6, 9, 3.0)
    >>> qp.q.tolist(), round(qp.r, 12)  # -2 D'(w s) and s'Ws
    ([-1.4, 0.2, 1.0, 0.2, 0.0, 0.0], 0.3)
    """
    K, J = design.K, design.J
    P = hessian(design, weights, lam, n_aux(box))
    A, l, u = _constraints(design, box, bounds)
    # The difficulties' block of P is diagonal, 2 (sum_i w_ij + lam), positive
    # when every item carries weight or lam > 0: a solver may eliminate it
    # first. Not with the observed-cells box, whose active cell rows share
    # items and would leave a large reduced system (a sparse LU is faster).
    col_weight = np.bincount(design.cols, weights=weights, minlength=J)  # None: degrees
    eliminable = K + np.arange(J) if box != "observed" and np.all(col_weight + lam > 0) \
        else None
    # With the all-cells box some optimum has |b_j| <= hi - lo (sum b = 0 and
    # b_j - b_j' <= hi - lo) and |theta_i|, |c| <= hi - lo + max(|lo|, |hi|):
    # a true radius, which makes the certificate's suboptimality bound rigorous.
    lo, hi = bounds
    x_bound = (hi - lo) + max(abs(lo), abs(hi)) if box == "all" else None
    return with_scores(QP(P=P, q=np.zeros(P.shape[0]), A=A, l=l, u=u, eliminable=eliminable,
                          x_bound=x_bound), design, scores, weights)


def with_scores(qp: QP, design: Design, scores: np.ndarray,
                weights: np.ndarray | None) -> QP:
    """``qp`` with the data terms of new ``scores``: ``q = -2 D'(w s)`` (zero on
    the auxiliaries) and ``r = s'Ws``. ``P`` and ``A`` do not depend on the
    scores, so a refit on the same design and weights only changes these.

    Examples
    --------
    >>> d = Design.from_cells(2, 2, [0, 0, 1], [0, 1, 1])
    >>> qp = build_qp(d, np.array([0.5, 0.2, -0.1]), np.ones(3), 0.0, "all")
    >>> refit = with_scores(qp, d, np.full(3, 0.1), np.ones(3))
    >>> refit.q.tolist(), round(refit.r, 12), refit.P is qp.P
    ([-0.4, -0.2, 0.2, 0.4, 0.0, 0.0], 0.03, True)
    """
    K, J = design.K, design.J
    ws = scores if weights is None else weights * scores
    q = np.zeros(qp.n)
    q[:K] = -2.0 * np.bincount(design.rows, weights=ws, minlength=K)
    q[K:K + J] = 2.0 * np.bincount(design.cols, weights=ws, minlength=J)
    return dataclasses.replace(qp, q=q, r=float(ws @ scores))


def initial_point(design: Design, theta: np.ndarray, b: np.ndarray, box: str,
                  bounds: Bounds = (-1.0, 1.0)) -> np.ndarray:
    """Complete ``(theta, b)`` with auxiliary values (``c_hi, c_lo``) for ``box``.

    Examples
    --------
    >>> d = Design.from_cells(2, 2, [0, 0, 1], [0, 1, 1])
    >>> initial_point(d, np.array([0.5, 0.1]), np.array([0.0, -0.2]), "all").round(6).tolist()
    [0.5, 0.1, 0.0, -0.2, 0.65, -0.45]
    >>> initial_point(d, np.array([0.5, 0.1]), np.array([0.0, -0.2]), "none").tolist()
    [0.5, 0.1, 0.0, -0.2]
    """
    x = np.r_[theta, b, np.zeros(n_aux(box))]
    return centre_free_aux(design, box, x, np.zeros(1), bounds)


def centre_free_aux(design: Design, box: str, x: np.ndarray, y: np.ndarray,
                    bounds: Bounds = (-1.0, 1.0)) -> np.ndarray:
    """Move each auxiliary whose rows carry no multiplier to the middle of its
    feasible interval.

    An auxiliary with no active row is not pinned by the KKT system, and any
    value in ``[max theta, min b + hi]`` (for ``c_hi``) or
    ``[max b + lo, min theta]`` (for ``c_lo``) is optimal. The midpoint keeps an
    active-set method from switching rows on because of an arbitrary value;
    when the interval is empty the midpoint violates both sides, so both
    extremes enter the active set together.

    Examples
    --------
    ``c_hi`` may lie anywhere in ``[max theta, min b + 1] = [0.5, 0.8]``:

    >>> d = Design.from_cells(2, 2, [0, 0, 1], [0, 1, 1])
    >>> x = np.array([0.5, 0.1, 0.0, -0.2, 0.0, 0.0])  # theta, b, c_hi, c_lo
    >>> centre_free_aux(d, "all", x, np.zeros(1)).round(6).tolist()
    [0.5, 0.1, 0.0, -0.2, 0.65, -0.45]
    """
    if box != "all":
        return x
    K, J = design.K, design.J
    lo, hi = bounds
    x = x.copy()
    theta, b = x[:K], x[K:K + J]
    y = np.zeros(1 + 2 * (K + J)) if y.shape[0] == 1 else y
    if not np.any(y[1:1 + K + J]):
        x[K + J] = 0.5 * (theta.max() + b.min() + hi)
    if not np.any(y[1 + K + J:]):
        x[K + J + 1] = 0.5 * (b.max() + lo + theta.min())
    return x


def binding_constraints(design: Design, box: str, x: np.ndarray, y: np.ndarray,
                        agents: tuple[str, ...], items: tuple[str, ...],
                        tol: float = 1e-6, bounds: Bounds = (-1.0, 1.0)
                        ) -> list[dict[str, Any]]:
    """Describe which box constraints bind at ``x`` and their multipliers.

    For ``box="all"`` two groups at most: ``upper`` (agents at max theta and
    items at min b with ``theta_i - b_j = hi``) and ``lower``
    (``theta_i - b_j = lo``), each with the per-agent and per-item multipliers
    and the cells on the box. For ``box="observed"``, one entry per observed
    cell on ``hi`` or ``lo``. O(K + J + n_cells).

    Examples
    --------
    The fit puts the unobserved cell ``(1, 0)`` on the upper bound:

    >>> from evalcert.solvers.backends import solve_qp
    >>> d = Design.from_cells(2, 2, [0, 0, 1], [0, 1, 1])
    >>> sol = solve_qp("native", build_qp(d, np.array([1.0, -1.0, 0.0]), np.ones(3), 1e-6, "all"))
    >>> [(c["side"], c["agents"], c["items"], round(c["multiplier"], 3))
    ...  for c in binding_constraints(d, "all", sol.x, sol.y, ("a0", "a1"), ("q0", "q1"))]
    [('upper', ['a1'], ['q0'], 0.667)]
    """
    K, J = design.K, design.J
    lo, hi = bounds
    scale = max(1.0, hi - lo)
    theta, b = x[:K], x[K:K + J]
    out: list[dict[str, Any]] = []
    if box == "all":
        for side, agent_rows, item_rows, bound in (("upper", 1, 1 + K, hi),
                                                   ("lower", 1 + K + J, 1 + 2 * K + J, lo)):
            t_ext = theta.max() if side == "upper" else theta.min()
            b_ext = b.min() if side == "upper" else b.max()
            if abs(t_ext - b_ext - bound) > tol * scale:
                continue
            ags = np.flatnonzero(np.abs(theta - t_ext) <= tol * scale)
            its = np.flatnonzero(np.abs(b - b_ext) <= tol * scale)
            mu_a = np.abs(y[agent_rows + ags])
            mu_i = np.abs(y[item_rows + its])
            out.append({"side": side, "bound": float(bound),
                        "agents": [agents[a] for a in ags], "agent_multipliers": mu_a,
                        "items": [items[i] for i in its], "item_multipliers": mu_i,
                        "multiplier": float(mu_a.sum()),
                        "n_cells": int(len(ags) * len(its))})
    elif box == "observed":
        pred = theta[design.rows] - b[design.cols]
        at_hi = np.abs(pred - hi) <= tol * scale
        for c in np.flatnonzero(at_hi | (np.abs(pred - lo) <= tol * scale)):
            out.append({"agent": agents[design.rows[c]], "item": items[design.cols[c]],
                        "bound": float(hi if at_hi[c] else lo), "multiplier": float(abs(y[1 + c]))})
    return out
