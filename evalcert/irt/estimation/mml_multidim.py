"""Marginal ML of the multidimensional 2PL by EM on a product Gauss-Hermite grid.

The model (Reckase 2009; mirt's ``itemtype='2PL'`` with ``K`` factors) is

    P(Y_ij = 1 | theta_i) = sigma(a_j . theta_i + d_j),    theta_i ~ N(0, I_K),

with ``K`` slopes ``a_j`` and one intercept ``d_j`` per item. The abilities are
integrated out on a tensor-product Gauss-Hermite grid of ``n_points ** K``
nodes (the ``N(0, I)`` weights of :func:`product_grid`).

E-step. With the observed cells in two sparse (models x items) matrices, ``Y1``
(the responses) and ``O`` (ones), and ``eta = Z A^T + d`` on the nodes ``Z``,
the log-likelihood of every model at every node is two sparse products,

    log L = Y1 @ eta^T - O @ softplus(eta)^T          (models x nodes),

so an iteration costs ``O(observed cells x nodes)`` whatever the share of
missing cells, and the expected counts of the M-step are the transposed
products ``n1 = Y1^T @ post`` and ``n = O^T @ post`` (items x nodes). Models
are taken in row blocks of at most :data:`_BLOCK` models x nodes.

M-step. Each item's complete-data criterion ``sum_q n1_jq eta_jq - n_jq
softplus(eta_jq)`` is a weighted logistic regression on ``X = [Z, 1]``; one
Newton step with the analytic Hessian ``X^T diag(n p (1 - p)) X`` (all items at
once, with step halving per item until the criterion rises) is taken per EM
iteration (a generalised EM, which still raises the marginal likelihood at
every step). The EM map is accelerated by SQUAREM (Varadhan & Roland 2008,
scheme S3), with a fall-back to the plain EM step whenever the extrapolated
point lowers the likelihood, so the likelihood never falls.

Identification (exploratory, as mirt): the likelihood is unchanged by any
rotation ``A -> A T`` (``T`` orthogonal), so the slopes of the first ``K - 1``
items are fixed at zero above the diagonal (item 1 loads on dimension 1 only,
item 2 on dimensions 1-2, ...) and each dimension's sign makes ``a_kk > 0``.
That removes ``K (K - 1) / 2`` parameters: ``J (K + 1) - K (K - 1) / 2`` are
free.

Example
-------
>>> rng = np.random.default_rng(0)
>>> A = np.abs(rng.normal(1, 0.3, (12, 2))); d = rng.normal(size=12)
>>> theta = rng.normal(size=(600, 2))
>>> Y = (rng.random((600, 12)) < 1 / (1 + np.exp(-(theta @ A.T + d)))).astype(float)
>>> out = m2pl_em(Y, np.ones(Y.shape, bool), dims=2, n_points=15, tol=1e-4, max_iter=500)
>>> out["A"].shape, float(out["A"][0, 1]), bool(out["A"][1, 1] > 0), out["converged"]
((12, 2), 0.0, True, True)
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy.sparse import csr_matrix
from scipy.optimize import minimize
from scipy.special import logsumexp
from threadpoolctl import threadpool_limits

from evalcert.errors import InputError
from evalcert.irt.base import softplus_sigmoid

__all__ = ["product_grid", "triangular_form", "m2pl_em", "marginal_loglik", "posterior_moments",
           "DEFAULT_POINTS", "SLOPE_LIMIT"]

#: Gauss-Hermite points per dimension by K (K=1 as the 2PL; 21^2 = 441, 15^3 = 3,375 nodes)
DEFAULT_POINTS = {1: 41, 2: 21, 3: 15}
#: models x nodes per block of the E-step
_BLOCK = 1 << 20
#: observed share from which the E-step's products are dense (BLAS) rather than sparse
_DENSE_SHARE = 0.15
#: bound on every slope (logits per sd): an item whose slope reaches it has no finite ML
#: slope (a few models split it perfectly, or a Heywood case of too many dimensions)
SLOPE_LIMIT = 25.0
_MAX_NODES = 100_000
#: spacing of the uniform first-pass grid of EAP scoring on [-6, 6]^K, by K (121, 61^2,
#: 25^3 nodes); a model is accepted there when its posterior sd along every direction is
#: at least _RATIO spacings and its mean lies _TAIL sds inside the grid (as
#: :mod:`~evalcert.irt.scoring` does in one dimension)
UNIFORM = {1: 0.1, 2: 0.2, 3: 0.5}
_HALF_WIDTH, _RATIO, _TAIL = 6.0, 1.2, 8.0
#: half width of the uniform grid by K (at K <= 2 wider than the +-6 the spacing was
#: chosen for: a posterior sd 0.7 wide must lie 8 sds inside it; 33^3 nodes at K=3 would
#: cost 2.3x the memory of 25^3)
_UNIFORM_HALF_WIDTH = {1: 8.0, 2: 8.0}
#: spacing (in sds of the typical posterior) and reach (means) of the oblique first lattice
_OBLIQUE_STEP, _OBLIQUE_REACH = 0.8, (3.0, 6.0)
#: Gauss-Hermite points per dimension once a model's grid sits on its posterior, by K
#: (at K=2 the EAP of 11 models was within 1.1e-7 posterior sds of a brute-force 601^2
#: grid with 21 points, 1.7e-6 with 15, 2.4e-6 with 11; K=3 is not checked against one)
ADAPTIVE_POINTS = {1: 31, 2: 21, 3: 11}


def product_grid(dims: int, n_points: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``(n_points ** dims, dims)`` and log weights of ``N(0, I)`` (summing to 1).

    Examples
    --------
    >>> Z, logw = product_grid(2, 5)
    >>> Z.shape, round(float(np.exp(logw).sum()), 12)
    ((25, 2), 1.0)
    >>> np.round(np.exp(logw) @ (Z * Z), 10).tolist()   # unit variances, exactly
    [1.0, 1.0]
    """
    if not (isinstance(dims, (int, np.integer)) and 1 <= dims <= 4):
        raise InputError(f"dims must be an integer in 1..4 for a product grid, got {dims!r}")
    if not (isinstance(n_points, (int, np.integer)) and n_points >= 3):
        raise InputError(f"n_points must be an integer >= 3, got {n_points!r}")
    if n_points ** dims > _MAX_NODES:
        raise InputError(f"{n_points}^{dims} = {n_points ** dims:,} nodes exceed "
                         f"{_MAX_NODES:,}; use fewer points per dimension")
    z, w = hermegauss(int(n_points))
    logw1 = np.log(w / w.sum())
    mesh = np.meshgrid(*([z] * dims), indexing="ij")
    Z = np.column_stack([g.ravel() for g in mesh])
    lw = np.meshgrid(*([logw1] * dims), indexing="ij")
    return Z, np.sum([g.ravel() for g in lw], axis=0)


def triangular_form(A: np.ndarray) -> np.ndarray:
    """Rotate slopes ``A`` (J x K) so that ``A[j, k] = 0`` for ``k > j`` and ``A[k, k] >= 0``.

    The rotation is orthogonal (``A A^T``, hence the likelihood, is unchanged); it
    puts a fit, or a simulation's truth, in the identified form of :func:`m2pl_em`.

    Examples
    --------
    >>> A = np.array([[1.0, 1.0], [0.5, -1.0], [2.0, 0.0]])
    >>> T = triangular_form(A)
    >>> float(T[0, 1]), bool(T[1, 1] > 0), bool(np.allclose(T @ T.T, A @ A.T))
    (0.0, True, True)
    """
    A = np.asarray(A, dtype=float)
    k = A.shape[1]
    Q, R = np.linalg.qr(A[:k].T)                 # A[:k] = R^T Q^T, so A Q puts R^T on top
    B = A @ Q
    B *= np.where(np.diag(B[:k]) < 0, -1.0, 1.0)
    B[:k] = np.where(np.tri(k, dtype=bool), B[:k], 0.0)
    return B


def _free_mask(n_items: int, dims: int) -> np.ndarray:
    """True where a parameter ``[a_1..a_K, d]`` is free (upper-triangle slopes are fixed)."""
    free = np.ones((n_items, dims + 1), bool)
    for j in range(min(dims - 1, n_items)):
        free[j, j + 1:dims] = False
    return free


class _Cells:
    """Observed cells as row blocks of ``Y1``/``O`` and their transposes: sparse (CSR)
    when under :data:`_DENSE_SHARE` of the cells are observed, else dense (BLAS)."""

    def __init__(self, Y: np.ndarray, observed: np.ndarray, n_nodes: int):
        n, m = observed.shape
        step = max(1, _BLOCK // max(n_nodes, 1))
        self.blocks = []
        dense = observed.mean() >= _DENSE_SHARE if observed.size else False
        if dense:
            for lo in range(0, n, step):
                hi = min(lo + step, n)
                O = observed[lo:hi].astype(float)
                Y1 = np.where(observed[lo:hi], Y[lo:hi], 0.0)
                self.blocks.append((lo, hi, Y1, O, Y1.T, O.T))
            self.n, self.m = n, m
            return
        rows, cols = np.nonzero(observed)
        y = Y[rows, cols].astype(float)
        starts = np.searchsorted(rows, np.arange(0, n + step, step).clip(max=n))
        for b, lo in enumerate(range(0, n, step)):
            s, e = starts[b], starts[b + 1]
            hi = min(lo + step, n)
            r = rows[s:e] - lo
            O = csr_matrix((np.ones(e - s), (r, cols[s:e])), shape=(hi - lo, m))
            Y1 = csr_matrix((y[s:e], (r, cols[s:e])), shape=(hi - lo, m))
            Y1.eliminate_zeros()
            self.blocks.append((lo, hi, Y1, O, Y1.T.tocsr(), O.T.tocsr()))
        self.n, self.m = n, m


def _estep(cells: _Cells, P: np.ndarray, Z: np.ndarray, logw: np.ndarray,
           counts: bool = True) -> tuple[float, np.ndarray | None, np.ndarray | None]:
    """Marginal log-likelihood and expected counts ``n1, n`` (items x nodes)."""
    k = Z.shape[1]
    eta = P[:, :k] @ Z.T + P[:, k:]                       # items x nodes
    sp, _ = softplus_sigmoid(eta)
    total = 0.0
    n1 = np.zeros_like(eta) if counts else None
    nn = np.zeros_like(eta) if counts else None
    for lo, hi, Y1, O, Y1T, OT in cells.blocks:
        lj = np.asarray(Y1 @ eta)
        lj -= np.asarray(O @ sp)
        lj += logw
        top = lj.max(axis=1, keepdims=True)
        np.subtract(lj, top, out=lj)
        np.exp(lj, out=lj)
        s = lj.sum(axis=1, keepdims=True)
        lj /= s
        total += float(np.sum(top[:, 0] + np.log(s[:, 0])))
        if counts:
            n1 += np.asarray(Y1T @ lj)
            nn += np.asarray(OT @ lj)
    return total, n1, nn


def _criterion(P: np.ndarray, X: np.ndarray, n1: np.ndarray, nn: np.ndarray) -> np.ndarray:
    eta = P @ X.T
    sp, _ = softplus_sigmoid(eta)
    return np.sum(n1 * eta - nn * sp, axis=1)


def _mstep(P: np.ndarray, X: np.ndarray, n1: np.ndarray, nn: np.ndarray,
           free: np.ndarray) -> np.ndarray:
    """One safeguarded Newton step per item on its complete-data criterion."""
    eta = P @ X.T
    sp, p = softplus_sigmoid(eta)
    f0 = np.sum(n1 * eta - nn * sp, axis=1)
    g = (n1 - nn * p) @ X
    W = nn * p * (1 - p)
    H = np.einsum("jq,qa,qb->jab", W, X, X)
    fixed = ~free
    g[fixed] = 0.0
    jj, aa = np.nonzero(fixed)
    H[jj, aa, :] = 0.0
    H[jj, :, aa] = 0.0
    H[jj, aa, aa] = 1.0
    H += 1e-10 * np.eye(X.shape[1])
    step = np.linalg.solve(H, g[:, :, None])[:, :, 0]
    t = np.ones(P.shape[0])
    out = P.copy()
    todo = np.ones(P.shape[0], bool)
    for _ in range(30):
        trial = P[todo] + t[todo, None] * step[todo]
        ok = _criterion(trial, X, n1[todo], nn[todo]) >= f0[todo] - 1e-12 * np.abs(f0[todo])
        idx = np.flatnonzero(todo)
        out[idx[ok]] = trial[ok]
        todo[idx[ok]] = False
        if not todo.any():
            break
        t[todo] *= 0.5
    return out


def m2pl_em(Y: np.ndarray, observed: np.ndarray, *, dims: int, n_points: int | None = None,
            tol: float = 1e-4, max_iter: int = 2000, start: np.ndarray | None = None,
            warm_em: int = 20) -> dict[str, Any]:
    """Fit the multidimensional 2PL by marginal ML (EM); see the module docstring.

    Parameters
    ----------
    Y, observed : (models x items) responses (0/1, read where observed) and mask.
    dims : number of latent dimensions ``K`` (1-3; 4 is allowed with few points).
    n_points : Gauss-Hermite points per dimension (default :data:`DEFAULT_POINTS`).
    tol : stop when every free parameter's score (the gradient of the marginal
        log-likelihood) is below ``tol`` in absolute value.
    max_iter : budget of E-steps (EM iterations plus L-BFGS evaluations).
    warm_em : EM iterations before the switch to L-BFGS on the marginal likelihood.
    start : optional starting ``[A, d]`` (items x (K + 1)), e.g. a smaller model's fit.

    Returns
    -------
    The products run on one BLAS thread (blocks of at most 2^20 models x nodes:
    measured 0.74 CPU-s on one thread vs 4.5 CPU-s with the default threads for
    500 x 20 at K=2 on a loaded 2-core machine).

    dict with ``A`` (items x K, triangular form), ``d`` (items,), ``loglik``,
    ``n_iter``, ``converged``, ``n_parameters``, ``seconds``, ``n_nodes``,
    ``max_score`` (largest projected score at the end) and ``at_bound`` (items with a
    slope held at :data:`SLOPE_LIMIT`).

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> theta, d = rng.normal(size=(300, 1)), rng.normal(size=6)
    >>> Y = (rng.random((300, 6)) < 1 / (1 + np.exp(-(1.2 * theta + d)))).astype(float)
    >>> out = m2pl_em(Y, np.ones(Y.shape, bool), dims=1, n_points=21)
    >>> out["converged"], out["n_parameters"], bool(out["max_score"] <= 1e-4)
    (True, 12, True)
    """
    with threadpool_limits(1):
        return _m2pl_em(Y, observed, dims=dims, n_points=n_points, tol=tol,
                        max_iter=max_iter, start=start, warm_em=warm_em)


def _m2pl_em(Y: np.ndarray, observed: np.ndarray, *, dims: int, n_points: int | None,
             tol: float, max_iter: int, start: np.ndarray | None, warm_em: int
             ) -> dict[str, Any]:
    Y = np.asarray(Y, dtype=float)
    observed = np.asarray(observed, dtype=bool)
    n, m = observed.shape
    if not isinstance(dims, (int, np.integer)) or dims < 1:
        raise InputError(f"dims must be a positive integer, got {dims!r}")
    if m < dims:
        raise InputError(f"dims={dims} needs at least {dims} items, the data have {m}")
    n_points = DEFAULT_POINTS.get(int(dims), 7) if n_points is None else n_points
    Z, logw = product_grid(int(dims), int(n_points))
    X = np.column_stack([Z, np.ones(len(Z))])
    from evalcert.memory import estimate_bytes, require_memory
    require_memory(estimate_bytes((min(n, max(1, _BLOCK // len(Z))), len(Z)), copies=3)
                   + estimate_bytes((m, len(Z)), copies=8),
                   f"the {dims}-dimensional 2PL on {len(Z):,} nodes",
                   "fewer points per dimension (n_points) or fewer dimensions")
    clock = time.perf_counter()
    cells = _Cells(Y, observed, len(Z))
    free = _free_mask(m, int(dims))
    P = _start(Y, observed, int(dims)) if start is None else np.asarray(start, float).copy()
    P[~free] = 0.0

    def em(P: np.ndarray) -> tuple[np.ndarray, float]:
        ll, n1, nn = _estep(cells, P, Z, logw)
        return _mstep(P, X, n1, nn, free), ll

    n_iter, ll_old = 0, -np.inf
    for _ in range(min(warm_em, max_iter)):       # EM first: robust far from the optimum
        P, ll = em(P)
        n_iter += 1
        if ll - ll_old < 1e-3 * max(1.0, abs(ll)) * 1e-3:
            break
        ll_old = ll

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        Px = np.zeros_like(P)
        Px[free] = x
        ll, n1, nn = _estep(cells, Px, Z, logw)
        _, p = softplus_sigmoid(Px @ X.T)
        g = (n1 - nn * p) @ X                        # Fisher identity: exact score
        return -ll, -g[free]

    is_slope = np.zeros_like(free)
    is_slope[:, :dims] = True
    bounds = [(-SLOPE_LIMIT, SLOPE_LIMIT) if s else (None, None) for s in is_slope[free]]
    P[:, :dims] = np.clip(P[:, :dims], -SLOPE_LIMIT, SLOPE_LIMIT)
    res = minimize(fun, P[free], jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"maxiter": max(1, max_iter - n_iter), "maxcor": 20,
                            "ftol": 1e-15, "gtol": tol, "maxls": 40})
    n_iter += int(res.nfev)                          # E-steps (one per evaluation)
    P = np.zeros_like(P)
    P[free] = res.x
    grad = np.zeros_like(P)
    grad[free] = -res.jac
    at_bound = np.abs(P[:, :dims]) >= SLOPE_LIMIT * (1 - 1e-9)
    grad[:, :dims][at_bound & (grad[:, :dims] * P[:, :dims] > 0)] = 0.0   # projected score
    converged = bool(np.max(np.abs(grad)) <= tol or res.status == 0)
    ll, _, _ = _estep(cells, P, Z, logw, counts=False)
    A, d = P[:, :dims], P[:, dims]
    B = triangular_form(A) if dims > 1 else A * np.where(A.sum() < 0, -1.0, 1.0)
    n_par = m * (dims + 1) - dims * (dims - 1) // 2
    return {"A": B, "d": d.copy(), "loglik": float(ll), "n_iter": n_iter,
            "converged": converged, "n_parameters": int(n_par),
            "seconds": time.perf_counter() - clock, "n_nodes": len(Z),
            "n_points": int(n_points), "max_score": float(np.max(np.abs(grad))),
            "at_bound": np.flatnonzero(at_bound.any(axis=1))}


def marginal_loglik(Y: np.ndarray, observed: np.ndarray, A: np.ndarray, d: np.ndarray, *,
                    n_points: int | None = None) -> float:
    """The marginal log-likelihood of ``[A, d]`` on the product grid (as :func:`m2pl_em`).

    Examples
    --------
    >>> Y = np.array([[1.0, 0.0], [1.0, 1.0]])
    >>> ll = marginal_loglik(Y, np.ones((2, 2), bool), np.zeros((2, 1)), np.zeros(2))
    >>> round(float(ll / np.log(0.5)), 9)   # zero slopes: every cell has probability 1/2
    4.0
    """
    A = np.asarray(A, dtype=float)
    k = A.shape[1]
    n_points = DEFAULT_POINTS.get(k, 7) if n_points is None else n_points
    Z, logw = product_grid(k, int(n_points))
    cells = _Cells(np.asarray(Y, float), np.asarray(observed, bool), len(Z))
    with threadpool_limits(1):
        ll, _, _ = _estep(cells, np.column_stack([A, d]), Z, logw, counts=False)
    return float(ll)


def _start(Y: np.ndarray, observed: np.ndarray, dims: int) -> np.ndarray:
    """Starting ``[A, d]``: loadings of the first ``K`` principal axes of the item
    correlations (missing cells at the item mean), turned into slopes by the
    normal-ogive relation ``a = 1.7 lambda / sqrt(1 - |lambda|^2)``, rotated to the
    triangular form; intercepts from the item proportions."""
    obs = observed.astype(float)
    cnt = np.maximum(obs.sum(0), 1.0)
    prop = ((Y * obs).sum(0) + 0.5) / (cnt + 1.0)
    Xc = np.where(observed, Y, prop) - prop
    sd = np.maximum(Xc.std(0), 1e-6)
    R = np.corrcoef(Xc / sd, rowvar=False) if Xc.shape[0] > 1 else np.eye(Y.shape[1])
    R = np.nan_to_num(R)
    vals, vecs = np.linalg.eigh(R)
    order = np.argsort(vals)[::-1][:dims]
    lam = vecs[:, order] * np.sqrt(np.maximum(vals[order], 0.0))
    lam = np.clip(lam, -0.9, 0.9)
    norm = np.sum(lam * lam, axis=1, keepdims=True)
    lam = np.where(norm > 0.81, lam * 0.9 / np.sqrt(norm), lam)
    A = 1.7 * lam / np.sqrt(1.0 - np.sum(lam * lam, axis=1, keepdims=True))
    A = triangular_form(A) if dims > 1 else np.abs(A)
    scale = np.sqrt(1.0 + np.sum(A * A, axis=1) / 2.9)     # logit of a mean over N(0, AA^T)
    d = np.log(prop / (1 - prop)) * scale
    return np.column_stack([A, d])


def posterior_moments(starts: np.ndarray, cols: np.ndarray, y: np.ndarray, A: np.ndarray,
                      d: np.ndarray, *, n_points: int | None = None, tol: float = 1e-7,
                      max_passes: int = 8, adaptive_points: int | None = None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """EAP means ``(n, K)`` and covariances ``(n, K, K)`` of ``theta ~ N(0, I)`` given cells.

    ``starts, cols, y`` are the observed cells row by row (as
    :func:`~evalcert.irt.data.observed_cells`). At K >= 2 a first pass integrates every
    model on an oblique lattice ``theta = L z`` (``L L^T`` the posterior covariance of a
    typical model: the N(0, I) prior and the observed items at information ``0.2 a
    a^T``; spacing 0.8 in ``z``, means within ``[-3, 3]^K``, then ``[-6, 6]^K`` for
    the models it did not hold; never more nodes than the box below), then the rest on
    the uniform box ``[-8, 8]^K`` (K <= 2; ``[-6, 6]^3``, spacing ``h`` of
    :data:`UNIFORM`: 0.1, 0.2, 0.5 for K = 1, 2, 3). Each pass is one softplus table
    (items x nodes) summed over the observed items (a column sum for complete rows)
    plus a models x K @ K x nodes product (:func:`_uniform_pass`). The trapezoid rule
    is spectrally accurate for a smooth posterior wider than its spacing, so a model
    is done on a lattice when its posterior sd along every direction of the lattice
    coordinates is at least ``1.2`` spacings and its density on the lattice's
    boundary is below ``e^-32`` of its peak (8 sds for a normal posterior). Every
    other model (a narrow posterior: many items) gets adaptive Gauss-Hermite passes:
    its grid re-centred on its current posterior (``theta = mu + L z``, ``L L^T`` the
    posterior covariance; ``adaptive_points`` per dimension), repeated until its
    mean moves by less than ``tol`` posterior sds and its sds by less than ``tol``
    relatively (at most ``max_passes``); work ``O(observed cells x nodes)`` per pass.
    Returns also the passes each model took (1 = a uniform lattice sufficed).
    ``n_points`` is accepted for symmetry with the fit and not used.

    Examples
    --------
    >>> A, d = np.array([[1.0, 0.0], [0.7, 0.8]]), np.zeros(2)
    >>> mu, cov, passes = posterior_moments(np.array([0, 0, 2]), np.array([0, 1]),
    ...                                     np.array([1.0, 0.0]), A, d)
    >>> mu.shape, bool(np.allclose(mu[0], 0)), bool(np.allclose(cov[0], np.eye(2)))
    ((2, 2), True, True)
    """
    n, k = len(starts) - 1, A.shape[1]
    adaptive_points = ADAPTIVE_POINTS.get(k, 7) if adaptive_points is None else adaptive_points
    Z, logw = product_grid(k, int(adaptive_points))
    half_zz = 0.5 * np.sum(Z * Z, axis=1)
    lens = np.diff(starts)
    mu, cov = np.zeros((n, k)), np.tile(np.eye(k), (n, 1, 1))
    passes = np.zeros(n, int)
    todo = lens > 0
    h = UNIFORM.get(k, 1.0)
    idx = np.flatnonzero(todo)
    if idx.size and k > 1:
        # an oblique lattice along a typical posterior (N(0, I) prior and the typical
        # observed items at information 0.2 a a^T each) over means in [-3, 3]^K
        share = np.bincount(cols[starts[idx[0]]:starts[idx[-1] + 1]], minlength=A.shape[0])
        typical = np.linalg.inv(np.eye(k) + 0.2 * (A.T * (share / idx.size)) @ A)
        L0 = np.linalg.cholesky(typical)
        box = len(_lattice(k, h, None, _UNIFORM_HALF_WIDTH.get(k, _HALF_WIDTH))[0])
        for reach in _OBLIQUE_REACH:        # then wider, for the models it did not hold
            # never more nodes than the axis-aligned grid
            if idx.size and len(_lattice(k, _OBLIQUE_STEP, L0, reach)[0]) <= box:
                mu[idx], cov[idx], ok = _uniform_pass(idx, starts, cols, y, A, d,
                                                      _OBLIQUE_STEP, L0, reach)
                passes[idx] = 1
                todo[idx[ok]] = False
                idx = idx[~ok]
    if idx.size:
        mu[idx], cov[idx], ok = _uniform_pass(idx, starts, cols, y, A, d, h)
        passes[idx] = 1
        todo[idx[ok]] = False
        rest = idx[~ok]
        cov[rest] += h * h * np.eye(k) / 12      # a posterior narrower than the grid
    L = np.linalg.cholesky(cov + 1e-300 * np.eye(k))
    for _ in range(max_passes):
        idx = np.flatnonzero(todo)
        if idx.size == 0:
            break
        new_mu, new_cov = _moments(idx, starts, cols, y, A, d, mu, L, Z, logw, half_zz,
                                   adaptive=True)
        sd_old = np.sqrt(np.diagonal(cov[idx], axis1=1, axis2=2))
        sd_new = np.sqrt(np.diagonal(new_cov, axis1=1, axis2=2))
        moved = np.max(np.abs(new_mu - mu[idx]) / sd_new, axis=1)
        spread = np.max(np.abs(sd_new / sd_old - 1), axis=1)
        mu[idx], cov[idx] = new_mu, new_cov
        passes[idx] += 1
        L[idx] = np.linalg.cholesky(new_cov + 1e-300 * np.eye(k))
        todo[idx[(moved < tol) & (spread < tol)]] = False
    return mu, cov, passes


def _lattice(k: int, h: float, L: np.ndarray | None, reach: float
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nodes ``theta = L z`` for ``z`` on the grid of spacing ``h`` over the box that holds
    ``L^{-1} [-reach, reach]^K`` widened by ``_TAIL`` (``L = I``: ``[-reach, reach]^K``),
    the nodes on its boundary, and ``L^{-1}``."""
    Linv = np.eye(k) if L is None else np.linalg.inv(L)
    half = reach * np.abs(Linv).sum(axis=1) + (0.0 if L is None else _TAIL)
    axes = [np.arange(-np.ceil(w / h), np.ceil(w / h) + 0.5) * h for w in half]
    Z = np.column_stack([v.ravel() for v in np.meshgrid(*axes, indexing="ij")])
    edge = np.flatnonzero(np.any(np.abs(Z) >= np.array([ax[-1] for ax in axes]) - h / 2,
                                 axis=1))
    return Z if L is None else Z @ L.T, edge, Linv


def _uniform_pass(idx: np.ndarray, starts: np.ndarray, cols: np.ndarray, y: np.ndarray,
                  A: np.ndarray, d: np.ndarray, h: float, L: np.ndarray | None = None,
                  reach: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Posterior moments of models ``idx`` on a uniform grid, and which are accurate.

    The grid is ``[-w, w]^K`` (spacing ``h``, ``w`` of :data:`_UNIFORM_HALF_WIDTH`) or,
    given ``L``, the lattice ``theta = L z`` of :func:`_lattice` (the trapezoid rule
    on an oblique lattice: with ``L`` near a posterior's Cholesky factor far fewer
    nodes cover it at the same accuracy).

    The log-likelihood is linear in ``theta`` but for the softplus terms:
    ``l_i(theta) = r_i . theta + s_i - sum_j O_ij log(1 + exp(a_j . theta + d_j))`` with
    ``r_i = sum_j y_ij a_j`` and ``s_i = sum_j y_ij d_j``, so the grid costs one
    product of the observed mask with the items x nodes softplus table (a column sum
    for complete rows) and a models x K @ K x nodes product. A model is accurate when
    its posterior sd along every direction is at least ``_RATIO h`` (trapezoid error
    below ``2 exp(-2 pi^2 _RATIO^2)``, Poisson summation) and its posterior density on
    the boundary of the grid is below ``exp(-_TAIL^2 / 2)`` of its largest value (for
    a normal posterior: its mean lies ``_TAIL`` sds inside; for any log-concave one
    the mass outside falls at least as fast along every ray).
    """
    k, m = A.shape[1], A.shape[0]
    G, edge, Linv = _lattice(k, h, L, reach if L is not None
                             else _UNIFORM_HALF_WIDTH.get(k, _HALF_WIDTH))
    sp, _ = softplus_sigmoid(A @ G.T + d[:, None])              # items x nodes
    prior = -0.5 * np.sum(G * G, axis=1)
    lens = starts[idx + 1] - starts[idx]
    pos = np.repeat(starts[idx] - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens) \
        + np.arange(lens.sum())
    rows = np.repeat(np.arange(idx.size), lens)
    c, yy = cols[pos], y[pos]
    shape = (idx.size, m)
    R1 = csr_matrix((yy, (rows, c)), shape=shape)
    complete = bool(np.all(lens == m))
    r, s = np.asarray(R1 @ A), np.asarray(R1 @ d)
    O = None
    if not complete:
        O = csr_matrix((np.ones_like(yy), (rows, c)), shape=shape)
        if pos.size >= _DENSE_SHARE * idx.size * m:
            O = O.toarray()
    base = prior - sp.sum(axis=0) if complete else prior
    # moments as one product: w @ [1, theta_k, theta_k theta_l (k <= l)]
    pairs = [(p, q) for p in range(k) for q in range(p, k)]
    H = np.column_stack([np.ones(len(G)), G] + [G[:, p] * G[:, q] for p, q in pairs])
    M = np.empty((idx.size, H.shape[1]))
    top = np.empty(idx.size)
    Gt = np.ascontiguousarray(G.T)
    step = max(1, (1 << 16) // len(G))
    with threadpool_limits(1):
        for lo in range(0, idx.size, step):
            hi = min(lo + step, idx.size)
            ll = r[lo:hi] @ Gt
            ll += base
            ll += s[lo:hi, None]
            if O is not None:
                ll -= np.asarray(O[lo:hi] @ sp)
            mx = ll.max(axis=1, keepdims=True)
            ll -= mx
            top[lo:hi] = ll[:, edge].max(axis=1)
            np.maximum(ll, -700.0, out=ll)      # exp is ~100x slower where it underflows
            np.exp(ll, out=ll)
            M[lo:hi] = ll @ H
    M[:, 1:] /= M[:, :1]
    mu = M[:, 1:1 + k]
    cov = np.empty((idx.size, k, k))
    for q, (p1, p2) in enumerate(pairs):
        cov[:, p1, p2] = cov[:, p2, p1] = M[:, 1 + k + q] - mu[:, p1] * mu[:, p2]
    low = np.linalg.eigvalsh(Linv @ cov @ Linv.T)[:, 0]      # in lattice coordinates
    ok = (low >= (_RATIO * h) ** 2) & (top <= -0.5 * _TAIL ** 2)
    return mu, cov, ok


def _moments(idx: np.ndarray, starts: np.ndarray, cols: np.ndarray, y: np.ndarray,
             A: np.ndarray, d: np.ndarray, mu: np.ndarray, L: np.ndarray, Z: np.ndarray,
             logw: np.ndarray, half_zz: np.ndarray, adaptive: bool
             ) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean/covariance of models ``idx`` on nodes ``mu_i + L_i z``."""
    k, Q = A.shape[1], len(Z)
    out_mu, out_cov = np.empty((idx.size, k)), np.empty((idx.size, k, k))
    lens = starts[idx + 1] - starts[idx]
    budget = max(1, (1 << 21) // Q)
    lo = 0
    while lo < idx.size:
        hi, used = lo, 0
        while hi < idx.size and (hi == lo or used + lens[hi] <= budget):
            used += lens[hi]
            hi += 1
        sel = idx[lo:hi]
        cell = np.concatenate([np.arange(starts[i], starts[i + 1]) for i in sel])
        seg = np.concatenate([[0], np.cumsum(lens[lo:hi])[:-1]])
        owner = np.repeat(np.arange(hi - lo), lens[lo:hi])
        c, yy = cols[cell], y[cell]
        Ac = A[c]
        base = np.einsum("ck,ck->c", Ac, mu[sel][owner]) + d[c]
        V = np.einsum("ck,ckl->cl", Ac, L[sel][owner])          # a_j L_i
        eta = V @ Z.T
        eta += base[:, None]
        sp, _ = softplus_sigmoid(eta)
        eta *= yy[:, None]
        eta -= sp
        ll = np.add.reduceat(eta, seg, axis=0) if cell.size else np.zeros((hi - lo, Q))
        ll += logw
        if adaptive:           # prior N(0, I) at mu + L z over the GH weight phi(z)
            T = mu[sel][:, None, :] + np.einsum("nkl,ql->nqk", L[sel], Z)
            ll += half_zz - 0.5 * np.sum(T * T, axis=2)
        else:
            T = np.broadcast_to(Z, (hi - lo, Q, k))
        ll -= logsumexp(ll, axis=1, keepdims=True)
        w = np.exp(ll)
        m1 = np.einsum("nq,nqk->nk", w, T)
        D = T - m1[:, None, :]
        out_mu[lo:hi] = m1
        out_cov[lo:hi] = np.einsum("nq,nqk,nql->nkl", w, D, D)
        lo = hi
    return out_mu, out_cov
