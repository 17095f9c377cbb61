"""The exact conditional (CML) information of Rasch difficulties and the SEs it gives.

The conditional log-likelihood of model ``i`` is ``-sum_j Y_ij b_j - log
gamma_{S_i}(b_{O_i})`` (Eq. 3.6), so its negative Hessian in ``b`` is the
conditional covariance of the responses given the raw score,

``I_jk = sum_i Cov(Y_ij, Y_ik | S_i) = sum_i (pi_ijk - pi_ij pi_ik)``,  ``I_jj =
sum_i pi_ij (1 - pi_ij)``,

with ``pi_ijk = P(Y_ij = Y_ik = 1 | S_i) = e^{-b_j - b_k} gamma^{(j,k)}_{S_i - 2}
/ gamma_{S_i}``. It is computed the way :mod:`~.esf` computes ``pi``: under the
tilt ``p_j = sigma(theta - b_j)`` the leave-two-out score law has the
characteristic function ``phi(t) / ((q_j + p_j e^{it}) (q_k + p_k e^{it}))``,
so ``pi_ijk = p_j p_k Re sum_t W_t u_j(t) u_k(t) / A`` with ``u_j(t) = 1 / (p_j +
q_j e^{-it})`` and the weights ``W``, ``A`` of :func:`~.esf.conditional_cells`.
Models sharing a tilt share ``u``, so their weights are summed first: one
``n x nodes x n`` product per tilt group.

``I`` is singular (the likelihood is shift invariant: ``I 1 = 0``). The
covariance of the sum-zero difficulties is its Moore-Penrose inverse ``I^+``
(the delta method through any basis ``W`` of sum-zero vectors, ``W (W' I
W)^{-1} W'``, which is what eRm's ``se.beta`` is); that of the difficulties with
item ``a`` fixed at 0 is ``T I^+ T'`` with ``T = Id - 1 e_a'`` (equal to the
inverse of ``I`` without row and column ``a``, eRm's ``sum0 = FALSE``).

Items pooled into one column (equal observed models and counts, see
:func:`~.pooling.pool_responses`) share every term, so ``I = P C P' + diag(D)``
with ``P`` the item-to-column indicator, ``C`` the (columns x columns)
covariance of two distinct items and ``D_j = I_jj - C_jj``. Only ``C`` is ever
formed: with ``m`` the multiplicities, ``R = D + m^{1/2} C m^{1/2}`` is ``I`` on
the span of the columns, and ``I^+`` of an item ``a`` in column ``j`` is
``R^+_jj / m_j + (1 - 1/m_j) / D_j``.

Example
-------
>>> from evalcert.irt.estimation.esf import ObservedSets
>>> sets = ObservedSets.from_mask(np.ones((3, 4), bool))
>>> info, pairs = conditional_information(np.zeros(4), sets, np.array([1.0, 2, 3]))
>>> bool(np.allclose(info + 3 * pairs[0, 0], 0))    # rows of I sum to zero
True
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from evalcert.irt.estimation.esf import (ObservedSets, _circle, _node_sums, _saddle_abilities,
                                      _tilt_groups)

__all__ = ["conditional_information", "information_flops", "difficulty_covariance"]


def information_flops(sets: ObservedSets, n_columns: int) -> float:
    """Upper estimate of the flops of :func:`conditional_information` and the inverse.

    One ``n x 64 x n`` complex product per observed pattern (more tilt groups
    than patterns are rare; ``64`` bounds the kept nodes) and the ``H^3``
    inverse of the pooled matrix.

    Examples
    --------
    >>> from evalcert.irt.estimation.esf import ObservedSets
    >>> information_flops(ObservedSets.from_mask(np.ones((3, 4), bool)), 4)
    4160.0
    """
    sizes = np.diff(sets.indptr).astype(float)
    _, first = np.unique(sets.pattern, return_index=True)
    return float(256.0 * np.sum(sizes[first] ** 2) + float(n_columns) ** 3)


def conditional_information(difficulties: np.ndarray, sets: ObservedSets, scores: np.ndarray,
                            item_weights: np.ndarray | None = None,
                            model_weights: np.ndarray | None = None
                            ) -> tuple[np.ndarray, np.ndarray]:
    """Diagonal and pair terms of the conditional information of the difficulties.

    Parameters
    ----------
    difficulties : (H,) ``b`` per column.
    sets : the observed cells of the (pooled) models, :class:`~.esf.ObservedSets`.
    scores : (G,) raw scores, ``0 < S_g <`` the weight of model ``g``'s items.
    item_weights : (H,), optional, the items each column stands for (default 1).
    model_weights : (G,), optional, the models each row stands for (default 1).

    Returns
    -------
    info : (H,) ``I_jj = sum_g w_g pi_gj (1 - pi_gj)`` for one item of column ``j``.
    pairs : (H, H) ``sum_g w_g Cov(Y_a, Y_c | S_g)`` for two distinct items ``a``
        in column ``j`` and ``c`` in column ``k`` (for ``j = k`` meaningful only
        when column ``j`` holds at least two items).

    Examples
    --------
    >>> from evalcert.irt.estimation.esf import ObservedSets
    >>> sets = ObservedSets.from_mask(np.ones((1, 2), bool))
    >>> info, pairs = conditional_information(np.zeros(2), sets, np.array([1.0]))
    >>> np.round(info, 12), float(np.round(pairs[0, 1], 12))  # equal items: Var 1/4, Cov -1/4
    (array([0.25, 0.25]), -0.25)
    """
    b = np.asarray(difficulties, dtype=float)
    scores = np.asarray(scores, dtype=float)
    H = b.size
    w = np.ones(H) if item_weights is None else np.asarray(item_weights, dtype=float)
    size = (np.ones(scores.size) if model_weights is None
            else np.asarray(model_weights, dtype=float))
    theta, sd = _saddle_abilities(b, sets, scores, w, None)
    info, pairs = np.zeros(H), np.zeros((H, H))
    for members in _tilt_groups(sets.pattern, scores, sd):
        head = members[0]
        items = sets.items[sets.indptr[head]:sets.indptr[head + 1]]
        p = expit(theta[members[len(members) // 2]] - b[items])[None, :]
        q, mult = 1.0 - p, w[items][None, :]
        var, n = (mult * p * q).sum(1), mult.sum(1)
        K, t, keep = _circle(var, n)
        log_phi, _, _ = _node_sums(p, q, mult, t)              # log phi(t) - i t mu
        mu = float((mult * p).sum())
        weight = np.where(keep, np.where(t == 0, 1.0, 2.0), 0.0)[0]   # conjugates folded in
        W = (np.exp(log_phi[0][None, :] + 1j * (mu - scores[members])[:, None] * t[0][None, :])
             * weight)                                          # (models, nodes)
        W /= W.real.sum(1, keepdims=True)                       # divided by A
        omc, sin = 2 * np.sin(t[0] / 2)[:, None] ** 2, np.sin(t[0])[:, None]
        den = 1.0 - 2.0 * (p * q) * omc                         # |q + p e^{it}|^2
        u = ((1.0 - q * omc) + 1j * q * sin) / den              # 1 / (p + q e^{-it}), (nodes, n)
        pi = p * (W @ u).real                                   # (models, n)
        s = size[members]
        agg = s @ W                                             # (nodes,)
        both = ((u.T * agg) @ u).real * (p.T * p)               # sum_g s_g pi_gjk
        pairs[np.ix_(items, items)] += both - (pi.T * s) @ pi
        info[items] += s @ (pi * (1.0 - pi))
    return info, pairs


def difficulty_covariance(info: np.ndarray, pairs: np.ndarray, item_weights: np.ndarray,
                          columns: np.ndarray, anchor: int | None = None) -> np.ndarray:
    """Variances of the identified difficulties of every item, ``(M,)``.

    Parameters
    ----------
    info, pairs : from :func:`conditional_information` (``H`` columns).
    item_weights : (H,) items per column; columns : (M,) the column of each item.
    anchor : int, optional
        Item whose difficulty is fixed at 0 (variance 0); default sum-zero.

    Returns
    -------
    var : (M,) ``diag(I^+)`` (sum-zero) or ``diag(T I^+ T')`` (anchor).

    Examples
    --------
    >>> info, pairs = np.array([1.0, 1.0]), np.array([[0.0, -1.0], [-1.0, 0.0]])
    >>> np.round(difficulty_covariance(info, pairs, np.ones(2), np.arange(2)), 12)  # I^+ = I/4
    array([0.25, 0.25])
    >>> np.round(difficulty_covariance(info, pairs, np.ones(2), np.arange(2), anchor=0), 12)
    array([0., 1.])
    """
    m = np.asarray(item_weights, dtype=float)
    D = info - np.diag(pairs)                                   # within-column eigenvalue
    root = np.sqrt(m)
    R = root[:, None] * pairs * root[None, :]
    R[np.diag_indices_from(R)] += D
    u = root / np.linalg.norm(root)                             # the null vector of R
    # any scale > 0 deflates the gauge; the trace is 0 when every column is one pooled
    # group of equal items (2 items answered 7 and 7 times: R = [[0]]), so then 1
    scale = float(np.trace(R)) / R.shape[0] or 1.0
    Rp = np.linalg.inv(R + scale * np.outer(u, u)) - np.outer(u, u) / scale
    Rp = (Rp + Rp.T) / 2
    within = np.where(m > 1, 1.0 / np.where(m > 1, D, 1.0), 0.0)   # 1/D_j, unused if m_j = 1
    own = np.diag(Rp) / m + (1 - 1 / m) * within                # Sigma_aa
    var = own[columns]
    if anchor is not None:
        k = columns[anchor]
        cross = Rp[columns, k] / np.sqrt(m[columns] * m[k])     # Sigma_ca, other columns
        cross = np.where(columns == k, np.diag(Rp)[k] / m[k] - within[k] / m[k], cross)
        var = var + own[k] - 2 * cross
        var[anchor] = 0.0
    return np.maximum(var, 0.0)
