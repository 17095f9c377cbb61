"""Posterior sampling for the Rasch model and the usual MCMC diagnostics (Sec. 3.5.4).

Metropolis-within-Gibbs: given ``b`` the abilities are independent, so every
``theta_i`` (in every chain) gets a random-walk Metropolis-Hastings update at
once; then every ``b_j`` given ``theta``. Priors are those of MAP (Eq. 3.9):
``theta_i, b_j ~ N(0, 1/lam)``. Proposal scales adapt during burn-in towards
an acceptance rate of 0.44 and are frozen afterwards. Draws are reported on
the sum-zero-difficulty scale (each draw shifted), which removes the slowly
mixing location direction before R-hat and ESS are computed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["sample_rasch", "rhat", "ess"]


def _loglik_rows(theta: np.ndarray, b: np.ndarray, Y: np.ndarray, O: np.ndarray,
                 axis: int) -> np.ndarray:
    eta = theta[:, :, None] - b[:, None, :]                 # (chains, N, M)
    return np.sum(O * (Y * eta - np.logaddexp(0.0, eta)), axis=axis)


def sample_rasch(Y: np.ndarray, observed: np.ndarray, *, lam: float, n_chains: int,
                 n_draws: int, n_burn: int, seed: int | np.random.Generator | None
                 ) -> dict[str, Any]:
    """Draw from ``p(theta, b | Y)`` (Eq. 3.8) with ``n_chains`` dispersed chains.

    Returns
    -------
    dict with ``theta`` (chains, draws, N), ``b`` (chains, draws, M) on the
    sum-zero scale and ``acceptance`` (mean acceptance rate after burn-in).
    """
    rng = np.random.default_rng(seed)
    O = observed.astype(float)
    N, M = Y.shape
    theta = rng.normal(0.0, 1.0, (n_chains, N))
    b = rng.normal(0.0, 1.0, (n_chains, M))
    scale_t = np.full(N, 1.0 / np.sqrt(O.sum(1) / 4 + lam))
    scale_b = np.full(M, 1.0 / np.sqrt(O.sum(0) / 4 + lam))
    out_t = np.empty((n_chains, n_draws, N))
    out_b = np.empty((n_chains, n_draws, M))
    accepted = np.zeros(2)
    for it in range(n_burn + n_draws):
        rates = []
        for which in ("theta", "b"):
            cur = theta if which == "theta" else b
            scale = scale_t if which == "theta" else scale_b
            prop = cur + scale * rng.standard_normal(cur.shape)
            t_new, b_new = (prop, b) if which == "theta" else (theta, prop)
            axis = 2 if which == "theta" else 1
            log_ratio = (_loglik_rows(t_new, b_new, Y, O, axis)
                         - _loglik_rows(theta, b, Y, O, axis)
                         - 0.5 * lam * (prop ** 2 - cur ** 2))
            accept = np.log(rng.random(cur.shape)) < log_ratio
            cur[accept] = prop[accept]
            rates.append(accept.mean(axis=0))
            if it < n_burn and (it + 1) % 25 == 0:
                scale *= np.exp(np.clip(accept.mean(axis=0) - 0.44, -0.3, 0.3))
        if it >= n_burn:
            shift = b.mean(axis=1, keepdims=True)
            out_t[:, it - n_burn] = theta - shift
            out_b[:, it - n_burn] = b - shift
            accepted += [r.mean() for r in rates]
    return {"theta": out_t, "b": out_b, "acceptance": float(accepted.mean() / n_draws)}


def rhat(draws: np.ndarray) -> np.ndarray:
    """Split R-hat (Gelman et al., BDA3 Sec. 11.4) of draws shaped (chains, draws, params)."""
    half = draws.shape[1] // 2
    x = np.concatenate([draws[:, :half], draws[:, half:2 * half]], axis=0)
    n = x.shape[1]
    within = x.var(axis=1, ddof=1).mean(axis=0)
    between = n * x.mean(axis=1).var(axis=0, ddof=1)
    var_plus = (n - 1) / n * within + between / n
    return np.sqrt(var_plus / np.maximum(within, 1e-300))


def ess(draws: np.ndarray) -> np.ndarray:
    """Effective sample size of draws shaped (chains, draws, params).

    Chain-averaged autocorrelations via FFT, truncated by Geyer's initial
    positive sequence: ``ESS = C D / (1 + 2 sum_t rho_t)``.
    """
    C, D, P = draws.shape
    x = draws - draws.mean(axis=1, keepdims=True)
    f = np.fft.rfft(x, n=2 * D, axis=1)
    acov = np.fft.irfft(f * np.conj(f), axis=1)[:, :D].mean(axis=0)   # (D, P)
    rho = acov / np.maximum(acov[:1], 1e-300)
    pairs = rho[0:D - 1:2] + rho[1:D:2]                                 # Gamma_k
    positive = np.cumprod(pairs > 0, axis=0).astype(bool)
    tau = -1.0 + 2.0 * np.sum(np.where(positive, pairs, 0.0), axis=0)
    return C * D / np.maximum(tau, 1.0 / np.log10(max(C * D, 10)))
