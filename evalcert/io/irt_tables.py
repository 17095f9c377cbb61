"""Per-model and per-item tables of a fit (estimates with SEs), the ranking, and item files.

:func:`estimate_tables` turns a fitted estimator into two DataFrames: one row
per model (rank, ability, its SE, observed cells and accuracy when the data are
given) and one row per item (every item parameter and its SE; NaN, an empty CSV
cell, for a fit with ``standard_errors=False``). For Rasch, 2PL
and 3PL fits the item table also carries the ability prior (``prior_mean``,
``prior_sd``), so that :func:`read_item_table` gets back everything that
:func:`~.scoring.score_responses` needs to score new models on the frozen items.

Example
-------
>>> import numpy as np
>>> from evalcert.irt import Rasch
>>> Y = (np.random.default_rng(0).random((40, 8)) < 0.5).astype(float)
>>> models, items = estimate_tables(Rasch(method="mml").fit(Y), Y)
>>> list(models.columns)[:4], list(items.columns)[:3]
(['model', 'rank', 'ability', 'ability_se'], ['item', 'difficulty', 'difficulty_se'])
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

from evalcert.errors import InputError
from evalcert.io.outputs import writing
from evalcert.results import format_table
from evalcert.irt.information import ItemParameters, ability_prior

__all__ = ["estimate_tables", "write_estimate_tables", "ranking_text", "read_item_table"]

#: item parameter -> column name in the item table (order of the columns)
_ITEM_COLUMNS = {"difficulties": "difficulty", "discriminations": "discrimination",
                 "guessing": "guessing", "intercepts": "intercept", "loadings": "loading",
                 "item_embeddings": "embedding", "thresholds": "threshold", "upper": "upper"}


def _columns(name: str, values: np.ndarray) -> dict[str, np.ndarray]:
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        return {name: values}
    return {f"{name}_{k}": values[:, k] for k in range(values.shape[1])}


def estimate_tables(estimator: Any, Y: Any = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(models, items)`` DataFrames of a fitted estimator's estimates and SEs.

    Models are sorted by rank (1 = highest ability; multidimensional fits keep
    the data order and rank by the first dimension). With ``Y`` (the fitted
    data), ``n_observed`` and ``accuracy`` (mean response) are added.

    Examples
    --------
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((40, 8)) < 0.5).astype(float)
    >>> models, items = estimate_tables(Rasch(method="map").fit(Y), Y)
    >>> models["rank"].tolist()[:3], len(items), "accuracy" in models.columns
    ([1, 2, 3], 8, True)
    >>> bool(models["ability"].is_monotonic_decreasing)  # sorted by rank
    True
    """
    if not hasattr(estimator, "result_"):
        raise InputError(f"this {type(estimator).__name__} is not fitted yet; call fit(Y) first")
    res = estimator.result_
    params, ses = res.parameters, res.standard_errors
    theta = np.asarray(params["abilities"], dtype=float)
    models: dict[str, Any] = {"model": list(res.model_names)}
    first = theta if theta.ndim == 1 else theta[:, 0]
    order = np.argsort(-np.nan_to_num(first, nan=-np.inf), kind="stable")
    rank = np.empty(first.size, int)
    rank[order] = np.arange(1, first.size + 1)
    models["rank"] = rank
    models.update(_columns("ability", theta))
    if "abilities" in ses:
        models.update(_columns("ability_se", ses["abilities"]))
    if Y is not None:
        values = np.asarray(Y.to_numpy() if hasattr(Y, "to_numpy") else Y, dtype=float)
        if values.shape != (res.n_models, res.n_items):
            raise InputError(f"Y has shape {values.shape}, the fit {res.n_models} x "
                             f"{res.n_items}; pass the fitted matrix")
        seen = np.isfinite(values)
        models["n_observed"] = seen.sum(1)
        mean = np.where(seen, values, 0.0).sum(1) / np.maximum(seen.sum(1), 1)
        models["accuracy" if estimator.kind == "binary" else "mean_response"] = mean
    models["excluded"] = np.isin(res.model_names, res.excluded_models)
    items: dict[str, Any] = {"item": list(res.item_names)}
    for key, column in _ITEM_COLUMNS.items():
        if key in params:
            items.update(_columns(column, params[key]))
            if key in ses:
                items.update(_columns(f"{column}_se", ses[key]))
    items["excluded"] = np.isin(res.item_names, res.excluded_items)
    if res.model in ("rasch", "2pl", "3pl"):
        items["prior_mean"], items["prior_sd"] = ability_prior(estimator)
    model_table = pd.DataFrame(models).iloc[order].reset_index(drop=True)
    return model_table, pd.DataFrame(items)


def write_estimate_tables(estimator: Any, Y: Any, folder: str | os.PathLike
                          ) -> tuple[pd.DataFrame, pd.DataFrame, tuple[str, str]]:
    """Write ``models.csv`` and ``items.csv`` of a fitted estimator into ``folder``.

    The tables are :func:`estimate_tables`'s; :func:`read_item_table` reads ``items.csv``
    back (the pair is the one round trip of this format). Returns the two tables and the
    two paths written. The caller checks the paths first (``evalcert.io.outputs``).

    Examples
    --------
    >>> import tempfile
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(1).random((30, 6)) < 0.5).astype(float)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _, items, paths = write_estimate_tables(Rasch(method="map").fit(Y), Y, tmp)
    ...     params, prior = read_item_table(paths[1])
    >>> params.item_names == tuple(items["item"]), np.allclose(params.b, items["difficulty"])
    (True, True)
    """
    models, items = estimate_tables(estimator, Y)
    paths = (os.path.join(folder, "models.csv"), os.path.join(folder, "items.csv"))
    for frame, path in zip((models, items), paths):   # never through a link (io.outputs)
        with writing(path) as tmp:
            frame.to_csv(tmp, index=False)
    return models, items, paths


def ranking_text(models: pd.DataFrame, limit: int = 30) -> str:
    """The ranking (rank, model, ability, SE, accuracy) as text; long lists show both ends.

    SEs that were not computed (all NaN: ``standard_errors=False``) are left
    out and a last line says so.

    Examples
    --------
    >>> models = pd.DataFrame({"rank": [1, 2], "model": ["a", "b"], "ability": [0.5, -0.5],
    ...                        "ability_se": [0.25, 0.25]})
    >>> print(ranking_text(models))
    rank  model  ability  se
    ----  -----  -------  ------
       1  a       0.5000  0.2500
       2  b      -0.5000  0.2500
    """
    cols = [c for c in ("rank", "model", "ability", "ability_se", "n_observed", "accuracy",
                        "mean_response")
            if c in models.columns]
    if "ability" not in cols:                       # multidimensional: first dimension
        cols[2:2] = [c for c in ("ability_0", "ability_se_0") if c in models.columns]
    no_se = [c for c in cols if c.startswith("ability_se") and models[c].isna().all()]
    cols = [c for c in cols if c not in no_se]
    rows = [tuple(r) for r in models[cols].itertuples(index=False)]
    skipped = 0
    if len(rows) > limit:
        skipped = len(rows) - limit
        rows = rows[:limit // 2] + [("...",) + ("",) * (len(cols) - 1)] + rows[-(limit // 2):]
    text = format_table(rows, [c.replace("ability_se", "se") for c in cols])
    text += f"\n({skipped} models not shown; --out-dir writes all)" if skipped else ""
    return text + ("\n(standard errors not computed: standard_errors=False, --no-se)"
                   if no_se else "")


def read_item_table(path: str | os.PathLike) -> tuple[ItemParameters, tuple[float, float]]:
    """Item parameters and ability prior from an ``items.csv`` written by ``irt fit --out-dir``.

    Columns ``item`` and ``difficulty`` are required; ``discrimination``
    (default 1), ``guessing`` (default 0) and ``prior_mean``/``prior_sd``
    (default 0/1) are optional. Excluded items have empty parameters.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "items.csv"
    ...     _ = path.write_text("item,difficulty\\nq1,-0.5\\nq2,1.0\\n")
    ...     items, prior = read_item_table(path)
    >>> items.model, items.item_names, items.b.tolist(), prior
    ('rasch', ('q1', 'q2'), [-0.5, 1.0], (0.0, 1.0))
    """
    from evalcert.io.tables import read_table

    frame = read_table(path, required=["item", "difficulty"])
    if any(str(col).startswith("loading_") for col in frame.columns):
        raise InputError(f"{path}: the items of a multidimensional fit (loading_* columns: "
                         "m2pl or factor); these scores are one-dimensional: score new models "
                         "in Python with MultidimensionalTwoPL(...).fit(Y).score(Y_new)")
    names = frame["item"].tolist()
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(f"{path}: duplicate item names {dup[:5]}; one row per item")

    def column(name: str, default: float) -> np.ndarray:
        if name not in frame.columns:
            return np.full(len(frame), default)
        text = frame[name].str.strip()
        try:
            return np.array([float(t) if t else np.nan for t in text])
        except ValueError:
            raise InputError(f"{path}: column {name!r} holds non-numbers; is this an item "
                             "file written by `evalcert irt fit --out-dir`?") from None

    a, b, c = column("discrimination", 1.0), column("difficulty", np.nan), column("guessing", 0.0)
    if np.isinf(a).any() or np.isinf(b).any() or ((c < 0) | (c >= 1)).any():
        raise InputError(f"{path}: infinite parameters or guessing outside [0, 1)")
    model = "3pl" if "guessing" in frame.columns else (
        "2pl" if "discrimination" in frame.columns else "rasch")
    mean, sd = column("prior_mean", 0.0), column("prior_sd", 1.0)
    return (ItemParameters(a, b, c, tuple(names), model),
            (float(np.nanmean(mean)), float(np.nanmean(sd))))

