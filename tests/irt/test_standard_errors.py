"""Standard errors of marginal ML fits: observed-data information (issue 12, item 3).

LSAT6 and LSAT7 (Bock and Lieberman 1970; Thissen 1982) are the 32 response
patterns of 1000 examinees on 5 items; the frequencies below are those of the
public OpenBUGS "LSAT" example and of mirt's ``LSAT6``/``LSAT7`` data sets
(their sum-score counts 12, 40, 114, 205, 321, 308 for LSAT7 match mirt's
EAPsum test).

References checked here:

* a finite-difference Hessian of the marginal log-likelihood, computed in the
  test on a fine fixed grid (independent of EM, quadrature and Louis's
  identity): the SEs agree to 1e-3 relative;
* mirt's published LSAT7 2PL estimates and Richardson (numerical-Hessian) 95%
  intervals, from mirt's own test suite (tests/testthat/test-01-mirtOne.R,
  ``SE.type = 'Richardson'``): estimates agree to 1e-3; SEs, recovered as
  interval width / (2 * 1.959964) from intervals printed to 4 decimals, agree
  to 3e-3 relative (item 3's slope: 0.3211 here and in our own finite
  difference, 0.3204 in mirt: the difference is mirt's numerical derivative,
  not the information matrix).
"""

import numpy as np
import pytest
from scipy.special import expit, logsumexp

from evalcert.irt import Rasch, TwoPL

LSAT7 = [12, 19, 1, 7, 3, 19, 3, 17, 10, 5, 3, 7, 7, 23, 8, 28, 7, 39, 11, 34, 14, 51, 15, 90,
         6, 25, 7, 35, 18, 136, 32, 308]
LSAT6 = [3, 6, 2, 11, 1, 1, 3, 4, 1, 8, 0, 16, 0, 3, 2, 15, 10, 29, 14, 81, 3, 28, 15, 80, 16,
         56, 21, 173, 11, 61, 28, 298]
PATTERNS = np.array([[(k >> (4 - j)) & 1 for j in range(5)] for k in range(32)], float)
# mirt, LSAT7, 2PL: (a, d) estimates and Richardson 95% intervals
MIRT_A = [(0.988, 0.6406, 1.3354), (1.081, 0.7501, 1.4119), (1.706, 1.0779, 2.334),
          (0.7651, 0.5022, 1.028), (0.7358, 0.4395, 1.032)]
MIRT_D = [(1.8561, 1.5984, 2.1138), (0.808, 0.6291, 0.9869), (1.8043, 1.4036, 2.205),
          (0.486, 0.3392, 0.6328), (1.8545, 1.6302, 2.0787)]


def _expand(freq):
    return np.repeat(PATTERNS, freq, axis=0)


def _marginal_loglik(freq, a, d):
    """Pattern-weighted marginal log-likelihood on a 401-node grid over [-10, 10]."""
    z = np.linspace(-10, 10, 401)
    log_w = -0.5 * z ** 2 - np.log(np.sqrt(2 * np.pi)) + np.log(z[1] - z[0])
    eta = z[:, None] * a[None, :] + d[None, :]                   # (K, 5)
    ll = PATTERNS @ (eta - np.logaddexp(0, eta)).T + (1 - PATTERNS) @ (-np.logaddexp(0, eta)).T
    return float(np.asarray(freq) @ logsumexp(ll + log_w[None, :], axis=1))


def _fd_covariance(f, x, h=1e-4):
    """Inverse of the central finite-difference Hessian of ``-f`` at ``x``."""
    n = x.size
    H = np.empty((n, n))
    E = np.eye(n) * h
    for i in range(n):
        for j in range(i, n):
            H[i, j] = H[j, i] = -(f(x + E[i] + E[j]) - f(x + E[i] - E[j])
                                  - f(x - E[i] + E[j]) + f(x - E[i] - E[j])) / (4 * h * h)
    return np.linalg.inv(H)


@pytest.fixture(scope="module")
def lsat7_2pl():
    return TwoPL(method="mml", slope_prior=0, tol=1e-9).fit(_expand(LSAT7))


def test_lsat7_2pl_matches_mirt_estimates(lsat7_2pl):
    a = lsat7_2pl.discriminations_
    d = -a * lsat7_2pl.difficulties_
    assert np.max(np.abs(a / [m[0] for m in MIRT_A] - 1)) < 1e-3
    assert np.max(np.abs(d / [m[0] for m in MIRT_D] - 1)) < 1e-3


def test_lsat7_2pl_ses_match_finite_difference_hessian_and_mirt(lsat7_2pl):
    a = lsat7_2pl.discriminations_
    d = -a * lsat7_2pl.difficulties_
    cov = _fd_covariance(lambda x: _marginal_loglik(LSAT7, x[:5], x[5:]),
                         np.concatenate([a, d]))
    fd_a, fd_d = np.sqrt(np.diag(cov)[:5]), np.sqrt(np.diag(cov)[5:])
    assert np.max(np.abs(lsat7_2pl.discriminations_se_ / fd_a - 1)) < 1e-3
    # difficulties b = -d / a: delta method from the same covariance
    b = -d / a
    grad = np.column_stack([d / a ** 2, -1 / a])
    var_b = [grad[j] @ cov[np.ix_([j, 5 + j], [j, 5 + j])] @ grad[j] for j in range(5)]
    assert np.max(np.abs(lsat7_2pl.difficulties_se_ / np.sqrt(var_b) - 1)) < 1e-3
    mirt_a = np.array([(hi - lo) / (2 * 1.959964) for _, lo, hi in MIRT_A])
    assert np.max(np.abs(lsat7_2pl.discriminations_se_ / mirt_a - 1)) < 3e-3
    # the complete-data information EM uses is far too optimistic for the slopes
    assert np.all(fd_a > 1.2 * _complete_data_se_a(lsat7_2pl, a, d))


def _complete_data_se_a(est, a, d):
    """Slope SEs from EM's complete-data information alone (the old, optimistic SEs)."""
    z = np.linspace(-8, 8, 161)
    w = np.exp(-0.5 * ((z[None, :] - est.abilities_[:, None]) / est.abilities_se_[:, None]) ** 2)
    w /= w.sum(1, keepdims=True)
    p = expit(z[:, None] * a[None, :] + d[None, :])
    return 1 / np.sqrt((w @ (z[:, None] ** 2 * p * (1 - p))).sum(0))


def test_lsat6_rasch_ses_match_finite_difference_under_sum_zero_identification():
    Y = _expand(LSAT6)
    est = Rasch(method="mml", tol=1e-10).fit(Y)
    sd = est.population_sd_
    b = est.difficulties_
    # the marginal model: eta = sd z + d_j; parameters (sd, d); reported b_j = -(d_j - mean d)
    f = lambda x: _marginal_loglik(LSAT6, np.full(5, x[0]), x[1:])
    x0 = np.concatenate([[sd], -b + _rasch_mean_intercept(est, Y)])
    cov = _fd_covariance(f, x0)
    C = np.eye(5) - 0.2
    se_sum_zero = np.sqrt(np.diag(C @ cov[1:, 1:] @ C.T))
    assert np.max(np.abs(est.difficulties_se_ / se_sum_zero - 1)) < 1e-3
    assert "sum-zero" in " ".join(est.result_.notes)
    # anchored on item 2: SEs of d_j - d_2 (0 for the anchor itself)
    anchored = Rasch(method="mml", tol=1e-10, anchor_item=2).fit(Y)
    C = np.eye(5)
    C[:, 2] -= 1
    se_anchor = np.sqrt(np.maximum(np.diag(C @ cov[1:, 1:] @ C.T), 0))
    assert np.max(np.abs(anchored.difficulties_se_ - se_anchor)) < 1e-3 * se_anchor.max()
    assert anchored.difficulties_se_[2] < 1e-6


def _rasch_mean_intercept(est, Y):
    """Mean intercept of the marginal fit (the sum-zero shift it reported): the ML
    intercepts reproduce the total score, which fixes the common shift ``c``."""
    sd = est.population_sd_
    d = -est.difficulties_
    z = np.linspace(-10, 10, 401)
    w = np.exp(-0.5 * z ** 2)
    w /= w.sum()

    def expected(c):
        return (w @ expit(sd * z[:, None] + d[None, :] + c)).sum() * 1000

    lo, hi = -10.0, 10.0
    total = Y.sum()
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if expected(mid) < total else (lo, mid)
    return 0.5 * (lo + hi)
