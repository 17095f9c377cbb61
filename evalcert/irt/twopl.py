"""The two-parameter logistic model ``P(Y_ij = 1) = sigma(a_j (theta_i - b_j))``.

``jml`` and ``map`` are one L-BFGS solve of the joint likelihood (Sec. 3.2,
Eq. 3.9 with ``theta, b ~ N(0, 1/lam)`` and ``a ~ N(1, 1/lam)``); ``mml`` is EM
with adaptive Gauss-Hermite quadrature under ``theta ~ N(0, 1)`` (Sec. 3.4,
Exercise 2.4).

Slopes of ``mml``: by default a log-normal prior ``log a_j ~ N(0, 1/slope_prior)``
with ``slope_prior = 4`` (sd 0.5, BILOG-MG's default). It keeps every slope
positive, which orients the latent dimension (higher = more items solved), and
keeps items that few models split perfectly (whose ML slope is infinite or
near 0, making ``b = -d / a`` explode) finite. On 100 x 5000 simulated 2PL data
it raises the correlation of difficulties with the truth from 0.53 (sd-2
normal prior) to 0.95. ``slope_prior=0`` is pure marginal ML with slopes of
either sign: the fit is oriented so that abilities correlate positively with
raw accuracy, and warns when slopes come out negative (with few models EM can
find a dimension that is not ability) or when there are fewer than
:data:`FEW_MODELS` models; when a slope passes :data:`~.mml.SLOPE_LIMIT` the
MLE does not exist (the models split that item perfectly) and the fit stops
early with a :class:`ConvergenceError` naming the items (on ChemBench, 22
models, ~100 items past the limit when it stops). Standard errors come from
the observed-data information (Louis's identity, :mod:`~.louis`), not EM's
complete-data one.

With few models and many items the slope prior, not the ``N(0, 1)`` ability
distribution, sets the scale: the prior holds the typical slope near 1, so the
abilities spread as the data need (sd 1.3 on ChemBench, 2.0 on PSN-IRT) and
``result_`` abilities are not standardised.

Identification: location and scale of ``theta`` are free in the joint
likelihood, so ``jml``/``map`` report abilities with mean 0 and sd 1 (or
the anchor's ability/difficulty at 0 and sd 1); ``mml`` is identified by its
``N(0, 1)`` ability distribution (an anchor only shifts it).

Example
-------
>>> rng = np.random.default_rng(0)
>>> Y = (rng.random((300, 20)) < 0.5).astype(float)
>>> TwoPL(method="mml").fit(Y).discriminations_.shape
(20,)
"""

from __future__ import annotations

from typing import Any

import numpy as np

import warnings

from evalcert.errors import ConvergenceError, InputError
from evalcert.irt.base import IRTEstimator
from evalcert.irt.data import ResponseData, finite_items
from evalcert.irt.density import DENSITIES, fit_auto
from evalcert.irt.estimation.mml_em import auto_n_quad, mml_em

__all__ = ["TwoPL", "NegativeSlopeWarning", "FEW_MODELS"]

#: below this many models pure-ML 2PL slopes are barely identified (a warning says so)
FEW_MODELS = 50


class NegativeSlopeWarning(UserWarning):
    """A pure marginal ML 2PL fit (``slope_prior=0``) has negative slopes or few models."""


class TwoPL(IRTEstimator):
    """2PL estimator.

    Parameters
    ----------
    method : {"jml", "map", "mml"}
    lam : float
        Prior precision for ``map``.
    anchor_item, anchor_model : int or str, optional
        Location anchor (difficulty or ability set to 0).
    n_quad : int, optional
        Adaptive quadrature nodes per model (``mml``); ``None`` (default)
        chooses them from the fewest responses any model gave
        (:func:`~.mml.auto_n_quad`: 7 from 1,000, 11 from 100, else 15).
    slope_prior : float
        Precision of the ``log a ~ N(0, 1/slope_prior)`` slope prior of ``mml``
        (default 4, sd 0.5); 0 = pure marginal ML, slopes of either sign.
    quadrature : {"auto", "adaptive", "grid"}
        E-step of ``mml``; see :class:`~.rasch.Rasch` and :mod:`~.mml`.
    density : {"normal", "histogram", "davidian-1", ..., "davidian-4", "auto"}
        Latent ability density of ``mml`` (:mod:`~.density`). Other than
        ``"normal"`` the fit runs on the fixed grid of
        :class:`~.threepl.ThreePL` (``n_quad`` nodes on [-6, 6], default 61;
        accurate up to about a hundred items per model) with the density's
        parameters fitted jointly (Davidian) or by EM (histogram); ``"auto"``
        fits each on that grid and keeps the lowest BIC (``density_choice_``).
        ``latent_density_`` is then the fitted density, which EAP scoring of
        new models uses.
    n_threads : int, optional
        Threads for the blocks of the ``mml`` E-step and standard errors;
        ``None`` (default) uses every CPU (one thread when the work is small).
        The estimates are bit-identical for every value.
    tol, max_iter, seed : tolerance, iteration budget, randomness.
    verbose : show a progress bar of iterations on stderr.

    Attributes
    ----------
    abilities_, discriminations_, difficulties_ and their ``*_se_``,
    loglik_, result_.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> theta, b = rng.normal(size=60), np.linspace(-1, 1, 12)
    >>> Y = (rng.random((60, 12)) < 1 / (1 + np.exp(b - theta[:, None]))).astype(float)
    >>> est = TwoPL(method="mml").fit(Y)
    >>> est.result_.converged, est.discriminations_.shape, bool(np.all(est.discriminations_ > 0))
    (True, (12,), True)
    """

    model_name = "2pl"
    methods = ("jml", "map", "mml")
    col_prior_center = (1.0, 0.0)

    def __init__(self, method: str = "mml", *, lam: float = 1.0,
                 anchor_item: int | str | None = None, anchor_model: int | str | None = None,
                 n_quad: int | None = None, quadrature: str = "auto", slope_prior: float = 4.0,
                 tol: float = 1e-6, max_iter: int = 2000, seed: int = 0,
                 verbose: bool = False, standard_errors: bool = True,
                 n_threads: int | None = None, density: str = "normal"):
        super().__init__(method, lam=lam, anchor_item=anchor_item, anchor_model=anchor_model,
                         tol=tol, max_iter=max_iter, seed=seed, verbose=verbose,
                         standard_errors=standard_errors)
        self.density = density
        self._on_grid = False       # density="auto" fits every candidate on the grid
        self.n_threads = n_threads
        self.n_quad = n_quad
        self.quadrature = quadrature
        self.slope_prior = slope_prior

    # link: eta_ij = a_j (theta_i - b_j); C = [a, b]
    def _link(self, R: np.ndarray, C: np.ndarray) -> np.ndarray:
        return C[:, 0][None, :] * (R[:, :1] - C[:, 1][None, :])

    def _link_grad(self, R, C, G):
        a, b, theta = C[:, 0], C[:, 1], R[:, 0]
        col = G.sum(0)
        return (G @ a)[:, None], np.column_stack([G.T @ theta - b * col, -a * col])

    def _link_sqgrad(self, R, C, W):
        a, b, theta = C[:, 0], C[:, 1], R[:, 0]
        col = W.sum(0)
        h_a = W.T @ theta ** 2 - 2 * b * (W.T @ theta) + b ** 2 * col
        return (W @ a ** 2)[:, None], np.column_stack([h_a, a ** 2 * col])

    def _publish(self, R: np.ndarray, C: np.ndarray) -> dict[str, np.ndarray]:
        return {"abilities": R[:, 0], "discriminations": C[:, 0], "difficulties": C[:, 1]}

    def _init_params(self, data: ResponseData, rng: np.random.Generator):
        obs = data.observed
        row = (data.values.sum(1) + 0.5) / (obs.sum(1) + 1)
        col = (data.values.sum(0) + 0.5) / (obs.sum(0) + 1)
        theta = np.log(row / (1 - row))
        theta = (theta - theta.mean()) / max(theta.std(), 1e-3)
        C0 = np.column_stack([np.ones(col.size), -np.log(col / (1 - col))])
        return theta[:, None], C0, np.zeros(self.family.n_glob)

    def _identify(self, R, C, data):
        theta = R[:, 0]
        scale = 1.0 if self.method == "mml" else float(np.nanstd(theta))
        if not scale > 1e-8 * max(1.0, float(np.nanmax(np.abs(theta)))):
            raise ConvergenceError(
                f"{self.model_name} {self.method}: every kept model has the same ability "
                f"({int(np.isfinite(theta).sum())} models), so the scale of the 2PL (abilities "
                "sd 1) is not identified (e.g. every kept model has the same raw score on the "
                "same items); use the Rasch model or method='mml'",
                solver="L-BFGS-B", status="not_identified")
        anchor = self._anchor_index(data)
        if anchor is None:
            loc = 0.0 if self.method == "mml" else float(np.nanmean(theta))
            how = ("theta ~ N(0, 1)" if self.method == "mml"
                   else "abilities mean 0, sd 1")
        elif anchor[0] == "item":
            loc = float(C[anchor[1], 1])
            how = f"difficulty of {data.item_names[anchor[1]]!r} = 0"
        else:
            loc = float(theta[anchor[1]])
            how = f"ability of {data.model_names[anchor[1]]!r} = 0"
        if anchor is not None and self.method != "mml":
            how += ", abilities sd 1"
        R = (R - loc) / scale
        C = np.column_stack([C[:, 0] * scale, (C[:, 1] - loc) / scale])
        return R, C, how

    def _stage2_lam(self) -> float:
        return 1.0 if self.method == "mml" else super()._stage2_lam()

    def fit(self, Y: Any, mask: np.ndarray | None = None) -> "TwoPL":
        """Fit to ``Y`` (models x items; NaN = missing); ``mask`` True = held out."""
        if self.density not in DENSITIES:
            raise InputError(f"density must be one of {DENSITIES}, got {self.density!r}")
        if self.density != "normal" and self.method != "mml":
            raise InputError(f"density={self.density!r} needs method='mml' (a marginal fit)")
        if self.density == "auto":
            return fit_auto(self, Y, mask)
        super().fit(Y, mask)
        if self._grid_fit():
            self.n_parameters_ = (2 * int(np.isfinite(self.difficulties_).sum())
                                  + self.latent_density_.n_parameters)
        return self

    def _grid_fit(self) -> bool:
        return self.method == "mml" and (self.density != "normal" or self._on_grid)

    def _fit_on_grid(self, data: ResponseData) -> dict[str, Any]:
        """The 2PL as the 3PL engine's model with floor 0 and ceiling 1, and a latent density."""
        from evalcert.irt.threepl import ThreePL

        engine = ThreePL(guessing=0.0, slope_prior=self.slope_prior, intercept_prior=0.0,
                         n_quad=61 if self.n_quad is None else self.n_quad,
                         tol=min(self.tol, 1e-5), max_iter=self.max_iter,
                         verbose=self.verbose, standard_errors=self.standard_errors,
                         density=self.density)
        engine.model_name = "2pl"
        engine._check()
        out = engine._fit(data)
        out["C"], out["se_C"] = out["C"][:, :2], out["se_C"][:, :2]
        out["extra"] = {"latent_density": out["extra"]["latent_density"]}
        return out

    def _fit(self, data: ResponseData) -> dict[str, Any]:
        if self.method != "mml":
            return super()._fit(data)
        if self._grid_fit():
            return self._fit_on_grid(data)
        if not self.slope_prior >= 0:
            raise InputError(f"slope_prior must be >= 0 (0 = pure marginal ML), got "
                             f"{self.slope_prior!r}")
        if self.slope_prior == 0 and data.shape[0] < FEW_MODELS:
            warnings.warn(f"2pl mml with slope_prior=0 on {data.shape[0]} models: with fewer "
                          f"than {FEW_MODELS} models pure-ML slopes are barely identified "
                          "(EM may crawl, slopes may turn negative or diverge); keep the "
                          "default slope prior or use the Rasch model",
                          NegativeSlopeWarning, stacklevel=3)
        keep_c = finite_items(data)
        sub = data.take(slice(None), keep_c)
        n_quad = auto_n_quad(sub.observed) if self.n_quad is None else self.n_quad
        em = mml_em(sub.values, sub.observed, common_slope=False, n_quad=n_quad,
                    tol=self.tol, max_iter=self.max_iter, what="2pl mml",
                    slope_prec=self.slope_prior, quadrature=self.quadrature,
                    verbose=self.verbose, item_names=tuple(sub.item_names),
                    n_threads=self.n_threads, standard_errors=self.standard_errors)
        a, d = em["a"], em["d"]
        notes = [] if em["se_full"] or not self.standard_errors else [
            "item SEs from each item's own block of the observed information (cross-item "
            "terms ignored)"]
        if self.slope_prior == 0:
            hits = (sub.values * sub.observed).sum(1) / sub.observed.sum(1)
            if np.corrcoef(em["eap"], hits)[0, 1] < 0:      # orient: ability ~ accuracy
                a, em["cov_ad"], em["eap"] = -a, -em["cov_ad"], -em["eap"]
            if (a < 0).any():
                msg = (f"{int((a < 0).sum())} of {a.size} slopes are negative (weaker models "
                       "do better on those items); with few models this often means the "
                       "fitted dimension is not ability: keep the default slope prior")
                warnings.warn(msg, NegativeSlopeWarning, stacklevel=3)
                notes.append(msg)
        b = -d / a
        var_b = (em["se_d"] ** 2 + b ** 2 * em["se_a"] ** 2 + 2 * b * em["cov_ad"]) / a ** 2
        return {"R": em["eap"][:, None], "C": np.column_stack([a, b]),
                "se_R": em["psd"][:, None],
                "se_C": np.column_stack([em["se_a"], np.sqrt(np.maximum(var_b, 0))]),
                "loglik": em["loglik"], "n_iter": em["n_iter"], "loglik_kind": "marginal",
                "solver": f"em ({em['quadrature']})", "keep_rows": np.ones(data.shape[0], bool),
                "keep_cols": keep_c, "notes": tuple(notes)}
