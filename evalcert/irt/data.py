"""Validation of response matrices for the IRT estimators (done once, up front).

A response matrix is models x items: ``0``/``1`` (binary IRT) or values in
``[0, 1]`` (Beta-IRT), ``NaN`` = missing. A numpy array, a pandas DataFrame
(whose index and columns become model and item names) or an
:class:`evalcert.data.ScoreMatrix` (its observed ``cells()``, ``agents`` and
``items``) is accepted; the dense working arrays are checked against the
available memory before any fit. A ``mask``
(boolean, ``True`` = held out, as returned by :mod:`evalcert.diagnostics.masks`)
hides cells from the fit without touching the data.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import warnings
from typing import Any, Literal

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from evalcert.errors import ConnectivityError, InputError

__all__ = ["ResponseData", "ExtremeResponseWarning", "validate_responses", "extreme_lines",
           "finite_items", "require_finite_jml", "observed_cells"]


class ExtremeResponseWarning(UserWarning):
    """Rows or columns are all 0 or all 1: their ML estimates are infinite."""


@dataclasses.dataclass(frozen=True)
class ResponseData:
    """A validated response matrix.

    Attributes
    ----------
    values : ndarray of float, shape (n_models, n_items)
        Responses; cells that are missing or held out hold ``0.0``.
    observed : ndarray of bool
        ``True`` where the cell is present and not held out.
    model_names, item_names : tuple of str

    Examples
    --------
    >>> data = validate_responses(np.array([[1, 0, np.nan], [0, 1, 1.0]]))
    >>> data.model_names, data.values[0].tolist()
    (('model0', 'model1'), [1.0, 0.0, 0.0])
    >>> data.take(cols=np.array([0, 1])).shape
    (2, 2)
    >>> data.to_frame().columns.tolist()
    ['item0', 'item1', 'item2']
    """

    values: np.ndarray
    observed: np.ndarray
    model_names: tuple[str, ...]
    item_names: tuple[str, ...]

    @property
    def shape(self) -> tuple[int, int]:
        return self.values.shape  # type: ignore[return-value]

    def take(self, rows: np.ndarray | slice = slice(None),
             cols: np.ndarray | slice = slice(None)) -> "ResponseData":
        """Sub-matrix with the given rows and columns (boolean or integer index)."""
        names_m = np.asarray(self.model_names, dtype=object)[rows]
        names_i = np.asarray(self.item_names, dtype=object)[cols]
        return ResponseData(self.values[rows][:, cols], self.observed[rows][:, cols],
                            tuple(names_m), tuple(names_i))

    def to_frame(self) -> Any:
        """The responses as a DataFrame (NaN where unobserved) that keeps the file's names,
        for a refit whose warnings and errors must name models and items as the file does."""
        import pandas as pd
        return pd.DataFrame(np.where(self.observed, self.values, np.nan),
                            index=pd.Index(self.model_names, dtype=object),
                            columns=pd.Index(self.item_names, dtype=object))


def _caller_level() -> int:
    """``stacklevel`` that points a warning at the first frame outside evalcert.

    The estimators reach these checks through call chains of different depths;
    the user should see the line that called ``fit``, not evalcert's internals.
    """
    # the folder of the top-level package, whatever this module's depth in it
    package = os.path.abspath(__file__)
    for _ in __name__.split(".")[1:]:
        package = os.path.dirname(package)
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(
            package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def _names(labels: Any, n: int, prefix: str) -> tuple[str, ...]:
    return tuple(str(v) for v in labels) if labels is not None else tuple(
        f"{prefix}{k}" for k in range(n))


def _listing(names: tuple[str, ...], idx: np.ndarray, limit: int = 8) -> str:
    from evalcert.results import list_names
    return list_names([names[k] for k in idx[:limit]], len(idx), limit=limit, quote=True)


def validate_responses(Y: Any, mask: Any = None, *,
                       kind: Literal["binary", "unit"] = "binary",
                       allow_empty: bool = False) -> ResponseData:
    """Check a response matrix and return it as :class:`ResponseData`.

    Parameters
    ----------
    Y : array-like, pandas.DataFrame or ScoreMatrix, shape (n_models, n_items)
        ``kind="binary"``: values in {0, 1}; ``kind="unit"``: values in [0, 1].
        ``NaN`` marks a missing cell.
    mask : array of bool, same shape, optional
        ``True`` = held out (ignored by the fit).
    allow_empty : bool
        Accept models and items with no observed cell (JE-IRT places new
        items from their embeddings alone).

    Raises
    ------
    InputError
        Not 2-D, non-numeric, values outside the allowed set (offending cells
        named), a mask of the wrong shape or dtype, or models (items) with no
        observed cell.

    Examples
    --------
    >>> data = validate_responses(np.array([[1, 0, np.nan], [0, 1, 1.0]]))  # NaN = missing
    >>> data.shape, int(data.observed.sum())
    ((2, 3), 5)
    """
    model_labels = item_labels = None
    if hasattr(Y, "cells") and hasattr(Y, "agents") and hasattr(Y, "items"):
        values = _from_cells(Y)             # evalcert.data.ScoreMatrix: observed cells only
        model_labels, item_labels = list(Y.agents), list(Y.items)
    else:
        if hasattr(Y, "columns") and hasattr(Y, "index"):
            model_labels, item_labels = list(Y.index), list(Y.columns)
            Y = Y.to_numpy()
        try:
            values = np.array(Y, dtype=float)
        except (TypeError, ValueError) as exc:
            raise InputError(f"responses must be numeric (0/1, NaN = missing): {exc}") from None
    if values.ndim != 2 or 0 in values.shape:
        raise InputError(f"responses must be a non-empty 2-D models x items matrix, got shape "
                         f"{values.shape}")
    _require_working_memory(values.shape)
    models = _names(model_labels, values.shape[0], "model")
    items = _names(item_labels, values.shape[1], "item")
    present = ~np.isnan(values)
    if np.isinf(values).any():
        raise InputError("responses contain infinities; use NaN for missing cells")
    bad = present & ((values != 0) & (values != 1) if kind == "binary"
                     else (values < 0) | (values > 1))
    if bad.any():
        cells = np.argwhere(bad)[:5]
        shown = ", ".join(f"({models[i]!r}, {items[j]!r})={values[i, j]:g}" for i, j in cells)
        allowed = "{0, 1}" if kind == "binary" else "[0, 1]"
        raise InputError(f"{int(bad.sum())} responses lie outside {allowed}, e.g. {shown}; "
                         + ("threshold continuous scores or use BetaIRT" if kind == "binary"
                            else "rescale the scores into [0, 1]"))
    if mask is not None:
        mask = np.asarray(mask)
        if mask.shape != values.shape or mask.dtype != bool:
            raise InputError(f"mask must be a boolean array of shape {values.shape} (True = "
                             f"held out), got {mask.dtype} {mask.shape}")
        present = present & ~mask
    for axis, names, what in ((1, models, "models"), (0, items, "items")):
        empty = np.flatnonzero(~present.any(axis=axis))
        if empty.size and not allow_empty:
            raise InputError(f"{empty.size} {what} have no observed (non-NaN, not held-out) "
                             f"response: {_listing(names, empty)}; drop them before fitting")
    return ResponseData(np.where(present, values, 0.0), present, models, items)


#: dense models x items float arrays an estimator holds at once (values, mask, temporaries)
_WORKING_ARRAYS = 8


def _require_working_memory(shape: tuple[int, ...]) -> None:
    """Refuse, before any fit, a matrix whose dense working arrays would not fit in memory."""
    from evalcert.memory import estimate_bytes, require_memory

    require_memory(_WORKING_ARRAYS * estimate_bytes(shape, "float64"),
                   f"an IRT fit of a dense {shape[0]} x {shape[1]} response matrix",
                   "the IRT estimators work on dense models x items arrays: fit a subset of "
                   "models or items")


def _from_cells(S: Any) -> np.ndarray:
    """Dense models x items values (NaN = unobserved) from a ScoreMatrix's observed cells."""
    shape = tuple(int(k) for k in S.shape)
    _require_working_memory(shape)
    rows, cols, scores = S.cells()
    values = np.full(shape, np.nan)
    values[rows, cols] = scores
    return values


def extreme_lines(data: ResponseData, *, warn: bool) -> tuple[np.ndarray, np.ndarray]:
    """Find models and items whose observed responses are all 0 or all 1.

    Removing an extreme item can make a model extreme and vice versa, so the
    search repeats until nothing changes (JML and CML need finite estimates
    for every parameter they keep, Sec. 3.5.3).

    Returns
    -------
    keep_rows, keep_cols : ndarray of bool

    Examples
    --------
    >>> data = validate_responses(np.array([[1, 0, np.nan], [0, 1, 1], [1, 1, 1.0]]))
    >>> keep_rows, keep_cols = extreme_lines(data, warn=False)
    >>> keep_rows.tolist(), keep_cols.tolist()  # model2 and item2 are all correct
    ([True, True, False], [True, True, False])
    """
    keep_r = np.ones(data.shape[0], dtype=bool)
    keep_c = np.ones(data.shape[1], dtype=bool)
    while True:
        obs = data.observed & keep_r[:, None] & keep_c[None, :]
        ones = (data.values * obs)
        n_r, s_r = obs.sum(1), ones.sum(1)
        n_c, s_c = obs.sum(0), ones.sum(0)
        new_r = keep_r & (s_r > 0) & (s_r < n_r)
        new_c = keep_c & (s_c > 0) & (s_c < n_c)
        if (new_r == keep_r).all() and (new_c == keep_c).all():
            break
        keep_r, keep_c = new_r, new_c
    if warn and (not keep_r.all() or not keep_c.all()):
        warnings.warn(
            f"excluded {int((~keep_r).sum())} models "
            f"({_listing(data.model_names, np.flatnonzero(~keep_r))}) and "
            f"{int((~keep_c).sum())} items "
            f"({_listing(data.item_names, np.flatnonzero(~keep_c))}) whose responses are "
            "all 0 or all 1: their ML estimates are infinite (use method='map' or 'mml' "
            "to keep them)", ExtremeResponseWarning, stacklevel=_caller_level())
    if not keep_r.any() or not keep_c.any():
        raise InputError("every model or every item has all-0 or all-1 responses; no finite "
                         "ML estimate exists (use method='map')")
    return keep_r, keep_c


def observed_cells(Y: np.ndarray, O: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The cells where ``O`` (bool or 0/1) is set, row-major: ``(starts, cols, y)``.

    Row ``i``'s cells are ``starts[i]:starts[i + 1]``, with item indices
    ``cols`` (ascending within a row, ``intp``) and values ``y = Y`` there
    (float); ``Y`` is read at those cells only. From flat indices, about half
    the time of ``np.nonzero`` on a dense 300 x 20,000 mask, whose column
    array is moreover a strided view.

    Examples
    --------
    >>> starts, cols, y = observed_cells(np.array([[1, 0, 1], [0, 9, 1]]),
    ...                                  np.array([[1, 1, 0], [0, 0, 1]], bool))
    >>> starts.tolist(), cols.tolist(), y.tolist()
    ([0, 2, 3], [0, 1, 2], [1.0, 0.0, 1.0])
    """
    n, m = O.shape
    flat = np.flatnonzero(O)
    y = np.take(Y, flat).astype(float, copy=False)
    starts = np.searchsorted(flat, np.arange(n + 1) * m)
    cols = flat - np.repeat(np.arange(n) * m, np.diff(starts))
    return starts, cols, y


def finite_items(data: ResponseData) -> np.ndarray:
    """Items that are not all 0 or all 1 (warns about the others); for marginal ML.

    Examples
    --------
    >>> data = validate_responses(np.array([[1, 0, 1], [0, 1, 1.0]]))
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", ExtremeResponseWarning)
    ...     finite_items(data).tolist()
    [True, True, False]
    """
    n, ones = data.observed.sum(0), (data.values * data.observed).sum(0)
    keep = (ones > 0) & (ones < n)
    if not keep.all():
        warnings.warn(f"excluded {int((~keep).sum())} items "
                      f"({_listing(data.item_names, np.flatnonzero(~keep))}) whose responses are "
                      "all 0 or all 1: their marginal ML difficulties are infinite",
                      ExtremeResponseWarning, stacklevel=_caller_level())
    if not keep.any():
        raise InputError("every item has all-0 or all-1 responses; nothing to estimate")
    return keep


def require_finite_jml(data: ResponseData) -> None:
    """Raise unless the Rasch joint ML estimate exists (is finite).

    The Rasch joint likelihood is a Bradley-Terry model in which model ``i``
    meets item ``j`` on every observed cell and wins when ``Y_ij = 1``. Its
    maximum is finite (and unique up to the shift) exactly when the directed
    graph with an edge ``i -> j`` for every win and ``j -> i`` for every loss is
    strongly connected (Zermelo 1929; Ford 1957; Hunter 2004, Assumption 1).
    All-0/all-1 lines are the simplest violation (:func:`extreme_lines`
    removes those); a group of models that answers every observed cell of a
    group of items correctly, while other cells go both ways, is another.

    Raises
    ------
    ConnectivityError
        With the ``(n_models, n_items)`` size of each strongly connected part.

    Examples
    --------
    >>> require_finite_jml(validate_responses(np.array([[1, 0], [0, 1.0]])))  # finite: no error
    >>> try:  # model1 answers every item correctly: its ability is infinite
    ...     require_finite_jml(validate_responses(np.array([[1, 0], [1, 1.0]])))
    ... except ConnectivityError as exc:
    ...     print(sorted(exc.component_sizes))
    [(0, 1), (0, 1), (1, 0), (1, 0)]
    """
    n, m = data.shape
    wins = data.observed & (data.values == 1)
    losses = np.ascontiguousarray((data.observed & ~wins).T)
    targets = np.concatenate([np.nonzero(wins)[1] + n, np.nonzero(losses)[1]])
    degree = np.concatenate([[0], wins.sum(1), losses.sum(1)])
    graph = csr_matrix((np.ones(targets.size, np.int8), targets, np.cumsum(degree)),
                       shape=(n + m, n + m))
    k, label = connected_components(graph, directed=True, connection="strong")
    if k == 1:
        return
    sizes = sorted(((int(np.sum(label[:n] == c)), int(np.sum(label[n:] == c)))
                    for c in range(k)), key=lambda s: -sum(s))
    raise ConnectivityError(
        f"joint ML has no finite estimate: the win/loss graph of models and items splits "
        f"into {k} strongly connected parts (models, items): {sizes[:6]}"
        + (" ..." if k > 6 else "") + "; between parts the results go one way only (e.g. "
        "some models answer every observed cell of some items correctly), so the ML gaps "
        "between parts are infinite (Ford 1957). Use method='map' (lam > 0) or 'mml', or "
        "collect more responses", component_sizes=sizes)
