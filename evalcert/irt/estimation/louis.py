"""Observed-data information of a marginal (MML) fit by Louis's identity.

EM's M-step uses the *complete-data* information ``E[-d^2 l_c]``; as a
covariance it ignores the information lost because abilities are unobserved
and gives standard errors that are too small (on LSAT6 a third to a half of
the right ones for 2PL slopes). Louis (1982) gives the observed-data
information of the marginal likelihood from quantities of the posterior:

``I_obs = sum_i ( E_i[-d^2 l_c,i] - Cov_i[s_c,i] )``

with ``s_c,i`` the complete-data score of model ``i`` and ``E_i``/``Cov_i``
over its ability posterior (here ``Q`` adaptive Gauss-Hermite nodes at each
posterior's mean and sd). For item ``j`` with logit ``a_j z + d_j`` the
complete-data score at node ``z`` is ``o_ij (y_ij - p_j(z)) (z, 1)``. With a
prior on the slopes (``log a ~ N(0, 1/prec)``), its negative Hessian in ``a``,
``prec (1 - log a) / a^2``, is added: the SEs are those of the penalised
(posterior-mode) objective that was maximised.

The exact inverse is formed when affordable: the full ``P x P`` matrix
(``P = 2 M`` free slopes, ``M + 1`` for a common slope) when ``P <= FULL_LIMIT``
and it is the cheaper route; for free slopes otherwise by
Woodbury's identity (the complete-data part is 2 x 2 per item, the missing part
has rank at most models x nodes) while that costs at most ``WOODBURY_FLOPS``.
Beyond that each item's own block is inverted and cross-item terms are
ignored, which understates intercept SEs (by up to ~20% in simulations); the
result says so in ``result_.notes``.

Speed: for one common slope on complete data (the Rasch model) every model
with the same raw score and node placement contributes the same terms, so the
full matrix is built from one group per score (:func:`_common_slope_pooled`);
the other paths work on the observed cells in cache-sized blocks
(:func:`_cell_blocks`). Every path equals the per-model sums of the identity
to rounding (``tests/irt/test_louis_fast.py`` checks them against a
model-by-model brute force).

Example
-------
>>> rng = np.random.default_rng(0)
>>> z = rng.normal(size=500)
>>> Y = (rng.random((500, 4)) < 1 / (1 + np.exp(-z[:, None]))).astype(float)
>>> out = observed_information(Y, np.ones_like(Y, bool), np.ones(4), np.zeros(4),
...                            np.zeros(500), np.ones(500), common_slope=False)
>>> out["var_a"].shape
(4,)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy.linalg import LinAlgError, cho_factor, cho_solve
from scipy.special import expit, logsumexp

from evalcert.irt.base import map_blocks, resolve_threads, softplus_sigmoid
from evalcert.irt.data import observed_cells


__all__ = ["observed_information", "FULL_LIMIT", "WOODBURY_FLOPS"]

FULL_LIMIT = 2000        # parameters up to which the full matrix may be inverted
WOODBURY_FLOPS = 4e9     # free slopes: work up to which the exact inverse is formed
_FULL_CELLS = 5e7        # (models or groups) x nodes x parameters of the full path's arrays
_CELLS = 1 << 12         # observed cells per block (x <= 11 nodes: arrays of <= 360 KiB)


def _cell_blocks(n_cells: int) -> list[slice]:
    """Blocks of ``_CELLS`` cells: their ``(nodes, cells)`` arrays stay small.

    Large temporaries cost more in page faults and cache misses than in
    arithmetic (2-5x per element at 1 << 15 cells on the test machine).
    """
    return [slice(lo, lo + _CELLS) for lo in range(0, n_cells, _CELLS)]


def _eta(k, rows, cols, a, d, mu, sd, z):
    """``(Q, cells)`` logits ``a_j (mu_i + sd_i z_q) + d_j`` of the cells ``k``, clipped."""
    ac = a[cols[k]]
    E = np.multiply.outer(z, ac * sd[rows[k]])
    E += ac * mu[rows[k]] + d[cols[k]]
    return np.clip(E, -700.0, 700.0, out=E)


def _posterior(rows, cols, y, n_models, a, d, mu, sd, n_quad, n_threads=1):
    """Gauss-Hermite nodes ``z`` and posterior weights ``(N, Q)`` at ``mu + sd z``, from cells.

    In blocks of cells (``rows`` sorted) small enough for the cache, each
    returning the sums of ``y eta - log(1 + e^eta)`` of the models it touches;
    the blocks are added in order, so the result does not depend on the threads.
    """
    z, w = hermegauss(n_quad)
    log_joint = _log_prior(z, w, mu, sd)

    def block(k):
        E = _eta(k, rows, cols, a, d, mu, sd, z)
        ll = y[k] * E
        E = np.log1p(np.exp(E, out=E), out=E)
        ll -= E
        present, starts = np.unique(rows[k], return_index=True)
        return present, np.add.reduceat(ll, starts, axis=1)

    blocks = _cell_blocks(y.size)
    threads = resolve_threads(n_threads, len(blocks), y.size * n_quad)
    for present, sums in map_blocks(block, blocks, threads):
        log_joint[present] += sums.T
    return z, np.exp(log_joint - logsumexp(log_joint, axis=1, keepdims=True))


def _log_prior(z: np.ndarray, w: np.ndarray, mu: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """``(N, Q)`` log weight of node ``mu + sd z`` under N(0, 1), adaptive Gauss-Hermite rule."""
    theta = mu[:, None] + sd[:, None] * z[None, :]
    return np.log(w / w.sum()) + 0.5 * z ** 2 + np.log(sd)[:, None] - 0.5 * theta ** 2


def _item_blocks(rows, cols, y, n_items, a, d, mu, sd, z, post, n_threads=1):
    """Per item: complete-data information ``h`` (zz, z1, 11) and ``Cov`` of its own score.

    On the observed cells only (``rows`` sorted), nodes ``t_q = mu_i + sd_i z_q``
    and posterior weights ``w_q`` (summing to 1): with ``r_q = y - p(t_q)``,
    ``Var(r t) = sum_q w r^2 t^2 - (sum_q w r t)^2`` and likewise for ``r`` and
    the cross term, then summed over each item's cells. Powers of ``t`` are
    expanded in ``z`` so every sum over nodes is a small matrix product. Blocks
    of cells (:func:`_cell_blocks`) run on ``n_threads`` threads and write
    disjoint columns of the per-cell values, summed by item once at the end
    (``np.bincount``: in cell order, whatever the blocks and threads).
    """
    Z = np.vstack([np.ones_like(z), z, z ** 2])
    vals = np.empty((6, y.size))                # per cell: h (zz, z1, 11), Cov (aa, ad, dd)
    post_t = np.ascontiguousarray(post.T)       # (Q, N): a block's weights come out contiguous

    def block(k):
        r_k, y_k = rows[k], y[k]
        m, v = mu[r_k], sd[r_k]
        P = _eta(k, rows, cols, a, d, mu, sd, z)
        np.negative(P, out=P)
        P = np.reciprocal(np.add(np.exp(P, out=P), 1.0, out=P), out=P)   # p
        W = post_t[:, r_k]                                      # (Q, cells)
        R = np.subtract(y_k, P)
        P -= P * P                                              # p (1 - p)
        P *= W                                                  # w p (1 - p)
        W *= R                                                  # w r
        R *= W                                                  # w r^2
        c0, c1, c2 = Z @ P
        r0, r1 = Z[:2] @ W
        q0, q1, q2 = Z @ R
        wrt = m * r0 + v * r1                                   # sum_q w r t
        out = vals[:, k]                                        # disjoint columns per block
        out[0] = m * m * c0 + 2 * m * v * c1 + v * v * c2
        out[1] = m * c0 + v * c1
        out[2] = c0
        out[3] = m * m * q0 + 2 * m * v * q1 + v * v * q2 - wrt ** 2
        out[4] = m * q0 + v * q1 - r0 * wrt
        out[5] = q0 - r0 ** 2

    blocks = _cell_blocks(y.size)
    map_blocks(block, blocks, resolve_threads(n_threads, len(blocks), y.size * z.size))
    h, s_aa, s_ad, s_dd = np.split(np.array(
        [np.bincount(cols, weights=v, minlength=n_items) for v in vals]), [3, 4, 5])
    return h, s_aa[0], s_ad[0], s_dd[0]


def _centered_scores(theta, post, resid, mean_r, mean_rz, common_slope):
    """Rows ``sqrt(w_iq) (s_iq - E_i s)`` for every model and node: ``Cov_i = B_i^T B_i``."""
    cols = []
    for q in range(theta.shape[1]):
        tq, sw = theta[:, q], np.sqrt(post[:, q])[:, None]
        dev_d = resid[q] - mean_r                                    # (N, M)
        dev_a = resid[q] * tq[:, None] - mean_rz
        if common_slope:
            cols.append(sw * np.column_stack([dev_a.sum(1), dev_d]))
        else:
            cols.append(sw * np.hstack([dev_a, dev_d]))
    return np.vstack(cols)


def _woodbury(B: np.ndarray, h_aa: np.ndarray, h_ad: np.ndarray,
              h_dd: np.ndarray) -> dict[str, Any]:
    """Item blocks of ``(D - B^T B)^-1`` with ``D`` block-diagonal (2 x 2 per item).

    Woodbury: ``D^-1 + U K^-1 U^T`` with ``U = D^-1 B^T`` and ``K = I - B U``
    (size models x nodes, small when items are many); ``K`` is positive
    definite exactly when the observed information is.
    """
    M = h_aa.size
    det = h_aa * h_dd - h_ad ** 2
    i_aa, i_ad, i_dd = h_dd / det, -h_ad / det, h_aa / det            # D^-1 per item
    Ba, Bd = B[:, :M], B[:, M:]
    Ua, Ud = Ba * i_aa + Bd * i_ad, Ba * i_ad + Bd * i_dd              # rows of U^T
    K = np.eye(B.shape[0]) - Ba @ Ua.T - Bd @ Ud.T
    try:
        factor = cho_factor(K, check_finite=False)
    except LinAlgError:
        nan = np.full(M, np.nan)
        return {"var_a": nan, "var_d": nan, "cov_ad": nan, "full": True}
    Wa, Wd = cho_solve(factor, Ua, check_finite=False), cho_solve(factor, Ud, check_finite=False)
    return {"var_a": i_aa + np.sum(Ua * Wa, 0), "var_d": i_dd + np.sum(Ud * Wd, 0),
            "cov_ad": i_ad + np.sum(Ua * Wd, 0), "full": True}


def _prior_curvature(a: np.ndarray, prec: float) -> np.ndarray:
    """Negative second derivative in ``a`` of ``-prec/2 (log a)^2`` (0 without a prior)."""
    if prec == 0:
        return np.zeros_like(a)
    return prec * (1 - np.log(a)) / a ** 2


def observed_information(Y: np.ndarray, O: np.ndarray, a: np.ndarray, d: np.ndarray,
                         mu: np.ndarray, sd: np.ndarray, *, common_slope: bool,
                         slope_prec: float = 0.0, n_quad: int = 11,
                         n_threads: int | None = 1) -> dict[str, Any]:
    """Variances of ``(a, d)`` from the observed information at an MML optimum.

    Parameters
    ----------
    Y, O : (N, M) responses (0 where unobserved) and observed mask.
    a, d : (M,) slopes and intercepts (``a`` constant when ``common_slope``).
    mu, sd : (N,) posterior mean and sd of every model's standardised ability.
    common_slope : one slope shared by all items (the Rasch model).
    slope_prec : precision of the ``log a ~ N(0, 1/prec)`` slope prior (free slopes).
    n_threads : threads for the blocks of cells (``None``: every CPU; one when the
        work is small); blocks are summed in a fixed order, so the result is the
        same to the bit for any value.

    Returns
    -------
    dict with ``var_a``, ``var_d``, ``cov_ad`` (M,), ``full`` (whether the
    cross-item terms were included) and, for a common slope with ``full``,
    ``cov_d`` (M, M), the covariance of the intercepts.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=500)
    >>> Y = (rng.random((500, 4)) < 1 / (1 + np.exp(-z[:, None]))).astype(float)
    >>> out = observed_information(Y, np.ones_like(Y, bool), np.ones(4), np.zeros(4),
    ...                            np.zeros(500), np.ones(500), common_slope=True)
    >>> out["var_d"].shape, out["cov_d"].shape, bool(np.all(out["var_d"] > 0))
    ((4,), (4, 4), True)
    """
    N, M = Y.shape
    if common_slope and M + 1 <= FULL_LIMIT and np.all(O):
        groups = np.unique(np.column_stack([Y.sum(1), mu, sd]), axis=0, return_counts=True)
        if groups[0].shape[0] * n_quad * (M + 1) <= _FULL_CELLS:
            return _common_slope_pooled(groups, a, d, n_quad)
    starts, cols, y = observed_cells(Y, O)
    rows = np.repeat(np.arange(N), np.diff(starts))
    P = M + 1 if common_slope else 2 * M
    full = P <= FULL_LIMIT and N * n_quad * P <= _FULL_CELLS and (
        common_slope or P ** 3 <= (N * n_quad) ** 2 * P)
    woodbury = not full and not common_slope and (N * n_quad) ** 2 * P <= WOODBURY_FLOPS
    z, post = _posterior(rows, cols, y, N, a, d, mu, sd, n_quad, n_threads)
    if not (full or woodbury):
        return _block_inverse(*_item_blocks(rows, cols, y, M, a, d, mu, sd, z, post, n_threads),
                              a, common_slope, slope_prec)
    theta = mu[:, None] + sd[:, None] * z[None, :]
    # dense (N, M) residuals per node: affordable within the limits above
    O = O.astype(float)
    mean_r = np.zeros((N, M))
    mean_rz = np.zeros((N, M))
    h = np.zeros((3, M))              # complete-data information: zz, z1, 11 per item
    resid = []
    for q in range(n_quad):
        tq = theta[:, q]
        p = expit(tq[:, None] * a[None, :] + d[None, :])
        r = O * (Y - p)
        wq = post[:, q]
        mean_r += wq[:, None] * r
        mean_rz += (wq * tq)[:, None] * r
        c = O * p * (1 - p)
        h += np.stack([(wq * tq ** 2) @ c, (wq * tq) @ c, wq @ c])
        resid.append(r)
    if full:
        B = _centered_scores(theta, post, resid, mean_r, mean_rz, common_slope)
        info = -(B.T @ B)
        if common_slope:
            info[0, 0] += h[0].sum()
            info[0, 1:] += h[1]
            info[1:, 0] += h[1]
            info[np.arange(1, P), np.arange(1, P)] += h[2]
        else:
            idx = np.arange(M)
            info[idx, idx] += h[0] + _prior_curvature(a, slope_prec)
            info[idx, M + idx] += h[1]
            info[M + idx, idx] += h[1]
            info[M + idx, M + idx] += h[2]
        try:
            cov = np.linalg.inv(info)
        except LinAlgError:
            cov = np.full((P, P), np.nan)
        if common_slope:
            return {"var_a": np.full(M, cov[0, 0]), "var_d": np.diag(cov)[1:],
                    "cov_ad": cov[0, 1:], "cov_d": cov[1:, 1:], "full": True}
        idx = np.arange(M)
        return {"var_a": cov[idx, idx], "var_d": cov[M + idx, M + idx],
                "cov_ad": cov[idx, M + idx], "full": True}
    B = _centered_scores(theta, post, resid, mean_r, mean_rz, common_slope)
    return _woodbury(B, h[0] + _prior_curvature(a, slope_prec), h[1], h[2])


def _common_slope_pooled(groups: tuple[np.ndarray, np.ndarray], a: np.ndarray, d: np.ndarray,
                         n_quad: int) -> dict[str, Any]:
    """The full observed information of the Rasch model on complete data, pooled by score.

    With one slope and every item answered, everything Louis's identity needs
    from model ``i`` depends on its raw score ``S_i`` and node placement
    ``(mu_i, sd_i)`` only: the posterior (``sum_j y_ij d_j`` is constant over
    the nodes and cancels), the complete-data information, and the centred
    scores ``-(p_j(t_q) - E p_j)`` for ``d_j`` and ``t_q (S_i - sum_j p_j(t_q))
    - E[.]`` for the slope (``y_ij`` cancels). Models with equal ``(S, mu,
    sd)`` are pooled exactly (``groups``: the distinct rows ``(S, mu, sd)`` and
    their counts): the cost is ``O(G Q M^2)`` for ``G`` groups (``M + 1`` when
    the E-step pooled by score) instead of ``O(N Q M^2)``. Equal to the
    per-model sums to rounding (``tests/irt/test_louis_fast.py``).
    """
    (S, m, s), count = groups[0].T, groups[1]
    M = d.size
    z, w = hermegauss(n_quad)
    theta = m[:, None] + s[:, None] * z[None, :]                         # (G, Q)
    eta = a[0] * theta[:, :, None] + d[None, None, :]                    # (G, Q, M)
    softplus, p = softplus_sigmoid(eta)
    log_joint = _log_prior(z, w, m, s) + a[0] * S[:, None] * theta - softplus.sum(2)
    post = np.exp(log_joint - logsumexp(log_joint, axis=1, keepdims=True))   # (G, Q)
    weight = count[:, None] * post                                       # n_g w_gq
    G, Q = theta.shape
    B = np.empty((G, Q, M + 1))             # rows sqrt(n_g w_gq) (s_gq - E_g s): Cov = B^T B
    np.subtract(np.matmul(post[:, None, :], p), p, out=B[:, :, 1:])   # E_g p_j - p_j(t_q)
    score_a = theta * (S[:, None] - p.sum(2))
    B[:, :, 0] = score_a - np.sum(post * score_a, 1, keepdims=True)
    p -= p * p                                                           # p (1 - p)
    c = p.reshape(G * Q, M)
    h1 = (weight * theta).ravel() @ c
    h2 = weight.ravel() @ c
    h0 = float((weight * theta ** 2).ravel() @ c.sum(1))
    B *= np.sqrt(weight)[:, :, None]
    B = B.reshape(G * Q, M + 1)
    info = -(B.T @ B)
    info[0, 0] += h0
    info[0, 1:] += h1
    info[1:, 0] += h1
    info[np.arange(1, M + 1), np.arange(1, M + 1)] += h2
    try:
        cov = np.linalg.inv(info)
    except LinAlgError:
        cov = np.full((M + 1, M + 1), np.nan)
    return {"var_a": np.full(M, cov[0, 0]), "var_d": np.diag(cov)[1:], "cov_ad": cov[0, 1:],
            "cov_d": cov[1:, 1:], "full": True}


def _block_inverse(h, s_aa, s_ad, s_dd, a, common_slope, slope_prec):
    """Variances from each item's own block of the observed information (no cross-item terms)."""
    i_dd = h[2] - s_dd
    M = a.size
    if common_slope:       # the common slope's own information, the d_j's their own
        i_aa = h[0].sum() - float(np.sum(s_aa))
        return {"var_a": np.full(M, 1 / i_aa), "var_d": 1 / i_dd, "cov_ad": np.zeros(M),
                "full": False}
    i_aa = h[0] - s_aa + _prior_curvature(a, slope_prec)
    i_ad = h[1] - s_ad
    det = i_aa * i_dd - i_ad ** 2
    return {"var_a": i_dd / det, "var_d": i_aa / det, "cov_ad": -i_ad / det, "full": False}
