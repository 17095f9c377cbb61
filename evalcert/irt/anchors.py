"""tinyBenchmarks: a model's full-benchmark accuracy from a few anchor items.

Polo et al. (2024, "tinyBenchmarks: evaluating LLMs with fewer examples")
evaluate a new model on ``n`` anchor items only and estimate its accuracy on
the whole benchmark. With item parameters calibrated on earlier models (a
Rasch or 2PL fit), a new model's ability is scored from its anchor responses
(:mod:`~.scoring`, EAP by default) and its accuracy over the items it would
face is estimated by the IRT estimator

    acc_hat_i = (1 / |J_i|) [ sum_{j in anchors} y_ij + sum_{j not anchor} P_j(theta_hat_i) ],

beside the plain (weighted) mean of its anchor responses. Anchors are chosen

* ``information``: for ``k = 1..n`` the still unchosen item with the largest
  Fisher information ``I_j(theta_k)`` at the ``(k - 1/2) / n`` quantile of the
  calibration abilities, so the anchors measure well across the population;
* ``cluster``: k-means (:func:`scipy.cluster.vq.kmeans2`, seeded) of the items'
  response vectors over the calibration models; the item nearest each centre
  is an anchor weighted by its cluster's size (the paper's anchor points);
* ``random``: a uniform sample, the baseline.

:func:`evaluate_anchors` splits the models (seeded), calibrates on the rest,
and reports the error of both estimates on the held-out models' true accuracy.

Example
-------
>>> import numpy as np
>>> from evalcert.irt import Rasch
>>> rng = np.random.default_rng(0)
>>> theta, b = rng.normal(size=120), rng.normal(size=200)
>>> Y = (rng.random((120, 200)) < 1 / (1 + np.exp(b - theta[:, None]))).astype(float)
>>> res = evaluate_anchors(Rasch(method="mml"), Y, n_anchors=20, seed=0)
>>> res.mae["irt"] < 0.1
True
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from evalcert.errors import InputError
from evalcert.results import ResultMixin, format_table
from evalcert.irt.data import validate_responses
from evalcert.irt.information import (ItemParameters, ability_prior, icc,
                                              item_information, item_parameters)
from evalcert.irt.scoring import score_abilities

__all__ = ["AnchorResult", "select_anchors", "estimate_accuracy", "evaluate_anchors",
           "information_anchors", "SELECTIONS"]

SELECTIONS = ("information", "cluster", "random")


def select_anchors(estimator: Any, Y: Any, n_anchors: int, selection: str = "information", *,
                   seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Indices of ``n_anchors`` anchor items and their weights (summing to 1).

    ``Y`` is the calibration matrix the estimator was fitted on (used by
    ``cluster``); only items with finite parameters are eligible.

    Examples
    --------
    >>> from evalcert.irt import Rasch
    >>> rng = np.random.default_rng(0)
    >>> theta, b = rng.normal(size=60), np.linspace(-1, 1, 12)
    >>> Y = (rng.random((60, 12)) < 1 / (1 + np.exp(b - theta[:, None]))).astype(float)
    >>> est = Rasch(method="mml").fit(Y)
    >>> anchors, weights = select_anchors(est, Y, 4)  # the most informative items
    >>> len(anchors), weights.tolist()
    (4, [0.25, 0.25, 0.25, 0.25])
    """
    if selection not in SELECTIONS:
        raise InputError(f"selection must be one of {SELECTIONS}, got {selection!r}")
    params = item_parameters(estimator)
    usable = np.flatnonzero(params.usable)
    if not 1 <= n_anchors < usable.size:
        raise InputError(f"n_anchors must be in 1..{usable.size - 1} (items with finite "
                         f"parameters), got {n_anchors}")
    rng = np.random.default_rng(seed)
    if selection == "random":
        chosen = np.sort(rng.choice(usable, n_anchors, replace=False))
        return chosen, np.full(n_anchors, 1 / n_anchors)
    if selection == "information":
        theta = np.asarray(estimator.abilities_, dtype=float)
        theta = theta[np.isfinite(theta)]
        targets = np.quantile(theta, (np.arange(n_anchors) + 0.5) / n_anchors)
        chosen = usable[information_anchors(params.take(usable), targets)]
        return np.sort(chosen), np.full(n_anchors, 1 / n_anchors)
    from scipy.cluster.vq import kmeans2

    data = validate_responses(Y, kind="binary")
    obs = data.observed[:, usable]
    X = np.where(obs, data.values[:, usable], np.nan).T                  # items x models
    fill = np.nanmean(X, axis=0)
    X = np.where(np.isnan(X), np.where(np.isnan(fill), 0.5, fill)[None, :], X)
    centres, label = kmeans2(X, n_anchors, minit="++", seed=rng)
    chosen, weights = [], []
    for k in range(n_anchors):
        members = np.flatnonzero(label == k)
        if members.size == 0:                       # an empty cluster: no anchor for it
            continue
        near = members[np.argmin(((X[members] - centres[k]) ** 2).sum(1))]
        chosen.append(int(usable[near]))
        weights.append(members.size / usable.size)
    order = np.argsort(chosen)
    return np.array(chosen)[order], np.array(weights)[order]


def information_anchors(params: ItemParameters, targets: np.ndarray) -> np.ndarray:
    """For each target ability in turn, the unchosen item most informative there.

    Examples
    --------
    >>> p = ItemParameters(np.ones(5), np.linspace(-2, 2, 5), np.zeros(5),
    ...                    tuple("abcde"), "rasch")
    >>> information_anchors(p, np.array([-2.0, 2.0, 2.0])).tolist()
    [0, 4, 3]
    """
    info = item_information(np.asarray(targets, float), params)
    free = np.ones(params.a.size, bool)
    chosen = []
    for k in range(len(targets)):
        j = int(np.argmax(np.where(free, info[k], -np.inf)))
        free[j] = False
        chosen.append(j)
    return np.array(chosen, dtype=np.int64)


def estimate_accuracy(params: ItemParameters, prior: tuple[float, float], Y: np.ndarray,
                      observed: np.ndarray, anchors: np.ndarray, weights: np.ndarray, *,
                      scoring: str = "eap", fallback: np.ndarray | None = None
                      ) -> dict[str, np.ndarray]:
    """IRT and anchor-mean accuracy estimates of models answering only ``anchors``.

    Accuracy is over each model's ``observed`` items; items without finite
    parameters are predicted by ``fallback`` (their calibration accuracy).

    Examples
    --------
    >>> from evalcert.irt import Rasch
    >>> rng = np.random.default_rng(0)
    >>> theta, b = rng.normal(size=60), np.linspace(-1, 1, 12)
    >>> Y = (rng.random((60, 12)) < 1 / (1 + np.exp(b - theta[:, None]))).astype(float)
    >>> est = Rasch(method="mml").fit(Y)
    >>> anchors, weights = select_anchors(est, Y, 4)
    >>> out = estimate_accuracy(item_parameters(est), ability_prior(est), Y,
    ...                         np.ones(Y.shape, dtype=bool), anchors, weights)
    >>> sorted(out), out["irt"].shape
    (['abilities', 'anchor_mean', 'irt', 'se'], (60,))
    """
    seen = np.zeros_like(observed)
    seen[:, anchors] = observed[:, anchors]
    theta, se = score_abilities(params, Y, seen & params.usable[None, :], method=scoring,
                                prior=prior)
    P = icc(np.nan_to_num(theta, posinf=50, neginf=-50), params)
    if fallback is not None:
        P = np.where(params.usable[None, :], P, fallback[None, :])
    P = np.where(seen, Y, P)
    irt = np.sum(np.where(observed, P, 0.0), axis=1) / observed.sum(1)
    w = np.where(seen[:, anchors], weights[None, :], 0.0)
    with np.errstate(invalid="ignore"):
        mean = np.sum(w * Y[:, anchors], axis=1) / w.sum(1)
    return {"irt": irt, "anchor_mean": mean, "abilities": theta, "se": se}


@dataclasses.dataclass(frozen=True)
class AnchorResult(ResultMixin):
    """Held-out error of full-benchmark accuracy estimated from anchor items.

    Examples
    --------
    >>> from evalcert.irt import Rasch
    >>> rng = np.random.default_rng(0)
    >>> theta, b = rng.normal(size=120), rng.normal(size=200)
    >>> Y = (rng.random((120, 200)) < 1 / (1 + np.exp(b - theta[:, None]))).astype(float)
    >>> res = evaluate_anchors(Rasch(method="mml"), Y, n_anchors=20, seed=0)
    >>> res.n_anchors, res.n_items, res.selection, res.scoring, len(res.test_models)
    (20, 200, 'information', 'eap', 24)
    >>> sorted(res.mae), bool(res.mae["irt"] < 0.1)
    (['anchor_mean', 'irt'], True)
    """

    model: str
    method: str
    selection: str
    scoring: str
    n_anchors: int
    n_items: int
    anchors: tuple[str, ...]
    weights: np.ndarray
    test_models: tuple[str, ...]
    true_accuracy: np.ndarray
    estimates: dict[str, np.ndarray]
    mae: dict[str, float]
    rmse: dict[str, float]
    max_error: dict[str, float]
    n_train: int
    seed: int

    def to_frame(self) -> Any:
        """One row per held-out model: its true accuracy and each estimate of it."""
        import pandas as pd

        return pd.DataFrame({"model": list(self.test_models), "true_accuracy": self.true_accuracy,
                             **{k: np.asarray(v) for k, v in self.estimates.items()}})

    def summary(self) -> str:
        head = (f"{self.n_anchors} of {self.n_items} items as anchors ({self.selection}), "
                f"{self.model} {self.method} calibrated on {self.n_train} models, "
                f"{self.scoring.upper()} abilities; error on {len(self.test_models)} held-out "
                f"models (seed {self.seed}):")
        rows = [(k, self.mae[k], self.rmse[k], self.max_error[k]) for k in self.mae]
        text = head + "\n" + format_table(rows, ["estimate", "MAE", "RMSE", "max |error|"])
        order = np.argsort(-self.true_accuracy, kind="stable")[:20]
        per = [(self.test_models[i], self.true_accuracy[i], self.estimates["irt"][i],
                self.estimates["anchor_mean"][i]) for i in order]
        return text + "\n\n" + format_table(per, ["held-out model", "accuracy", "irt",
                                                  "anchor mean"])


def evaluate_anchors(estimator: Any, Y: Any, n_anchors: int = 30,
                     selection: str = "information", *, test_frac: float = 0.2,
                     scoring: str = "eap", seed: int = 0) -> AnchorResult:
    """Calibrate on some models, choose anchors, estimate the others' accuracy from them.

    Parameters
    ----------
    estimator : unfitted Rasch or TwoPL (cloned, fitted on the calibration models)
    Y : 0/1 responses, models x items (NaN = missing)
    n_anchors, selection : see :func:`select_anchors`
    test_frac : share of models held out (at least one, at least two kept)
    scoring : ``eap``, ``map`` or ``wle`` (see :mod:`~.scoring`)
    seed : split, k-means and random anchors

    Examples
    --------
    >>> from evalcert.irt import Rasch
    >>> rng = np.random.default_rng(0)
    >>> theta, b = rng.normal(size=60), np.linspace(-1, 1, 12)
    >>> Y = (rng.random((60, 12)) < 1 / (1 + np.exp(b - theta[:, None]))).astype(float)
    >>> res = evaluate_anchors(Rasch(method="mml"), Y, n_anchors=4, selection="random")
    >>> res.n_anchors, res.selection, len(res.test_models), res.true_accuracy.shape
    (4, 'random', 12, (12,))
    """
    if getattr(estimator, "model_name", "") not in ("rasch", "2pl", "3pl"):
        raise InputError(f"anchors need a rasch, 2pl or 3pl estimator (item curves to predict "
                         f"from), got {getattr(estimator, 'model_name', type(estimator))!r}")
    if not 0 < test_frac < 1:
        raise InputError(f"test_frac must be in (0, 1), got {test_frac}")
    if scoring not in ("eap", "map", "wle"):
        raise InputError(f"scoring must be 'eap', 'map' or 'wle', got {scoring!r} (ML is "
                         "infinite for a model that gets every anchor right)")
    data = validate_responses(Y, kind="binary")
    n = data.shape[0]
    n_test = max(1, int(round(test_frac * n)))
    if n - n_test < 2:
        raise InputError(f"{n} models leave fewer than 2 to calibrate on with test_frac "
                         f"{test_frac}; give more models or a smaller test_frac")
    rng = np.random.default_rng(seed)
    test = np.zeros(n, bool)
    test[rng.choice(n, n_test, replace=False)] = True
    train = data.take(~test)
    keep = train.observed.any(axis=0)
    if not keep.all():
        raise InputError(f"{int((~keep).sum())} items have no response among the "
                         "calibration models; drop them or change the seed")
    frame_train = train.to_frame()  # warnings name models and items as Y does
    fit = estimator.clone().fit(frame_train)
    anchors, weights = select_anchors(fit, frame_train, n_anchors, selection, seed=seed)
    params = item_parameters(fit)
    ones = (train.values * train.observed).sum(0)
    fallback = ones / train.observed.sum(0)
    test_obs = data.observed[test]
    est = estimate_accuracy(params, ability_prior(fit), data.values[test], test_obs, anchors,
                            weights, scoring=scoring, fallback=fallback)
    truth = (data.values[test] * test_obs).sum(1) / test_obs.sum(1)
    estimates = {"irt": est["irt"], "anchor_mean": est["anchor_mean"]}
    err = {k: v - truth for k, v in estimates.items()}
    return AnchorResult(
        model=fit.model_name, method=fit.method, selection=selection, scoring=scoring,
        n_anchors=int(anchors.size), n_items=data.shape[1],
        anchors=tuple(data.item_names[j] for j in anchors), weights=weights,
        test_models=tuple(np.asarray(data.model_names, object)[test]),
        true_accuracy=truth, estimates=estimates,
        mae={k: float(np.nanmean(np.abs(e))) for k, e in err.items()},
        rmse={k: float(np.sqrt(np.nanmean(e ** 2))) for k, e in err.items()},
        max_error={k: float(np.nanmax(np.abs(e))) for k, e in err.items()},
        n_train=int((~test).sum()), seed=seed)
