"""Scoring new models against frozen item parameters: ML, WLE, MAP and EAP abilities.

With the items of a fitted Rasch, 2PL or 3PL estimator held fixed, a new
model's log-likelihood is ``l(theta) = sum_j y_j log P_j + (1 - y_j) log(1 - P_j)``
over its observed items, and

* ``ml``: the root of ``l'(theta) = 0``; infinite for an all-0 or all-1 model
  (reported as ``-inf``/``+inf`` with a note), SE ``1 / sqrt(I(theta))``;
* ``wle``: Warm's (1989) weighted likelihood, the root of
  ``l'(theta) + J(theta) / (2 I(theta)) = 0`` with
  ``J = sum_j P_j' P_j'' / (P_j (1 - P_j))`` (Warm 1989, Eq. 8); finite for every
  response pattern, bias ``O(1/n^2)``; SE ``1 / sqrt(I(theta))``;
* ``map``: the mode of ``l(theta) + log N(theta; mu, sd^2)``, SE
  ``1 / sqrt(I(theta) + 1/sd^2)``;
* ``eap``: the posterior mean under the same prior and its posterior sd, by
  adaptive Gauss-Hermite quadrature (``n_quad`` nodes at the MAP, scaled by
  its SE; Rabe-Hesketh, Skrondal & Pickles 2005).

Every fitted estimator has the same call as a method:
``est.score(Y_new, method="wle")`` is ``score_models(est, Y_new, "wle")``.

The prior defaults to the fit's ability distribution
(:func:`~.information.ability_prior`). Roots are found on every model at once:
the estimating function is evaluated on a grid, the down-crossing with the
largest criterion is kept (3PL likelihoods can have several) and Fisher scoring,
safeguarded by bisection, refines it to ``1e-12``.

Example
-------
>>> import numpy as np
>>> from evalcert.irt import Rasch
>>> Y = (np.random.default_rng(0).random((200, 20)) < 0.6).astype(float)
>>> est = Rasch(method="cml").fit(Y)
>>> res = score_models(est, Y[:3], method="wle")
>>> res.abilities.shape, bool(np.all(np.isfinite(res.standard_errors)))
((3,), True)
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from numpy.polynomial.hermite_e import hermegauss

from evalcert.errors import ConvergenceError, InputError
from evalcert.results import ResultMixin, format_table
from evalcert.irt.data import validate_responses
from evalcert.irt.information import (ItemParameters, ability_prior, icc_derivatives,
                                              item_parameters)

__all__ = ["ScoreResult", "score_models", "score_responses", "score_abilities",
           "SCORING_METHODS"]

SCORING_METHODS = ("ml", "wle", "map", "eap")
_CELLS = 1 << 22        # grid points x items evaluated per block


@dataclasses.dataclass(frozen=True)
class ScoreResult(ResultMixin):
    """Abilities of new models on a frozen item scale, with standard errors.

    Examples
    --------
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((60, 12)) < 0.5).astype(float)
    >>> est = Rasch(method="mml").fit(Y)
    >>> res = score_models(est, Y[:3])
    >>> res.method, res.model_names, res.item_model, res.n_items_used.tolist()
    ('wle', ('model0', 'model1', 'model2'), 'rasch', [12, 12, 12])
    """

    method: str
    model_names: tuple[str, ...]
    abilities: np.ndarray
    standard_errors: np.ndarray
    n_items_used: np.ndarray
    prior_mean: float
    prior_sd: float
    item_model: str
    notes: tuple[str, ...] = ()

    def summary(self) -> str:
        order = np.argsort(-np.nan_to_num(self.abilities, nan=-np.inf), kind="stable")
        rows = [(k + 1, self.model_names[i], float(self.abilities[i]),
                 float(self.standard_errors[i]), int(self.n_items_used[i]))
                for k, i in enumerate(order)]
        head = (f"{self.method.upper()} abilities of {len(rows)} models on frozen "
                f"{self.item_model} items" + (f" (prior N({self.prior_mean:.3g}, "
                                              f"{self.prior_sd:.3g}^2))"
                                              if self.method in ("map", "eap") else ""))
        return head + "\n" + format_table(rows, ["rank", "model", "ability", "se", "items"]) + \
            "".join(f"\nnote: {n}" for n in self.notes)


def _loglik_terms(theta: np.ndarray, params: ItemParameters, Y: np.ndarray, O: np.ndarray,
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-model ``l``, ``l'``, ``I``, ``J`` at one ability per model (all 1-D)."""
    out = np.zeros((4, theta.size))
    step = max(1, _CELLS // max(params.a.size, 1))
    for lo in range(0, theta.size, step):
        sl = slice(lo, lo + step)
        P, d1, d2 = icc_derivatives(theta[sl], params)
        Y_, O_ = Y[sl], O[sl]
        P = np.clip(P, 1e-300, 1 - 1e-16)
        Q = 1 - P
        out[0, sl] = np.sum(O_ * (Y_ * np.log(P) + (1 - Y_) * np.log(Q)), axis=1)
        out[1, sl] = np.sum(O_ * d1 * (Y_ - P) / (P * Q), axis=1)
        out[2, sl] = np.sum(O_ * d1 ** 2 / (P * Q), axis=1)
        out[3, sl] = np.sum(O_ * d1 * d2 / (P * Q), axis=1)
    return out[0], out[1], out[2], out[3]


def _criterion(method: str, theta: np.ndarray, params, Y, O, mu: float, sd: float):
    """Estimating function, the criterion used to choose among its roots, and the
    Fisher-scoring curvature (``I``, plus ``1/sd^2`` with a prior)."""
    l, g, info, J = _loglik_terms(theta, params, Y, O)
    if method == "ml":
        return g, l, info
    if method == "wle":
        with np.errstate(divide="ignore", invalid="ignore"):
            return g + J / (2 * info), l + 0.5 * np.log(info), info
    prior = -0.5 * ((theta - mu) / sd) ** 2
    return g - (theta - mu) / sd ** 2, l + prior, info + 1 / sd ** 2


def _grid(lo: float, hi: float) -> np.ndarray:
    """Nodes 0.5 apart on ``[lo, hi]``, then geometrically further out (up to +-64)."""
    far = 2.0 ** np.arange(0, 7)
    return np.concatenate([lo - far[::-1], np.arange(lo, hi + 0.25, 0.5), hi + far])


def _solve(method: str, params: ItemParameters, Y: np.ndarray, O: np.ndarray, mu: float,
           sd: float, lo: float, hi: float) -> np.ndarray:
    """Root of the estimating function per model; +-inf when it keeps one sign (ML).

    The down-crossing (+ to -) with the largest criterion is bracketed on a grid,
    then refined by Fisher scoring steps, bisecting whenever a step leaves the bracket.
    """
    n = Y.shape[0]
    grid = _grid(lo, hi)
    G = np.empty((grid.size, n))
    F = np.empty((grid.size, n))
    for k, t in enumerate(grid):
        G[k], F[k], _ = _criterion(method, np.full(n, t), params, Y, O, mu, sd)
    down = (G[:-1] > 0) & (G[1:] < 0)        # strict: g underflows to 0 far out
    score = np.where(down, np.maximum(F[:-1], F[1:]), -np.inf)
    cell = np.argmax(score, axis=0)
    found = down[cell, np.arange(n)]
    left, right = grid[cell].copy(), grid[cell + 1].copy()
    theta = 0.5 * (left + right)
    active = found.copy()
    bisect = np.zeros(n, bool)          # the last step did not halve the bracket: bisect
    for _ in range(200):
        if not active.any():
            break
        idx = np.flatnonzero(active)
        g, _, curv = _criterion(method, theta[idx], params, Y[idx], O[idx], mu, sd)
        pos = g > 0
        lft, rgt = np.where(pos, theta[idx], left[idx]), np.where(pos, right[idx], theta[idx])
        with np.errstate(divide="ignore", invalid="ignore"):
            step = theta[idx] + g / curv
        inside = np.isfinite(step) & (step > lft) & (step < rgt) & ~bisect[idx]
        new = np.where(inside, step, 0.5 * (lft + rgt))
        done = (np.abs(new - theta[idx]) <= 1e-12 * (1 + np.abs(new))) | (rgt - lft <= 1e-12)
        bisect[idx] = (rgt - lft) > 0.5 * (right[idx] - left[idx])
        theta[idx], left[idx], right[idx] = new, lft, rgt
        active[idx[done]] = False
    if active.any():
        raise ConvergenceError(f"{method} scoring: {int(active.sum())} abilities not located to "
                               f"1e-12 in 200 safeguarded steps (bracket width up to "
                               f"{np.max(right[active] - left[active]):.2g})", solver="scoring",
                               status="max_iter")
    # no down-crossing: the estimating function keeps one sign on the grid
    return np.where(found, theta, np.where(G[0] > 0, np.inf, -np.inf))


def score_abilities(params: ItemParameters, Y: np.ndarray, observed: np.ndarray, *,
                    method: str = "wle", prior: tuple[float, float] = (0.0, 1.0),
                    n_quad: int = 41) -> tuple[np.ndarray, np.ndarray]:
    """Abilities and SEs of the rows of ``Y`` (0/1, ``observed`` mask) given ``params``.

    The array-level routine behind :func:`score_models`; items whose
    parameters are not finite must already be unobserved.

    Examples
    --------
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((60, 12)) < 0.5).astype(float)
    >>> est = Rasch(method="mml").fit(Y)
    >>> theta, se = score_abilities(item_parameters(est), Y[:3], np.ones((3, 12), dtype=bool))
    >>> theta.shape, bool(np.all(se > 0))
    ((3,), True)
    >>> Y[:3].sum(1).tolist()  # raw scores
    [4.0, 6.0, 4.0]
    >>> np.allclose(theta[0], theta[2]), bool(theta[1] > theta[0])  # Rasch: by raw score
    (True, True)
    """
    if method not in SCORING_METHODS:
        raise InputError(f"method must be one of {SCORING_METHODS}, got {method!r}")
    mu, sd = float(prior[0]), float(prior[1])
    if not (np.isfinite(mu) and np.isfinite(sd) and sd > 0):
        raise InputError(f"prior must be (mean, sd) with finite mean and sd > 0, got {prior}")
    p = params.take(params.usable)
    Y, O = Y[:, params.usable], observed[:, params.usable].astype(float)
    if p.a.size == 0:
        raise InputError("no usable item parameters to score against")
    b = np.clip(p.b, -20, 20)
    lo, hi = min(b.min(), mu - 6 * sd) - 6.0, max(b.max(), mu + 6 * sd) + 6.0
    theta = _solve("map" if method == "eap" else method, p, Y, O, mu, sd, lo, hi)
    _, _, info, _ = _loglik_terms(np.nan_to_num(theta, posinf=hi, neginf=lo), p, Y, O)
    if method in ("ml", "wle"):
        with np.errstate(divide="ignore"):
            se = np.where(np.isfinite(theta), 1 / np.sqrt(info), np.inf)
        return theta, se
    se = 1 / np.sqrt(info + 1 / sd ** 2)
    if method == "map":
        return theta, se
    z, w = hermegauss(n_quad)
    nodes = theta[:, None] + se[:, None] * z[None, :]          # N x Q
    logpost = np.empty_like(nodes)
    for q in range(n_quad):
        l, _, _, _ = _loglik_terms(nodes[:, q], p, Y, O)
        logpost[:, q] = l - 0.5 * ((nodes[:, q] - mu) / sd) ** 2 + 0.5 * z[q] ** 2
    logpost += np.log(w)[None, :]
    post = np.exp(logpost - logpost.max(axis=1, keepdims=True))
    post /= post.sum(axis=1, keepdims=True)
    eap = np.sum(post * nodes, axis=1)
    psd = np.sqrt(np.maximum(np.sum(post * (nodes - eap[:, None]) ** 2, axis=1), 0))
    return eap, psd


def score_models(estimator: Any, Y_new: Any, method: str = "wle", *,
                 prior: tuple[float, float] | None = None, n_quad: int = 41) -> ScoreResult:
    """Place new models on a fitted estimator's frozen item scale.

    Parameters
    ----------
    estimator : fitted Rasch, TwoPL or ThreePL
    Y_new : array-like or DataFrame, shape (n_new, n_items)
        0/1 responses (NaN = missing). A DataFrame's columns are matched to the
        fitted items by name (items it lacks count as not answered); an array
        must have the fitted items as columns, in order.
    method : {"ml", "wle", "map", "eap"}
    prior : (mean, sd), optional
        Ability prior of ``map``/``eap``; default :func:`~.information.ability_prior`.
    n_quad : int
        Adaptive Gauss-Hermite nodes of ``eap``.

    Returns
    -------
    ScoreResult

    Examples
    --------
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((60, 12)) < 0.5).astype(float)
    >>> est = Rasch(method="mml").fit(Y)
    >>> res = score_models(est, Y[:3], method="eap")  # new models on the frozen items
    >>> res.method, res.abilities.shape, bool(np.all(res.standard_errors > 0))
    ('eap', (3,), True)
    """
    return score_responses(item_parameters(estimator), Y_new, method,
                           prior=ability_prior(estimator) if prior is None else prior,
                           n_quad=n_quad)


def score_responses(params: ItemParameters, Y_new: Any, method: str = "wle", *,
                    prior: tuple[float, float] = (0.0, 1.0), n_quad: int = 41) -> ScoreResult:
    """:func:`score_models` from item parameters (e.g. :func:`evalcert.io.irt_tables.read_item_table`).

    Examples
    --------
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((60, 12)) < 0.5).astype(float)
    >>> est = Rasch(method="mml").fit(Y)
    >>> res = score_responses(item_parameters(est), Y[:3], prior=ability_prior(est))
    >>> res.method, res.abilities.shape
    ('wle', (3,))
    """
    notes = []
    if hasattr(Y_new, "columns"):
        known = set(params.item_names)
        unknown = [str(c) for c in Y_new.columns if str(c) not in known]
        if unknown:
            raise InputError(f"{len(unknown)} items of the new responses are not in the fitted "
                             f"items, e.g. {unknown[:5]}; score only fitted items")
        absent = len(params.item_names) - len(Y_new.columns)
        if absent:
            notes.append(f"{absent} fitted items are absent from the new responses (not "
                         "answered)")
        Y_new = Y_new.set_axis([str(c) for c in Y_new.columns], axis=1).reindex(
            columns=list(params.item_names))
    data = validate_responses(Y_new, kind="binary", allow_empty=True)
    if data.shape[1] != params.a.size:
        raise InputError(f"new data has {data.shape[1]} items, the fit has {params.a.size}; "
                         "columns must be the fitted items in the same order")
    observed = data.observed & params.usable[None, :]
    theta, se = score_abilities(params, data.values, observed, method=method, prior=prior,
                                n_quad=n_quad)
    used = observed.sum(axis=1)
    if (used == 0).any():
        notes.append(f"{int((used == 0).sum())} models answered none of the usable items: "
                     "their score is the prior's" if method in ("map", "eap") else
                     f"{int((used == 0).sum())} models answered none of the usable items")
        if method not in ("map", "eap"):
            theta = np.where(used == 0, np.nan, theta)
            se = np.where(used == 0, np.nan, se)
    inf = int(np.isinf(theta).sum())
    if inf:
        notes.append(f"{inf} models answered all their items right or all wrong: their ML "
                     "ability is infinite (use method='wle', 'map' or 'eap')")
    dropped = int((data.observed & ~params.usable[None, :]).sum())
    if dropped:
        notes.append(f"{dropped} responses to {int((~params.usable).sum())} items the fit "
                     "excluded (all-0/all-1) were not used")
    return ScoreResult(method=method, model_names=data.model_names, abilities=theta,
                       standard_errors=se, n_items_used=used, prior_mean=float(prior[0]),
                       prior_sd=float(prior[1]), item_model=params.model, notes=tuple(notes))
