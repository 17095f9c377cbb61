"""The multidimensional 2PL (M2PL) by marginal ML, EAP scoring in K dimensions, and K by BIC.

    P(Y_ij = 1 | theta_i) = sigma(a_j . theta_i + d_j),    theta_i ~ N(0, I_K)

An LLM's ability is rarely one number: knowledge, reasoning and format-following
can rank models differently (tinyBenchmarks fits this model with py-irt, and
scores new models on the K-dimensional theta). :class:`MultidimensionalTwoPL`
estimates the ``K`` slopes ``a_j`` and the intercept ``d_j`` of every item by
marginal ML (:mod:`~.estimation.mml_multidim`: the abilities integrated out on
a product Gauss-Hermite grid, 41 nodes at K=1, 21^2 at K=2, 15^3 at K=3; EM
steps, then L-BFGS with the exact score), with the exploratory identification
mirt uses: the slopes of item ``k`` on dimensions above ``k`` are zero for the
first ``K - 1`` items and ``a_kk > 0``, so a fit has ``J (K + 1) - K (K - 1) / 2``
free parameters. Any rotation of the loadings fits equally well; the
triangular form is a reference position, not a claim about what the
dimensions mean. (On a coarse product grid the *approximate* likelihood does depend
a little on the rotation: at K=2 on 21^2 nodes it moved by up to 0.6 units over
rotations of one fit, and not at all on 61^2; pass a larger ``n_points`` when
log-likelihoods are compared to that precision.) ``K = 1`` is the 2PL of :class:`~.twopl.TwoPL` (same marginal
likelihood, to quadrature error).

Reported per item: ``loadings_`` (J x K slopes), ``intercepts_``, the
multidimensional discrimination ``discriminations_ = |a_j|`` and difficulty
``difficulties_ = -d_j / |a_j|`` (Reckase 2009, MDISC and MDIFF, both
rotation-free). Per model: EAP ``abilities_`` (n x K), posterior sds
``abilities_se_`` and covariances ``ability_cov_`` (n x K x K). No standard
errors of item parameters are computed (a note says so).

:meth:`MultidimensionalTwoPL.score` places new models on frozen items (EAP mean
and covariance; adaptive Gauss-Hermite per model until the moments settle);
:func:`select_dims` fits K = 1, 2, ... and tabulates log-likelihood, AIC and BIC.

Example
-------
>>> rng = np.random.default_rng(0)
>>> A = np.abs(rng.normal(1, 0.3, (10, 2))); d = rng.normal(size=10)
>>> theta = rng.normal(size=(400, 2))
>>> Y = (rng.random((400, 10)) < 1 / (1 + np.exp(-(theta @ A.T + d)))).astype(float)
>>> est = MultidimensionalTwoPL(dims=2, n_points=11).fit(Y)
>>> est.abilities_.shape, est.loadings_.shape, est.n_parameters_
((400, 2), (10, 2), 29)
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

from evalcert.errors import ConvergenceError, InputError
from evalcert.irt.base import IRTEstimator
from evalcert.irt.data import ResponseData, finite_items, observed_cells, validate_responses
from evalcert.irt.estimation.mml_multidim import (DEFAULT_POINTS, SLOPE_LIMIT, m2pl_em,
                                                  posterior_moments)
from evalcert.results import ResultMixin, format_table, list_names

__all__ = ["MultidimensionalTwoPL", "MultidimScoreResult", "DimsSelection", "select_dims"]

_NO_ITEM_SE = "item standard errors are not computed for the multidimensional 2PL"


class MultidimensionalTwoPL(IRTEstimator):
    """Multidimensional 2PL by marginal ML (see the module docstring).

    Parameters
    ----------
    dims : int
        Latent dimensions ``K`` (1-3 on the default grids; 4 with ``n_points`` <= 9).
    method : {"mml"}
    n_points : int, optional
        Gauss-Hermite points per dimension (default 41, 21, 15 for K = 1, 2, 3; mirt
        uses 21).
    tol : float
        Stop when every score (gradient of the marginal log-likelihood) is below tol.
    max_iter : int
        E-steps allowed (EM iterations plus L-BFGS evaluations).
    verbose, standard_errors, seed : as the other estimators (abilities' posterior sds are
        always computed; item SEs never).

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> theta = rng.normal(size=(300, 1)); d = rng.normal(size=8)
    >>> Y = (rng.random((300, 8)) < 1 / (1 + np.exp(-(theta + d)))).astype(float)
    >>> est = MultidimensionalTwoPL(dims=1).fit(Y)
    >>> est.model_name, est.abilities_.shape, est.result_.loglik_kind
    ('m2pl', (300, 1), 'marginal')
    """

    model_name = "m2pl"
    methods = ("mml",)

    def __init__(self, dims: int = 2, method: str = "mml", *, n_points: int | None = None,
                 tol: float = 1e-4, max_iter: int = 2000, verbose: bool = False,
                 standard_errors: bool = True, seed: int = 0):
        super().__init__(method, lam=0.0, anchor_item=None, anchor_model=None, tol=tol,
                         max_iter=max_iter, seed=seed, verbose=verbose,
                         standard_errors=standard_errors)
        if isinstance(dims, bool) or not isinstance(dims, (int, np.integer)) or dims < 1:
            raise InputError(f"dims must be a positive integer, got {dims!r}")
        self.dims = int(dims)
        self.n_points = n_points

    def _row_dim(self) -> int:
        return self.dims

    def _link(self, R: np.ndarray, C: np.ndarray) -> np.ndarray:
        k = self.dims
        return R @ C[:, :k].T + C[:, k][None, :]

    def _publish(self, R: np.ndarray, C: np.ndarray) -> dict[str, np.ndarray]:
        k = self.dims
        A, d = C[:, :k], C[:, k]
        mdisc = np.sqrt(np.sum(A * A, axis=1))
        with np.errstate(divide="ignore", invalid="ignore"):
            mdiff = -d / mdisc
        return {"abilities": R, "loadings": A, "intercepts": d, "discriminations": mdisc,
                "difficulties": mdiff}

    def fit(self, Y: Any, mask: np.ndarray | None = None) -> "MultidimensionalTwoPL":
        """Fit to ``Y`` (models x items, 0/1, NaN = missing); ``mask`` True = held out."""
        super().fit(Y, mask)
        n_items = int(np.isfinite(self.intercepts_).sum())
        k = self.dims
        self.n_parameters_ = n_items * (k + 1) - k * (k - 1) // 2
        self.ability_cov_ = self._cov
        del self._cov
        return self

    def _fit(self, data: ResponseData) -> dict[str, Any]:
        keep_c = finite_items(data)
        sub = data.take(slice(None), keep_c)
        if sub.shape[1] < self.dims:
            raise InputError(f"dims={self.dims} needs at least {self.dims} items with both "
                             f"responses; the data have {sub.shape[1]}: lower --dims")
        out = m2pl_em(sub.values, sub.observed, dims=self.dims, n_points=self.n_points,
                      tol=self.tol, max_iter=self.max_iter)
        A, d = out["A"], out["d"]
        notes = [_NO_ITEM_SE]
        if out["at_bound"].size:
            names = list_names([sub.item_names[j] for j in out["at_bound"]])
            notes.append(f"{out['at_bound'].size} items have a slope at the bound "
                         f"{SLOPE_LIMIT:g} ({names}): their ML slope is infinite (a few models "
                         "split them perfectly, or K is too large); the log-likelihood is the "
                         "value at the bound")
        if not out["converged"]:
            raise ConvergenceError(
                f"m2pl mml (K={self.dims}): not converged after {out['n_iter']} E-steps "
                f"(largest score above tol {self.tol:g}); raise max_iter",
                solver="EM + L-BFGS", status="max_iter")
        starts, cols, y = observed_cells(sub.values, sub.observed)
        mu, cov, _ = posterior_moments(starts, cols, y, A, d, n_points=out["n_points"])
        self._cov = cov
        return {"R": mu, "C": np.column_stack([A, d]),
                "se_R": np.sqrt(np.diagonal(cov, axis1=1, axis2=2)),
                "se_C": np.full((sub.shape[1], self.dims + 1), np.nan),
                "loglik": out["loglik"], "n_iter": out["n_iter"], "loglik_kind": "marginal",
                "keep_rows": np.ones(data.shape[0], bool), "keep_cols": keep_c,
                "solver": (f"EM, then L-BFGS with the exact score, on a {out['n_points']}^"
                           f"{self.dims} = {out['n_nodes']:,}-node Gauss-Hermite grid"),
                "notes": tuple(notes)}

    def _identify(self, R: np.ndarray, C: np.ndarray, data: ResponseData
                  ) -> tuple[np.ndarray, np.ndarray, str]:
        if self.dims == 1:
            return R, C, "theta ~ N(0, 1); slopes' sign: positive sum"
        return R, C, (f"theta ~ N(0, I_{self.dims}); exploratory: the first {self.dims - 1} "
                      "items' slopes above the diagonal fixed at 0, a_kk > 0 (any rotation "
                      "fits equally)")

    def predict_proba(self) -> np.ndarray:
        """``sigma(a_j . theta_i + d_j)`` at the EAP abilities; excluded items get their limit."""
        self._check_fitted()
        P = 1.0 / (1.0 + np.exp(-self._link(self.row_params_, self.col_params_)))
        return np.where(np.isnan(self._col_limit)[None, :], P, self._col_limit[None, :])

    def score(self, Y_new: Any, method: str = "eap", *, prior: Any = None,
              n_quad: int | None = None) -> "MultidimScoreResult":
        """EAP abilities (posterior means, covariances) of new models on the frozen items.

        ``Y_new`` has this fit's items as columns (NaN = not asked). Items the fit
        excluded are ignored. Only ``method="eap"`` and the fit's ``N(0, I)`` prior.

        Examples
        --------
        >>> rng = np.random.default_rng(2)
        >>> theta = rng.normal(size=(300, 2)); A = np.abs(rng.normal(1, .3, (8, 2)))
        >>> Y = (rng.random((300, 8)) < 1 / (1 + np.exp(-(theta @ A.T)))).astype(float)
        >>> est = MultidimensionalTwoPL(dims=2, n_points=11).fit(Y)
        >>> res = est.score(Y[:4])
        >>> res.abilities.shape, res.covariances.shape, res.n_items_used.tolist()
        ((4, 2), (4, 2, 2), [8, 8, 8, 8])
        """
        self._check_fitted()
        if method != "eap":
            raise InputError(f"the multidimensional 2PL scores by method='eap' only, got "
                             f"{method!r}")
        if prior is not None:
            raise InputError("the multidimensional 2PL scores under its N(0, I) prior; "
                             "leave prior=None")
        data = validate_responses(Y_new, None, allow_empty=True)
        m = self.col_params_.shape[0]
        if data.shape[1] != m:
            raise InputError(f"new data have {data.shape[1]} items, the fit has {m}; columns "
                             "must be the fitted items, in order")
        usable = np.isfinite(self.col_params_).all(axis=1)
        observed = data.observed & usable[None, :]
        k = self.dims
        C = np.nan_to_num(self.col_params_)
        starts, cols, y = observed_cells(data.values, observed)
        points = n_quad or self.n_points or DEFAULT_POINTS.get(k, 7)
        mu, cov, passes = posterior_moments(starts, cols, y, C[:, :k], C[:, k],
                                            n_points=int(points))
        return MultidimScoreResult(model_names=tuple(data.model_names), abilities=mu,
                                   covariances=cov,
                                   standard_errors=np.sqrt(np.diagonal(cov, axis1=1, axis2=2)),
                                   n_items_used=np.diff(starts), passes=passes,
                                   item_model=f"m2pl (K={k})")


@dataclasses.dataclass(frozen=True)
class MultidimScoreResult(ResultMixin):
    """EAP abilities of new models in K dimensions on frozen M2PL items.

    ``abilities`` (n x K) posterior means, ``covariances`` (n x K x K),
    ``standard_errors`` (n x K) their square-root diagonals, ``n_items_used``,
    ``passes`` (grid passes each model took: 1 fixed + adaptive re-centrings).

    Examples
    --------
    >>> res = MultidimScoreResult(("m",), np.zeros((1, 2)), np.eye(2)[None], np.ones((1, 2)),
    ...                           np.array([0]), np.array([1]), "m2pl (K=2)")
    >>> res.to_frame().columns.tolist()
    ['model', 'ability_1', 'ability_2', 'se_1', 'se_2', 'n_items_used']
    """

    model_names: tuple[str, ...]
    abilities: np.ndarray
    covariances: np.ndarray
    standard_errors: np.ndarray
    n_items_used: np.ndarray
    passes: np.ndarray
    item_model: str
    method: str = "eap"

    def to_frame(self) -> Any:
        """One row per model: ability and se per dimension, items used."""
        import pandas as pd

        k = self.abilities.shape[1]
        cols: dict[str, Any] = {"model": list(self.model_names)}
        cols.update({f"ability_{j + 1}": self.abilities[:, j] for j in range(k)})
        cols.update({f"se_{j + 1}": self.standard_errors[:, j] for j in range(k)})
        cols["n_items_used"] = self.n_items_used
        return pd.DataFrame(cols)

    def summary(self) -> str:
        k = self.abilities.shape[1]
        rows = [(self.model_names[i], *[float(v) for v in self.abilities[i]],
                 *[float(v) for v in self.standard_errors[i]], int(self.n_items_used[i]))
                for i in range(min(len(self.model_names), 30))]
        head = [f"theta_{j + 1}" for j in range(k)] + [f"se_{j + 1}" for j in range(k)]
        more = len(self.model_names) - len(rows)
        return (f"EAP abilities of {len(self.model_names)} models on frozen {self.item_model} "
                f"items (prior N(0, I))\n" + format_table(rows, ["model", *head, "items"])
                + (f"\n... and {more} more" if more > 0 else ""))


@dataclasses.dataclass(frozen=True)
class DimsSelection(ResultMixin):
    """Log-likelihood, parameters, AIC and BIC of the M2PL at each K; the K each picks.

    Examples
    --------
    >>> sel = DimsSelection(dims=(1, 2), loglik=(-100.0, -95.0), n_parameters=(10, 19),
    ...                     aic=(220.0, 228.0), bic=(240.0, 260.0), n_models=100,
    ...                     best_aic=1, best_bic=1)
    >>> sel.to_frame()["bic"].tolist()
    [240.0, 260.0]
    """

    dims: tuple[int, ...]
    loglik: tuple[float, ...]
    n_parameters: tuple[int, ...]
    aic: tuple[float, ...]
    bic: tuple[float, ...]
    n_models: int
    best_aic: int
    best_bic: int
    seconds: tuple[float, ...] = ()

    def to_frame(self) -> Any:
        """One row per K: loglik, parameters, AIC, BIC."""
        import pandas as pd

        return pd.DataFrame({"dims": self.dims, "loglik": self.loglik,
                             "n_parameters": self.n_parameters, "aic": self.aic,
                             "bic": self.bic})

    def summary(self) -> str:
        rows = list(zip(self.dims, self.loglik, self.n_parameters, self.aic, self.bic))
        return (f"multidimensional 2PL on {self.n_models} models: marginal log-likelihood by "
                "number of dimensions K\n"
                + format_table(rows, ["K", "loglik", "k", "AIC", "BIC"])
                + f"\nlowest BIC: K = {self.best_bic}; lowest AIC: K = {self.best_aic}")


def select_dims(Y: Any, dims: Sequence[int] = (1, 2, 3), *, mask: np.ndarray | None = None,
                **options: Any) -> DimsSelection:
    """Fit the M2PL at each ``K`` in ``dims``; tabulate log-likelihood, AIC and BIC.

    ``AIC = -2 l + 2 k`` and ``BIC = -2 l + k log n`` with ``k = J (K + 1) - K (K - 1) / 2``
    free parameters and ``n`` models (as :func:`~.compare.information_criteria`).
    ``options`` go to :class:`MultidimensionalTwoPL` (``n_points``, ``tol``, ...).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> theta = rng.normal(size=(300, 1)); d = rng.normal(size=8)
    >>> Y = (rng.random((300, 8)) < 1 / (1 + np.exp(-(1.5 * theta + d)))).astype(float)
    >>> select_dims(Y, dims=(1, 2), n_points=11).best_bic
    1
    """
    from evalcert.irt.compare import information_criteria

    dims = tuple(int(k) for k in dims)
    if not dims or min(dims) < 1:
        raise InputError(f"dims must be positive integers, got {dims!r}")
    stats, secs = [], []
    for k in dims:
        est = MultidimensionalTwoPL(dims=k, **options).fit(Y, mask)
        stats.append(information_criteria(est))
        secs.append(est.result_.seconds)
    aic = tuple(s.aic for s in stats)
    bic = tuple(s.bic for s in stats)
    return DimsSelection(dims=dims, loglik=tuple(s.loglik for s in stats),
                         n_parameters=tuple(s.n_parameters for s in stats), aic=aic, bic=bic,
                         n_models=stats[0].n_models, best_aic=dims[int(np.argmin(aic))],
                         best_bic=dims[int(np.argmin(bic))], seconds=tuple(secs))
