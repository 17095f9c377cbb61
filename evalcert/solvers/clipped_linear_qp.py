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
import hashlib
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from evalcert.errors import InputError
from evalcert.solvers.certificates import QP

__all__ = ["Design", "BOX_MODES", "build_qp", "with_scores", "binding_constraints",
           "initial_point", "centre_free_aux"]

Box = Literal["all", "observed", "none"]
BOX_MODES = ("all", "observed", "none")


@dataclasses.dataclass(frozen=True, eq=False)
class Design:
    """The observation pattern of a fit: which cells enter the objective.

    Attributes
    ----------
    K, J : int
        Numbers of agents and items.
    rows, cols : ndarray of int
        Observed cells (row-major order).
    D : scipy.sparse.csr_matrix, shape (n_cells, K + J)
        One row ``e_i - e_{K+j}`` per cell.
    key : str
        Hash of ``(K, J, rows, cols)``; equal keys mean the same pattern.
    """

    K: int
    J: int
    rows: np.ndarray
    cols: np.ndarray
    D: sp.csr_matrix
    key: str

    @classmethod
    def from_mask(cls, mask: np.ndarray) -> "Design":
        """The design of the True cells of a boolean K x J mask."""
        rows, cols = np.nonzero(mask)
        return cls.from_cells(mask.shape[0], mask.shape[1], rows, cols)

    @classmethod
    def from_cells(cls, K: int, J: int, rows: np.ndarray, cols: np.ndarray) -> "Design":
        """The design of cells ``(rows[k], cols[k])`` (row-major order, no repeats)."""
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        n = len(rows)
        D = sp.csr_matrix((np.r_[np.ones(n), -np.ones(n)],
                           (np.r_[np.arange(n), np.arange(n)], np.r_[rows, K + cols])),
                          shape=(n, K + J))
        digest = hashlib.sha1(np.asarray([K, J], dtype=np.int64).tobytes()
                              + rows.astype(np.int64).tobytes()
                              + cols.astype(np.int64).tobytes()).hexdigest()
        return cls(K, J, rows, cols, D, digest)

    @property
    def n_cells(self) -> int:
        return len(self.rows)


def n_aux(box: str) -> int:
    return 2 if box == "all" else 0


def _constraints(design: Design, box: str) -> tuple[sp.csc_matrix, np.ndarray, np.ndarray]:
    K, J = design.K, design.J
    n = K + J + n_aux(box)
    gauge = sp.csr_matrix((np.ones(J), (np.zeros(J, dtype=int), K + np.arange(J))), shape=(1, n))
    blocks = [gauge]
    lower = [np.zeros(1)]
    upper = [np.zeros(1)]
    if box == "all":
        hi, lo = K + J, K + J + 1
        eye = sp.identity(K + J, format="csr")
        for aux, lb, ub in ((hi, np.r_[np.full(K, -np.inf), np.full(J, -1.0)],
                             np.r_[np.zeros(K), np.full(J, np.inf)]),
                            (lo, np.r_[np.zeros(K), np.full(J, -np.inf)],
                             np.r_[np.full(K, np.inf), np.ones(J)])):
            col = sp.csr_matrix((-np.ones(K + J), (np.arange(K + J), np.full(K + J, aux))),
                                shape=(K + J, n))
            blocks.append(sp.hstack([eye, sp.csr_matrix((K + J, 2))]).tocsr() + col)
            lower.append(lb)
            upper.append(ub)
    elif box == "observed":
        blocks.append(design.D)
        lower.append(-np.ones(design.n_cells))
        upper.append(np.ones(design.n_cells))
    elif box != "none":
        raise InputError(f"box must be one of {BOX_MODES}, got {box!r}")
    A = sp.vstack(blocks).tocsc()
    return A, np.concatenate(lower), np.concatenate(upper)


def build_qp(design: Design, scores: np.ndarray, weights: np.ndarray, lam: float,
             box: Box) -> QP:
    """The QP of Eq. 7 for ``design`` with cell ``scores`` and ``weights``.

    Parameters
    ----------
    design : Design
    scores, weights : ndarray, shape (design.n_cells,)
    lam : float
        Ridge weight (``>= 0``).
    box : {"all", "observed", "none"}
    """
    K, J = design.K, design.J
    k = n_aux(box)
    DtW = design.D.T.multiply(weights).tocsr()
    H = (DtW @ design.D).tocsc()
    ridge = sp.identity(K + J, format="csc") * lam
    P = sp.block_diag([2.0 * (H + ridge), sp.csc_matrix((k, k))], format="csc") if k \
        else (2.0 * (H + ridge)).tocsc()
    A, l, u = _constraints(design, box)
    # The difficulties' block of P is diagonal, 2 (sum_i w_ij + lam), positive
    # when every item carries weight or lam > 0: a solver may eliminate it
    # first. Not with the observed-cells box, whose active cell rows share
    # items and would leave a large reduced system (a sparse LU is faster).
    col_weight = np.bincount(design.cols, weights=weights, minlength=J)
    eliminable = K + np.arange(J) if box != "observed" and np.all(col_weight + lam > 0) \
        else None
    return with_scores(QP(P=P, q=np.zeros(P.shape[0]), A=A, l=l, u=u, eliminable=eliminable),
                       design, scores, weights)


def with_scores(qp: QP, design: Design, scores: np.ndarray, weights: np.ndarray) -> QP:
    """``qp`` with the data terms of new ``scores``: ``q = -2 D'(w s)`` (zero on
    the auxiliaries) and ``r = s'Ws``. ``P`` and ``A`` do not depend on the
    scores, so a refit on the same design and weights only changes these."""
    q = np.zeros(qp.n)
    q[:design.K + design.J] = -2.0 * (design.D.T @ (weights * scores))
    return dataclasses.replace(qp, q=q, r=float(np.sum(weights * scores ** 2)))


def initial_point(design: Design, theta: np.ndarray, b: np.ndarray, box: str) -> np.ndarray:
    """Complete ``(theta, b)`` with auxiliary values (``c_hi, c_lo``) for ``box``."""
    x = np.r_[theta, b, np.zeros(n_aux(box))]
    return centre_free_aux(design, box, x, np.zeros(1))


def centre_free_aux(design: Design, box: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Move each auxiliary whose rows carry no multiplier to the middle of its
    feasible interval.

    An auxiliary with no active row is not pinned by the KKT system, and any
    value in ``[max theta, min b + 1]`` (for ``c_hi``) or
    ``[max b - 1, min theta]`` (for ``c_lo``) is optimal. The midpoint keeps an
    active-set method from switching rows on because of an arbitrary value;
    when the interval is empty the midpoint violates both sides, so both
    extremes enter the active set together.
    """
    if box != "all":
        return x
    K, J = design.K, design.J
    x = x.copy()
    theta, b = x[:K], x[K:K + J]
    y = np.zeros(1 + 2 * (K + J)) if y.shape[0] == 1 else y
    if not np.any(y[1:1 + K + J]):
        x[K + J] = 0.5 * (theta.max() + b.min() + 1.0)
    if not np.any(y[1 + K + J:]):
        x[K + J + 1] = 0.5 * (b.max() - 1.0 + theta.min())
    return x


def binding_constraints(design: Design, box: str, x: np.ndarray, y: np.ndarray,
                        agents: tuple[str, ...], items: tuple[str, ...],
                        tol: float = 1e-6) -> list[dict[str, Any]]:
    """Describe which box constraints bind at ``x`` and their multipliers.

    For ``box="all"`` two groups at most: ``upper`` (agents at max theta and
    items at min b with ``theta_i - b_j = 1``) and ``lower``
    (``theta_i - b_j = -1``), each with the per-agent and per-item multipliers
    and the cells on the box. For ``box="observed"``, one entry per observed
    cell on ``+1`` or ``-1``.
    """
    K, J = design.K, design.J
    theta, b = x[:K], x[K:K + J]
    out: list[dict[str, Any]] = []
    if box == "all":
        for side, agent_rows, item_rows, sign in (("upper", 1, 1 + K, 1.0),
                                                  ("lower", 1 + K + J, 1 + 2 * K + J, -1.0)):
            t_ext = theta.max() if sign > 0 else theta.min()
            b_ext = b.min() if sign > 0 else b.max()
            if abs(sign * (t_ext - b_ext) - 1.0) > tol:
                continue
            ags = np.flatnonzero(np.abs(theta - t_ext) <= tol)
            its = np.flatnonzero(np.abs(b - b_ext) <= tol)
            mu_a = np.abs(y[agent_rows + ags])
            mu_i = np.abs(y[item_rows + its])
            out.append({"side": side, "bound": sign,
                        "agents": [agents[a] for a in ags], "agent_multipliers": mu_a,
                        "items": [items[i] for i in its], "item_multipliers": mu_i,
                        "multiplier": float(mu_a.sum()),
                        "n_cells": int(len(ags) * len(its))})
    elif box == "observed":
        pred = theta[design.rows] - b[design.cols]
        on_box = np.flatnonzero(np.abs(np.abs(pred) - 1.0) <= tol)
        for c in on_box:
            out.append({"agent": agents[design.rows[c]], "item": items[design.cols[c]],
                        "bound": float(np.sign(pred[c])), "multiplier": float(abs(y[1 + c]))})
    return out
