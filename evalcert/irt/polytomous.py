"""Samejima's graded response model (GRM) by marginal ML: judge scores on a 1-10 scale.

Responses are ordered categories ``0 < 1 < ... < K-1`` (the distinct integer
values found in the data, e.g. judge scores 1..10, in order). For item ``j``
with slope ``a_j`` and thresholds ``b_j1 < ... < b_j,K-1`` (Samejima 1969)

    P(Y_ij >= k | theta) = sigma(a_j (theta - b_jk)),   k = 1..K-1,
    P(Y_ij = k)          = P(Y_ij >= k) - P(Y_ij >= k+1).

Parameterised as intercepts ``d_j1 > d_j2 > ...`` (``b_jk = -d_jk / a_j``) with
``d_jk = d_j1 - sum_{l<=k} exp(delta_jl)`` so the order always holds. Abilities
are integrated out under ``theta ~ N(0, 1)`` and the marginal log-likelihood
plus log-priors (log-normal on slopes, ``N(0, 1/threshold_prior)``
on intercepts, which keeps an item whose extreme category nobody used finite)
is maximised by accelerated EM with batched Fisher-scoring M-steps
(:mod:`~.estimation.graded_em`):

    l(a, d) - slope_prior/2 sum_j (log a_j)^2 - threshold_prior/2 sum_jk d_jk^2

over ``(log a, d_j1, delta)``. The slope prior ``log a_j ~ N(0, 1/slope_prior)``
is the 2PL's (default 4, sd 0.5; :func:`~.marginal.slope_prior_terms`) and keeps
slopes positive; ``slope_prior=0`` is pure ML in the slopes (either sign).
``difficulties_`` is each item's mean threshold (its location);
``thresholds_`` holds all ``K-1``; ``abilities_`` are EAPs with posterior sds.

Example
-------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> theta = rng.normal(size=300)
>>> cuts = np.array([-1.0, 0.0, 1.0])
>>> Y = 1 + (theta[:, None, None] + rng.logistic(size=(300, 6, 1)) > cuts).sum(2)
>>> est = GradedResponse().fit(Y)
>>> est.thresholds_.shape, est.categories_
((6, 3), (1, 2, 3, 4))
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from scipy.special import expit

from evalcert.errors import InputError
from evalcert.irt.base import IRTEstimator
from evalcert.irt.data import validate_responses
from evalcert.irt.estimation.graded_em import graded_em, unpack
from evalcert.irt.estimation.mml_direct import (SLOPE_PRIOR, MarginalData, observed_covariance,
                                                slope_prior_terms)

__all__ = ["GradedResponse"]

_MAX_LEVELS = 30


class GradedResponse(IRTEstimator):
    """Graded response model (marginal ML/MAP).

    Parameters
    ----------
    method : {"mml"}
    slope_prior : float
        Precision ``p`` of the ``log a ~ N(0, 1/p)`` slope prior (default 4, sd 0.5);
        0 = none (pure ML, slopes of either sign; a slope that runs beyond what the
        grid resolves raises :class:`~evalcert.errors.ConvergenceError` naming the item).
    threshold_prior : float
        Precision of the ``N(0, 1/threshold_prior)`` prior on intercepts; 0 = none.
    n_quad, max_se_params, tol, max_iter, verbose, seed : see :class:`~.threepl.ThreePL`.

    Attributes
    ----------
    abilities_, abilities_se_, discriminations_, difficulties_ (mean threshold),
    thresholds_ (items x K-1) and their ``*_se_``, categories_ (the response
    values, in order), loglik_ (marginal), n_parameters_, result_.

    Examples
    --------
    Ratings 1-4 of 300 models on 6 items:

    >>> rng = np.random.default_rng(0)
    >>> theta = rng.normal(size=300)
    >>> cuts = np.array([-1.0, 0.0, 1.0])
    >>> Y = 1 + (theta[:, None, None] + rng.logistic(size=(300, 6, 1)) > cuts).sum(2)
    >>> est = GradedResponse().fit(Y)
    >>> est.result_.converged, est.categories_, est.thresholds_.shape
    (True, (1, 2, 3, 4), (6, 3))
    >>> bool(np.all(np.diff(est.thresholds_, axis=1) > 0))  # ordered thresholds
    True
    """

    model_name = "graded"
    methods = ("mml",)
    kind = "ordinal"

    def __init__(self, method: str = "mml", *, slope_prior: float = SLOPE_PRIOR,
                 threshold_prior: float = 0.01, n_quad: int = 61, max_se_params: int = 400,
                 tol: float = 1e-5, max_iter: int = 3000, verbose: bool = False,
                 standard_errors: bool = True, seed: int = 0):
        super().__init__(method, lam=0.0, anchor_item=None, anchor_model=None, tol=tol,
                         max_iter=max_iter, seed=seed, verbose=verbose,
                         standard_errors=standard_errors)
        self.slope_prior = slope_prior
        self.threshold_prior = threshold_prior
        self.n_quad = n_quad
        self.max_se_params = max_se_params

    # -- data ---------------------------------------------------------------------------------
    def fit(self, Y: Any, mask: np.ndarray | None = None) -> "GradedResponse":
        """Fit to ``Y`` (models x items, integer categories, NaN = missing)."""
        if self.method not in self.methods:
            raise InputError(f"GradedResponse supports method 'mml', got {self.method!r}")
        if not (self.slope_prior >= 0 and self.threshold_prior >= 0):
            raise InputError("slope_prior and threshold_prior must be >= 0")
        index = columns = None
        if hasattr(Y, "columns") and hasattr(Y, "index"):
            index, columns, Y = Y.index, Y.columns, Y.to_numpy()
        try:
            values = np.array(Y, dtype=float)
        except (TypeError, ValueError) as exc:
            raise InputError(f"responses must be numeric categories (NaN = missing): {exc}"
                             ) from None
        finite = values[np.isfinite(values)]
        if np.isinf(values).any() or not np.all(finite == np.round(finite)):
            raise InputError("graded responses must be integer categories (e.g. 1..10), NaN "
                             "for missing; round or bin continuous scores first")
        levels = np.unique(finite)
        if not 2 <= levels.size <= _MAX_LEVELS:
            raise InputError(f"graded responses need 2..{_MAX_LEVELS} distinct categories, "
                             f"found {levels.size}; with 2 use Rasch/2PL, with more bin them")
        scaled = (values - levels[0]) / (levels[-1] - levels[0])
        if index is not None:
            import pandas as pd

            scaled = pd.DataFrame(scaled, index=index, columns=columns)
        data = validate_responses(scaled, mask, kind="unit")
        codes = np.where(data.observed, np.searchsorted(levels, np.nan_to_num(values)), -1)
        self.categories_ = tuple(int(v) for v in levels)
        start = time.perf_counter()
        out = self._fit_codes(codes, levels.size, data.item_names)
        out["identification"] = "theta ~ N(0, 1)"
        self._finish(data, out, time.perf_counter() - start)
        self.n_parameters_ = int(out["n_params"])
        return self

    # -- likelihood ---------------------------------------------------------------------------
    def _intercepts(self, x: np.ndarray, m: int, K: int):
        """Slopes, intercepts (M x K-1), gaps and the slope prior's terms from ``x``."""
        a, da, log_prior, g_prior = slope_prior_terms(x[:m], self.slope_prior)
        _, d, gaps = unpack(x, m, K, self.slope_prior)
        return a, d, gaps, (da, log_prior, g_prior)

    def _objective(self, x: np.ndarray, md: MarginalData, m: int, K: int):
        a, d, gaps, (da, log_prior, g_prior) = self._intercepts(x, m, K)
        z = md.z
        eta = a[:, None, None] * z[None, :, None] + d[:, None, :]            # M x Q x K-1
        S = expit(eta)
        ones, zeros = np.ones(S.shape[:2] + (1,)), np.zeros(S.shape[:2] + (1,))
        Sfull = np.concatenate([ones, S, zeros], axis=2)                      # M x Q x K+1
        P = np.maximum(Sfull[:, :, :-1] - Sfull[:, :, 1:], 1e-300)
        loglik, post, counts = md.evaluate(np.log(P))
        ratio = counts / P                                                   # M x Q x K
        g_eta = S * (1 - S) * (ratio[:, :, 1:] - ratio[:, :, :-1])           # M x Q x K-1
        g_a = np.einsum("mqk,q->m", g_eta, z) * da + g_prior                 # d / d log a
        g_d = g_eta.sum(axis=1)                                              # M x K-1
        value = loglik + log_prior
        if self.threshold_prior:
            value -= 0.5 * self.threshold_prior * np.sum(d ** 2)
            g_d = g_d - self.threshold_prior * d
        tail = np.cumsum(g_d[:, ::-1], axis=1)[:, ::-1]                       # sum_{k>=l}
        g_delta = -gaps * tail[:, 1:]
        self._last = (loglik, post)
        return -value, -np.concatenate([g_a, tail[:, 0], g_delta.ravel()])

    def _fit_codes(self, codes: np.ndarray, K: int, item_names: tuple[str, ...]
                   ) -> dict[str, Any]:
        n, m = codes.shape
        md = MarginalData(codes, K, self.n_quad)
        obs = codes >= 0
        cum = np.array([((codes >= k) & obs).sum(0) for k in range(1, K)]).T   # M x K-1
        share = np.clip((cum + 0.5) / (obs.sum(0)[:, None] + 1.0), 0.01, 0.99)
        d0 = np.log(share / (1 - share))
        d0 = np.minimum.accumulate(d0, axis=1) - np.arange(K - 1) * 1e-2
        delta0 = np.log(np.maximum(-np.diff(d0, axis=1), 1e-2))
        x0 = np.concatenate([np.full(m, 0.0 if self.slope_prior else 1.0), d0[:, 0],
                             delta0.ravel()])
        out = graded_em(codes, K, x0, slope_prior=self.slope_prior,
                        threshold_prior=self.threshold_prior, n_quad=self.n_quad,
                        tol=self.tol, max_iter=self.max_iter, what="graded mml",
                        item_names=tuple(item_names), verbose=self.verbose)
        fun = (lambda v: self._objective(v, md, m, K))
        out["cov"], out["stationarity"] = observed_covariance(
            fun, out["x"], fun(out["x"])[1],
            self.max_se_params if self.standard_errors else -1)
        x = out["x"]
        self._objective(x, md, m, K)
        loglik, post = self._last
        eap, psd = md.posterior_moments(post)
        a, d, gaps, (da, _, _) = self._intercepts(x, m, K)
        b = -d / a[:, None]
        C = np.column_stack([a, b.mean(1), b])
        se = np.full(C.shape, np.nan)
        notes = []
        if out["cov"] is not None:
            scale = np.concatenate([da, np.ones(x.size - m)])     # covariance in a, not log a
            se = self._delta_se(out["cov"] * scale[:, None] * scale[None, :], a, d, gaps, m, K)
        elif self.standard_errors:
            notes.append(f"item SEs skipped: {x.size} parameters > max_se_params "
                         f"{self.max_se_params}")
        if np.any(a < 0):
            notes.append(f"{int((a < 0).sum())} items have negative slopes")
        return {"R": eap[:, None], "C": C, "se_R": psd[:, None], "se_C": se, "loglik": loglik,
                "n_iter": out["n_iter"], "loglik_kind": "marginal",
                "stationarity": out["stationarity"], "n_params": x.size,
                "solver": f"EM with Fisher-scoring M-steps ({self.n_quad}-node grid)",
                "notes": tuple(notes)}

    @staticmethod
    def _delta_se(V: np.ndarray, a, d, gaps, m: int, K: int) -> np.ndarray:
        """SEs of ``(a, mean b, b_1..b_K-1)`` per item by the delta method."""
        se = np.empty((m, K + 1))
        for j in range(m):
            idx = [j, m + j] + [2 * m + j * (K - 2) + l for l in range(K - 2)]
            # d_k as a function of (d1, delta_2..): dd_k/dd1 = 1, dd_k/ddelta_l = -gap_l (l<k)
            Jd = np.zeros((K - 1, K))
            Jd[:, 1] = 1.0
            for k in range(1, K - 1):
                Jd[k:, 2 + k - 1] = -gaps[j, k - 1]
            Jb = np.zeros((K - 1, K))                      # b_k = -d_k / a
            Jb[:, 0] = d[j] / a[j] ** 2
            Jb += -Jd / a[j] * (np.arange(K) > 0)[None, :]
            J = np.vstack([np.eye(1, K), Jb.mean(0, keepdims=True), Jb])
            block = V[np.ix_(idx, idx)]
            se[j] = np.sqrt(np.maximum(np.diag(J @ block @ J.T), 0))
        return se

    def _publish(self, R: np.ndarray, C: np.ndarray) -> dict[str, np.ndarray]:
        return {"abilities": R[:, 0], "discriminations": C[:, 0], "difficulties": C[:, 1],
                "thresholds": C[:, 2:]}

    def predict_proba(self) -> np.ndarray:
        """Category probabilities, shape (models, items, K), at the EAP abilities."""
        self._check_fitted()
        a, b = self.col_params_[:, 0], self.col_params_[:, 2:]
        S = expit(a[None, :, None] * (self.row_params_[:, :1, None] - b[None, :, :]))
        n, m = S.shape[:2]
        full = np.concatenate([np.ones((n, m, 1)), S, np.zeros((n, m, 1))], axis=2)
        return full[:, :, :-1] - full[:, :, 1:]

    def predict_expected(self) -> np.ndarray:
        """Expected response in the data's units (e.g. a judge score), models x items."""
        return self.predict_proba() @ np.asarray(self.categories_, dtype=float)

    def _fit_block(self, Y_new: Any, mask: np.ndarray | None, free: str):
        raise InputError("GradedResponse has no two-stage fit; refit with the new models")
