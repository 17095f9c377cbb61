"""Marginal ML by EM with adaptive Gauss-Hermite quadrature (Sec. 3.3.3, 3.4.2).

Abilities are integrated out (Eq. 3.7) under ``theta ~ N(0, 1)``; item logits
are ``eta = a_j theta + d_j``. With one common slope ``a`` this is the Rasch
model with ``theta = a z ~ N(0, a^2)`` and ``b_j = -d_j``; with free slopes it is
the 2PL. Deviation from the chapter's fixed nodes: with thousands of items the
posterior of ``theta_i`` is far narrower than the spacing of any fixed
Gauss-Hermite grid, so the ``Q`` nodes are re-centred at each model's posterior
mean and scaled by its posterior sd every iteration (adaptive quadrature,
Rabe-Hesketh, Skrondal and Pickles 2005). The M-step is one vectorised Newton
step on the expected complete-data log-likelihood, whose stationary point is
Sec. 3.4.2's "expected = observed" equation, followed by a parameter-expansion
step (PX-EM): the ability distribution's mean and variance are fitted and
mapped back into ``(a, d)``, which removes EM's crawl along the overall scale
(plain EM's rate there is about ``1 - 10 / n_items``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy.special import logsumexp

from evalcert.errors import ConvergenceError
from evalcert.solvers.irt.base import softplus_sigmoid

__all__ = ["mml_em"]


def mml_em(Y: np.ndarray, observed: np.ndarray, *, common_slope: bool, n_quad: int,
           tol: float, max_iter: int, what: str, slope_prec: float = 0.0) -> dict[str, Any]:
    """Run EM to convergence; return slopes, intercepts, posteriors and SEs.

    ``slope_prec > 0`` adds a ``N(1, 1/slope_prec)`` prior on free slopes
    (marginal MAP): an item that a few models split perfectly has no finite
    marginal ML slope.

    Returns
    -------
    dict with ``a`` (M,), ``d`` (M,), ``se_a``, ``se_d``, ``cov_ad`` (expected
    complete-data information, which ignores the missing information and so
    is optimistic), ``eap`` and ``psd`` (posterior mean and sd of the
    standardised ability), ``loglik`` (marginal) and ``n_iter``.
    """
    z, w = hermegauss(n_quad)
    log_w = np.log(w / w.sum()) + 0.5 * z ** 2
    O = observed.astype(float)
    Yo = Y * O
    share = (Yo.sum(0) + 0.5) / (O.sum(0) + 1.0)
    a = np.ones(Y.shape[1])
    d = np.log(share / (1 - share))
    row = (Yo.sum(1) + 0.5) / (O.sum(1) + 1.0)            # start nodes near the posteriors
    mu = np.log(row / (1 - row))
    mu = (mu - mu.mean()) / max(mu.std(), 1e-3)
    sd = np.minimum(1.0, 2.0 / np.sqrt(O.sum(1)))
    change = np.inf
    for n_iter in range(1, max_iter + 1):
        a_old, d_old = a, d
        theta = mu[:, None] + sd[:, None] * z[None, :]                     # (N, Q)
        log_joint = log_w + np.log(sd)[:, None] - 0.5 * theta ** 2 + np.outer(Yo @ d, 1.0)
        log_joint += theta * (Yo @ a)[:, None]
        probs = []
        for q in range(z.size):
            eta = theta[:, q, None] * a[None, :] + d[None, :]
            softplus, p = softplus_sigmoid(eta)
            log_joint[:, q] -= (O * softplus).sum(1)
            probs.append(O * p)
        ll_i = logsumexp(log_joint, axis=1)
        post = np.exp(log_joint - ll_i[:, None])
        mu = (post * theta).sum(1)
        sd = np.sqrt(np.maximum((post * theta ** 2).sum(1) - mu ** 2, 1e-12))
        g0, g1 = Yo.sum(0), Yo.T @ mu
        h0 = h1 = h2 = 0.0
        for q, P in enumerate(probs):
            wq, tq = post[:, q], post[:, q] * theta[:, q]
            g0, g1 = g0 - wq @ P, g1 - tq @ P
            H = P * (1 - P)
            h0, h1, h2 = h0 + wq @ H, h1 + tq @ H, h2 + (tq * theta[:, q]) @ H
        if common_slope:
            da = (g1.sum() - np.sum(h1 * g0 / h0)) / (h2.sum() - np.sum(h1 ** 2 / h0))
            dd = (g0 - h1 * da) / h0
        else:
            g1, h2 = g1 - slope_prec * (a - 1.0), h2 + slope_prec
            det = h0 * h2 - h1 ** 2
            dd, da = (h2 * g0 - h1 * g1) / det, (h0 * g1 - h1 * g0) / det
        dd, da = np.clip(dd, -1, 1), np.clip(da, -1, 1)
        d, a = d + dd, a + da
        # PX-EM: fit z ~ N(m, v) too, then map back to N(0, 1) (Liu, Rubin and Wu 1998)
        m = mu.mean()
        v = np.mean(mu ** 2 + sd ** 2) - m ** 2
        d, a = d + a * m, a * np.sqrt(v)
        mu, sd = (mu - m) / np.sqrt(v), sd / np.sqrt(v)
        change = max(np.max(np.abs(d - d_old)), np.max(np.abs(a - a_old)))
        if change < tol:
            break
    else:
        raise ConvergenceError(f"{what}: EM did not converge in {max_iter} iterations "
                               f"(last change {change:.3g})"
                               "; raise max_iter or tol", solver="em", status="max_iter")
    if common_slope:
        var_a = np.full_like(h0, 1 / (h2.sum() - np.sum(h1 ** 2 / h0)))
        var_d, cov = 1 / h0, np.zeros_like(h0)
    else:
        det = h0 * h2 - h1 ** 2
        var_d, var_a, cov = h2 / det, h0 / det, -h1 / det
    return {"a": a, "d": d, "se_a": np.sqrt(var_a), "se_d": np.sqrt(var_d), "cov_ad": cov,
            "eap": mu, "psd": sd, "loglik": float(ll_i.sum()), "n_iter": n_iter}
