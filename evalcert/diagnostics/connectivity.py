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
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from evalcert.errors import ConnectivityError, InputError
from evalcert.results import ResultMixin, format_table

__all__ = ["check_mask", "components", "dcore_mask", "DCoreResult", "enforce_dcore"]


def check_mask(mask: np.ndarray, name: str, shape: tuple[int, int] | None = None) -> np.ndarray:
    """Return ``mask`` if it is a 2-D boolean array (of ``shape``), else raise InputError."""
    mask = np.asarray(mask)
    if mask.dtype != bool or mask.ndim != 2 or (shape is not None and mask.shape != shape):
        want = f"shape {shape}" if shape is not None else "2-D"
        raise InputError(f"{name} must be a boolean {want} array; got {mask.dtype} {mask.shape}")
    return mask


def components(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Component labels of rows and columns in the bipartite graph of ``mask``.

    Label 0 is the largest component (by rows + columns); a row or column with
    no cell is its own component.
    """
    K, J = mask.shape
    r, c = np.nonzero(mask)
    graph = sp.coo_matrix((np.ones(len(r)), (r, K + c)), shape=(K + J, K + J))
    n, labels = connected_components(graph, directed=False)
    sizes = np.bincount(labels, minlength=n)
    relabel = np.empty(n, dtype=int)
    relabel[np.argsort(-sizes, kind="stable")] = np.arange(n)
    labels = relabel[labels]
    return labels[:K], labels[K:]


def dcore_mask(mask: np.ndarray, d: int) -> np.ndarray:
    """Cells of the d-core: repeatedly drop rows and columns with fewer than ``d`` cells."""
    core = check_mask(mask, "mask").copy()
    while True:
        weak_r = core.sum(axis=1) < d
        weak_c = core.sum(axis=0) < d
        drop_r = weak_r & core.any(axis=1)
        drop_c = weak_c & core.any(axis=0)
        if not (drop_r.any() or drop_c.any()):
            return core
        core[drop_r, :] = False
        core[:, drop_c] = False


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
        The returned design; not in ``to_dict``.
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


def _describe(mask: np.ndarray, keep_r: np.ndarray, keep_c: np.ndarray) -> tuple[int, int, int]:
    sub = mask[np.ix_(keep_r, keep_c)]
    if sub.size == 0:
        return 0, 0, 0
    lr, lc = components(sub)
    return int(sub.sum(axis=1).min()), int(sub.sum(axis=0).min()), int(max(lr.max(), lc.max()) + 1)


def _top_up(mask: np.ndarray, pool: np.ndarray, d: int, rng: np.random.Generator) -> np.ndarray:
    allowed = mask | pool
    short_r = np.flatnonzero(allowed.sum(axis=1) < d)
    short_c = np.flatnonzero(allowed.sum(axis=0) < d)
    if len(short_r) or len(short_c):
        raise ConnectivityError(
            f"d-core >= {d} is impossible with this pool: rows {short_r[:8].tolist()} and "
            f"columns {short_c[:8].tolist()} have fewer than {d} observed-or-candidate cells; "
            "widen the pool, lower d, or prune instead (method='prune')")
    out = mask.copy()
    for axis in (0, 1):
        view, cand = (out, pool) if axis == 0 else (out.T, pool.T)
        for k in np.flatnonzero(view.sum(axis=1) < d):
            free = np.flatnonzero(cand[k] & ~view[k])
            view[k, rng.choice(free, d - int(view[k].sum()), replace=False)] = True
    while True:
        lr, lc = components(out)
        if max(lr.max(), lc.max()) == 0:
            return out
        bridge = pool & ~out & ((lr[:, None] == 0) != (lc[None, :] == 0))
        cand = np.argwhere(bridge)
        if len(cand) == 0:
            raise ConnectivityError(
                "the design stays disconnected: no candidate cell links the largest component "
                "to the others; widen the pool or prune to one component (method='prune')")
        out[tuple(cand[rng.integers(len(cand))])] = True


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
    """
    mask = check_mask(mask, "mask")
    if d < 1:
        raise InputError(f"d must be a positive integer; got {d}")
    K, J = mask.shape
    everything = np.ones(K, bool), np.ones(J, bool)
    min_r, min_c, n_comp = _describe(mask, *everything)
    before = min_r >= d and min_c >= d and n_comp == 1
    if method == "top_up":
        if pool is None:
            raise InputError("method='top_up' needs a pool of candidate cells (boolean, same shape)")
        pool = check_mask(pool, "pool", mask.shape)
        out = _top_up(mask, pool, d, np.random.default_rng(seed))
        added = np.argwhere(out & ~mask)
        keep_r, keep_c = everything
    elif method == "prune":
        out = dcore_mask(mask, d)
        if not out.any():
            raise ConnectivityError(f"the {d}-core of this design is empty; observe more cells "
                                    "or use method='top_up' with a candidate pool")
        lr, lc = components(out)
        out &= (lr[:, None] == 0) & (lc[None, :] == 0)
        added = np.empty((0, 2), dtype=int)
        keep_r, keep_c = out.any(axis=1), out.any(axis=0)
    else:
        raise InputError(f"method must be 'top_up' or 'prune'; got {method!r}")
    min_r, min_c, n_comp = _describe(out, keep_r, keep_c)
    return DCoreResult(int(d), method, bool(before), int(mask.sum()), int(out.sum()), added,
                       tuple(np.flatnonzero(~keep_r).tolist()),
                       tuple(np.flatnonzero(~keep_c).tolist()), min_r, min_c, n_comp, out)
