"""Masking schemes for generalisation experiments on a models x items matrix.

Every function returns a boolean array of the matrix's shape where ``True``
means *held out* (a test cell never shown to the fit) and ``False`` means
training. Only observed cells are ever held out: pass ``observed`` (``True`` =
the cell has a response) to keep missing cells out of both sets. The schemes
are those of the IRT learning chapter, Sec. 3.7.1 (Table "Masking Schemes for
Evaluation"):

=====================  ==========================================================
``entrywise_mask``     random cells (interpolation under missing-at-random)
``row_holdout_mask``   random models; of each, only ``exposure`` of cells is shown
``column_holdout_mask``random items; of each, only ``exposure`` of cells is shown
``l_mask``             block ``R_te x C_te`` held out; training is the L-shaped rest
=====================  ==========================================================

Rows (columns) that a row (column) holdout chose are recovered with
:func:`held_out_rows` (:func:`held_out_columns`). :func:`holdout_cells` draws
the same schemes on observed cells (a boolean vector over ``S.cells()``), in
O(cells), never K x J; on a complete matrix it draws exactly the dense mask.

Example
-------
>>> m = entrywise_mask((4, 5), 0.25, seed=0)
>>> m.shape, m.dtype, int(m.sum())
((4, 5), dtype('bool'), 5)
"""

from __future__ import annotations

import numpy as np

from evalcert.errors import InputError

__all__ = ["entrywise_mask", "row_holdout_mask", "column_holdout_mask", "l_mask",
           "held_out_rows", "held_out_columns", "holdout_cells", "CELL_SCHEMES"]

#: schemes of :func:`holdout_cells`
CELL_SCHEMES = ("entrywise", "row", "column", "L")

Seed = int | np.random.Generator | None


def _check_args(shape: tuple[int, int], **fractions: float) -> None:
    if (not isinstance(shape, tuple) or len(shape) != 2
            or not all(isinstance(s, (int, np.integer)) and s > 0 for s in shape)):
        raise InputError(f"shape must be a tuple (n_models, n_items) of positive ints, got "
                         f"{shape!r}")
    for name, value in fractions.items():
        if not 0.0 < float(value) < 1.0:
            raise InputError(f"{name} must lie strictly between 0 and 1, got {value!r}")


def _check(shape: tuple[int, int], observed: np.ndarray | None,
           **fractions: float) -> np.ndarray:
    _check_args(shape, **fractions)
    if observed is None:
        return np.ones(shape, dtype=bool)
    observed = np.asarray(observed)
    if observed.shape != shape or observed.dtype != bool:
        raise InputError(f"observed must be a boolean array of shape {shape}, got "
                         f"{observed.dtype} {observed.shape}")
    return observed


def _pick(n: int, frac: float, rng: np.random.Generator) -> np.ndarray:
    """Boolean vector with ``round(frac * n)`` (at least 1, at most n-1) True entries."""
    if n < 2:
        raise InputError(f"cannot split an axis of length {n} into train and test parts")
    k = min(max(int(round(frac * n)), 1), n - 1)
    chosen = np.zeros(n, dtype=bool)
    chosen[rng.choice(n, size=k, replace=False)] = True
    return chosen


def entrywise_mask(shape: tuple[int, int], frac: float = 0.2, seed: Seed = None,
                   observed: np.ndarray | None = None) -> np.ndarray:
    """Hold out a random ``frac`` of the observed cells (Sec. 3.7.1, entry-wise random).

    Each observed cell is held out independently with probability ``frac``.

    Examples
    --------
    >>> observed = np.ones((4, 5), dtype=bool)
    >>> observed[0] = False  # only observed cells can be held out
    >>> mask = entrywise_mask((4, 5), 0.5, seed=0, observed=observed)
    >>> mask.shape, bool(mask[0].any()), bool((mask <= observed).all())
    ((4, 5), False, True)
    """
    observed = _check(shape, observed, frac=frac)
    rng = np.random.default_rng(seed)
    return (rng.random(shape) < frac) & observed


def row_holdout_mask(shape: tuple[int, int], frac: float = 0.2, exposure: float = 0.3,
                     seed: Seed = None, observed: np.ndarray | None = None) -> np.ndarray:
    """Hold out a random ``frac`` of the models (Sec. 3.7.1, row holdout).

    Of each held-out model, a random ``exposure`` share of its observed cells
    stays visible (used in stage 2 of the two-stage procedure, Sec. 3.7.3.1 to
    place the new model on the frozen item scale); the rest is held out. At
    least one cell of every chosen row is held out.

    Examples
    --------
    >>> mask = row_holdout_mask((10, 8), frac=0.2, exposure=0.25, seed=0)
    >>> int(held_out_rows(mask).sum()), mask[held_out_rows(mask)].sum(1).tolist()
    (2, [5, 4])
    """
    observed = _check(shape, observed, frac=frac, exposure=exposure)
    rng = np.random.default_rng(seed)
    rows = _pick(shape[0], frac, rng)
    hidden = (rng.random(shape) >= exposure) & observed & rows[:, None]
    for i in np.flatnonzero(rows & ~hidden.any(axis=1) & observed.any(axis=1)):
        hidden[i, rng.choice(np.flatnonzero(observed[i]))] = True
    return hidden


def column_holdout_mask(shape: tuple[int, int], frac: float = 0.2, exposure: float = 0.3,
                        seed: Seed = None, observed: np.ndarray | None = None) -> np.ndarray:
    """Hold out a random ``frac`` of the items (Sec. 3.7.1, column holdout).

    The transpose of :func:`row_holdout_mask`: of each held-out item an
    ``exposure`` share of its observed cells stays visible (Sec. 3.7.3.2).

    Examples
    --------
    >>> mask = column_holdout_mask((10, 8), frac=0.25, seed=0)
    >>> int(held_out_columns(mask).sum()), int(held_out_rows(mask).sum())  # 2 test items
    (2, 10)
    """
    _check(shape, None)
    obs_t = None if observed is None else np.asarray(observed).T
    return row_holdout_mask((shape[1], shape[0]), frac, exposure, seed, obs_t).T


def l_mask(shape: tuple[int, int], row_frac: float = 0.2, col_frac: float = 0.2,
           seed: Seed = None, observed: np.ndarray | None = None) -> np.ndarray:
    """Hold out the block ``R_te x C_te`` (Sec. 3.7.1, row-column block or "L-mask").

    Training is the L-shaped rest: test models are seen on training items and
    test items on training models, so each test cell pairs a model and an item
    that were both calibrated, but never together (compositional
    generalisation). The chapter's listing trains on ``R_tr x C_tr`` only,
    which leaves test models and items without any data; the L-shaped training
    set is what makes the block predictable.

    Examples
    --------
    >>> mask = l_mask((10, 8), row_frac=0.2, col_frac=0.25, seed=0)
    >>> int(mask.sum()), int(held_out_rows(mask).sum()), int(held_out_columns(mask).sum())
    (4, 2, 2)
    """
    observed = _check(shape, observed, row_frac=row_frac, col_frac=col_frac)
    rng = np.random.default_rng(seed)
    rows = _pick(shape[0], row_frac, rng)
    cols = _pick(shape[1], col_frac, rng)
    return rows[:, None] & cols[None, :] & observed


def held_out_rows(mask: np.ndarray) -> np.ndarray:
    """Boolean vector of the rows with at least one held-out cell.

    Examples
    --------
    >>> held_out_rows(np.array([[False, True, False], [False, False, False]])).tolist()
    [True, False]
    """
    return np.asarray(mask, dtype=bool).any(axis=1)


def held_out_columns(mask: np.ndarray) -> np.ndarray:
    """Boolean vector of the columns with at least one held-out cell.

    Examples
    --------
    >>> held_out_columns(np.array([[False, True, False], [False, True, True]])).tolist()
    [False, True, True]
    """
    return np.asarray(mask, dtype=bool).any(axis=0)



def _lines_holdout(lines: np.ndarray, order: np.ndarray, n_lines: int, frac: float,
                   exposure: float, rng: np.random.Generator) -> np.ndarray:
    """Row holdout on cells; ``order`` lists the cells line by line (the dense draw order)."""
    chosen = _pick(n_lines, frac, rng)
    u = np.empty(len(lines))
    u[order] = rng.random(len(lines))
    hidden = (u >= exposure) & chosen[lines]
    ptr = np.searchsorted(lines[order], np.arange(n_lines + 1))
    has_hidden = np.bincount(lines[hidden], minlength=n_lines) > 0
    for i in np.flatnonzero(chosen & ~has_hidden & (np.diff(ptr) > 0)):
        hidden[order[ptr[i] + rng.choice(ptr[i + 1] - ptr[i])]] = True
    return hidden


def holdout_cells(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int], scheme: str,
                  frac: float = 0.2, seed: Seed = None, exposure: float = 0.3) -> np.ndarray:
    """Held-out cells among the observed cells ``(rows, cols)`` (row-major), as a boolean vector.

    The schemes of the dense functions, on cells: ``entrywise`` (each cell with
    probability ``frac``), ``row`` / ``column`` (``frac`` of the rows / columns,
    ``exposure`` of their cells kept visible), ``L`` (block of ``frac`` of the
    rows times ``frac`` of the columns). Randomness is drawn per observed cell,
    in the dense functions' order, so a complete matrix gets exactly their mask.

    Parameters
    ----------
    rows, cols : ndarray of int, shape (n,)
        The observed cells, in row-major order.
    shape : tuple of int
        ``(K, J)``.
    scheme : {"entrywise", "row", "column", "L"}
        See above (:data:`CELL_SCHEMES`).
    frac, seed, exposure
        As in the dense functions (:func:`entrywise_mask`, :func:`row_holdout_mask`, ...).

    Returns
    -------
    ndarray of bool, shape (n,)
        The held-out cells.

    Examples
    --------
    >>> import numpy as np
    >>> r, c = np.nonzero(np.ones((4, 5), bool))
    >>> bool(np.array_equal(holdout_cells(r, c, (4, 5), "entrywise", 0.25, seed=0),
    ...                     entrywise_mask((4, 5), 0.25, seed=0).ravel()))
    True
    """
    _check_args(tuple(int(s) for s in shape), frac=frac)       # never allocates K x J
    rng = np.random.default_rng(seed)
    if scheme == "entrywise":
        return rng.random(len(rows)) < frac
    if scheme in ("row", "column"):
        _check_args(tuple(int(s) for s in shape), exposure=exposure)
        lines, other = (rows, cols) if scheme == "row" else (cols, rows)
        order = np.lexsort((other, lines))
        return _lines_holdout(lines, order, shape[0 if scheme == "row" else 1], frac, exposure,
                              rng)
    if scheme == "L":
        picked_r = _pick(shape[0], frac, rng)
        picked_c = _pick(shape[1], frac, rng)
        return picked_r[rows] & picked_c[cols]
    raise InputError(f"unknown holdout scheme {scheme!r}; choose one of {CELL_SCHEMES}")
