"""Item and person fit: infit and outfit mean squares and their t-standardisation.

For every observed cell with expected value ``E = P`` (the fitted probability)
and variance ``W = P (1 - P)``, the standardised residual is
``z = (x - E) / sqrt(W)`` (Wright & Masters 1982, Ch. 5). For an item (or a
model) over its ``n`` observed cells:

    outfit  u = sum z^2 / n                     q_u^2 = sum C / W^2 / n^2 - 1 / n
    infit   v = sum (x - E)^2 / sum W           q_v^2 = sum (C - W^2) / (sum W)^2

with the fourth central moment ``C = P (1 - P)^4 + (1 - P) P^4``. Both mean
squares have expectation 1; the Wilson-Hilferty cube-root transform gives the
standardised statistics ``t = (MS^(1/3) - 1) (3 / q) + q / 3`` (Wright &
Masters 1982, Eq. 5.4.5), roughly N(0, 1) under the model. Values above 1
(t > 2) flag noise (e.g. a mislabelled item), below 1 (t < -2) overfit.

Cells of models or items the fit excluded (all-0/all-1) carry no information
and are skipped.

Example
-------
>>> import numpy as np
>>> from evalcert.irt import Rasch
>>> Y = (np.random.default_rng(0).random((200, 15)) < 0.5).astype(float)
>>> res = item_fit(Rasch(method="cml").fit(Y), Y)
>>> res.items["outfit"].shape
(15,)
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from evalcert.errors import InputError
from evalcert.results import ResultMixin, format_table
from evalcert.irt.data import validate_responses

__all__ = ["FitResult", "fit_statistics", "item_fit"]

_COLUMNS = ("n", "outfit", "outfit_t", "infit", "infit_t")


def fit_statistics(Y: np.ndarray, P: np.ndarray, observed: np.ndarray,
                   axis: int) -> dict[str, np.ndarray]:
    """Outfit/infit mean squares and t-values along ``axis`` (0: per item, 1: per model).

    ``observed`` marks the cells to use; cells with ``P`` at 0 or 1 are skipped.

    Examples
    --------
    Responses that match ``P`` exactly in expectation: mean squares of 1.

    >>> Y = np.array([[1, 0], [0, 1], [1, 0], [0, 1.0]])
    >>> out = fit_statistics(Y, np.full(Y.shape, 0.5), np.ones(Y.shape, dtype=bool), axis=0)
    >>> out["outfit"].tolist(), out["infit"].tolist(), out["n"].tolist()
    ([1.0, 1.0], [1.0, 1.0], [4, 4])
    """
    O = observed & (P > 0) & (P < 1)
    P = np.where(O, P, 0.5)
    W = P * (1 - P)
    C = P * (1 - P) ** 4 + (1 - P) * P ** 4
    R2 = np.where(O, (Y - P) ** 2, 0.0)
    n = O.sum(axis=axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        outfit = np.sum(np.where(O, R2 / W, 0.0), axis=axis) / n
        q_out = np.sqrt(np.maximum(np.sum(np.where(O, C / W ** 2, 0.0), axis=axis) / n ** 2
                                   - 1 / n, 0))
        sw = np.sum(np.where(O, W, 0.0), axis=axis)
        infit = np.sum(R2, axis=axis) / sw
        q_in = np.sqrt(np.maximum(np.sum(np.where(O, C - W ** 2, 0.0), axis=axis), 0)) / sw
        t_out = (np.cbrt(outfit) - 1) * (3 / q_out) + q_out / 3
        t_in = (np.cbrt(infit) - 1) * (3 / q_in) + q_in / 3
    return {"n": n, "outfit": outfit, "outfit_t": t_out, "infit": infit, "infit_t": t_in}


@dataclasses.dataclass(frozen=True)
class FitResult(ResultMixin):
    """Infit/outfit per item and per model; ``items``/``models`` map column -> array.

    Examples
    --------
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((60, 12)) < 0.5).astype(float)
    >>> res = item_fit(Rasch(method="mml").fit(Y), Y)
    >>> sorted(res.items), res.items["infit"].shape, res.models["outfit"].shape
    (['infit', 'infit_t', 'n', 'outfit', 'outfit_t'], (12,), (60,))
    >>> all(name in res.item_names for name in res.flagged("items"))  # |t| > 2
    True
    """

    model: str
    method: str
    item_names: tuple[str, ...]
    model_names: tuple[str, ...]
    items: dict[str, np.ndarray]
    models: dict[str, np.ndarray]
    threshold: float = 2.0

    def flagged(self, which: str = "items") -> list[str]:
        """Names whose infit or outfit ``|t|`` exceeds ``threshold``."""
        table = self.items if which == "items" else self.models
        names = self.item_names if which == "items" else self.model_names
        bad = (np.abs(np.nan_to_num(table["outfit_t"])) > self.threshold) | (
            np.abs(np.nan_to_num(table["infit_t"])) > self.threshold)
        return [names[k] for k in np.flatnonzero(bad)]

    def summary(self, limit: int = 15) -> str:
        parts = []
        for which, names in (("items", self.item_names), ("models", self.model_names)):
            table = getattr(self, which)
            worst = np.argsort(-np.nan_to_num(np.maximum(np.abs(table["outfit_t"]),
                                                         np.abs(table["infit_t"]))),
                               kind="stable")[:limit]
            rows = [(names[k],) + tuple(table[c][k] for c in _COLUMNS) for k in worst]
            flagged = self.flagged(which)
            parts.append(f"{which}: {len(flagged)} of {len(names)} with |t| > "
                         f"{self.threshold:g} ({self.model} {self.method}); worst "
                         f"{len(rows)}:\n" + format_table(rows, (which[:-1],) + _COLUMNS))
        return "\n\n".join(parts)


def item_fit(estimator: Any, Y: Any, *, threshold: float = 2.0) -> FitResult:
    """Infit and outfit of every item and model of a fitted binary estimator on its data ``Y``.

    ``Y`` must be the matrix the estimator was fitted on (same shape and
    names); expected values come from ``estimator.predict_proba()``.

    Examples
    --------
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((60, 12)) < 0.5).astype(float)
    >>> res = item_fit(Rasch(method="mml").fit(Y), Y, threshold=3.0)
    >>> res.threshold, len(res.item_names), len(res.model_names)
    (3.0, 12, 60)
    """
    if not hasattr(estimator, "result_"):
        raise InputError(f"this {type(estimator).__name__} is not fitted yet; call fit(Y) first")
    if getattr(estimator, "kind", "binary") != "binary":
        raise InputError(f"infit/outfit here are for 0/1 responses; {estimator.model_name} "
                         "fits continuous ones")
    data = validate_responses(Y, kind="binary")
    res = estimator.result_
    if data.shape != (res.n_models, res.n_items):
        raise InputError(f"Y has shape {data.shape}, the fit {res.n_models} x {res.n_items}; "
                         "pass the matrix the estimator was fitted on")
    if hasattr(Y, "columns") and (data.model_names, data.item_names) != (res.model_names,
                                                                          res.item_names):
        raise InputError("Y's model or item names differ from the fitted ones")
    P = np.asarray(estimator.predict_proba(), dtype=float)
    return FitResult(model=res.model, method=res.method, item_names=res.item_names,
                     model_names=res.model_names,
                     items=fit_statistics(data.values, P, data.observed, axis=0),
                     models=fit_statistics(data.values, P, data.observed, axis=1),
                     threshold=threshold)
