"""Rasch joint ML and MAP by Newton's method on pooled groups (Sec. 3.2.5, 3.6.1).

The objective, on the ``G x H`` table of :func:`~.pooling.pool_responses`, is

``f(theta, b) = sum_gh c_gh softplus(theta_g - b_h) - sum_g R_g theta_g
+ sum_h S_h b_h + lam/2 (sum_g n_g theta_g^2 + sum_h m_h b_h^2)``

with cell counts ``c``, pooled correct answers ``R``, ``S`` and group sizes
``n``, ``m``. Its Hessian has diagonal blocks and a dense ``G x H`` coupling
``-c p (1 - p)``, so the Newton system is solved by eliminating the larger
block and factoring the Schur complement of the smaller one (Cholesky).
Without a prior (joint ML) the Hessian is singular along the shift
``theta + t, b + t``; the gradient is orthogonal to it, and adding ``c 1 1^T``
(``c`` the mean diagonal of the factored block, positive even when the
complement itself is zero, e.g. one pooled group of models) to the Schur
complement picks the Newton step with no shift. Iterations stop
when every gradient entry, divided by its group size (the gradient of one
model's or item's parameter), is at most ``tol``.

Steps are damped by Armijo backtracking on ``f`` while ``f`` can tell: the
predicted decrease of a Newton step, ``-g^T step / 2``, is compared with the
rounding error of ``f`` (``ROUNDING * eps * sum |terms|``). Near the optimum
the decrease falls below it and comparing objectives of ~1e4 decides on
rounding noise (on some CPUs accepting ever tinier steps for thousands of
iterations); there the full Newton step is taken while it still lowers the
gradient, and the solve stops, reporting the gradient it reached
(``rounding_limited``), once it does not. The caller's stationarity
certificate then judges the result.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve

from evalcert.errors import ConvergenceError
from evalcert.irt.base import softplus_sigmoid
from evalcert.irt.estimation.pooling import PooledResponses

__all__ = ["rasch_joint_newton", "newton_flops", "schur_newton_step", "ROUNDING"]

_DIVERGED = 500.0   # |parameter| beyond this many logits: no finite optimum
ROUNDING = 1e3     # rounding error of the objective, in units of eps * sum |terms|


def newton_flops(shape: tuple[int, int]) -> float:
    """Floating-point work of one Newton step on a ``G x H`` pooled table.

    Examples
    --------
    >>> newton_flops((10, 200)), newton_flops((200, 10))  # (smaller side)^2 x larger side
    (20000.0, 20000.0)
    """
    small, large = sorted(shape)
    return float(small) ** 2 * large


def _observed(pooled: PooledResponses) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows, columns and counts of the observed group pairs: the work per step is O(these)."""
    rows, cols = np.nonzero(pooled.cells)
    return rows, cols, pooled.cells[rows, cols]


def _objective(pooled: PooledResponses, theta: np.ndarray, b: np.ndarray,
               lam: float) -> tuple[float, np.ndarray]:
    """The pooled objective and the success probability of every observed group pair."""
    value, _, p = _objective_terms(pooled, _observed(pooled), theta, b, lam)
    return value, p


def _objective_terms(pooled: PooledResponses, cells: tuple, theta: np.ndarray, b: np.ndarray,
                     lam: float) -> tuple[float, float, np.ndarray]:
    """The objective, the sum of its terms' magnitudes (its rounding scale) and ``p``."""
    rows, cols, count = cells
    softplus, p = softplus_sigmoid(theta[rows] - b[cols])
    terms = (float(count @ softplus), -float(pooled.row_ones @ theta),
             float(pooled.col_ones @ b),
             0.5 * lam * float(pooled.row_size @ theta ** 2 + pooled.col_size @ b ** 2))
    return sum(terms), sum(abs(t) for t in terms), p


def _gradient(pooled: PooledResponses, cells: tuple, theta: np.ndarray, b: np.ndarray,
              p: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Gradient blocks, ``count * p`` per observed pair and the largest per-model/item gradient."""
    rows, cols, count = cells
    n, m = pooled.row_size, pooled.col_size
    cp = count * p
    heads = np.searchsorted(rows, np.arange(n.size))   # rows are sorted; none is empty
    g_theta = np.add.reduceat(cp, heads) - pooled.row_ones + lam * n * theta
    g_b = pooled.col_ones - np.bincount(cols, cp, m.size) + lam * m * b
    worst = max(float(np.max(np.abs(g_theta / n))), float(np.max(np.abs(g_b / m))))
    return g_theta, g_b, cp, worst


def rasch_joint_newton(pooled: PooledResponses, *, lam: float, tol: float, max_iter: int,
                       what: str, bar: Any = None) -> dict[str, Any]:
    """Minimise the pooled Rasch joint objective; return group parameters.

    Parameters
    ----------
    pooled : the grouped data.
    lam : prior precision (0 = joint ML, which needs a finite optimum: check
        :func:`~.data.require_finite_jml` first).
    tol : stop when ``max |gradient per model or item| <= tol``.
    max_iter : Newton iterations before :class:`ConvergenceError`.
    bar : optional progress bar (``update(1)`` per iteration).

    Returns
    -------
    dict with ``theta`` (G,), ``b`` (H,), ``n_iter``, ``objective``, ``info_rows``
    and ``info_cols`` (per-model and per-item Fisher information at the optimum,
    without the prior), ``gradient`` (the max per-parameter gradient reached) and
    ``rounding_limited`` (True when the solve stopped at the rounding limit of
    ``f`` with ``gradient`` still above ``tol``).

    Examples
    --------
    >>> from evalcert.irt.estimation.pooling import pool_responses
    >>> Y = (np.random.default_rng(0).random((30, 8)) < 0.5).astype(float)
    >>> pooled = pool_responses(Y, np.ones(Y.shape, dtype=bool))
    >>> out = rasch_joint_newton(pooled, lam=1.0, tol=1e-8, max_iter=50, what="demo")
    >>> out["theta"].shape == (pooled.shape[0],), bool(out["gradient"] <= 1e-8)
    (True, True)
    """
    n, m = pooled.row_size.astype(float), pooled.col_size.astype(float)
    cells = _observed(pooled)
    rows, cols, count = cells
    flat = rows * pooled.shape[1] + cols
    share_r = (pooled.row_ones + 0.5 * n) / (np.bincount(rows, count, n.size) + n)
    share_c = (pooled.col_ones + 0.5 * m) / (np.bincount(cols, count, m.size) + m)
    theta = np.log(share_r / (1 - share_r))
    b = -np.log(share_c / (1 - share_c))
    shift = (m @ b) / m.sum()
    theta, b = theta - shift, b - shift
    keep_rows = pooled.shape[0] <= pooled.shape[1]      # factor the smaller block
    value, scale, p = _objective_terms(pooled, cells, theta, b, lam)
    g_theta, g_b, cp, worst = _gradient(pooled, cells, theta, b, p, lam)
    rounding_limited = False
    for n_iter in range(max_iter + 1):
        if worst <= tol:
            break
        if n_iter == max_iter:
            raise ConvergenceError(
                f"{what}: Newton did not converge in {max_iter} iterations (max |gradient| "
                f"{worst:.3g} > tol {tol:g}); raise max_iter or loosen tol",
                solver="newton", status="max_iter")
        V = np.zeros(pooled.shape)                  # dense for the BLAS Schur complement
        V.ravel()[flat] = cp * (1 - p)
        d_theta, d_b = V.sum(1) + lam * n, V.sum(0) + lam * m
        step_theta, step_b = schur_newton_step(V, d_theta, d_b, g_theta, g_b, keep_rows,
                                               gauge=lam == 0, what=what)
        slope = float(g_theta @ step_theta + g_b @ step_b)
        resolvable = -0.5 * slope > ROUNDING * np.finfo(float).eps * scale
        t = 1.0
        for _ in range(60):
            new_theta, new_b = theta + t * step_theta, b + t * step_b
            new_value, new_scale, new_p = _objective_terms(pooled, cells, new_theta, new_b,
                                                            lam)
            if not resolvable or new_value <= value + 1e-4 * t * slope:
                break
            t /= 2
        else:
            raise ConvergenceError(f"{what}: the Newton line search failed (max |gradient| "
                                   f"{worst:.3g} > tol {tol:g})", solver="newton",
                                   status="line_search")
        new = _gradient(pooled, cells, new_theta, new_b, new_p, lam)
        if not resolvable and new[3] >= worst:
            rounding_limited = True     # f cannot tell and the gradient stopped falling
            break
        theta, b, value, scale, p = new_theta, new_b, new_value, new_scale, new_p
        g_theta, g_b, cp, worst = new
        if bar is not None:
            bar.update(1)
        if max(np.max(np.abs(theta)), np.max(np.abs(b))) > _DIVERGED:
            raise ConvergenceError(
                f"{what}: estimates diverge beyond {_DIVERGED:g} logits; the data determine "
                "no finite optimum (use method='map' or a larger lam)",
                solver="newton", status="diverged")
    v = count * p * (1 - p)
    return {"theta": theta, "b": b, "n_iter": n_iter, "objective": value, "gradient": worst,
            "rounding_limited": rounding_limited,
            "info_rows": np.bincount(rows, v, n.size) / n,
            "info_cols": np.bincount(cols, v, m.size) / m}


def schur_newton_step(V: np.ndarray, d_theta: np.ndarray, d_b: np.ndarray,
                      g_theta: np.ndarray, g_b: np.ndarray, keep_rows: bool, *, gauge: bool,
                      what: str) -> tuple[np.ndarray, np.ndarray]:
    """Solve ``[[D_theta, -V], [-V^T, D_b]] (x, y) = -(g_theta, g_b)`` by a Schur complement.

    ``keep_rows`` eliminates ``y`` and factors the ``theta`` block (choose the
    smaller side). With ``gauge`` the matrix is singular along ``(1, 1)`` (``D``
    the row and column sums of ``V``: the Rasch shift) and the step with no
    shift component is returned, for a right-hand side orthogonal to it.

    Examples
    --------
    >>> V = np.array([[1.0, 2.0], [3.0, 1.0]])
    >>> x, y = schur_newton_step(V, V.sum(1) + 1, V.sum(0) + 1, np.ones(2), -np.ones(2),
    ...                          True, gauge=False, what="demo")
    >>> M = np.block([[np.diag(V.sum(1) + 1), -V], [-V.T, np.diag(V.sum(0) + 1)]])
    >>> bool(np.allclose(M @ np.r_[x, y], [-1, -1, 1, 1]))
    True
    """
    if keep_rows:       # eliminate b, factor the theta block
        S = np.diag(d_theta) - (V / d_b[None, :]) @ V.T
        rhs = -g_theta - V @ (g_b / d_b)
    else:               # eliminate theta, factor the b block
        S = np.diag(d_b) - (V.T / d_theta[None, :]) @ V
        rhs = -g_b - V.T @ (g_theta / d_theta)
    if gauge:       # S 1 = 0 along the shift; any positive multiple of 1 1^T removes it
        S += np.mean(d_theta if keep_rows else d_b)
    try:
        kept = cho_solve(cho_factor(S, check_finite=False), rhs, check_finite=False)
    except LinAlgError:
        raise ConvergenceError(f"{what}: the Newton system is singular (is the design "
                               "connected?)", solver="newton", status="singular") from None
    if keep_rows:
        return kept, (V.T @ kept - g_b) / d_b
    return (V @ kept - g_theta) / d_theta, kept
