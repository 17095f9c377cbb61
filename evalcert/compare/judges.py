"""Judge-weighted Bradley-Terry: each judge's reliability fitted jointly, no labels needed.

Judge ``l`` prefers ``i`` over ``j`` with probability ``sigma(gamma_l (theta_i - theta_j))``
(ties half a win each way): a reliable judge (large ``gamma_l``) separates the models
sharply, a noisy one (``gamma_l`` near 0) is close to a coin, an adversarial one has
``gamma_l < 0``. The strengths and the reliabilities are fitted together by maximising

``loglik(theta, gamma) - sum_l (gamma_l - 1)^2 / (2 tau^2)``

(the Gaussian prior ``gamma_l ~ N(1, tau^2)`` keeps the reliability of a judge with few
verdicts finite and fixes the scale shared by ``theta`` and ``gamma``). The objective is
convex in ``theta`` for fixed ``gamma`` and in ``gamma`` for fixed ``theta`` (biconvex, not
jointly convex); it is maximised by alternating a Newton fit of ``theta`` (warm-started) and
Newton steps on every ``gamma_l`` at once. The certificate of
:mod:`evalcert.compare.bradley_terry` is recomputed for ``theta`` given the fitted
``gamma`` (each row's logit scaled by its judge's reliability).

Example
-------
>>> from evalcert.datasets.battles import simulate_battles
>>> from evalcert.compare.counts import CountsBuilder
>>> import numpy as np
>>> frame, _ = simulate_battles(n_models=5, n_battles=4000, tie_rate=0.0, seed=0)
>>> rng = np.random.default_rng(0)
>>> noisy = rng.random(len(frame)) < 0.5             # half the verdicts by a coin-flipping judge
>>> coin = np.where(rng.random(len(frame)) < 0.5, "model_a", "model_b")
>>> winner = np.where(noisy, coin, frame["winner"].astype(str))
>>> b = CountsBuilder()
>>> out = np.array([{"model_a": 0, "model_b": 1}[w] for w in winner])
>>> b.add(b.codes(frame["model_a"].astype(str).tolist()), b.codes(frame["model_b"].astype(str).tolist()),
...       out, judge=b.judge_codes(np.where(noisy, "coin", "careful").tolist()))
>>> fit = fit_judge_weighted(b.build())
>>> fit.reliability["careful"] > 0.8, abs(fit.reliability["coin"]) < 0.2, fit.certificate.proves_optimum
(True, True, True)
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from evalcert.compare.bradley_terry import (GRAD_TOL, BTCertificate, _centred, _newton,
                                            _problem, certify, check_mle_exists,
                                            fit_bradley_terry)
from evalcert.compare.counts import PairwiseCounts
from evalcert.errors import ConvergenceError, InputError
from evalcert.results import ResultMixin

__all__ = ["fit_judge_weighted", "JudgeWeightedFit"]

MAX_ROUNDS = 1000
#: most models + judges of the joint Newton fit (a dense (K + L)^2 Hessian)
MAX_JOINT = 4000


def _centre(g: np.ndarray, K: int) -> np.ndarray:
    g = g.copy()
    g[:K] -= g[:K].mean()
    return g


def _joint(theta, gamma, i, j, jr, n, c, K, L, lam, tau2):
    """Objective, gradient and Hessian in (theta, gamma) of the penalised negative
    log-likelihood; row logits ``z = gamma_l (theta_i - theta_j) / 2``."""
    u = (theta[i] - theta[j]) / 2
    gr = gamma[jr]
    z = gr * u
    az = np.abs(z)
    value = float(n @ (az + np.log1p(np.exp(-2 * az))) - c @ z)
    value += 0.5 * lam * float(theta @ theta) + float(((gamma - 1) ** 2).sum()) / (2 * tau2)
    th = np.tanh(z)
    d1 = n * th - c                                   # d value / d z
    d2 = n * (1 - th * th)                            # d2 value / d z2
    g = np.zeros(K + L)
    half = d1 * gr / 2
    g[:K] = np.bincount(i, half, K) - np.bincount(j, half, K) + lam * theta
    g[K:] = np.bincount(jr, d1 * u, L) + (gamma - 1) / tau2
    H = np.zeros((K + L, K + L))
    w = d2 * gr * gr / 4
    np.add.at(H, (i, j), -w)
    H[:K, :K] += H[:K, :K].T
    H[np.arange(K), np.arange(K)] += np.bincount(i, w, K) + np.bincount(j, w, K) + lam
    cross = d2 * gr * u / 2 + d1 / 2                  # d2 value / d theta_i d gamma_l
    np.add.at(H, (i, K + jr), cross)
    np.add.at(H, (j, K + jr), -cross)
    H[K:, :K] = H[:K, K:].T
    H[K + np.arange(L), K + np.arange(L)] = np.bincount(jr, d2 * u * u, L) + 1 / tau2
    return value, g, H


def _reliability_step(theta, gamma, i, j, jr, n, c, K, L, lam, tau2):
    """Minimise over every gamma_l for fixed theta (convex, separable; damped Newton)."""
    u = (theta[i] - theta[j]) / 2
    gamma = gamma.copy()
    for _ in range(50):
        th = np.tanh(gamma[jr] * u)
        g = np.bincount(jr, u * (n * th - c), L) + (gamma - 1) / tau2
        h = np.bincount(jr, u * u * n * (1 - th * th), L) + 1 / tau2
        step = np.clip(g / h, -1.0, 1.0)
        gamma -= step
        if np.abs(step).max() < 1e-12:
            break
    return gamma


@dataclasses.dataclass(frozen=True)
class JudgeWeightedFit(ResultMixin):
    """Strengths and judge reliabilities.

    Attributes
    ----------
    theta : numpy.ndarray
        Centred log-strengths (on the scale of a judge of reliability 1).
    reliability : dict
        Judge name -> ``gamma_l``.
    n_verdicts : dict
        Judge name -> number of battles judged.
    rounds : int
        Newton rounds (an alternating round where the objective is not convex) until the
        gradient vanished to rounding.
    certificate : BTCertificate
        For ``theta`` given the reliabilities.

    Examples
    --------
    >>> from evalcert.compare.counts import CountsBuilder
    >>> b = CountsBuilder()
    >>> a, c = b.codes(["x", "y", "z", "x"] * 4), b.codes(["y", "z", "x", "z"] * 4)
    >>> b.add(a, c, np.array([0, 0, 0, 1] * 4), judge=b.judge_codes(["j1"] * 16))
    >>> fit = fit_judge_weighted(b.build())
    >>> list(fit.n_verdicts.items())
    [('j1', 16)]
    """

    theta: np.ndarray
    reliability: dict
    n_verdicts: dict
    reliability_sd: float
    rounds: int
    certificate: BTCertificate

    def summary(self) -> str:
        ranked = sorted(self.reliability.items(), key=lambda kv: -kv[1])
        shown = ", ".join(f"{j} {g:.3g} ({self.n_verdicts[j]})" for j, g in ranked[:8])
        more = f" and {len(ranked) - 8} more" if len(ranked) > 8 else ""
        return (f"judge-weighted Bradley-Terry, {len(ranked)} judges (prior N(1, "
                f"{self.reliability_sd:g}^2) on reliabilities), {self.rounds} rounds; "
                f"reliability (verdicts): {shown}{more}; " + self.certificate.summary()
                + " (given the reliabilities)")


def fit_judge_weighted(counts: PairwiseCounts, *, reliability_sd: float = 1.0,
                       prior_sd: float | None = None,
                       max_rounds: int = MAX_ROUNDS) -> JudgeWeightedFit:
    """Fit strengths and each judge's reliability jointly (see the module docstring).

    Parameters
    ----------
    counts : PairwiseCounts
        Counts read with a judge column (``counts.judge`` set).
    reliability_sd : float
        ``tau``: standard deviation of the prior ``gamma_l ~ N(1, tau^2)``.
    prior_sd : float, optional
        Gaussian prior on the log-strengths, as in :func:`fit_bradley_terry`.
    max_rounds : int
        Newton (or alternating) rounds before giving up.

    Examples
    --------
    >>> from evalcert.compare.counts import CountsBuilder
    >>> b = CountsBuilder()
    >>> a, c = b.codes(["x", "y", "z", "x"] * 5), b.codes(["y", "z", "x", "z"] * 5)
    >>> b.add(a, c, np.array([0, 0, 0, 1] * 5), judge=b.judge_codes(["j1", "j2"] * 10))
    >>> fit = fit_judge_weighted(b.build())
    >>> sorted(fit.reliability), fit.certificate.proves_optimum
    (['j1', 'j2'], True)
    """
    if counts.judge is None:
        raise InputError("judge weighting needs a judge column: read the log with judge= "
                         "(--judge-column NAME)")
    if not (math.isfinite(reliability_sd) and reliability_sd > 0):
        raise InputError(f"reliability_sd must be a finite number > 0, got {reliability_sd!r}")
    pooled = counts.pooled()
    if prior_sd is None:
        check_mle_exists(pooled)
    K, L = counts.n_models, len(counts.judges)
    lam = 0.0 if prior_sd is None else 1.0 / prior_sd ** 2
    i, j, C = _problem(counts, "half")
    jr = counts.judge
    n, c = C.sum(axis=1), C[:, 0] - C[:, 1]
    tau2 = reliability_sd ** 2
    if K + L > MAX_JOINT:
        raise InputError(f"{L} judges and {K} models: the joint fit holds a (K + L)^2 matrix "
                         f"and takes at most {MAX_JOINT} models and judges together; group the "
                         "judges (e.g. by kind) before weighting them")
    theta = fit_bradley_terry(pooled, prior_sd=prior_sd, check=False).theta
    gamma = np.ones(L)
    newton_tol = GRAD_TOL * (1.0 + float(C.sum()))
    terms = (i, j, jr, n, c, K, L, lam, tau2)
    value, g, H = _joint(theta, gamma, *terms)
    gn = float(np.linalg.norm(_centre(g, K)))
    for rounds in range(1, max_rounds + 1):
        if gn <= newton_tol:
            break
        step = None
        try:
            A = _centred(H, K)
            np.linalg.cholesky(A)                 # positive definite here: a Newton step
            step = np.linalg.solve(A, _centre(g, K))
        except np.linalg.LinAlgError:
            pass
        moved = False
        if step is not None:
            step[:K] -= step[:K].mean()
            t, slope = 1.0, float(_centre(g, K) @ step)
            while t > 1e-10:
                new = _joint(theta - t * step[:K], gamma - t * step[K:], *terms)
                new_gn = float(np.linalg.norm(_centre(new[1], K)))
                if new[0] <= value - 1e-4 * t * slope or (t == 1.0 and new_gn < gn / 2):
                    theta, gamma = theta - t * step[:K], gamma - t * step[K:]
                    (value, g, H), gn = new, new_gn
                    moved = True
                    break
                t /= 2
        if not moved:                             # not convex here, or no progress: alternate
            x, _, _ = _newton(theta.copy(), i, j, C, K, lam, newton_tol, scale=gamma[jr])
            new_theta = x - x.mean()
            new_gamma = _reliability_step(new_theta, gamma, *terms)
            new = _joint(new_theta, new_gamma, *terms)
            new_gn = float(np.linalg.norm(_centre(new[1], K)))
            if new[0] >= value - 1e-14 * abs(value) and new_gn >= gn:
                break                             # rounding allows no further progress
            theta, gamma, (value, g, H), gn = new_theta, new_gamma, new, new_gn
    if gn > 1e3 * newton_tol:
        raise ConvergenceError(f"judge-weighted fit did not settle in {max_rounds} rounds "
                               f"(||grad|| = {gn:.2e}); try a smaller reliability_sd")
    theta = theta - theta.mean()
    cert = certify(theta, i, j, C, K, lam, scale=gamma[jr])
    verdicts = np.bincount(jr, counts.table().sum(axis=1), L).astype(int)
    return JudgeWeightedFit(theta, dict(zip(counts.judges, gamma.tolist())),
                            dict(zip(counts.judges, verdicts.tolist())), float(reliability_sd),
                            rounds, cert)
