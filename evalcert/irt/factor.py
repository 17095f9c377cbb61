"""The logistic factor model ``P(Y_ij = 1) = sigma(U_i . V_j + Z_j)`` (Sec. 3.4.3).

``U_i`` (K abilities of model ``i``), ``V_j`` (K loadings of item ``j``) and
the intercept ``Z_j`` are fitted by one L-BFGS solve of the Bernoulli
likelihood (Sec. 3.4.3.2), with a ridge ``lam/2 (|U|^2 + |V|^2 + |Z|^2)``
for ``map`` (Sec. 3.6.1). ``K = 1`` with ``V = 1`` is the Rasch model.

Identification: ``U V^T`` is invariant under ``U -> U A``, ``V -> V A^-T``; the
fit is reported in the balanced SVD form ``U = P S^(1/2)``, ``V = Q S^(1/2)``
(orthogonal columns ordered by strength, loadings summing to a positive
number per dimension), which keeps predictions and the ridge penalty. No
standard errors are reported: they depend on the rotation.

Example
-------
>>> rng = np.random.default_rng(0)
>>> Y = (rng.random((40, 30)) < 0.5).astype(float)
>>> LogisticFactor(dims=2).fit(Y).loadings_.shape
(30, 2)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evalcert.errors import InputError
from evalcert.irt.base import IRTEstimator
from evalcert.irt.data import ResponseData

__all__ = ["LogisticFactor"]


class LogisticFactor(IRTEstimator):
    """Logistic factor model with ``dims`` latent dimensions.

    Parameters
    ----------
    dims : int
        Number of latent dimensions ``K``.
    method : {"map", "jml"}
        Ridge-penalised (default) or plain joint ML.
    lam : float
        Ridge strength for ``map``; choose it (and ``dims``) by
        :func:`evalcert.irt.holdout.cross_validate`.
    tol, max_iter, seed : tolerance, iteration budget, seed of the random start.
    verbose : show a progress bar of L-BFGS iterations on stderr.

    Attributes
    ----------
    abilities_ (n_models, K), loadings_ (n_items, K), intercepts_,
    difficulties_ (= -intercepts_), loglik_, result_.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> theta, b = rng.normal(size=60), np.linspace(-1, 1, 12)
    >>> Y = (rng.random((60, 12)) < 1 / (1 + np.exp(b - theta[:, None]))).astype(float)
    >>> est = LogisticFactor(dims=2).fit(Y)
    >>> est.result_.converged, est.abilities_.shape, est.loadings_.shape
    (True, (60, 2), (12, 2))
    """

    model_name = "factor"
    methods = ("map", "jml")

    def __init__(self, dims: int = 2, method: str = "map", *, lam: float = 0.1,
                 tol: float = 1e-6, max_iter: int = 5000, seed: int = 0,
                 verbose: bool = False, standard_errors: bool = True):
        super().__init__(method, lam=lam, anchor_item=None, anchor_model=None,
                         tol=tol, max_iter=max_iter, seed=seed, verbose=verbose,
                         standard_errors=standard_errors)
        if not isinstance(dims, (int, np.integer)) or dims < 1:
            raise InputError(f"dims must be a positive int, got {dims!r}")
        self.dims = int(dims)

    @property
    def col_prior_center(self) -> tuple[float, ...]:  # type: ignore[override]
        return (0.0,) * (self.dims + 1)

    def _row_dim(self) -> int:
        return self.dims

    # link: eta = U V^T + Z; C = [V, Z]
    def _link(self, R: np.ndarray, C: np.ndarray) -> np.ndarray:
        return R @ C[:, :-1].T + C[:, -1][None, :]

    def _link_grad(self, R, C, G):
        return G @ C[:, :-1], np.column_stack([G.T @ R, G.sum(0)])

    def _link_sqgrad(self, R, C, W):
        return W @ C[:, :-1] ** 2, np.column_stack([W.T @ R ** 2, W.sum(0)])

    def _publish(self, R: np.ndarray, C: np.ndarray) -> dict[str, np.ndarray]:
        return {"abilities": R, "loadings": C[:, :-1], "intercepts": C[:, -1],
                "difficulties": -C[:, -1]}

    def _init_params(self, data: ResponseData, rng: np.random.Generator):
        col = (data.values.sum(0) + 0.5) / (data.observed.sum(0) + 1)
        V = rng.normal(0.0, 0.1, (data.shape[1], self.dims))
        return (rng.normal(0.0, 0.1, (data.shape[0], self.dims)),
                np.column_stack([V, np.log(col / (1 - col))]), np.zeros(0))

    def _identify(self, R, C, data):
        rows, cols = ~np.isnan(R).any(1), ~np.isnan(C).any(1)
        P, s, Qt = np.linalg.svd(R[rows] @ C[cols, :-1].T, full_matrices=False)
        k = self.dims
        U, V = P[:, :k] * np.sqrt(s[:k]), Qt[:k].T * np.sqrt(s[:k])
        sign = np.where(V.sum(0) < 0, -1.0, 1.0)
        R, C = R.copy(), C.copy()
        R[rows], C[cols, :-1] = U * sign, V * sign
        return R, C, "balanced SVD form (orthogonal dimensions, by strength)"

    def _fit(self, data: ResponseData) -> dict[str, Any]:
        if self.dims > min(data.shape):
            raise InputError(f"dims={self.dims} exceeds the data: {data.shape[0]} models x "
                             f"{data.shape[1]} items support at most min(models, items) = "
                             f"{min(data.shape)} dimensions; lower dims")
        return {**super()._fit(data), "se_R": None, "se_C": None}
