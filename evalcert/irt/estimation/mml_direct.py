"""Direct maximisation of a marginal likelihood on a fixed quadrature grid (3PL, graded).

Abilities are integrated out under ``theta ~ N(0, 1)`` on ``Q`` equally spaced
nodes ``z_q`` in ``[-6, 6]`` with weights ``w_q`` proportional to the normal
density (the trapezoid rule). With ``log P_jk(z_q)`` the log-probability that
item ``j`` is answered in category ``k`` at node ``q``, the marginal
log-likelihood (Bock & Aitkin 1981, Eq. 3) is

    l = sum_i log sum_q w_q exp( sum_j sum_k [y_ij = k] log P_jk(z_q) ),

and by Fisher's identity its gradient is ``sum_{j,q,k} n_jqk d log P_jk(z_q)``
with the expected counts ``n_jqk = sum_i [y_ij = k] post_iq`` (the E-step of
EM). Instead of EM steps, L-BFGS maximises ``l`` plus the log-prior directly,
using this exact gradient; each evaluation costs ``O(K N M Q)`` operations.
Standard errors come from the observed information: a central-difference
Hessian of the exact gradient (``2 p`` gradient evaluations for ``p``
parameters), skipped above ``max_se_params`` parameters.

The grid is accurate while every posterior sd is at least about two node
spacings (``12 / (Q - 1)``): with ``Q = 61`` (0.2 apart) up to about a hundred
items per model; raise ``n_quad`` beyond that.

Slopes share one prior (:func:`slope_prior_terms`), the same as the 2PL's
(:mod:`~.mml`): ``log a_j ~ N(0, 1/p)`` with precision ``p`` (default
:data:`SLOPE_PRIOR` = 4, sd 0.5, BILOG-MG's default), maximised over
``u_j = log a_j``; ``p = 0`` is pure ML with slopes of either sign.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from scipy.special import logsumexp

from evalcert.errors import ConvergenceError, InputError
from evalcert.progress import progress_bar

__all__ = ["grid", "MarginalData", "maximise", "SLOPE_PRIOR", "slope_prior_terms",
           "diverging_slopes", "check_slopes", "observed_covariance"]

#: default precision of the log-normal slope prior ``log a ~ N(0, 1/4)`` (sd 0.5)
SLOPE_PRIOR = 4.0


def slope_prior_terms(u: np.ndarray, precision: float
                      ) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """Slopes from their free parameters, and the log-normal slope prior.

    With ``precision = p > 0`` the free parameter is ``u = log a`` and the
    log-prior (up to a constant) is ``-p/2 sum_j u_j^2``, i.e.
    ``log a_j ~ N(0, 1/p)``: slopes stay positive (which orients the ability
    scale: higher = more items solved) and an item that a few models split
    perfectly keeps a finite slope. With ``p = 0`` the free parameter is the
    slope itself (pure ML, either sign) and the log-prior is 0.

    Returns
    -------
    a, da_du, log_prior, d log_prior / du

    Examples
    --------
    >>> a, da, lp, g = slope_prior_terms(np.log([1.0, np.e]), 4.0)
    >>> (np.round(a, 6).tolist(), np.round(da, 6).tolist(), round(lp, 6),
    ...  (np.round(g, 6) + 0.0).tolist())  # + 0.0: never a -0.0
    ([1.0, 2.718282], [1.0, 2.718282], -2.0, [0.0, -4.0])
    >>> slope_prior_terms(np.array([-0.5]), 0.0)[0].tolist()   # pure ML: the slope itself
    [-0.5]
    """
    if precision > 0:
        a = np.exp(u)
        return a, a, float(-0.5 * precision * np.sum(u ** 2)), -precision * u
    return u, np.ones_like(u), 0.0, np.zeros_like(u)


def diverging_slopes(a: np.ndarray, item_names: tuple[str, ...], *, limit: float = 20.0
                     ) -> str | None:
    """Why a pure-ML fit is no MLE, if slopes ran away: the items whose ``|a| > limit``.

    When the models split an item (almost) perfectly its ML slope grows without
    bound (the MLE does not exist) until the gradient underflows or the
    grid stops resolving it. Slopes beyond ``2 / spacing`` of the quadrature
    grid (10 on the default 61 nodes: the logit moves by 2 between two nodes)
    are not resolved, so callers pass that as ``limit``. Returns the
    explanation with the fix (a slope prior, or more nodes if such a slope is
    real), or None when no slope is beyond ``limit``.

    Examples
    --------
    >>> diverging_slopes(np.array([1.0, 35.0]), ("q1", "q2"))[:54]
    'the slope MLE does not exist for 1 item: q2 (|a| = 35)'
    >>> diverging_slopes(np.array([1.0, 2.0]), ("q1", "q2")) is None
    True
    """
    away = np.flatnonzero(np.abs(a) > limit)
    if away.size == 0:
        return None
    shown = ", ".join(f"{item_names[j]} (|a| = {abs(a[j]):.3g})" for j in away[:5])
    return (f"the slope MLE does not exist for {away.size} item{'s' * (away.size > 1)}: "
            f"{shown}{' ...' if away.size > 5 else ''} beyond {limit:.3g}, where the grid no "
            "longer resolves them: the models split them (almost) perfectly; use a slope "
            f"prior (slope_prior={SLOPE_PRIOR:g}, the default) or drop those items (or raise "
            "n_quad if such steep slopes are real)")


def check_slopes(a: np.ndarray, d: np.ndarray, *, what: str,
                 item_names: tuple[str, ...] | None, limit: float, solver: str,
                 pure_ml: bool = True) -> None:
    """Stop a fit at once, with the reason, when pure-ML slopes run away or values turn non-finite.

    Called on every iterate of every marginal fit (the 2PL's EM steps in
    :mod:`~.mml`, the L-BFGS iterates of :func:`maximise` for the 3PL and the
    GRM), so a slope whose MLE does not exist is named as soon as it passes
    ``limit`` instead of after the iteration budget. ``pure_ml=False`` (a slope
    prior, or one common slope) checks finiteness only.

    Raises
    ------
    ConvergenceError
        status ``"diverged"``, the message from :func:`diverging_slopes`.

    Examples
    --------
    >>> check_slopes(np.array([1.0, 2.0]), np.zeros(2), what="demo", item_names=None,
    ...              limit=10.0, solver="em")
    >>> try:
    ...     check_slopes(np.array([1.0, 12.0]), np.zeros(2), what="demo", item_names=None,
    ...                  limit=10.0, solver="em")
    ... except ConvergenceError as exc:
    ...     print(str(exc)[:60])
    demo: the slope MLE does not exist for 1 item: item 1 (|a| = 
    """
    why = None
    if pure_ml and np.any(np.abs(a) > limit):            # name the items only when needed
        names = item_names if item_names is not None else tuple(f"item {j}"
                                                                for j in range(a.size))
        why = diverging_slopes(a, names, limit=limit)
    if why is None and not (np.all(np.isfinite(a)) and np.all(np.isfinite(d))):
        why = "the item parameters became non-finite"
    if why is not None:
        raise ConvergenceError(f"{what}: {why}", solver=solver, status="diverged")


def grid(n_quad: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes on ``[-6, 6]`` and log weights of ``N(0, 1)`` (normalised to sum to 1).

    Examples
    --------
    >>> z, log_w = grid(21)
    >>> z[[0, 10, 20]].tolist(), round(float(np.exp(log_w).sum()), 12)
    ([-6.0, 0.0, 6.0], 1.0)
    >>> round(float(np.exp(log_w) @ z ** 2), 3)  # the N(0, 1) variance
    1.0
    """
    if not (isinstance(n_quad, (int, np.integer)) and n_quad >= 21):
        raise InputError(f"n_quad must be an integer >= 21, got {n_quad!r}")
    z = np.linspace(-6.0, 6.0, int(n_quad))
    logw = -0.5 * z ** 2
    return z, logw - logsumexp(logw)


class MarginalData:
    """Category indicators of a response matrix (codes ``0..K-1``, ``-1`` = missing).

    Examples
    --------
    >>> data = MarginalData(np.array([[0, 1], [1, -1], [2, 0]]), n_cats=3, n_quad=21)
    >>> len(data.ind), data.ind[0].tolist(), data.z.shape  # one indicator per category
    (3, [[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]], (21,))
    """

    def __init__(self, codes: np.ndarray, n_cats: int, n_quad: int):
        from evalcert.memory import estimate_bytes, require_memory

        n, m = codes.shape
        require_memory(estimate_bytes((n, m), copies=n_cats + 2)
                       + estimate_bytes((m, n_quad, n_cats), copies=6),
                       f"the marginal likelihood of {n} x {m} responses in {n_cats} categories "
                       f"on {n_quad} nodes", "fewer items or categories")
        self.codes = codes
        self.n_cats = n_cats
        self.z, self.logw = grid(n_quad)
        self.ind = [(codes == k).astype(float) for k in range(n_cats)]

    def evaluate(self, logp: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Marginal log-likelihood, posterior ``(N, Q)`` and counts ``(M, Q, K)``.

        ``logp`` has shape ``(M, Q, K)``: log P(category k | node q) of each item.
        """
        ll = self.logw[None, :] + sum(I @ logp[:, :, k] for k, I in enumerate(self.ind))
        top = ll.max(axis=1, keepdims=True)
        post = np.exp(ll - top)
        total = post.sum(axis=1, keepdims=True)
        post /= total
        logf = top[:, 0] + np.log(total[:, 0])
        counts = np.stack([I.T @ post for I in self.ind], axis=2)
        return float(logf.sum()), post, counts

    def posterior_moments(self, post: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """EAP abilities and posterior sds from the posterior weights."""
        eap = post @ self.z
        return eap, np.sqrt(np.maximum(post @ self.z ** 2 - eap ** 2, 0.0))


def observed_covariance(fun: Callable[[np.ndarray], tuple[float, np.ndarray]], x: np.ndarray,
                        g: np.ndarray, max_se_params: int) -> tuple[np.ndarray | None, float]:
    """Inverse of the central-difference Hessian of ``fun`` (a negated log-likelihood) at ``x``.

    ``g`` is the gradient at ``x``. Returns the covariance (None above
    ``max_se_params`` parameters or for a singular Hessian) and the
    stationarity ``max |g_k| / sqrt(H_kk)`` (NaN without a positive diagonal).

    Examples
    --------
    >>> fun = lambda x: (float(np.sum((x - 1.0) ** 2)), 2.0 * (x - 1.0))
    >>> cov, stat = observed_covariance(fun, np.ones(2), np.zeros(2), 400)
    >>> cov.round(6).tolist(), stat
    ([[0.5, 0.0], [0.0, 0.5]], 0.0)
    """
    if x.size > max_se_params:
        return None, float("nan")
    H = np.empty((x.size, x.size))
    for k in range(x.size):
        h = 1e-5 * max(1.0, abs(x[k]))
        step = np.zeros_like(x)
        step[k] = h
        H[:, k] = (fun(x + step)[1] - fun(x - step)[1]) / (2 * h)
    H = 0.5 * (H + H.T)
    diag = np.diag(H)
    stat = float(np.max(np.abs(g) / np.sqrt(diag))) if np.all(diag > 0) else float("nan")
    try:
        return np.linalg.inv(H), stat
    except np.linalg.LinAlgError:
        return None, stat


def scaled_bounds(bounds: tuple[np.ndarray, np.ndarray] | None, scale: np.ndarray
                  ) -> list | None:
    """L-BFGS-B's bounds on ``x / scale``; None when nothing is bounded (the same algorithm,
    without converting ``2 n`` infinite bounds one by one).

    Examples
    --------
    >>> scaled_bounds((np.full(2, -np.inf), np.full(2, np.inf)), np.ones(2)) is None
    True
    >>> scaled_bounds((np.array([0.0, -np.inf]), np.full(2, np.inf)), np.array([2.0, 1.0]))
    [(0.0, inf), (-inf, inf)]
    """
    if bounds is None or (np.all(np.isneginf(bounds[0])) and np.all(np.isposinf(bounds[1]))):
        return None
    return list(zip((bounds[0] / scale).tolist(), (bounds[1] / scale).tolist()))


def maximise(fun: Callable[[np.ndarray], tuple[float, np.ndarray]], x0: np.ndarray, *,
             tol: float, max_iter: int, what: str, max_se_params: int = 400,
             verbose: bool = False,
             check: Callable[[np.ndarray], None] | None = None,
             bounds: tuple[np.ndarray, np.ndarray] | None = None,
             scale: np.ndarray | None = None) -> dict:
    """Minimise ``fun(x) -> (value, gradient)`` by L-BFGS; certify and estimate the covariance.

    Returns ``x``, ``n_iter``, ``gradient`` (max abs at ``x``), ``cov`` (inverse
    of the central-difference Hessian, or None above ``max_se_params``) and
    ``stationarity`` (max ``|g| / sqrt(H_kk)``, NaN without a Hessian).
    ``check(x)``, if given, runs on every iterate and raises when the point
    shows that no acceptable optimum exists (e.g. :func:`check_slopes`: a
    runaway pure-ML slope; L-BFGS would otherwise crawl after it for the whole
    budget, or stop "converged" where it has flattened the gradient).
    ``bounds = (lower, upper)`` (arrays, +-inf where free) box the parameters
    (L-BFGS-B): a coordinate at its bound whose gradient pushes outwards counts
    as stationary, and is held fixed in the covariance (its row and column NaN).
    ``scale`` (positive, one per parameter; e.g. ``1 / sqrt`` of the diagonal of
    the information) preconditions L-BFGS-B: it works on ``x / scale``, which
    keeps box bounds boxes; the result, gradient and covariance are in ``x``.

    Raises
    ------
    ConvergenceError
        The iteration budget ran out, the final gradient exceeds ``1e3 tol``, or
        or whatever ``check`` raises.

    Examples
    --------
    >>> def fun(x):  # sum (x - 3)^2: minimum at 3, Hessian 2 I
    ...     return float(np.sum((x - 3.0) ** 2)), 2.0 * (x - 3.0)
    >>> out = maximise(fun, np.zeros(2), tol=1e-8, max_iter=100, what="quadratic")
    >>> out["x"].round(6).tolist(), out["cov"].round(6).tolist()
    ([3.0, 3.0], [[0.5, 0.0], [0.0, 0.5]])
    """
    from scipy.optimize import minimize

    bar = progress_bar(verbose, max_iter, what, leave=True)
    sc = np.ones_like(x0) if scale is None else np.asarray(scale, float)

    def each_iterate(yk: np.ndarray) -> None:
        bar.update(1)
        if check is not None:
            check(yk * sc)

    def scaled(y: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = fun(y * sc)
        return value, grad * sc

    box = scaled_bounds(bounds, sc)
    y, nit, before = x0 / sc, 0, np.inf
    try:
        # L-BFGS-B stops "converged" on a step that gains nothing (relative reduction
        # below ftol) or on a failed line search, which on ill-conditioned likelihoods
        # (flat asymptote-slope ridges) happens far from stationarity; a restart with
        # fresh curvature pairs goes on while it still gains
        for _ in range(20):
            res = minimize(scaled, y, jac=True, method="L-BFGS-B", callback=each_iterate,
                           bounds=box, options={"maxiter": max_iter - nit,
                                                "maxfun": 4 * max_iter, "gtol": tol,
                                                "ftol": 1e-15, "maxcor": 30})
            nit += int(res.nit)
            stalled = ("REDUCTION" in str(res.message).upper()
                       or "ABNORMAL" in str(res.message).upper())
            if not stalled or nit >= max_iter or not res.fun < before:
                break
            y, before = res.x, res.fun
    finally:
        bar.close()
    res.nit = nit
    res.x = res.x * sc
    if bounds is not None:          # undo the rounding of the scaled bounds
        near = 1e-12 * np.maximum(1.0, np.abs(res.x))
        res.x = np.where(np.abs(res.x - bounds[0]) <= near, bounds[0], res.x)
        res.x = np.clip(np.where(np.abs(res.x - bounds[1]) <= near, bounds[1], res.x),
                        bounds[0], bounds[1])
    value, g = fun(res.x)
    free = np.ones(g.size, bool)
    if bounds is not None:          # at a bound, pushed outwards: stationary (KKT)
        free = ~(((res.x <= bounds[0]) & (g > 0)) | ((res.x >= bounds[1]) & (g < 0)))
    grad = float(np.max(np.abs(g[free]))) if free.any() else 0.0
    if res.nit >= max_iter or grad > 1e3 * tol:
        raise ConvergenceError(f"{what}: L-BFGS stopped after {res.nit} iterations "
                               f"({res.message}) with max |gradient| {grad:.3g} > tol {tol:g}; "
                               "raise max_iter, loosen tol or strengthen the priors",
                               solver="L-BFGS-B", status=str(res.message))
    if free.all():
        cov, stat = observed_covariance(fun, res.x, g, max_se_params)
    else:                           # the Hessian of the free coordinates only
        def inner(v: np.ndarray) -> tuple[float, np.ndarray]:
            x = res.x.copy()
            x[free] = v
            value, grad = fun(x)
            return value, grad[free]
        sub, stat = observed_covariance(inner, res.x[free], g[free], max_se_params)
        cov = None
        if sub is not None:
            cov = np.full((g.size, g.size), np.nan)
            cov[np.ix_(free, free)] = sub
    return {"x": res.x, "n_iter": int(res.nit), "value": float(value), "gradient": grad,
            "cov": cov, "stationarity": stat}
