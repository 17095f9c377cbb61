"""Baselines of Table 5 (paper 000, Sec. 6.4) with the ``ClippedLinear`` interface.

Every model takes hyper-parameters in ``__init__``, data in
``fit(S, sample_weight=None)`` and returns the full ``K x J`` matrix of
predicted scores from ``predict()``; ``theta_`` holds one ability per agent
(the additive ``theta`` where the model has one, else the item-averaged
prediction), so the fidelity metrics treat all models alike.

* :class:`RaschLeastSquares`: least squares ``g(p_ij) ~ theta_i - b_j`` on the
  link scale ``g`` (probit or logit of ``p = (1 + clip(s, -0.99, 0.99)) / 2``),
  predictions ``2 g^{-1}(theta_i - b_j) - 1``; ``link="identity"`` is Eq. 7
  without the box.
* :class:`IsotonicCalibrated`: an identity-link fit followed by a weighted
  isotonic (monotone) map from fitted to observed scores.
* :class:`NuclearNormCompletion`: soft-impute for
  ``min 1/2 ||P_Omega(X - S)||_F^2 + tau ||X||_*`` (Mazumder, Hastie, Tibshirani 2010).
* :class:`MeanImputedSVD`: unobserved cells filled with the global mean, then a
  rank-``r`` truncated SVD.
* :class:`UVFactorization`: ``S ~ U V'`` of rank ``r`` by ridge alternating least
  squares on the observed cells, no additive constraint.

Example
-------
>>> import numpy as np
>>> from evalcert.data import ScoreMatrix
>>> S = ScoreMatrix.from_array(np.add.outer([0.5, 0.1, -0.2], [0.0, 0.2, -0.3]))
>>> float(np.abs(RaschLeastSquares("identity").fit(S).predict() - S.values).max()) < 1e-5
True
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import isotonic_regression
from scipy.special import expit, ndtr

from evalcert.data import ScoreMatrix
from evalcert.diagnostics.curl import link_transform
from evalcert.errors import InputError, require_positive

__all__ = ["additive_least_squares", "RaschLeastSquares", "IsotonicCalibrated",
           "NuclearNormCompletion", "MeanImputedSVD", "UVFactorization"]


def _weights(S: ScoreMatrix, sample_weight: np.ndarray | None) -> np.ndarray:
    """Per-cell multiplicities as a K x J array: 1 on observed cells by default, 0 elsewhere.

    ``sample_weight`` is K x J or one weight per observed cell (order of ``S.cells()``).
    """
    if sample_weight is None:
        return S.observed.astype(float)
    w = np.asarray(sample_weight, dtype=float)
    if w.shape == (S.n_observed,) and w.shape != S.shape:
        rows, cols, _ = S.cells()
        w, per_cell = np.zeros(S.shape), w
        w[rows, cols] = per_cell
    if w.shape != S.shape or np.any(w < 0) or np.any(np.isnan(w)):
        raise InputError(f"sample_weight must be a nonnegative array of shape {S.shape} or one "
                         f"weight per observed cell ({S.n_observed},)")
    return np.where(S.observed, w, 0.0)


def additive_least_squares(z: np.ndarray, w: np.ndarray,
                           lam: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """Weighted ridge fit ``z_ij ~ theta_i - b_j`` (Eq. 7 without the box), gauge ``sum b = 0``.

    Solves the ``(K + J)`` normal equations ``(D'WD + lam I) x = D'W z``;
    cells with weight 0 (or NaN ``z``) do not count. The gauge shift leaves
    every ``theta_i - b_j`` unchanged.

    Examples
    --------
    >>> z = np.subtract.outer([0.5, 0.1, -0.2], [0.0, 0.2, -0.3])
    >>> w = np.ones(z.shape)
    >>> w[0, 1] = 0.0  # one cell left out
    >>> theta, b = additive_least_squares(z, w)
    >>> bool(np.allclose(theta[:, None] - b[None, :], z, atol=1e-5)), bool(abs(b.sum()) < 1e-9)
    (True, True)
    """
    K, J = z.shape
    w = np.where(np.isnan(z), 0.0, w)
    wz = w * np.nan_to_num(z)
    A = np.block([[np.diag(w.sum(axis=1)), -w], [-w.T, np.diag(w.sum(axis=0))]])
    A[np.diag_indices_from(A)] += lam
    x = np.linalg.solve(A, np.r_[wz.sum(axis=1), -wz.sum(axis=0)])
    theta, b = x[:K], x[K:]
    shift = b.mean()
    return theta - shift, b - shift


class RaschLeastSquares:
    """Additive least squares on the link scale (Table 5, "Rasch (Probit/Logit)").

    Parameters
    ----------
    link : {"probit", "logit", "identity"}
    lam : float
        Ridge weight of Eq. 7.

    Examples
    --------
    >>> S = ScoreMatrix.from_array(np.add.outer([0.5, 0.1, -0.2], [0.0, 0.2, -0.3]))
    >>> model = RaschLeastSquares("identity").fit(S)
    >>> model.theta_.shape, model.b_.shape, model.predict().shape
    ((3,), (3,), (3, 3))
    """

    def __init__(self, link: str = "logit", lam: float = 1e-6):
        link_transform(np.zeros(1), link)
        self.link = link
        self.lam = lam

    def fit(self, S: ScoreMatrix, sample_weight: np.ndarray | None = None) -> "RaschLeastSquares":
        z = link_transform(S.values, self.link)
        self.theta_, self.b_ = additive_least_squares(z, _weights(S, sample_weight), self.lam)
        return self

    def predict(self) -> np.ndarray:
        eta = np.subtract.outer(self.theta_, self.b_)
        if self.link == "identity":
            return eta
        cdf = ndtr if self.link == "probit" else expit
        return 2.0 * cdf(eta) - 1.0


class IsotonicCalibrated:
    """Identity-link fit plus a monotone calibration (Table 5, "Identity + Isotonic").

    The base model (default ``ClippedLinear(solver="native")``) is fitted, then
    a weighted isotonic regression of observed on fitted scores maps every
    prediction (linear interpolation between fitted levels).

    Examples
    --------
    >>> from evalcert import demo_scores
    >>> from evalcert.diagnostics import holdout_rmse
    >>> S = demo_scores(n_agents=12, n_items=40)
    >>> P = IsotonicCalibrated().fit(S).predict()  # the full agents x items matrix
    >>> P.shape, bool(holdout_rmse(P, S, S.observed) < 0.2)  # RMSE on every observed cell
    ((12, 40), True)
    """

    def __init__(self, base=None):
        self.base = base

    def fit(self, S: ScoreMatrix, sample_weight: np.ndarray | None = None) -> "IsotonicCalibrated":
        if self.base is None:
            from evalcert.solvers import ClippedLinear
            self.base = ClippedLinear(solver="native")
        self.base.fit(S, sample_weight=sample_weight)
        w = _weights(S, sample_weight)
        eta = self.base.predict()
        cells = w > 0
        levels, inverse = np.unique(eta[cells], return_inverse=True)
        wsum = np.bincount(inverse, weights=w[cells])
        ymean = np.bincount(inverse, weights=w[cells] * S.values[cells]) / wsum
        self.levels_ = levels
        self.calibrated_ = isotonic_regression(ymean, weights=wsum).x
        self.theta_ = self.base.theta_
        return self

    def predict(self) -> np.ndarray:
        return np.interp(self.base.predict(), self.levels_, self.calibrated_)


def _cells(name: str, S: ScoreMatrix, sample_weight: np.ndarray | None) -> np.ndarray:
    """Cells used by an unweighted model: weights must be 0/1 (a sub-design)."""
    w = _weights(S, sample_weight)
    if np.any((w != 0) & (w != 1)):
        raise InputError(f"{name} has no weighted form: sample_weight may only be 0 or 1 "
                         "(a sub-design); bootstrap multiplicities need an additive or UV model")
    return w > 0


class NuclearNormCompletion:
    """Soft-impute nuclear-norm completion (Table 5, "Nuclear Norm").

    Iterates ``Z <- SVT_tau(P_Omega(S) + P_Omega^perp(Z))`` (singular values
    soft-thresholded by ``tau``) until the relative change is below ``tol``.

    Examples
    --------
    >>> from evalcert import demo_scores
    >>> from evalcert.diagnostics import holdout_rmse
    >>> S = demo_scores(n_agents=12, n_items=40)
    >>> P = NuclearNormCompletion(tau=1.0).fit(S).predict()  # the full agents x items matrix
    >>> P.shape, bool(holdout_rmse(P, S, S.observed) < 0.2)  # RMSE on every observed cell
    ((12, 40), True)
    """

    def __init__(self, tau: float = 1.0, max_iter: int = 500, tol: float = 1e-6):
        self.tau, self.max_iter, self.tol = tau, max_iter, tol

    def fit(self, S: ScoreMatrix, sample_weight: np.ndarray | None = None) -> "NuclearNormCompletion":
        require_positive("tau", self.tau, allow_zero=True)
        require_positive("tol", self.tol)
        require_positive("max_iter", self.max_iter, integer=True)
        obs = _cells("NuclearNormCompletion", S, sample_weight)
        Z = np.where(obs, S.values, 0.0)
        for self.n_iter_ in range(1, self.max_iter + 1):
            U, sig, Vt = np.linalg.svd(np.where(obs, S.values, Z), full_matrices=False)
            new = (U * np.maximum(sig - self.tau, 0.0)) @ Vt
            change = np.linalg.norm(new - Z) / max(np.linalg.norm(Z), 1e-12)
            Z = new
            if change < self.tol:
                break
        self.completed_ = Z
        self.theta_ = Z.mean(axis=1)
        return self

    def predict(self) -> np.ndarray:
        return self.completed_


class MeanImputedSVD:
    """Rank-``rank`` truncated SVD of the mean-imputed matrix (Table 5, "SVD Baseline").

    Examples
    --------
    >>> from evalcert import demo_scores
    >>> from evalcert.diagnostics import holdout_rmse
    >>> S = demo_scores(n_agents=12, n_items=40)
    >>> P = MeanImputedSVD(rank=2).fit(S).predict()  # the full agents x items matrix
    >>> P.shape, bool(holdout_rmse(P, S, S.observed) < 0.2)  # RMSE on every observed cell
    ((12, 40), True)
    """

    def __init__(self, rank: int = 2):
        self.rank = rank

    def fit(self, S: ScoreMatrix, sample_weight: np.ndarray | None = None) -> "MeanImputedSVD":
        obs = _cells("MeanImputedSVD", S, sample_weight)
        filled = np.where(obs, S.values, S.values[obs].mean())
        U, sig, Vt = np.linalg.svd(filled, full_matrices=False)
        r = self.rank
        self.completed_ = (U[:, :r] * sig[:r]) @ Vt[:r]
        self.theta_ = self.completed_.mean(axis=1)
        return self

    def predict(self) -> np.ndarray:
        return self.completed_


class UVFactorization:
    """``S ~ U V'`` by weighted ridge ALS on observed cells (Table 5, "UV Factorization").

    Parameters
    ----------
    rank : int
    lam : float
        Ridge weight on ``U`` and ``V``.
    n_iter : int
        ALS sweeps.
    seed : int
        Initialisation.

    Examples
    --------
    >>> from evalcert import demo_scores
    >>> from evalcert.diagnostics import holdout_rmse
    >>> S = demo_scores(n_agents=12, n_items=40)
    >>> P = UVFactorization(rank=2).fit(S).predict()  # the full agents x items matrix
    >>> P.shape, bool(holdout_rmse(P, S, S.observed) < 0.2)  # RMSE on every observed cell
    ((12, 40), True)
    """

    def __init__(self, rank: int = 2, lam: float = 0.1, n_iter: int = 100, seed: int = 0):
        self.rank, self.lam, self.n_iter, self.seed = rank, lam, n_iter, seed

    @staticmethod
    def _solve(fixed: np.ndarray, w: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
        gram = np.einsum("kj,jr,js->krs", w, fixed, fixed) + lam * np.eye(fixed.shape[1])
        return np.linalg.solve(gram, ((w * y) @ fixed)[..., None])[..., 0]

    def fit(self, S: ScoreMatrix, sample_weight: np.ndarray | None = None) -> "UVFactorization":
        w = _weights(S, sample_weight)
        y = np.nan_to_num(S.values)
        rng = np.random.default_rng(self.seed)
        V = 0.1 * rng.standard_normal((S.n_items, self.rank))
        for _ in range(self.n_iter):
            U = self._solve(V, w, y, self.lam)
            V = self._solve(U, w.T, y.T, self.lam)
        self.U_, self.V_ = U, V
        self.theta_ = (U @ V.T).mean(axis=1)
        return self

    def predict(self) -> np.ndarray:
        return self.U_ @ self.V_.T
