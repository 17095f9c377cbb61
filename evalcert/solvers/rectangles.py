"""The rectangle (curl) operator ``D`` of Lemma F.1 and the additive completion.

Paper 000, App. F.2: a matrix satisfies every rectangle constraint (Eq. 18)

    s_ij - s_i'j - s_ij' + s_i'j' = 0

iff ``s_ij = theta_i - b_j``. All of them follow from the ``(K-1)(J-1)``
rectangles through one reference row ``i0`` and column ``j0`` (the rows used in
the necessity proof, Eq. 22), so ``D`` here is that basis::

    (D s)_ij = s_ij - s_i0j - s_ij0 + s_i0j0,    i != i0, j != j0,

a surjection onto ``R^{(K-1)(J-1)}`` whose kernel is the additive matrices and
whose adjoint ``D' mu`` spans the matrices with zero row and column sums.
Cells are vectorised row-major (``s.ravel()``), as everywhere in evalcert.

Example
-------
>>> import numpy as np
>>> s = np.subtract.outer([0.5, 0.1, -0.2], [0.0, 0.2, -0.3])
>>> float(np.abs(curl(s)).max()) < 1e-15
True
>>> theta, b = reference_parameters(s)
>>> bool(np.allclose(theta[:, None] - b[None, :], s))
True
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order

from evalcert.data import ScoreMatrix

__all__ = ["rectangle_operator", "curl", "curl_adjoint", "reference_parameters",
           "additive_completion"]

Reference = tuple[int, int]


def _others(n: int, ref: int) -> np.ndarray:
    return np.delete(np.arange(n), ref)


def rectangle_operator(K: int, J: int, reference: Reference = (0, 0)) -> sp.csr_matrix:
    """The basis rectangle operator ``D`` (Lemma F.1) as a sparse matrix.

    Parameters
    ----------
    K, J : int
        Matrix shape.
    reference : (int, int)
        The reference row ``i0`` and column ``j0``.

    Returns
    -------
    scipy.sparse.csr_matrix, shape ((K-1)(J-1), K*J)
        Row ``(i, j)`` (row-major over ``i != i0, j != j0``) is
        ``e_ij - e_i0j - e_ij0 + e_i0j0``.

    Examples
    --------
    >>> D = rectangle_operator(2, 2)
    >>> D.shape, D.toarray().tolist()
    ((1, 4), [[1.0, -1.0, -1.0, 1.0]])
    """
    i0, j0 = reference
    R, C = np.meshgrid(_others(K, i0), _others(J, j0), indexing="ij")
    R, C = R.ravel(), C.ravel()
    n = len(R)
    rows = np.tile(np.arange(n), 4)
    cols = np.concatenate([R * J + C, i0 * J + C, R * J + j0, np.full(n, i0 * J + j0)])
    vals = np.repeat([1.0, -1.0, -1.0, 1.0], n)
    return sp.csr_matrix((vals, (rows, cols)), shape=(n, K * J))


def curl(s: np.ndarray, reference: Reference = (0, 0)) -> np.ndarray:
    """``D s`` without forming ``D``: the basis rectangle deviations, shape (K-1, J-1).

    Zero iff ``s`` is additive (Lemma F.1).

    Examples
    --------
    >>> s = np.array([[0.5, 0.2, 0.0], [0.3, 0.0, -0.1]])
    >>> np.round(curl(s), 6)  # s_1j - s_0j - s_10 + s_00 for j = 1, 2
    array([[0. , 0.1]])
    >>> bool(np.allclose(curl(s).ravel(), rectangle_operator(2, 3) @ s.ravel()))
    True
    """
    i0, j0 = reference
    R, C = _others(s.shape[0], i0), _others(s.shape[1], j0)
    return (s[np.ix_(R, C)] - s[i0, C][None, :] - s[R, j0][:, None] + s[i0, j0])


def curl_adjoint(mu: np.ndarray, shape: tuple[int, int],
                 reference: Reference = (0, 0)) -> np.ndarray:
    """``D' mu`` as a K x J matrix (zero row and column sums).

    Examples
    --------
    >>> curl_adjoint(np.array([[1.0]]), (2, 2)).tolist()
    [[1.0, -1.0], [-1.0, 1.0]]
    >>> mu = np.arange(6.0).reshape(2, 3)
    >>> bool(np.allclose(rectangle_operator(3, 4).T @ mu.ravel(),
    ...                  curl_adjoint(mu, (3, 4)).ravel()))
    True
    """
    i0, j0 = reference
    R, C = _others(shape[0], i0), _others(shape[1], j0)
    out = np.zeros(shape)
    out[np.ix_(R, C)] = mu
    out[i0, C] = -mu.sum(axis=0)
    out[R, j0] = -mu.sum(axis=1)
    out[i0, j0] = mu.sum()
    return out


def reference_parameters(s: np.ndarray, reference: Reference = (0, 0)
                         ) -> tuple[np.ndarray, np.ndarray]:
    """Lemma F.1, Eq. 21: ``theta_i = s_ij0 - s_i0j0``, ``b_j = -s_i0j``.

    For additive ``s`` (``D s = 0``), ``theta_i - b_j = s_ij`` on every cell (Eq. 23).

    Examples
    --------
    >>> s = np.subtract.outer([0.5, 0.1], [0.0, 0.2, -0.3])
    >>> theta, b = reference_parameters(s)
    >>> (np.round(theta, 6) + 0.0).tolist(), np.round(b, 6).tolist()  # + 0.0: no -0.0
    ([0.0, -0.4], [-0.5, -0.3, -0.8])
    >>> bool(np.allclose(theta[:, None] - b[None, :], s))
    True
    """
    i0, j0 = reference
    return s[:, j0] - s[i0, j0], -s[i0, :].copy()


def additive_completion(S: ScoreMatrix
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Fit ``theta_i - b_j`` exactly along a spanning forest of the observed cells.

    A breadth-first search of each component of the bipartite observation
    graph sets ``theta`` of the root agent to 0 and every other parameter
    from the observed cell that reached it. If the observed scores are
    additive, ``theta_i - b_j`` then equals them on every observed cell and
    is their only additive completion up to one offset per component.

    Returns
    -------
    theta : ndarray, shape (K,)
    b : ndarray, shape (J,)
    residual : ndarray, shape (K, J)
        ``t_ij - (theta_i - b_j)`` on observed cells (zero on the tree), NaN elsewhere.
    tree : ndarray of int, shape (K + J - n_components, 2)
        The ``(row, column)`` cells of the spanning forest: the observed
        cells that fix the additive completion (the others are redundant).

    Examples
    --------
    >>> t = np.subtract.outer([0.5, 0.1], [0.0, 0.2, -0.3])
    >>> t[1, 2] = np.nan
    >>> theta, b, residual, tree = additive_completion(ScoreMatrix.from_array(t))
    >>> np.round(theta - theta[0] + 0.5, 6).tolist(), len(tree)  # K + J - 1 tree cells
    ([0.5, 0.1], 4)
    >>> bool(np.nanmax(np.abs(residual)) < 1e-12)
    True
    """
    K, J = S.shape
    t = S.values
    rows, cols, _ = S.cells()
    graph = sp.coo_matrix((np.ones(len(rows)), (rows, K + cols)), shape=(K + J, K + J)).tocsr()
    theta, b = np.zeros(K), np.zeros(J)
    seen = np.zeros(K + J, dtype=bool)
    tree: list[tuple[int, int]] = []
    for root in range(K + J):
        if seen[root]:
            continue
        order, parent = breadth_first_order(graph, root, directed=False)
        seen[order] = True
        for node in order[1:]:
            up = parent[node]
            if node < K:
                theta[node] = t[node, up - K] + b[up - K]
                tree.append((node, up - K))
            else:
                b[node - K] = theta[up] - t[up, node - K]
                tree.append((up, node - K))
    return theta, b, t - (theta[:, None] - b[None, :]), np.array(tree, dtype=int).reshape(-1, 2)
