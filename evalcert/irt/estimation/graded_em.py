"""EM for the graded response model: a sparse E-step and one batched Fisher-scoring M-step.

Same model, grid and criterion as :mod:`evalcert.irt.polytomous` (Samejima's GRM with
``P(Y >= k | theta) = sigma(a_j theta + d_jk)``, ``theta ~ N(0, 1)`` on the
fixed grid of :mod:`~.mml_direct`, log-normal slope prior and ``N(0, 1/tau)``
intercept prior), maximised by EM (Bock & Aitkin 1981) instead of L-BFGS on
every parameter at once:

E-step
    ``l_iq = sum_j log P_{j, y_ij}(z_q)`` is one sparse product ``B @ L``: ``B``
    is the one-hot matrix of the observed cells (models x items*K, one
    non-zero per answered cell) and ``L`` the ``(items*K) x Q`` table of
    log-probabilities; the posteriors ``post_iq`` give the expected counts
    ``r_jkq = sum_i [y_ij = k] post_iq = (B^T post)_jk,q``. Cost: observed
    cells x nodes, plus items x K x nodes for the table. Only a window of nodes
    is evaluated (:class:`GradedEStep`): each model's posterior is log-concave,
    so nodes beyond the window's ends, where every model's posterior is below
    ``e^LOG_NEGLIGIBLE`` of its peak and falling outward, hold less than 1e-16
    of it; otherwise the window grows and the step is redone. With many items
    per model (narrow posteriors) this skips a third to a half of the grid.
M-step
    Each item's expected complete-data log-likelihood
    ``sum_qk r_jkq log P_jk(z_q)`` (plus log-priors) is raised by one
    Fisher-scoring step per EM iteration in the item's free parameters
    ``(log a_j, d_j1, log gaps)`` (the thresholds stay ordered). A middle
    category nobody used has its optimum at gap 0 whatever the other
    parameters (its count is 0, its neighbours gain as it closes): its log gap
    is set to ``LOG_GAP_FLOOR`` at the start and held there. The step
    uses the multinomial's expected information, which in the cumulative
    logits ``eta_k = a z + d_k`` is tridiagonal at each node
    (``I_kk = n W_k^2 (1/P_k + 1/P_{k-1})``, ``I_k,k+1 = -n W_k W_k+1 / P_k``,
    ``W = S (1 - S)``, ``n = sum_k r_jkq``), mapped to ``(a, d)`` by
    ``d eta_k / d a = z`` and to the free parameters by their Jacobian; all
    items are solved at once as a batch of ``K x K`` systems. A step is
    halved, per item, until the item's criterion does not drop (so each EM
    map is monotone).

The EM map is accelerated by Anderson mixing with a monotone safeguard
(:func:`~.anderson.accelerated_em`) in the unconstrained parameters of
:mod:`evalcert.irt.polytomous` (``log a`` or ``a``, ``d_j1``, log gaps), so an
extrapolated point always has ordered thresholds; convergence is judged on
the change of ``(a, d)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse

from evalcert.irt.estimation.anderson import accelerated_em
from evalcert.irt.estimation.mml_direct import check_slopes, grid
from evalcert.progress import progress_bar

__all__ = ["graded_em", "GradedEStep", "unpack", "pack"]

_TINY = 1e-300
#: log gaps stop here (thresholds 2e-9 apart: one for every purpose); below, a gap's
#: gradient and curvature vanish and its meaningless moves would steer the extrapolation
LOG_GAP_FLOOR = -20.0
#: nodes where every model's posterior is below e^LOG_NEGLIGIBLE of its maximum are not
#: evaluated (:class:`GradedEStep`): with at most 1,000 nodes they hold < 1e-16 of it
LOG_NEGLIGIBLE = float(np.log(1e-19))
#: nodes kept beyond the last non-negligible one, for the posteriors' next move
WINDOW_MARGIN = 2


def unpack(x: np.ndarray, m: int, K: int, slope_prior: float
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Slopes ``a`` (M,), intercepts ``d`` (M, K-1, decreasing) and gaps from ``x``.

    ``x = (log a or a, d_1, log(d_k - d_k+1))``; ``slope_prior > 0`` means log slopes.

    Examples
    --------
    >>> a, d, gaps = unpack(np.array([0.0, 1.0, 0.0]), 1, 3, 4.0)
    >>> a.tolist(), d.tolist(), gaps.tolist()
    ([1.0], [[1.0, 0.0]], [[1.0]])
    """
    a = np.exp(x[:m]) if slope_prior > 0 else x[:m].copy()
    gaps = np.exp(x[2 * m:].reshape(m, K - 2))
    d1 = x[m:2 * m]
    return a, np.column_stack([d1, d1[:, None] - np.cumsum(gaps, axis=1)]), gaps


def pack(a: np.ndarray, d: np.ndarray, slope_prior: float) -> np.ndarray:
    """Inverse of :func:`unpack` (thresholds must be strictly decreasing).

    Examples
    --------
    >>> pack(np.array([1.0]), np.array([[1.0, 0.0]]), 4.0).tolist()
    [0.0, 1.0, 0.0]
    """
    u = np.log(a) if slope_prior > 0 else a
    with np.errstate(divide="ignore"):
        return np.concatenate([u, d[:, 0], np.log(-np.diff(d, axis=1)).ravel()])


def _probabilities(a: np.ndarray, d: np.ndarray, z: np.ndarray):
    """``S = sigma(a z + d)`` (M, K-1, Q), category probabilities ``P`` (M, K, Q) and ``log P``."""
    S = (-a)[:, None, None] * z[None, None, :] - d[:, :, None]       # -eta
    with np.errstate(over="ignore"):        # sigma(eta) = 1 / (1 + e^-eta): 4x faster than
        np.exp(S, out=S)                    # scipy's expit; e^-eta = inf gives 0
    S += 1.0
    np.reciprocal(S, out=S)
    m, k1, q = S.shape
    P = np.empty((m, k1 + 1, q))
    np.subtract(1.0, S[:, 0], out=P[:, 0])
    np.subtract(S[:, :-1], S[:, 1:], out=P[:, 1:-1])
    P[:, -1] = S[:, -1]
    np.maximum(P, _TINY, out=P)
    return S, P, np.log(P)


def _criterion(r: np.ndarray, a, d, logP, slope_prior: float, tau: float) -> np.ndarray:
    """Each item's expected complete-data log-likelihood plus log-priors (M,)."""
    m = r.shape[0]
    value = np.einsum("ij,ij->i", r.reshape(m, -1), logP.reshape(m, -1))
    value -= 0.5 * tau * np.sum(d ** 2, axis=1)
    if slope_prior > 0:
        value -= 0.5 * slope_prior * np.log(a) ** 2
    return value


def _m_step(r: np.ndarray, X: np.ndarray, z: np.ndarray, slope_prior: float, tau: float,
            probabilities: tuple[np.ndarray, np.ndarray, np.ndarray],
            held: np.ndarray) -> np.ndarray:
    """One Fisher-scoring step per item in its free parameters ``X`` (M x K), halved until
    the item's criterion does not drop (the log gaps keep the thresholds ordered);
    ``probabilities`` is :func:`_probabilities` at ``X`` on the nodes ``z`` (the E-step's).
    The coordinates ``held`` (M x K, the log gaps of unused middle categories, at
    :data:`LOG_GAP_FLOOR`) do not move.
    """
    m, K = X.shape
    a, d, gaps = _item_unpack(X, slope_prior)
    S, P, logP = probabilities
    old = _criterion(r, a, d, logP, slope_prior, tau)
    W = S * (1.0 - S)                                                 # M x K-1 x Q
    inv = 1.0 / P                                                     # M x K x Q
    rp = r * inv
    n = r.sum(axis=1)                                                 # M x Q
    g_eta = W * (rp[:, 1:] - rp[:, :-1])
    # the information in eta per node, without the factor n: T on the diagonal
    # (W_k^2 (1/P_k + 1/P_k+1)), O next to it (W_k W_k+1 / P_k+1); every sum over the
    # nodes is one batched product with the weights (n, n z, n z^2)
    O = W[:, :-1] * W[:, 1:]
    O *= inv[:, 1:-1]
    T = inv[:, 1:] + inv[:, :-1]
    T *= W
    T *= W
    weights = np.stack([n, n * z, n * z * z], axis=2)                 # M x Q x 3
    RT, RO = T @ weights, O @ weights                                 # M x K-1 (K-2) x 3
    G = g_eta @ np.stack([np.ones_like(z), z], axis=1)                # M x K-1 x 2
    H = np.zeros((m, K, K))                                           # in (a, d_1..d_K-1)
    idx = np.arange(1, K)
    H[:, idx, idx] = RT[:, :, 0] + tau
    H[:, idx[:-1], idx[1:]] = H[:, idx[1:], idx[:-1]] = -RO[:, :, 0]
    row = RT[:, :, 1].copy()
    row[:, :-1] -= RO[:, :, 1]
    row[:, 1:] -= RO[:, :, 1]
    H[:, 0, 1:] = H[:, 1:, 0] = row
    H[:, 0, 0] = RT[:, :, 2].sum(1) - 2 * RO[:, :, 2].sum(1)
    g = np.concatenate([G[:, :, 1].sum(1)[:, None], G[:, :, 0] - tau * d], axis=1)
    J = np.zeros((m, K, K))               # d(a or log a, d) / d(X): X = (u, d_1, log gaps)
    J[:, 0, 0] = a if slope_prior > 0 else 1.0
    J[:, 1:, 1] = 1.0
    lower = np.tril(np.ones((K - 1, K - 2)), -1)                      # d_k uses gaps l < k
    J[:, 1:, 2:] = -lower[None] * gaps[:, None, :]
    Jt = J.transpose(0, 2, 1)
    g = (Jt @ g[:, :, None])[:, :, 0]
    H = Jt @ H @ J
    if slope_prior > 0:
        g[:, 0] -= slope_prior * X[:, 0]
        H[:, 0, 0] += slope_prior
    if held.any():          # their rows and columns are ~gap^2: they would make the step noise
        keep = 1.0 - held
        g *= keep
        H *= keep[:, :, None] * keep[:, None, :]
        H[:, np.arange(K), np.arange(K)] += held
    H[:, np.arange(K), np.arange(K)] += 1e-9 * (1.0 + np.diagonal(H, axis1=1, axis2=2))
    try:
        step = np.linalg.solve(H, g[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:
        step = g / np.maximum(np.abs(np.diagonal(H, axis1=1, axis2=2)), 1e-8)
    step = np.clip(step, -3.0, 3.0)                 # at most e^3 per gap or slope per step
    new = X + step                      # the full step for every item first: no copies of r
    np.maximum(new[:, 2:], LOG_GAP_FLOOR, out=new[:, 2:])
    at, dt, _ = _item_unpack(new, slope_prior)
    with np.errstate(invalid="ignore"):
        value = _criterion(r, at, dt, _probabilities(at, dt, z)[2], slope_prior, tau)
        todo = np.flatnonzero(~(value >= old - 1e-10 * (1.0 + np.abs(old))))   # NaN: too
    for _ in range(11):                 # past 2^-11 of a step the item keeps its parameters
        if todo.size == 0:
            break
        step[todo] *= 0.5
        Xt = X[todo] + step[todo]
        np.maximum(Xt[:, 2:], LOG_GAP_FLOOR, out=Xt[:, 2:])
        at, dt, _ = _item_unpack(Xt, slope_prior)
        ok = np.all(np.isfinite(Xt), axis=1)
        if ok.any():
            logPt = _probabilities(at[ok], dt[ok], z)[2]
            ok[ok] = (_criterion(r[todo[ok]], at[ok], dt[ok], logPt, slope_prior, tau)
                      >= old[todo[ok]] - 1e-10 * (1.0 + np.abs(old[todo[ok]])))
        new[todo[ok]] = Xt[ok]
        todo = todo[~ok]
    new[todo] = X[todo]
    return new


def _item_unpack(X: np.ndarray, slope_prior: float):
    """:func:`unpack` of per-item rows ``X = (u, d_1, log gaps)`` (M x K)."""
    a = np.exp(X[:, 0]) if slope_prior > 0 else X[:, 0]
    gaps = np.exp(X[:, 2:])
    return a, np.column_stack([X[:, 1], X[:, 1:2] - np.cumsum(gaps, axis=1)]), gaps


class GradedEStep:
    """The E-step on the observed cells: marginal log-likelihood and expected counts.

    Only a window of nodes is evaluated: the posterior of each model is log-concave in
    theta (each category probability of the GRM is, and so is the normal density), so
    when at both ends of the window every model's log posterior is below its maximum by
    ``-LOG_NEGLIGIBLE`` and falls outward, every node outside holds less than
    ``e^LOG_NEGLIGIBLE`` of that maximum (less than ``1e-16`` of the model's likelihood
    in all). Otherwise the window grows to the grid's end on that side and the step is
    redone. The next window keeps the nodes above that bound for some model, plus
    :data:`WINDOW_MARGIN` nodes on each side.

    Examples
    --------
    >>> estep = GradedEStep(np.array([[0, 2], [1, -1]]), K=3, n_quad=21)
    >>> _, loglik, r, z = estep(np.ones(2), np.array([[1.0, -1.0], [0.5, -0.5]]))
    >>> r.shape == (2, 3, z.size), np.round(r.sum(axis=(1, 2)), 12).tolist()
    (True, [2.0, 1.0])
    """

    def __init__(self, codes: np.ndarray, K: int, n_quad: int):
        n, m = codes.shape
        self.K, self.m = K, m
        self.z, self.logw = grid(n_quad)
        rows, cols = np.nonzero(codes >= 0)
        self.n_cells = rows.size
        self.B = sparse.csr_matrix((np.ones(rows.size), (rows, cols * K + codes[rows, cols])),
                                   shape=(n, m * K))
        self.Bt = self.B.T.tocsr()
        self.window = (0, self.z.size)
        self.redone = 0

    def __call__(self, a: np.ndarray, d: np.ndarray):
        """``(_probabilities(a, d, z), marginal log-likelihood, counts r (M, K, Q), z)``
        on the window's nodes ``z``."""
        lo, hi = self.window
        n_quad = self.z.size
        while True:
            z = self.z[lo:hi]
            probabilities = _probabilities(a, d, z)
            ll = self.B @ probabilities[2].reshape(self.m * self.K, -1)
            ll += self.logw[lo:hi]
            top = ll.max(axis=1, keepdims=True)
            ll -= top
            grow_lo = lo > 0 and not np.all((ll[:, 0] < LOG_NEGLIGIBLE) & (ll[:, 0] <= ll[:, 1]))
            grow_hi = hi < n_quad and not np.all((ll[:, -1] < LOG_NEGLIGIBLE)
                                                 & (ll[:, -1] <= ll[:, -2]))
            if not (grow_lo or grow_hi):
                break
            lo, hi = (0 if grow_lo else lo), (n_quad if grow_hi else hi)
            self.redone += 1
        post = np.exp(ll, out=ll)
        total = post.sum(axis=1, keepdims=True)
        loglik = float(np.sum(top[:, 0] + np.log(total[:, 0])))
        post /= total
        used = np.flatnonzero(post.max(axis=0) >= np.exp(LOG_NEGLIGIBLE))
        self.window = (max(0, lo + int(used[0]) - WINDOW_MARGIN),
                       min(n_quad, lo + int(used[-1]) + 1 + WINDOW_MARGIN))
        if self.window[1] - self.window[0] < 3:
            self.window = (max(0, self.window[0] - 1), min(n_quad, self.window[1] + 1))
        return probabilities, loglik, (self.Bt @ post).reshape(self.m, self.K, -1), z


def graded_em(codes: np.ndarray, K: int, x0: np.ndarray, *, slope_prior: float,
              threshold_prior: float, n_quad: int, tol: float, max_iter: int, what: str,
              item_names: tuple[str, ...], verbose: bool = False) -> dict[str, Any]:
    """Maximise the GRM's marginal log-likelihood plus log-priors by accelerated EM.

    ``codes`` are models x items categories ``0..K-1`` (``-1`` = missing);
    ``x0`` the starting point in :func:`unpack`'s parameters. Pure ML
    (``slope_prior=0``) stops with :func:`~.mml_direct.check_slopes` on the EM
    iterate where a slope passes what the grid resolves.

    Returns
    -------
    dict with ``x`` (as ``x0``), ``n_iter`` (EM maps) and ``loglik`` (marginal,
    without priors, at the input of the last map).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> theta = rng.normal(size=300)
    >>> codes = (theta[:, None, None] + rng.logistic(size=(300, 6, 1)) > [-1.0, 0.0, 1.0]).sum(2)
    >>> x0 = np.concatenate([np.zeros(6), np.ones(6), np.zeros(12)])  # log a, d_1, log gaps
    >>> out = graded_em(codes, 4, x0, slope_prior=4.0, threshold_prior=0.01, n_quad=61,
    ...                 tol=1e-6, max_iter=500, what="demo", item_names=tuple("abcdef"))
    >>> a, d, _ = unpack(out["x"], 6, 4, 4.0)
    >>> bool(np.all(np.abs(d / a[:, None] - [1.0, 0.0, -1.0]) < 0.5))  # b = -d/a near the cuts
    True
    """
    m = codes.shape[1]
    # a middle category nobody used: the criterion rises as its gap closes (its neighbours'
    # probabilities grow, its own count is 0), so the optimum is gap 0, whatever the other
    # parameters; its log gap starts and stays at the floor instead of walking down to it
    # (those walks would dominate the extrapolation's residuals)
    estep = GradedEStep(codes, K, n_quad)
    held = np.zeros((m, K), dtype=bool)
    held[:, 2:] = np.asarray(estep.B.sum(axis=0)).reshape(m, K)[:, 1:-1] == 0
    x0 = x0.copy()
    x0[2 * m:][held[:, 2:].ravel()] = LOG_GAP_FLOOR
    z = estep.z
    limit = 2 / (z[1] - z[0])

    def em(x: np.ndarray):
        a, d, _ = unpack(x, m, K, slope_prior)
        probabilities, loglik, r, z = estep(a, d)
        prior = -0.5 * threshold_prior * float(np.sum(d ** 2))
        if slope_prior > 0:
            prior -= 0.5 * slope_prior * float(np.sum(np.log(a) ** 2))
        X = np.column_stack([x[:m], x[m:2 * m], x[2 * m:].reshape(m, K - 2)])
        X1 = _m_step(r, X, z, slope_prior, threshold_prior, probabilities, held)
        a1, d1, _ = _item_unpack(X1, slope_prior)
        check_slopes(a1, d1, what=what, item_names=item_names, limit=limit, solver="em",
                     pure_ml=slope_prior == 0)
        return np.concatenate([X1[:, 0], X1[:, 1], X1[:, 2:].ravel()]), loglik + prior, loglik

    def change(x: np.ndarray, gx: np.ndarray) -> float:
        a, d, _ = unpack(x, m, K, slope_prior)
        a1, d1, _ = unpack(gx, m, K, slope_prior)
        return max(float(np.max(np.abs(a1 - a))), float(np.max(np.abs(d1 - d))))

    bar = progress_bar(verbose, max_iter, what)
    try:
        x, n_iter, loglik = accelerated_em(em, x0, tol=tol, max_iter=max_iter, what=what,
                                           change=change, bar=bar)
    finally:
        bar.close()
    return {"x": x, "n_iter": n_iter, "loglik": loglik}
