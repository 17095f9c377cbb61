"""The 4PL and the 3PLu: an upper asymptote per item (models that slip), by marginal ML.

    P(Y_ij = 1 | theta_i) = c_j + (u_j - c_j) sigma(a_j theta_i + d_j),  b_j = -d_j / a_j

(Barton & Lord 1981). The upper asymptote ``u_j < 1`` is the share of the
strongest models that still fail item ``j``: a wrong or ambiguous answer key,
or an item no model can solve as posed (PSN-IRT and metabench fit it for
that reason). The 4PL estimates both the floor ``c_j`` and ``u_j``; the 3PLu
fixes ``c = 0`` (``guessing=0``). Either asymptote may be fixed
(``guessing=1/4``, ``upper=1`` gives the 3PL of :mod:`~.threepl`) or
estimated per item under a Beta prior (``guessing_prior`` default ``(6, 16)``
as the 3PL's; ``upper_prior`` default ``(16, 6)``, its mirror image: mean 0.73,
mode 0.75; ``None`` = pure ML, where the likelihood is often flat in the
asymptotes). Slopes and intercepts have the 3PL's priors. The criterion

    l(a, d, c, u) + log-priors

is maximised by L-BFGS over ``(log a, d, logit c, logit u)`` with its exact
gradient (:mod:`~.estimation.mml_direct`: ``theta ~ N(0, 1)`` on a fixed grid); with
``n1, n0`` the expected counts of right and wrong answers at each node,
``r = n1 / P - n0 / (1 - P)`` and ``s = sigma(a z + d)``,

    dl/d eta = r (u - c) s (1 - s),   dl/dc = r (1 - s),   dl/du = r s.

Pure-ML slopes are watched on every iterate (:func:`~.estimation.mml_direct.check_slopes`).

Example
-------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> theta, b = rng.normal(size=1000), rng.normal(size=8)
>>> p = 0.9 / (1 + np.exp(b - theta[:, None]))            # 3PLu: u = 0.9, c = 0
>>> Y = (rng.random(p.shape) < p).astype(float)
>>> est = FourPL(guessing=0.0).fit(Y)
>>> est.model_name, bool(np.all(est.guessing_ == 0)), est.upper_.shape
('3plu', True, (8,))
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit

from evalcert.errors import InputError
from evalcert.irt.data import ResponseData, finite_items
from evalcert.irt.estimation.mml_direct import (SLOPE_PRIOR, MarginalData, check_slopes,
                                                maximise, slope_prior_terms)
from evalcert.irt.threepl import ThreePL

__all__ = ["FourPL", "ThreePLu"]

_TINY = 1e-300


class FourPL(ThreePL):
    """4PL / 3PLu estimator (marginal ML / MAP with a floor and an upper asymptote).

    Parameters
    ----------
    guessing : float in [0, 1), optional
        Fix every floor (``0`` = the 3PLu); ``None`` (default) estimates them.
    upper : float in (0, 1], optional
        Fix every upper asymptote; ``None`` (default) estimates them.
    guessing_prior, upper_prior : (alpha, beta) or None
        Beta priors of the estimated asymptotes (defaults ``(6, 16)`` and
        ``(16, 6)``); ``None`` = pure ML.
    slope_prior, intercept_prior, n_quad, max_se_params, tol, max_iter, verbose,
    standard_errors, seed : as :class:`~.threepl.ThreePL`.

    Attributes
    ----------
    As :class:`~.threepl.ThreePL`, plus ``upper_`` and ``upper_se_``; ``model_name``
    is ``"3plu"`` when ``guessing=0``, else ``"4pl"``.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> theta, b = rng.normal(size=800), rng.normal(size=6)
    >>> p = 0.2 + 0.7 / (1 + np.exp(b - theta[:, None]))
    >>> est = FourPL().fit((rng.random(p.shape) < p).astype(float))
    >>> est.model_name, est.upper_.shape, est.result_.converged
    ('4pl', (6,), True)
    """

    model_name = "4pl"

    def __init__(self, method: str = "mml", *, guessing: float | None = None,
                 upper: float | None = None,
                 guessing_prior: tuple[float, float] | None = (6.0, 16.0),
                 upper_prior: tuple[float, float] | None = (16.0, 6.0),
                 slope_prior: float = SLOPE_PRIOR, intercept_prior: float = 0.01,
                 n_quad: int = 61, max_se_params: int = 400, tol: float = 1e-5,
                 max_iter: int = 2000, verbose: bool = False, standard_errors: bool = True,
                 seed: int = 0):
        super().__init__(method, guessing=guessing, guessing_prior=guessing_prior,
                         slope_prior=slope_prior, intercept_prior=intercept_prior,
                         n_quad=n_quad, max_se_params=max_se_params, tol=tol,
                         max_iter=max_iter, verbose=verbose, standard_errors=standard_errors,
                         seed=seed)
        self.upper = upper
        self.upper_prior = upper_prior
        if guessing is not None and guessing == 0:
            self.model_name = "3plu"

    def _check(self) -> None:
        super()._check()
        if self.upper is not None and not 0 < self.upper <= 1:
            raise InputError(f"upper must be in (0, 1] or None, got {self.upper!r}")
        if self.upper is not None and self.guessing is not None and self.upper <= self.guessing:
            raise InputError(f"upper ({self.upper}) must exceed guessing ({self.guessing})")
        if self.upper_prior is not None and (
                len(self.upper_prior) != 2 or min(self.upper_prior) < 1):
            raise InputError(f"upper_prior must be (alpha, beta) with both >= 1, or None; "
                             f"got {self.upper_prior!r}")

    def fit(self, Y: Any, mask: np.ndarray | None = None) -> "FourPL":
        """Fit to ``Y`` (models x items, 0/1, NaN = missing); ``mask`` True = held out."""
        super().fit(Y, mask)
        n_items = int(np.isfinite(self.difficulties_).sum())
        self.n_parameters_ = n_items * (2 + (self.guessing is None) + (self.upper is None))
        return self

    def _asymptotes(self, x: np.ndarray, m: int):
        """``c, u`` and their free parameters' slices (logits) from ``x``."""
        k = 2 * m
        if self.guessing is None:
            c, k = expit(x[k:k + m]), k + m
        else:
            c = np.full(m, float(self.guessing))
        u = expit(x[k:k + m]) if self.upper is None else np.full(m, float(self.upper))
        return c, u

    def _objective(self, x: np.ndarray, md: MarginalData, n_items: int):
        m, z = n_items, md.z
        a, da, log_prior, g_prior = slope_prior_terms(x[:m], self.slope_prior)
        d = x[m:2 * m]
        c, u = self._asymptotes(x, m)
        s = expit(a[:, None] * z[None, :] + d[:, None])                  # M x Q
        span = (u - c)[:, None]
        p1 = np.maximum(c[:, None] + span * s, _TINY)
        p0 = np.maximum((1 - u)[:, None] + span * (1 - s), _TINY)
        logp = np.stack([np.log(p0), np.log(p1)], axis=2)
        loglik, post, counts = md.evaluate(logp)
        r = counts[:, :, 1] / p1 - counts[:, :, 0] / p0
        g_eta = r * span * s * (1 - s)
        grad = [(g_eta @ z) * da + g_prior, g_eta.sum(1) - self.intercept_prior * d]
        value = loglik + log_prior - 0.5 * self.intercept_prior * np.sum(d ** 2)
        for free, v, dv, prior in ((self.guessing is None, c, r * (1 - s), self.guessing_prior),
                                   (self.upper is None, u, r * s, self.upper_prior)):
            if not free:
                continue
            g = dv.sum(1) * v * (1 - v)
            if prior is not None:
                al, be = prior
                value += np.sum((al - 1) * np.log(v) + (be - 1) * np.log1p(-v))
                g = g + (al - 1) * (1 - v) - (be - 1) * v
            grad.append(g)
        self._last = (loglik, post, logp)
        return -value, -np.concatenate(grad)

    def _fit(self, data: ResponseData) -> dict[str, Any]:
        keep_c = finite_items(data)
        sub = data.take(slice(None), keep_c)
        codes = np.where(sub.observed, sub.values, -1).astype(int)
        md = MarginalData(codes, 2, self.n_quad)
        m = sub.shape[1]

        def start(fixed, prior, default):
            if fixed is not None:
                return float(fixed)
            return (prior[0] - 1) / max(sum(prior) - 2, 1) if prior is not None else default
        c0 = start(self.guessing, self.guessing_prior, 0.1)
        u0 = start(self.upper, self.upper_prior, 0.95)
        share = ((sub.values * sub.observed).sum(0) + 0.5) / (sub.observed.sum(0) + 1.0)
        inside = np.clip((share - c0) / (u0 - c0), 0.02, 0.98)
        x0 = [np.full(m, 0.0 if self.slope_prior else 1.0), np.log(inside / (1 - inside))]
        for fixed, v0 in ((self.guessing, c0), (self.upper, u0)):
            if fixed is None:
                x0.append(np.full(m, np.log(v0 / (1 - v0))))
        out = maximise(lambda x: self._objective(x, md, m), np.concatenate(x0), tol=self.tol,
                       max_iter=self.max_iter, what=f"{self.model_name} mml",
                       verbose=self.verbose,
                       max_se_params=self.max_se_params if self.standard_errors else -1,
                       check=None if self.slope_prior else lambda x: check_slopes(
                           x[:m], x[m:2 * m], what=f"{self.model_name} mml",
                           item_names=tuple(sub.item_names),
                           limit=2 / (md.z[1] - md.z[0]), solver="L-BFGS-B"))
        x = out["x"]
        self._objective(x, md, m)
        loglik, post, _ = self._last
        eap, psd = md.posterior_moments(post)
        a, da, _, _ = slope_prior_terms(x[:m], self.slope_prior)
        d = x[m:2 * m]
        c, u = self._asymptotes(x, m)
        b = -d / a
        se = np.full((m, 4), np.nan)
        notes = []
        if out["cov"] is not None:
            scale = np.concatenate([da, np.ones(x.size - m)])
            V = out["cov"] * scale[:, None] * scale[None, :]
            var_a, var_d = np.diag(V)[:m], np.diag(V)[m:2 * m]
            cov_ad = V[np.arange(m), m + np.arange(m)]
            var_b = (var_d + b ** 2 * var_a + 2 * b * cov_ad) / a ** 2
            se[:, 0], se[:, 1] = np.sqrt(np.maximum(var_a, 0)), np.sqrt(np.maximum(var_b, 0))
            k = 2 * m
            for col, fixed, v in ((2, self.guessing, c), (3, self.upper, u)):
                if fixed is None:
                    se[:, col] = v * (1 - v) * np.sqrt(np.maximum(np.diag(V)[k:k + m], 0))
                    k += m
                else:
                    se[:, col] = 0.0
        elif self.standard_errors:
            notes.append(f"item SEs skipped: {x.size} parameters > max_se_params "
                         f"{self.max_se_params}")
        if np.any(u <= c):
            notes.append(f"{int((u <= c).sum())} items have an upper asymptote at or below "
                         "their floor (the curve falls with ability); add the priors")
        return {"R": eap[:, None], "C": np.column_stack([a, b, c, u]), "se_R": psd[:, None],
                "se_C": se, "loglik": loglik, "n_iter": out["n_iter"],
                "loglik_kind": "marginal", "keep_rows": np.ones(data.shape[0], bool),
                "keep_cols": keep_c, "stationarity": out["stationarity"],
                "solver": f"L-BFGS on the marginal likelihood ({self.n_quad}-node grid)",
                "notes": tuple(notes), "extra": {"floor_items": ()}}

    def _publish(self, R: np.ndarray, C: np.ndarray) -> dict[str, np.ndarray]:
        return {"abilities": R[:, 0], "discriminations": C[:, 0], "difficulties": C[:, 1],
                "guessing": C[:, 2], "upper": C[:, 3]}

    def predict_proba(self) -> np.ndarray:
        """``c_j + (u_j - c_j) sigma(a_j (theta_i - b_j))``; excluded items get their ML limit."""
        self._check_fitted()
        a, b, c, u = self.col_params_.T
        P = c[None, :] + (u - c)[None, :] * expit(a[None, :] * (
            self.row_params_[:, :1] - b[None, :]))
        return np.where(np.isnan(self._col_limit)[None, :], P, self._col_limit[None, :])


class ThreePLu(FourPL):
    """The 3PLu: :class:`FourPL` with every floor fixed at 0 (``P = u sigma(a theta + d)``).

    Examples
    --------
    >>> ThreePLu().guessing, ThreePLu().model_name
    (0.0, '3plu')
    """

    model_name = "3plu"

    def __init__(self, method: str = "mml", *, upper: float | None = None,
                 upper_prior: tuple[float, float] | None = (16.0, 6.0),
                 slope_prior: float = SLOPE_PRIOR, intercept_prior: float = 0.01,
                 n_quad: int = 61, max_se_params: int = 400, tol: float = 1e-5,
                 max_iter: int = 2000, verbose: bool = False, standard_errors: bool = True,
                 seed: int = 0):
        super().__init__(method, guessing=0.0, upper=upper, upper_prior=upper_prior,
                         slope_prior=slope_prior, intercept_prior=intercept_prior,
                         n_quad=n_quad, max_se_params=max_se_params, tol=tol,
                         max_iter=max_iter, verbose=verbose, standard_errors=standard_errors,
                         seed=seed)
