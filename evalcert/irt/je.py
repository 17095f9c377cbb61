"""JE-IRT: joint embeddings of items and models (paper 001, arXiv 2509.22888).

``P(Y_ij = 1) = sigma(E_Qj . E_Mi / |E_Qj| - |E_Qj|)``: the direction of an item
embedding says what the item measures, its norm how hard it is, and
``E_Qj . E_Mi / |E_Qj|`` is model ``i``'s ability projected on item ``j``.
Item embeddings come from user-supplied base embeddings ``X`` (a numpy array,
one row per item; no encoder is downloaded) through a small trainable adapter
``E_Q = tanh(X W1 + b1) W2 + b2``; model embeddings ``E_M`` are a free table.
Everything is trained by L-BFGS on the Bernoulli likelihood with a ridge
``lam`` (numpy/scipy only). Deviations: tanh instead of the paper's MLP
activation (smooth for L-BFGS), the base embeddings are standardised, and the
norm is smoothed, ``|E_Q| = sqrt(sum E_Q^2 + 0.01)``, because pure-noise items
pull embeddings to the origin where the direction is undefined.

Onboarding a new model (paper: "adding new LLMs") is :meth:`JEIRT.fit_models`:
only its embedding is fitted, with the adapter and all other models frozen.
New items need no responses: :meth:`JEIRT.fit_items` embeds them.

Example
-------
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(25, 8))
>>> Y = (rng.random((12, 25)) < 1 / (1 + np.exp(-X[:, 0]))).astype(float)
>>> # on 12 x 25 responses, 4 dims x 8 hidden units are many more parameters than
>>> # data: with the default lam=0.1, L-BFGS crawls past max_iter on 11 of 25 perturbed
>>> # draws like this one (rounding decides which); a stronger prior converges on all
>>> JEIRT(X, dims=4, hidden=8, lam=1.0).fit(Y).abilities_.shape
(12, 4)
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from evalcert.errors import InputError
from evalcert.irt.base import IRTEstimator, lbfgs
from evalcert.irt.data import ResponseData, validate_responses

__all__ = ["JEIRT"]


class JEIRT(IRTEstimator):
    """JE-IRT estimator.

    Parameters
    ----------
    item_embeddings : ndarray, shape (n_items, D)
        Base embeddings of the items (columns of ``Y``), e.g. from a sentence encoder.
    dims : int
        Dimension ``d`` of the joint embedding space.
    hidden : int
        Width of the adapter's hidden layer.
    lam : float
        Ridge on model embeddings and adapter weights.
    tol, max_iter, seed : tolerance, iteration budget, seed of the random start.
    verbose : show a progress bar of L-BFGS iterations on stderr.

    Attributes
    ----------
    abilities_ (model embeddings ``E_M``, n_models x d), item_embeddings_
    (``E_Q``), difficulties_ (``|E_Q|``), loglik_, result_.

    Examples
    --------
    8 models on 15 items described by 4 features each (say, text embeddings):

    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(15, 4))
    >>> Y = (rng.random((8, 15)) < 1 / (1 + np.exp(-X[:, 0]))).astype(float)
    >>> est = JEIRT(X, dims=2, hidden=4).fit(Y)
    >>> est.abilities_.shape, est.item_embeddings_.shape, est.difficulties_.shape
    ((8, 2), (15, 2), (15,))
    """

    model_name = "je"
    methods = ("map",)

    def __init__(self, item_embeddings: np.ndarray, dims: int = 16, hidden: int = 32, *,
                 lam: float = 0.1, tol: float = 1e-3, max_iter: int = 5000, seed: int = 0,
                 verbose: bool = False, standard_errors: bool = True):
        super().__init__("map", lam=lam, anchor_item=None, anchor_model=None,
                         tol=tol, max_iter=max_iter, seed=seed, verbose=verbose,
                         standard_errors=standard_errors)
        X = np.asarray(item_embeddings, dtype=float)
        if X.ndim != 2 or not np.isfinite(X).all():
            raise InputError("item_embeddings must be a finite 2-D array (n_items x D)")
        self.item_embeddings = X
        self.dims, self.hidden = int(dims), int(hidden)

    @property
    def col_prior_center(self) -> tuple[float, ...]:  # type: ignore[override]
        return (0.0,) * (self.dims)

    def _row_dim(self) -> int:
        return self.dims

    # link: eta_ij = E_Mi . u_j - n_j with n_j = |E_Qj|, u_j = E_Qj / n_j; the norm is
    # smoothed, n = sqrt(|E_Q|^2 + 0.01), so an item embedding may pass through zero
    @staticmethod
    def _norm(C: np.ndarray) -> np.ndarray:
        return np.sqrt(np.sum(C ** 2, axis=1, keepdims=True) + 0.01)

    def _link(self, R: np.ndarray, C: np.ndarray) -> np.ndarray:
        n = self._norm(C)
        return R @ (C / n).T - n.T

    def _link_grad(self, R, C, G):
        n = self._norm(C)
        u = C / n
        GR = G.T @ R
        dC = (GR - np.sum(GR * u, axis=1, keepdims=True) * u) / n - G.sum(0)[:, None] * u
        return G @ u, dC

    def _link_sqgrad(self, R, C, W):
        return W @ (C / self._norm(C)) ** 2, np.zeros_like(C)

    def _publish(self, R: np.ndarray, C: np.ndarray) -> dict[str, np.ndarray]:
        return {"abilities": R, "item_embeddings": C,
                "difficulties": self._norm(C)[:, 0]}

    def _identify(self, R, C, data):
        return R, C, "none (embeddings are defined up to a common rotation)"

    def _adapter(self, w: dict[str, np.ndarray], X: np.ndarray):
        H = np.tanh((X - self._x_mean) / self._x_sd @ w["W1"] + w["b1"])
        return H, H @ w["W2"] + w["b2"]

    def _fit(self, data: ResponseData) -> dict[str, Any]:
        X = self.item_embeddings
        if X.shape[0] != data.shape[1]:
            raise InputError(f"item_embeddings has {X.shape[0]} rows but Y has "
                             f"{data.shape[1]} items")
        self._x_mean, self._x_sd = X.mean(0), np.where(X.std(0) > 0, X.std(0), 1.0)
        Xs = (X - self._x_mean) / self._x_sd
        rng = np.random.default_rng(self.seed)
        D, h, d = X.shape[1], self.hidden, self.dims
        shapes = {"EM": (data.shape[0], d), "W1": (D, h), "b1": (h,), "W2": (h, d),
                  "b2": (d,)}
        init = {"EM": rng.normal(0, 0.1, shapes["EM"]), "W1": rng.normal(0, D ** -0.5, (D, h)),
                "b1": np.zeros(h), "W2": rng.normal(0, h ** -0.5, (h, d)),
                "b2": np.full(d, d ** -0.5)}
        Y, obs = data.values, data.observed.astype(float)

        def unpack(x):
            out, pos = {}, 0
            for k, shp in shapes.items():
                n = int(np.prod(shp))
                out[k], pos = x[pos:pos + n].reshape(shp), pos + n
            return out

        def fun(x):
            w = unpack(x)
            H, E = self._adapter(w, X)
            val, G, _ = self.family.nll(self._link(w["EM"], E), Y, obs, np.zeros(0))
            dEM, dE = self._link_grad(w["EM"], E, G)
            dA = (dE @ w["W2"].T) * (1 - H ** 2)
            grads = {"EM": dEM, "W1": Xs.T @ dA, "b1": dA.sum(0), "W2": H.T @ dE,
                     "b2": dE.sum(0)}
            for k in ("EM", "W1", "W2"):
                val += 0.5 * self.lam * np.sum(w[k] ** 2)
                grads[k] = grads[k] + self.lam * w[k]
            return val, np.concatenate([grads[k].ravel() for k in shapes])

        x, n_iter = lbfgs(fun, np.concatenate([init[k].ravel() for k in shapes]),
                          tol=self.tol, max_iter=self.max_iter, what="je-irt", ftol=1e-8,
                          verbose=self.verbose)
        w = unpack(x)
        self.adapter_ = {k: w[k] for k in ("W1", "b1", "W2", "b2")}
        E = self._adapter(w, X)[1]
        loglik = -self.family.nll(self._link(w["EM"], E), Y, obs, np.zeros(0))[0]
        return {"R": w["EM"], "C": E, "loglik": loglik, "n_iter": n_iter,
                "loglik_kind": "joint (penalised fit)", "solver": "L-BFGS-B"}

    def fit_items(self, Y_new: Any, mask: np.ndarray | None = None, *,
                  item_embeddings: np.ndarray | None = None) -> "JEIRT":
        """Embed new items through the frozen adapter; their responses are not used.

        ``Y_new`` (models x new items) only sets the log-likelihood reported
        for the new items (NaN cells allowed everywhere).
        """
        self._check_fitted()
        if item_embeddings is None:
            raise InputError("JE-IRT places new items from their base embeddings: pass "
                             "item_embeddings (n_new_items x D)")
        X = np.asarray(item_embeddings, dtype=float)
        start = time.perf_counter()
        C = self._adapter(self.adapter_, X)[1]
        data = validate_responses(Y_new, mask, allow_empty=True)
        if data.shape != (self.row_params_.shape[0], X.shape[0]):
            raise InputError(f"Y_new must be {self.row_params_.shape[0]} models x "
                             f"{X.shape[0]} items, got {data.shape}")
        eta = self._link(self.row_params_, C)
        loglik = -self.family.nll(eta, data.values, data.observed.astype(float),
                                  np.zeros(0))[0]
        new = self.clone()
        new.adapter_, new._x_mean, new._x_sd = self.adapter_, self._x_mean, self._x_sd
        new._finish(data, {"R": self.row_params_, "C": C, "loglik": loglik, "n_iter": 0,
                           "loglik_kind": "joint (new items, frozen adapter)",
                           "solver": "none (adapter forward pass)",
                           "identification": self.result_.identification},
                    time.perf_counter() - start)
        return new
