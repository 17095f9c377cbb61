"""d-core connectivity of the bipartite observation graph (paper 000, Sec. 4.4, App. D.2).

The observation design ``Omega`` satisfies "d-core >= d" when every agent
observes at least ``d`` items, every item is observed by at least ``d`` agents,
and the bipartite agent-item graph is connected, so every parameter hangs on
one gauge. :func:`enforce_dcore` either tops up under-connected rows and
columns with random cells from a candidate pool ("iteratively adding random
observations to under-connected nodes", App. D.2) or prunes to the d-core, and
reports what it added or removed.

Example
-------
>>> import numpy as np
>>> mask = np.eye(4, dtype=bool)
>>> out = enforce_dcore(mask, d=2, pool=np.ones((4, 4), bool), seed=0)
>>> out.satisfied, out.n_added >= 4
(True, True)
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np

from evalcert.data import bipartite_components
from evalcert.errors import ConnectivityError, InputError
from evalcert.results import ResultMixin, format_table

__all__ = ["check_mask", "components", "dcore_mask", "dcore_cells", "DCoreResult",
           "enforce_dcore", "enforce_dcore_cells"]


def check_mask(mask: np.ndarray, name: str, shape: tuple[int, int] | None = None) -> np.ndarray:
    """Return ``mask`` if it is a 2-D boolean array (of ``shape``), else raise InputError.

    Examples
    --------
    >>> mask = np.eye(3, dtype=bool)
    >>> check_mask(mask, "--mask", (3, 3)) is mask
    True
    >>> check_mask(mask.astype(int), "--mask")
    Traceback (most recent call last):
    ...
    evalcert.errors.InputError: --mask must be a boolean 2-D array; got int64 (3, 3)
    """
    mask = np.asarray(mask)
    if mask.dtype != bool or mask.ndim != 2 or (shape is not None and mask.shape != shape):
        want = f"shape {shape}" if shape is not None else "2-D"
        raise InputError(f"{name} must be a boolean {want} array; got {mask.dtype} {mask.shape}")
    return mask


def components(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Component labels of rows and columns in the bipartite graph of ``mask``.

    Label 0 is the largest component (by rows + columns); a row or column with
    no cell is its own component. On cells: :func:`evalcert.data.bipartite_components`.

    Examples
    --------
    >>> mask = np.array([[1, 0, 0], [0, 1, 0], [0, 1, 0]], dtype=bool)
    >>> rows, cols = components(mask)  # rows 1-2 share column 1: the largest part
    >>> rows.tolist(), cols.tolist()
    ([1, 0, 0], [1, 0, 2])
    """
    r, c = np.nonzero(mask)
    return bipartite_components(r, c, mask.shape)


def dcore_cells(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int], d: int,
                keep: np.ndarray | None = None) -> np.ndarray:
    """Cells of the d-core, on cells: repeatedly drop rows and columns with fewer than ``d``.

    :func:`dcore_mask` without a K x J array: O(cells) per round.

    Parameters
    ----------
    rows, cols : ndarray of int, shape (n,)
        Cell coordinates (e.g. those of ``S.cells()``).
    shape : tuple of int
        ``(K, J)``.
    d : int
        Minimum number of cells of every kept row and column.
    keep : ndarray of bool, shape (n,), optional
        The design among the cells (default all); not modified.

    Returns
    -------
    ndarray of bool, shape (n,)
        The d-core's cells.

    Examples
    --------
    >>> import numpy as np
    >>> rows, cols = np.nonzero(np.ones((4, 5), dtype=bool))
    >>> keep = ~((rows == 0) & (cols > 0))  # agent 0 has a single item
    >>> core = dcore_cells(rows, cols, (4, 5), 2, keep)
    >>> np.bincount(rows[core], minlength=4).tolist()  # the 2-core drops it
    [0, 5, 5, 5]
    """
    K, J = shape
    keep = np.ones(len(rows), bool) if keep is None else np.array(keep, dtype=bool)
    while True:
        deg_r = np.bincount(rows[keep], minlength=K)
        deg_c = np.bincount(cols[keep], minlength=J)
        drop = keep & ((deg_r[rows] < d) | (deg_c[cols] < d))
        if not drop.any():
            return keep
        keep &= ~drop


def dcore_mask(mask: np.ndarray, d: int) -> np.ndarray:
    """Cells of the d-core: repeatedly drop rows and columns with fewer than ``d`` cells.

    Examples
    --------
    >>> import numpy as np
    >>> mask = np.ones((4, 5), dtype=bool)
    >>> mask[0, 1:] = False  # agent 0 has a single item
    >>> dcore_mask(mask, 2).sum(axis=1).tolist()  # the 2-core drops it
    [0, 5, 5, 5]
    """
    mask = check_mask(mask, "mask")
    r, c = np.nonzero(mask)
    core = np.zeros_like(mask)
    keep = dcore_cells(r, c, mask.shape, d)
    core[r[keep], c[keep]] = True
    return core
@dataclasses.dataclass(frozen=True)
class DCoreResult(ResultMixin):
    """Outcome of :func:`enforce_dcore`.

    Attributes
    ----------
    d : int
    method : str
        ``top_up`` or ``prune``.
    satisfied_before : bool
        Whether the input already had min degree >= d and one component.
    n_cells_before, n_cells_after : int
    added_cells : ndarray of int, shape (n_added, 2)
        ``(row, col)`` cells added by the top-up.
    removed_rows, removed_cols : tuple of int
        Rows and columns dropped by pruning (their cells are removed).
    min_row_degree, min_col_degree, n_components : int
        Of the returned design, over the rows and columns it keeps.
    mask : ndarray of bool
        The returned design: K x J (:func:`enforce_dcore`) or over the given cells
        (:func:`enforce_dcore_cells`); not in ``to_dict``.

    Examples
    --------
    >>> import numpy as np
    >>> out = enforce_dcore(np.eye(4, dtype=bool), d=2, pool=np.ones((4, 4), bool), seed=0)
    >>> out.n_cells_before, out.n_cells_after >= 8, out.min_row_degree >= 2
    (4, True, True)
    """

    d: int
    method: str
    satisfied_before: bool
    n_cells_before: int
    n_cells_after: int
    added_cells: np.ndarray
    removed_rows: tuple[int, ...]
    removed_cols: tuple[int, ...]
    min_row_degree: int
    min_col_degree: int
    n_components: int
    mask: np.ndarray = dataclasses.field(repr=False)

    @property
    def n_added(self) -> int:
        return len(self.added_cells)

    @property
    def satisfied(self) -> bool:
        return (self.min_row_degree >= self.d and self.min_col_degree >= self.d
                and self.n_components == 1)

    def summary(self) -> str:
        rows = [("cells", self.n_cells_before, self.n_cells_after),
                ("added cells", "", self.n_added),
                ("removed rows / cols", "", f"{len(self.removed_rows)} / {len(self.removed_cols)}"),
                ("min row / col degree", "", f"{self.min_row_degree} / {self.min_col_degree}"),
                ("components", "", self.n_components)]
        head = (f"d-core >= {self.d} by {self.method}: "
                f"{'already satisfied' if self.satisfied_before else 'enforced'}")
        return head + "\n" + format_table(rows, ["", "before", "after"])


def _describe(rows, cols, shape, out, keep_r, keep_c) -> tuple[int, int, int]:
    r, c = rows[out], cols[out]
    if not (keep_r.any() and keep_c.any()):
        return 0, 0, 0
    deg_r, deg_c = np.bincount(r, minlength=shape[0]), np.bincount(c, minlength=shape[1])
    lr, lc = bipartite_components(r, c, shape)
    n_comp = len(np.union1d(lr[keep_r], lc[keep_c]))
    return int(deg_r[keep_r].min()), int(deg_c[keep_c].min()), n_comp


def _top_up_line(out, pool, ptr, order, n_lines, d, rng) -> None:
    """Give every line (row or column) at least ``d`` cells from ``pool``, in line order."""
    deg = np.bincount(np.repeat(np.arange(n_lines), np.diff(ptr))[out[order]], minlength=n_lines)
    for k in np.flatnonzero(deg < d):
        seg = order[ptr[k]:ptr[k + 1]]
        free = seg[pool[seg] & ~out[seg]]
        out[rng.choice(free, d - int(deg[k]), replace=False)] = True


def _top_up(rows, cols, shape, design, pool, d, rng) -> np.ndarray:
    K, J = shape
    allowed = design | pool
    short_r = np.flatnonzero(np.bincount(rows[allowed], minlength=K) < d)
    short_c = np.flatnonzero(np.bincount(cols[allowed], minlength=J) < d)
    if len(short_r) or len(short_c):
        raise ConnectivityError(
            f"d-core >= {d} is impossible with this pool: rows {short_r[:8].tolist()} and "
            f"columns {short_c[:8].tolist()} have fewer than {d} observed-or-candidate cells; "
            "widen the pool, lower d, or prune instead (method='prune')")
    out = design.copy()
    by_row = np.lexsort((cols, rows))
    by_col = np.lexsort((rows, cols))
    _top_up_line(out, pool, np.searchsorted(rows[by_row], np.arange(K + 1)), by_row, K, d, rng)
    _top_up_line(out, pool, np.searchsorted(cols[by_col], np.arange(J + 1)), by_col, J, d, rng)
    # Bridge the largest component to the rest, one random pool cell at a time. Each
    # bridge merges one component X into the largest (which stays the largest), so the
    # labels are computed once and the membership of the largest is updated in place.
    lr, lc = bipartite_components(rows[out], cols[out], shape)
    in_r, in_c = lr == 0, lc == 0
    while not (in_r.all() and in_c.all()):
        bridge = pool & ~out & (in_r[rows] != in_c[cols])
        cand = by_row[bridge[by_row]]
        if len(cand) == 0:
            raise ConnectivityError(
                "the design stays disconnected: no candidate cell links the largest component "
                "to the others; widen the pool or prune to one component (method='prune')")
        k = cand[rng.integers(len(cand))]
        out[k] = True
        x = lc[cols[k]] if in_r[rows[k]] else lr[rows[k]]
        in_r |= lr == x
        in_c |= lc == x
    return out


def enforce_dcore_cells(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int],
                        design: np.ndarray, d: int = 3,
                        method: Literal["top_up", "prune"] = "top_up",
                        pool: np.ndarray | None = None,
                        seed: int | np.random.Generator = 0) -> DCoreResult:
    """:func:`enforce_dcore` on cells: O(cells) memory, no K x J array.

    ``rows, cols`` are the coordinates of the candidate universe (e.g.
    ``S.cells()``); ``design`` and ``pool`` are boolean vectors over them. The
    result's ``mask`` is a boolean vector over the same cells. With cells in
    row-major order it draws exactly what :func:`enforce_dcore` draws on the
    equivalent masks.

    Parameters
    ----------
    rows, cols : ndarray of int, shape (n,)
        Coordinates of the candidate cells.
    shape : tuple of int
        ``(K, J)``.
    design : ndarray of bool, shape (n,)
        The design to enforce the d-core on.
    d, method, pool, seed
        As in :func:`enforce_dcore`, with ``pool`` a boolean vector like ``design``.

    Returns
    -------
    DCoreResult
        With ``mask`` a boolean vector over the cells.

    Examples
    --------
    >>> import numpy as np
    >>> rows, cols = np.nonzero(np.ones((4, 4), dtype=bool))
    >>> out = enforce_dcore_cells(rows, cols, (4, 4), rows == cols, d=2, pool=np.ones(16, bool),
    ...                           seed=0)
    >>> out.satisfied, out.n_added >= 4, out.mask.shape
    (True, True, (16,))
    >>> dense = enforce_dcore(np.eye(4, dtype=bool), d=2, pool=np.ones((4, 4), bool), seed=0)
    >>> bool(np.array_equal(out.mask, dense.mask.ravel()))  # the same draws
    True
    """
    rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    design = np.asarray(design)
    if design.dtype != bool or design.shape != rows.shape:
        raise InputError(f"design must be a boolean vector over the {len(rows)} cells; got "
                         f"{design.dtype} {design.shape}")
    if d < 1:
        raise InputError(f"d must be a positive integer; got {d}")
    K, J = shape
    everything = np.ones(K, bool), np.ones(J, bool)
    min_r, min_c, n_comp = _describe(rows, cols, shape, design, *everything)
    before = min_r >= d and min_c >= d and n_comp == 1
    if method == "top_up":
        if pool is None:
            raise InputError("method='top_up' needs a pool of candidate cells (boolean, same shape)")
        pool = np.asarray(pool)
        if pool.dtype != bool or pool.shape != design.shape:
            raise InputError(f"pool must be a boolean vector like design; got {pool.dtype} "
                             f"{pool.shape}")
        out = _top_up(rows, cols, shape, design, pool, d, np.random.default_rng(seed))
        new = np.flatnonzero(out & ~design)
        new = new[np.lexsort((cols[new], rows[new]))]
        added = np.column_stack([rows[new], cols[new]])
        keep_r, keep_c = everything
    elif method == "prune":
        out = dcore_cells(rows, cols, shape, d, design)
        if not out.any():
            raise ConnectivityError(f"the {d}-core of this design is empty; observe more cells "
                                    "or use method='top_up' with a candidate pool")
        lr, lc = bipartite_components(rows[out], cols[out], shape)
        out &= (lr[rows] == 0) & (lc[cols] == 0)
        added = np.empty((0, 2), dtype=int)
        keep_r = np.bincount(rows[out], minlength=K) > 0
        keep_c = np.bincount(cols[out], minlength=J) > 0
    else:
        raise InputError(f"method must be 'top_up' or 'prune'; got {method!r}")
    min_r, min_c, n_comp = _describe(rows, cols, shape, out, keep_r, keep_c)
    return DCoreResult(int(d), method, bool(before), int(design.sum()), int(out.sum()), added,
                       tuple(np.flatnonzero(~keep_r).tolist()),
                       tuple(np.flatnonzero(~keep_c).tolist()), min_r, min_c, n_comp, out)


def enforce_dcore(mask: np.ndarray, d: int = 3, method: Literal["top_up", "prune"] = "top_up",
                  pool: np.ndarray | None = None, seed: int | np.random.Generator = 0) -> DCoreResult:
    """Make ``mask`` a connected design with every row and column degree >= ``d``.

    Parameters
    ----------
    mask : ndarray of bool, shape (K, J)
        Observed (training) cells.
    d : int
        Minimum degree (paper: 3).
    method : {"top_up", "prune"}
        ``top_up``: for every row, then every column, with fewer than ``d``
        cells, add random cells from ``pool``; then add random pool cells that
        bridge the largest component to the rest until one component remains
        (App. D.2). ``prune``: drop rows and columns to the d-core and keep its
        largest component.
    pool : ndarray of bool, shape (K, J), optional
        Candidate cells for the top-up (e.g. observed and not held out);
        required for ``top_up``.
    seed : int or Generator
        Randomness of the top-up.

    Raises
    ------
    ConnectivityError
        If the pool cannot reach degree ``d`` or connect the design, or the
        d-core is empty.

    Notes
    -----
    Runs on the cells of ``mask | pool`` (:func:`enforce_dcore_cells`); only
    the input and output masks are K x J.

    Examples
    --------
    >>> out = enforce_dcore(np.eye(4, dtype=bool), d=2, pool=np.ones((4, 4), bool), seed=0)
    >>> out.satisfied, out.n_added, bool(out.mask.sum(0).min() >= 2)
    (True, 5, True)
    """
    mask = check_mask(mask, "mask")
    if pool is not None:
        pool = check_mask(pool, "pool", mask.shape)
    universe = mask if pool is None else mask | pool
    r, c = np.nonzero(universe)
    res = enforce_dcore_cells(r, c, mask.shape, mask[r, c], d, method,
                              None if pool is None else pool[r, c], seed)
    out = np.zeros_like(mask)
    out[r[res.mask], c[res.mask]] = True
    return dataclasses.replace(res, mask=out)
