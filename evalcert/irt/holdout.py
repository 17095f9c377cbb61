"""Generalisation of fitted IRT models: masks, two-stage holdout, CV (Sec. 3.6.2, 3.7).

* :func:`holdout_predict` fits under one mask and predicts the held-out cells.
  Entry-wise and L-masks need one fit (held-out cells are simply unseen).
  Row holdout uses the two-stage procedure of Sec. 3.7.3.1: stage 1 fits the
  training models only (the test models' rows never enter it), stage 2 places
  each test model on the frozen items using only its exposed cells. Column
  holdout is the transpose (Sec. 3.7.3.2).
* :func:`holdout_evaluate` draws the mask (:mod:`evalcert.diagnostics.masks`)
  and reports held-out AUC and log-loss (Sec. 3.7.4).
* :func:`cross_validate` picks a hyper-parameter (``lam``, ``dims``) by K-fold
  entry-wise cross-validation of the held-out log-loss.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, Sequence

import numpy as np

from evalcert.errors import InputError
from evalcert.results import ResultMixin, format_table
from evalcert.irt.base import IRTEstimator
from evalcert.irt.data import validate_responses

__all__ = ["holdout_predict", "holdout_evaluate", "cross_validate", "heldout_auc",
           "HoldoutResult", "CVResult"]

Scheme = Literal["entrywise", "rows", "columns", "l_mask"]


def heldout_auc(y: np.ndarray, score: np.ndarray) -> float:
    """Area under the ROC curve (Mann-Whitney, ties counted half); NaN if one class.

    Examples
    --------
    >>> heldout_auc(np.array([1, 0, 1, 0.0]), np.array([0.9, 0.1, 0.8, 0.3]))  # perfect ranking
    1.0
    """
    from evalcert.diagnostics.metrics import ranking_auc   # the package imports pandas: lazy

    y = np.asarray(y, dtype=bool)
    if y.all() or not y.any():
        return float("nan")
    return ranking_auc(score, y)


def holdout_predict(estimator: IRTEstimator, Y: Any, mask: np.ndarray,
                    scheme: Scheme) -> np.ndarray:
    """Predicted probabilities for every cell, fitted without the ``mask`` cells.

    For ``scheme="rows"`` (``"columns"``), rows (columns) with a held-out
    cell are the test models (items); their predictions come from stage 2.
    Returns a models x items array; only the held-out cells are of interest.

    Examples
    --------
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((20, 15)) < 0.5).astype(float)
    >>> mask = np.zeros(Y.shape, dtype=bool)
    >>> mask[:3, :5] = True  # three test models, five of their cells held out
    >>> P = holdout_predict(Rasch(method="map"), Y, mask, "rows")
    >>> P.shape, bool(((P[mask] > 0) & (P[mask] < 1)).all())
    ((20, 15), True)
    """
    from evalcert.diagnostics.masks import held_out_columns, held_out_rows

    data = validate_responses(Y, None, kind=estimator.kind)
    Yv = data.to_frame()  # the refits' warnings name models and items as Y does
    mask = np.asarray(mask)
    if mask.shape != Yv.shape or mask.dtype != bool:
        raise InputError(f"mask must be a boolean array of shape {Yv.shape}")
    if scheme in ("entrywise", "l_mask"):
        return estimator.clone().fit(Yv, mask=mask).predict_proba()
    if scheme not in ("rows", "columns"):
        raise InputError(f"scheme must be entrywise, rows, columns or l_mask, got {scheme!r}")
    test = held_out_rows(mask) if scheme == "rows" else held_out_columns(mask)
    P = np.full(Yv.shape, np.nan)
    if scheme == "rows":
        stage1 = estimator.clone().fit(Yv.iloc[~test], mask=mask[~test])
        P[~test] = stage1.predict_proba()
        P[test] = stage1.fit_models(Yv.iloc[test], mask=mask[test]).predict_proba()
    else:
        stage1 = estimator.clone()
        if hasattr(stage1, "item_embeddings"):
            stage1.item_embeddings = estimator.item_embeddings[~test]
        stage1.fit(Yv.iloc[:, ~test], mask=mask[:, ~test])
        P[:, ~test] = stage1.predict_proba()
        extra = ({"item_embeddings": estimator.item_embeddings[test]}
                 if hasattr(stage1, "item_embeddings") else {})
        P[:, test] = stage1.fit_items(Yv.iloc[:, test], mask=mask[:, test],
                                      **extra).predict_proba()
    return P


@dataclasses.dataclass(frozen=True)
class HoldoutResult(ResultMixin):
    """Held-out performance of one estimator under one masking scheme.

    Examples
    --------
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((20, 15)) < 0.5).astype(float)
    >>> res = holdout_evaluate(Rasch(method="map"), Y, "entrywise")
    >>> res.scheme, res.n_train_cells + res.n_test_cells
    ('entrywise', 300)
    """

    model: str
    method: str
    scheme: str
    auc: float
    log_loss: float
    n_train_cells: int
    n_test_cells: int

    def summary(self) -> str:
        return format_table([(self.model, self.method, self.scheme, self.auc, self.log_loss,
                              self.n_train_cells, self.n_test_cells)],
                            ["model", "method", "scheme", "AUC", "log-loss", "train", "test"])


def _scores(y: np.ndarray, p: np.ndarray) -> tuple[float, float]:
    ok = np.isfinite(p)
    y, p = y[ok], np.clip(p[ok], 1e-12, 1 - 1e-12)
    return heldout_auc(y > 0.5, p), float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def holdout_evaluate(estimator: IRTEstimator, Y: Any, scheme: Scheme = "entrywise", *,
                     frac: float = 0.2, exposure: float = 0.3,
                     seed: int | np.random.Generator | None = 0) -> HoldoutResult:
    """Draw a ``scheme`` mask, fit (two-stage for rows/columns), score held-out cells.

    Examples
    --------
    >>> from evalcert.irt import Rasch
    >>> rng = np.random.default_rng(0)
    >>> Y = (rng.random((30, 40)) < 0.5).astype(float)
    >>> holdout_evaluate(Rasch(method="map"), Y, "rows").n_test_cells > 0
    True
    """
    from evalcert.diagnostics.masks import (column_holdout_mask, entrywise_mask,
                                            held_out_columns, held_out_rows, l_mask,
                                            row_holdout_mask)

    data = validate_responses(Y, None, kind=estimator.kind)
    obs, shape = data.observed, data.shape
    makers = {"entrywise": lambda: entrywise_mask(shape, frac, seed, obs),
              "rows": lambda: row_holdout_mask(shape, frac, exposure, seed, obs),
              "columns": lambda: column_holdout_mask(shape, frac, exposure, seed, obs),
              "l_mask": lambda: l_mask(shape, frac, frac, seed, obs)}
    if scheme not in makers:
        raise InputError(f"scheme must be one of {sorted(makers)}, got {scheme!r}")
    mask = makers[scheme]()
    P = holdout_predict(estimator, data.to_frame(), mask, scheme)
    auc, loss = _scores(data.values[mask], P[mask])
    train = obs & ~mask
    if scheme == "l_mask":
        train = obs & ~(held_out_rows(mask)[:, None] & held_out_columns(mask)[None, :])
    return HoldoutResult(estimator.model_name, estimator.method, scheme, auc, loss,
                         int(train.sum()), int(mask.sum()))


@dataclasses.dataclass(frozen=True)
class CVResult(ResultMixin):
    """K-fold cross-validation of one hyper-parameter (Sec. 3.6.2).

    Examples
    --------
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((20, 15)) < 0.5).astype(float)
    >>> cv = cross_validate(Rasch(method="map"), Y, "lam", [0.1, 1.0], n_folds=2)
    >>> cv.param, cv.values, cv.n_folds, cv.best in cv.values
    ('lam', (0.1, 1.0), 2, True)
    """

    param: str
    values: tuple[Any, ...]
    log_loss: tuple[float, ...]
    auc: tuple[float, ...]
    best: Any
    n_folds: int

    def to_frame(self) -> Any:
        """One row per candidate value: mean held-out log loss and AUC."""
        import pandas as pd

        return pd.DataFrame({self.param: list(self.values), "log_loss": list(self.log_loss),
                             "auc": list(self.auc)})

    def summary(self) -> str:
        rows = [(v, ll, a, "*" if v == self.best else "")
                for v, ll, a in zip(self.values, self.log_loss, self.auc)]
        return format_table(rows, [self.param, "log-loss", "AUC", "best"])


def cross_validate(estimator: IRTEstimator, Y: Any, param: str, values: Sequence[Any], *,
                   n_folds: int = 5, seed: int | np.random.Generator | None = 0) -> CVResult:
    """Choose ``param`` (e.g. ``"lam"``, ``"dims"``) by entry-wise K-fold CV.

    Every observed cell is assigned to one fold at random; each fold is held
    out in turn and the mean held-out log-loss decides.

    Examples
    --------
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((20, 15)) < 0.5).astype(float)
    >>> cv = cross_validate(Rasch(method="map"), Y, "lam", [0.1, 1.0], n_folds=2)
    >>> len(cv.log_loss), cv.best == cv.values[int(np.argmin(cv.log_loss))]
    (2, True)
    """
    if not hasattr(estimator, param):
        raise InputError(f"{type(estimator).__name__} has no hyper-parameter {param!r}")
    if n_folds < 2 or not values:
        raise InputError("need n_folds >= 2 and at least one value")
    data = validate_responses(Y, None, kind=estimator.kind)
    Yv = data.to_frame()  # the refits' warnings name models and items as Y does
    fold = np.random.default_rng(seed).integers(0, n_folds, size=data.shape)
    losses, aucs = [], []
    for value in values:
        est = estimator.clone()
        setattr(est, param, value)
        P = np.full(data.shape, np.nan)
        for k in range(n_folds):
            held = (fold == k) & data.observed
            P[held] = est.clone().fit(Yv, mask=held).predict_proba()[held]
        auc, loss = _scores(data.values[data.observed], P[data.observed])
        losses.append(loss)
        aucs.append(auc)
    best = values[int(np.argmin(losses))]
    return CVResult(param, tuple(values), tuple(losses), tuple(aucs), best, n_folds)
