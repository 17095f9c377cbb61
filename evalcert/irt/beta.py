"""Beta-IRT for continuous responses in [0, 1] (Sec. 3.9.5, Exercise 2.9).

``Y_ij ~ Beta(mu_ij phi, (1 - mu_ij) phi)`` with ``mu_ij = sigma(d_j (theta_i - z_j))``
(Truong et al. 2025): the 2PL mean with a Beta likelihood of precision
``phi``. Token probabilities, pass rates or judge preferences are used as they
are instead of being thresholded. A Beta density is undefined at 0 and 1, so
responses are clipped into ``[eps, 1 - eps]`` and the number of clipped cells is
reported in ``result_.notes`` and ``n_clipped_``.

Gradients (Exercise 2.9a), with ``psi`` the digamma function:
``d l / d mu = phi (psi((1-mu) phi) - psi(mu phi) + log(y / (1-y)))`` and
``d mu / d eta = mu (1 - mu)``, ``eta = d_j (theta_i - z_j)``.

Example
-------
>>> rng = np.random.default_rng(0)
>>> Y = rng.beta(2, 2, size=(30, 20))
>>> round(float(BetaIRT().fit(Y).precision_), 1) > 0
True
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import digamma, expit, gammaln, polygamma

from evalcert.errors import InputError
from evalcert.irt.data import ResponseData
from evalcert.irt.twopl import TwoPL

__all__ = ["BetaIRT", "BetaFamily"]


class BetaFamily:
    """Beta responses with mean ``sigma(eta)`` and precision ``phi = exp(g[0])``.

    Examples
    --------
    >>> family = BetaFamily()
    >>> family.n_glob, family.mean(np.array([0.0, 2.0]), np.zeros(1)).round(4).tolist()
    (1, [0.5, 0.8808])
    >>> nll, grad_eta, grad_g = family.nll(np.zeros((1, 2)), np.array([[0.3, 0.6]]),
    ...                                    np.ones((1, 2)), np.zeros(1))
    >>> grad_eta.shape, grad_g.shape  # per cell, and for log phi
    ((1, 2), (1,))
    """

    n_glob = 1

    @staticmethod
    def _moments(eta: np.ndarray, g: np.ndarray):
        mu = np.clip(expit(eta), 1e-12, 1 - 1e-12)
        return mu, float(np.exp(g[0]))

    def nll(self, eta, y, obs, g):
        mu, phi = self._moments(eta, g)
        ly, l1y = np.log(np.where(obs > 0, y, 0.5)), np.log(np.where(obs > 0, 1 - y, 0.5))
        a, b = mu * phi, (1 - mu) * phi
        ll = gammaln(phi) - gammaln(a) - gammaln(b) + (a - 1) * ly + (b - 1) * l1y
        psi_a, psi_b = digamma(a), digamma(b)
        dmu = phi * (psi_b - psi_a + ly - l1y)
        dphi = phi * (digamma(phi) - mu * psi_a - (1 - mu) * psi_b + mu * ly + (1 - mu) * l1y)
        return (-float(np.sum(obs * ll)), -obs * dmu * mu * (1 - mu),
                np.array([-float(np.sum(obs * dphi))]))

    def curvature(self, eta, obs, g):
        mu, phi = self._moments(eta, g)
        info = phi ** 2 * (polygamma(1, mu * phi) + polygamma(1, (1 - mu) * phi))
        return obs * info * (mu * (1 - mu)) ** 2

    def mean(self, eta, g):
        return expit(eta)


class BetaIRT(TwoPL):
    """Beta-IRT estimator (joint ML or MAP by L-BFGS).

    Parameters
    ----------
    method : {"jml", "map"}
    eps : float
        Clipping margin: responses are moved into ``[eps, 1 - eps]``.
    lam, anchor_item, anchor_model, tol, max_iter, seed, verbose : as :class:`TwoPL`.

    Attributes
    ----------
    abilities_, discriminations_ (``d_j``), difficulties_ (``z_j``),
    precision_ (``phi``), n_clipped_, loglik_, result_.

    Examples
    --------
    Scores in (0, 1) (say, rubric fractions) of 30 models on 20 items:

    >>> rng = np.random.default_rng(0)
    >>> mean = 1 / (1 + np.exp(-np.subtract.outer(rng.normal(size=30), rng.normal(size=20))))
    >>> Y = rng.beta(5 * mean, 5 * (1 - mean))
    >>> est = BetaIRT().fit(Y)
    >>> est.result_.converged, est.abilities_.shape, bool(est.precision_ > 0)
    (True, (30,), True)
    """

    model_name = "beta"
    methods = ("jml", "map")
    kind = "unit"
    family = BetaFamily()

    def __init__(self, method: str = "map", *, eps: float = 1e-3, lam: float = 0.1,
                 anchor_item: int | str | None = None, anchor_model: int | str | None = None,
                 tol: float = 1e-6, max_iter: int = 5000, seed: int = 0,
                 verbose: bool = False, standard_errors: bool = True):
        super().__init__(method, lam=lam, anchor_item=anchor_item, anchor_model=anchor_model,
                         tol=tol, max_iter=max_iter, seed=seed, verbose=verbose,
                         standard_errors=standard_errors)
        if not 0 < eps < 0.5:
            raise InputError(f"eps must lie in (0, 0.5), got {eps!r}")
        self.eps = eps

    def _init_params(self, data: ResponseData, rng: np.random.Generator):
        R0, C0, _ = super()._init_params(data, rng)
        return R0, C0, np.array([np.log(10.0)])

    def _prepare(self, data: ResponseData) -> ResponseData:
        binary = data.observed & ((data.values == 0) | (data.values == 1))
        if binary.sum() == data.observed.sum():
            raise InputError(f"all {int(data.observed.sum())} responses are 0 or 1: Beta-IRT "
                             "models continuous scores in (0, 1) and would fit only the "
                             "clipping margin eps; use the Rasch or 2PL model for binary data")
        values = np.clip(data.values, self.eps, 1 - self.eps)
        return ResponseData(values, data.observed, data.model_names, data.item_names)

    def _fit(self, data: ResponseData) -> dict[str, Any]:
        out = super()._fit(data)
        n = int((data.observed & ((data.values <= self.eps) | (data.values >= 1 - self.eps))).sum())
        note = (f"{n} of {int(data.observed.sum())} responses ({n / data.observed.sum():.1%}) "
                f"clipped into [{self.eps:g}, {1 - self.eps:g}]")
        return {**out, "notes": (note,),
                "extra": {"precision": float(np.exp(out["g"][0])), "n_clipped": n}}
