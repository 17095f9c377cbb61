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

__all__ = ["Design", "BOX_MODES", "HessianPattern", "build_qp", "with_weights", "with_scores",
           "binding_constraints", "initial_point", "centre_free_aux", "hessian"]

Box = Literal["all", "observed", "none"]
Bounds = tuple[float, float]
BOX_MODES = ("all", "observed", "none")


def _same_array(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal arrays; O(1) for one read-only array (``ScoreMatrix.cells()``), O(n) otherwise."""
    return (a is b and not a.flags.writeable) or np.array_equal(a, b)


@dataclasses.dataclass(frozen=True, eq=False)
class Design:
    """The observation pattern of a fit: which cells enter the objective.

    Built from the observed cells only: nothing here is K x J.

    Attributes
    ----------
    K, J : int
        Numbers of agents and items.
    rows, cols : ndarray of int32 or int64
        Observed cells in row-major order, no repeats (int32 coordinates, as
        :meth:`evalcert.data.ScoreMatrix.cells` gives them for K J < 2^31, are kept:
        no int64 copy).

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
        rows, cols = np.asarray(rows), np.asarray(cols)
        itype = np.int32 if rows.dtype == cols.dtype == np.int32 else np.int64
        return cls(int(K), int(J), np.ascontiguousarray(rows, dtype=itype),
                   np.ascontiguousarray(cols, dtype=itype))

    @functools.cached_property
    def key(self) -> str:
        """Hash of ``(K, J, rows, cols)``: equal keys mean the same pattern."""
        digest = hashlib.blake2b(np.asarray([self.K, self.J], dtype=np.int64).tobytes(),
                                 digest_size=20)
        digest.update(memoryview(self.rows.astype(np.int64, copy=False)))
        digest.update(memoryview(self.cols.astype(np.int64, copy=False)))
        return digest.hexdigest()

    def same_pattern(self, other: "Design | None") -> bool:
        """Whether ``other`` observes exactly the same cells (O(n_cells), no hashing)."""
        return other is not None and (other is self or (
            (self.K, self.J) == (other.K, other.J)
            and _same_array(self.rows, other.rows) and _same_array(self.cols, other.cols)))

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


@dataclasses.dataclass(frozen=True, eq=False)
class HessianPattern:
    """Where every weight of a design goes in ``P = 2 (D'WD + lam I)`` (CSC).

    ``P``'s sparsity pattern depends on the design only (zero weights stay
    explicit entries), so a refit with new weights (a bootstrap replicate)
    only writes new values (:meth:`matrix`): no transpose, no sort, and the
    index arrays are shared by every ``P`` built from one pattern. Column
    ``i < K`` (an agent) holds its diagonal entry, then its cells (row-major
    order); column ``K + j`` (an item) its cells (agents ascending), then its
    diagonal. Memory: the index arrays of ``P`` plus ``item_order`` (one index
    per cell) and two masks of one byte per cell.

    Attributes
    ----------
    K, J, n_cells, n_extra : int
        Agents, items, cells and trailing zero columns (auxiliaries).
    indices, indptr : ndarray
        ``P``'s CSC index arrays.
    agent_cells, item_cells : ndarray of bool
        Masks of the off-diagonal slots in the agents' (first ``n_cells + K``
        entries) and the items' (the next ``n_cells + J``) columns.
    agent_diag, item_diag : ndarray
        Slots of the diagonal entries.
    item_order : ndarray
        The cells in the order of the item columns' off-diagonal slots.
    agent_degree, item_degree : ndarray
        Cells per agent and per item: the segments of the cells (row-major) and
        of ``item_order`` whose weights each diagonal entry sums.

    Examples
    --------
    >>> d = Design.from_cells(2, 2, [0, 0, 1], [0, 1, 1])
    >>> pattern = HessianPattern.of(d)
    >>> pattern.matrix(np.array([1.0, 0.0, 2.0]), 0.0).toarray()  # cell (0, 1) has weight 0
    array([[ 2.,  0., -2.,  0.],
           [ 0.,  4.,  0., -4.],
           [-2.,  0.,  2.,  0.],
           [ 0., -4.,  0.,  4.]])
    >>> pattern.matrix(None, 0.0).nnz  # the same pattern: 2 per cell + the diagonal
    10
    """

    K: int
    J: int
    n_cells: int
    n_extra: int
    indices: np.ndarray
    indptr: np.ndarray
    agent_cells: np.ndarray
    item_cells: np.ndarray
    agent_diag: np.ndarray
    item_diag: np.ndarray
    item_order: np.ndarray
    agent_degree: np.ndarray
    item_degree: np.ndarray

    @classmethod
    def of(cls, design: Design, n_extra: int = 0) -> "HessianPattern":
        """The pattern of ``design``'s Hessian in O(n_cells): the item columns come
        from one CSR -> CSC transpose of the cells (a counting sort in C)."""
        K, J, n = design.K, design.J, design.n_cells
        rows, cols = design.rows, design.cols
        deg_r = np.diff(np.searchsorted(rows, np.arange(K + 1, dtype=rows.dtype)))  # row-major
        nnz = 2 * n + K + J
        itype = np.int32 if nnz < 2 ** 31 - 1 and K + J + n_extra < 2 ** 31 - 1 else np.int64
        indices = np.empty(nnz, dtype=itype)
        row_ptr = np.r_[0, np.cumsum(deg_r)]
        agent_diag = row_ptr[:-1] + np.arange(K)
        agent_cells = np.ones(n + K, dtype=bool)
        agent_cells[agent_diag] = False
        idx = indices[:n + K]
        idx[agent_diag] = np.arange(K)
        cols = cols.astype(itype, copy=False)
        idx[agent_cells] = cols + itype(K)                  # one masked pass, not two
        by_item = sp.csr_matrix((np.arange(n, dtype=itype), cols, row_ptr.astype(itype)),
                                shape=(K, J)).tocsc()
        deg_c = np.diff(by_item.indptr).astype(np.int64)   # the transpose counted them
        del cols                                            # the int32 copy, before the masks
        item_diag = np.cumsum(deg_c) + np.arange(J)
        item_cells = np.ones(n + J, dtype=bool)
        item_cells[item_diag] = False
        idx = indices[n + K:]
        idx[item_diag] = K + np.arange(J)
        idx[item_cells] = by_item.indices
        indptr = np.r_[0, np.cumsum(np.r_[deg_r + 1, deg_c + 1,
                                          np.zeros(n_extra, dtype=np.int64)])]
        return cls(K, J, n, int(n_extra), indices, indptr.astype(itype), agent_cells,
                   item_cells, agent_diag, n + K + item_diag, by_item.data, deg_r, deg_c)

    def matrix(self, weights: np.ndarray | None, lam: float) -> sp.csc_matrix:
        """``P = 2 (D'WD + lam I)`` for ``weights`` (``None``: all ones, no weight
        array read): new values on the shared index arrays, O(n_cells)."""
        K, J, n = self.K, self.J, self.n_cells
        w = None if weights is None else np.asarray(weights, dtype=float)
        unit = w is None or n == 0 or (float(w.min()) == 1.0 and float(w.max()) == 1.0)
        data = np.empty(len(self.indices))
        agents, items = data[:n + K], data[n + K:]
        if unit:
            agents[self.agent_cells] = items[self.item_cells] = -2.0
            agent_total, item_total = self.agent_degree, self.item_degree
        else:
            agents[self.agent_cells] = -2.0 * w
            by_item = np.take(w, self.item_order)
            agent_total = _segment_sums(w, self.agent_degree)
            item_total = _segment_sums(by_item, self.item_degree)
            by_item *= -2.0
            items[self.item_cells] = by_item
            del by_item
        data[self.agent_diag] = 2.0 * (agent_total + lam)
        data[self.item_diag] = 2.0 * (item_total + lam)
        size = K + J + self.n_extra
        P = sp.csc_matrix((data, self.indices, self.indptr), shape=(size, size))
        P.has_sorted_indices = True
        return P


def _segment_sums(values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Sums of the consecutive segments of ``values`` with these ``lengths`` (0 for an
    empty one): one sequential pass (``np.add.reduceat``), no index array read.

    Examples
    --------
    >>> _segment_sums(np.array([1.0, 2.0, 4.0, 8.0]), np.array([2, 0, 1, 1, 0]))
    array([3., 0., 4., 8., 0.])
    """
    out = np.zeros(len(lengths))
    full = lengths > 0
    if np.any(full):
        starts = np.cumsum(lengths) - lengths
        out[full] = np.add.reduceat(values, starts[full])
    return out


def _item_sums(values: np.ndarray, cols: np.ndarray, starts: np.ndarray,
               shape: tuple[int, int]) -> np.ndarray:
    """Per-item sums of the cells' ``values`` (cells row-major, agent ``i``'s cells from
    ``starts[i]``): the transposed product of the cells' CSR matrix with ones, in the
    cells' order as ``np.bincount(cols, values)`` adds them, but reading int32 column
    indices as they are (bincount widens them to an 8-byte copy first: 3-9x slower).

    Examples
    --------
    >>> _item_sums(np.array([1.0, 2.0, 4.0]), np.array([0, 1, 1], dtype=np.int32),
    ...            np.array([0, 2, 3]), (2, 2))
    array([1., 6.])
    """
    K, J = shape
    itype = cols.dtype if len(values) < 2 ** 31 - 1 else np.int64
    cells = sp.csr_matrix((values, cols, starts.astype(itype, copy=False)), shape=(K, J))
    return cells.T @ np.ones(K)


def hessian(design: Design, weights: np.ndarray | None, lam: float,
            n_extra: int = 0) -> sp.csc_matrix:
    """``P = 2 (D'WD + lam I)`` (padded with ``n_extra`` zero rows/columns) in O(n_cells).

    ``D'WD`` is the weighted Laplacian of the bipartite agent-item graph: the
    diagonal holds each agent's and item's total weight and the off-diagonal
    blocks ``-w_ij``. The CSC arrays are written directly (sorted indices,
    zero weights kept as explicit entries so the pattern depends on the design
    only; see :class:`HessianPattern`), with no sparse product and no sort.
    ``weights=None`` (or all ones) is a plain fit: no weight array is read or
    gathered.

    Examples
    --------
    >>> d = Design.from_cells(2, 2, [0, 0, 1], [0, 1, 1])
    >>> hessian(d, None, 0.0).toarray()
    array([[ 4.,  0., -2., -2.],
           [ 0.,  2.,  0., -2.],
           [-2.,  0.,  2.,  0.],
           [-2., -2.,  0.,  4.]])
    """
    return HessianPattern.of(design, n_extra).matrix(weights, lam)


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
    >>> (np.round(qp.q, 12) + 0.0).tolist(), round(qp.r, 12)  # -2 D'(w s), s'Ws; + 0.0: no -0.0
    ([-1.4, 0.2, 1.0, 0.2, 0.0, 0.0], 0.3)
    """
    A, l, u = _constraints(design, box, bounds)
    # With the all-cells box some optimum has |b_j| <= hi - lo (sum b = 0 and
    # b_j - b_j' <= hi - lo) and |theta_i|, |c| <= hi - lo + max(|lo|, |hi|):
    # a true radius, which makes the certificate's suboptimality bound rigorous.
    lo, hi = bounds
    x_bound = (hi - lo) + max(abs(lo), abs(hi)) if box == "all" else None
    n = design.K + design.J + n_aux(box)
    shell = QP(P=sp.csc_matrix((n, n)), q=np.zeros(n), A=A, l=l, u=u, x_bound=x_bound)
    return with_weights(shell, design, scores, weights, lam, box,
                        HessianPattern.of(design, n_aux(box)))


def with_weights(qp: QP, design: Design, scores: np.ndarray, weights: np.ndarray | None,
                 lam: float, box: Box, pattern: HessianPattern) -> QP:
    """``qp`` (of ``design`` and ``box``) with the terms of new ``weights``: ``P``
    (new values on ``pattern``), ``q``, ``r`` and the eliminable block.
    ``A``, ``l``, ``u`` do not depend on the weights and are kept: a bootstrap
    refit builds nothing that the design alone determines.

    Examples
    --------
    >>> d = Design.from_cells(2, 2, [0, 0, 1], [0, 1, 1])
    >>> s, w = np.array([0.5, 0.2, -0.1]), np.array([2.0, 0.0, 1.0])
    >>> qp = build_qp(d, s, np.ones(3), 1e-3, "all")
    >>> refit = with_weights(qp, d, s, w, 1e-3, "all", HessianPattern.of(d, 2))
    >>> fresh = build_qp(d, s, w, 1e-3, "all")
    >>> bool((refit.P != fresh.P).nnz == 0), refit.q.tolist() == fresh.q.tolist(), refit.A is qp.A
    (True, True, True)
    """
    P = pattern.matrix(weights, lam)
    # The difficulties' block of P is diagonal, 2 (sum_i w_ij + lam), positive
    # when every item carries weight or lam > 0: a solver may eliminate it
    # first. Not with the observed-cells box, whose active cell rows share
    # items and would leave a large reduced system (a sparse LU is faster).
    eliminable = design.K + np.arange(design.J) if box != "observed" and \
        np.all(P.data[pattern.item_diag] > 0) else None
    return with_scores(dataclasses.replace(qp, P=P, eliminable=eliminable), design, scores,
                       weights)


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
    >>> (np.round(refit.q, 12) + 0.0).tolist(), round(refit.r, 12), refit.P is qp.P
    ([-0.4, -0.2, 0.2, 0.4, 0.0, 0.0], 0.03, True)
    """
    K, J = design.K, design.J
    unit = weights is None or len(weights) == 0 or \
        (float(weights.min()) == 1.0 and float(weights.max()) == 1.0)
    ws = scores if unit else weights * scores       # a plain fit: no product, no temporary
    q = np.zeros(qp.n)
    # the cells are row-major: an agent's sum is one segment (no index read)
    starts = np.searchsorted(design.rows, np.arange(K + 1, dtype=design.rows.dtype))
    q[:K] = -2.0 * _segment_sums(ws, np.diff(starts))
    q[K:K + J] = 2.0 * _item_sums(ws, design.cols, starts, (K, J))
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
                        # names by C-level lookups of Python ints (a third of 10^6
                        # items can sit on the box: a comprehension over numpy ints
                        # cost ~35 ms a side)
                        "agents": list(map(agents.__getitem__, ags.tolist())),
                        "agent_multipliers": mu_a,
                        "items": list(map(items.__getitem__, its.tolist())),
                        "item_multipliers": mu_i,
                        "multiplier": float(mu_a.sum()),
                        "n_cells": int(len(ags) * len(its))})
    elif box == "observed":
        pred = theta[design.rows] - b[design.cols]
        at_hi = np.abs(pred - hi) <= tol * scale
        for c in np.flatnonzero(at_hi | (np.abs(pred - lo) <= tol * scale)):
            out.append({"agent": agents[design.rows[c]], "item": items[design.cols[c]],
                        "bound": float(hi if at_hi[c] else lo), "multiplier": float(abs(y[1 + c]))})
    return out
