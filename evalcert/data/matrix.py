"""The score data model: observed (agent, item, score) cells of a K x J design.

:class:`ScoreMatrix` stores only the observed cells, as coordinates and values
(COO in row-major order, i.e. CSR order), with agent and item names, so its
memory and every check grow with the number of observed cells, never with
K x J. It is validated once, when it is built, so nothing downstream
re-validates: every score is finite and inside ``bounds``, no (agent, item) pair
repeats, no agent or item is without a cell, names are unique.

Build it from cells (:meth:`ScoreMatrix.from_cells`), from a dense array with
NaN = unobserved (:meth:`ScoreMatrix.from_array`, or the constructor), from a
wide table (:meth:`ScoreMatrix.from_wide`), from a long table
(:meth:`ScoreMatrix.from_long`; tables become cells in :mod:`evalcert.data.frames`).
Files are read by :func:`evalcert.io.scores.read_scores` (long Parquet files are
scanned in batches, so a file larger than memory is read in O(observed cells)); the
algorithms on cell coordinates (row-major counting sort, duplicates, bipartite
components) are in :mod:`evalcert.data.cells`. The dense views ``values`` / ``observed`` /
``to_dense()`` exist for small matrices and refuse sizes that would not fit in
memory.

Example
-------
>>> import numpy as np
>>> S = ScoreMatrix.from_array(np.array([[0.5, np.nan], [0.1, -0.2]]))
>>> S.n_observed, S.connectivity().is_connected
(3, True)
>>> T = ScoreMatrix.from_cells([0, 0, 1], [0, 1, 1], [0.5, 0.2, -0.1], ["a", "b"], ["x", "y"])
>>> T.shape, T.cells()[2].tolist()
((2, 2), [0.5, 0.2, -0.1])
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Sequence

import numpy as np
import pandas as pd

from evalcert.data.cells import (_MAX_LISTED, ConnectivityReport, _list_cells, _list_names,
                                 _sort_cells, bipartite_components, index_dtype)
from evalcert.data.frames import Cells, long_cells, wide_cells
from evalcert.errors import ConnectivityError, InputError
from evalcert.memory import estimate_bytes, require_memory

__all__ = ["ScoreMatrix"]


def _check_range(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]) -> None:
    K, J = shape
    if len(rows) and (rows.min() < 0 or rows.max() >= K or cols.min() < 0 or cols.max() >= J):
        raise InputError(f"cell indices out of range for {K} agents x {J} items")



class ScoreMatrix:
    """Scores of agents (rows) on items (columns), stored as observed cells.

    ``ScoreMatrix(values, agents, items, bounds)`` builds it from a dense 2-D
    array with NaN = unobserved (as :meth:`from_array`); :meth:`from_cells`
    builds it from coordinates without any K x J array.

    Attributes
    ----------
    agents, items : tuple of str
        Unique row and column names.
    bounds : tuple of float
        Allowed score range, ``(-1.0, 1.0)`` by default (TVD-MI scores).
    n_missing : int
        Rows of a long table whose score was empty or a missing token (``NA``,
        ``nan``...): counted and reported, not observed cells.
    values, observed : ndarray, shape (K, J)
        Dense read-only views (NaN = unobserved, boolean mask), built on first
        use; refused with the bytes needed when they would not fit in memory.

    Parameters
    ----------
    copy : bool, default True
        With ``copy=False`` a C-contiguous float64 array is adopted as the dense
        view and made read-only; the caller must not change it through another
        reference.

    Examples
    --------
    >>> S = ScoreMatrix(np.array([[0.5, np.nan], [0.1, -0.2]]), ["a", "b"], ["x", "y"])
    >>> S.shape, S.n_observed, S.bounds, S.observed.tolist()
    ((2, 2), 3, (-1.0, 1.0), [[True, False], [True, True]])
    >>> rows, cols, values = S.cells()  # the observed cells, row-major
    >>> rows.tolist(), cols.tolist(), values.tolist()
    ([0, 1, 1], [0, 0, 1], [0.5, 0.1, -0.2])
    """

    def __init__(self, values: np.ndarray, agents: Sequence[str], items: Sequence[str],
                 bounds: tuple[float, float] = (-1.0, 1.0), *, copy: bool = True) -> None:
        try:
            arr = (np.array(values, dtype=float, copy=True, order="C") if copy  # numpy 1.26:
                   else np.asarray(values, dtype=float, order="C"))           # no copy=None
        except (TypeError, ValueError) as exc:
            raise InputError(f"scores must be numeric: {exc}") from None
        if arr.ndim != 2:
            raise InputError(f"a score matrix must be 2-D (agents x items); got shape {arr.shape}")
        itype = index_dtype(*arr.shape)
        if arr.size and not np.isnan(arr).any():    # complete: cells without a search
            K, J = arr.shape
            rows = np.broadcast_to(np.arange(K, dtype=itype)[:, None], (K, J)).ravel()
            cols = np.broadcast_to(np.arange(J, dtype=itype), (K, J)).ravel()
            scores = arr.reshape(-1)                 # arr is ours (copied or adopted)
        else:
            rows, cols = np.nonzero(~np.isnan(arr))
            rows, cols, scores = rows.astype(itype), cols.astype(itype), arr[rows, cols]
        self._setup(rows, cols, scores, agents, items, bounds, shape=arr.shape, n_missing=0,
                    ordered=True)
        if not copy:                    # after validation: a rejected array stays the caller's
            arr.setflags(write=False)
            self.__dict__["values"] = arr

    # ---------------------------------------------------------------- constructors
    @classmethod
    def from_cells(cls, rows: Sequence[int], cols: Sequence[int], scores: Sequence[float],
                   agents: Sequence[str], items: Sequence[str],
                   bounds: tuple[float, float] = (-1.0, 1.0), *,
                   n_missing: int = 0, presorted: bool = False,
                   distinct_names: bool = False) -> "ScoreMatrix":
        """Build from observed cells ``(rows[k], cols[k], scores[k])``; never allocates K x J.

        Cells may come in any order (they are sorted row-major); a repeated
        (row, col) pair, an index out of range or a NaN score is refused.
        ``presorted=True`` says the cells are already row-major, in range and
        without repeats (as :func:`evalcert.data.frames.long_cells` gives them),
        so the O(cells) sort is skipped; ``distinct_names=True`` says the names
        are distinct ``str`` already. Scores and bounds are checked either way.
        """
        self = cls.__new__(cls)
        itype = index_dtype(len(agents), len(items))
        rows, cols = np.asarray(rows), np.asarray(cols)
        if rows.dtype != itype or cols.dtype != itype:     # else kept as given: no copy
            rows = np.asarray(rows, dtype=np.int64)
            cols = np.asarray(cols, dtype=np.int64)
            if itype is not np.int64 and rows.ndim == cols.ndim == 1:
                _check_range(rows, cols, (len(agents), len(items)))   # nothing wraps around
                rows, cols = rows.astype(itype), cols.astype(itype)
        scores = np.asarray(scores, dtype=float)
        if not (rows.ndim == cols.ndim == scores.ndim == 1 and len(rows) == len(cols) == len(scores)):
            raise InputError(f"rows, cols and scores must be 1-D of one length; got "
                             f"{rows.shape}, {cols.shape}, {scores.shape}")
        self._setup(rows, cols, scores, agents, items, bounds,
                    shape=(len(agents), len(items)), n_missing=n_missing, ordered=presorted,
                    distinct_str=distinct_names)
        return self

    @classmethod
    def from_frame_cells(cls, cells: Cells,
                         bounds: tuple[float, float] = (-1.0, 1.0)) -> "ScoreMatrix":
        """Build from the :class:`~evalcert.data.frames.Cells` a table gave (row-major, no repeats).

        The cells of :func:`~evalcert.data.frames.long_cells` and of the batch readers in
        :mod:`evalcert.io` are already sorted and checked for repeats, so only the scores,
        bounds and names are validated here (:meth:`from_cells` with ``presorted=True``).
        """
        return cls.from_cells(cells.rows, cells.cols, cells.scores, cells.agents, cells.items,
                              bounds, n_missing=cells.n_missing, presorted=True,
                              distinct_names=True)

    @classmethod
    def from_array(cls, values: np.ndarray, agents: Sequence[str] | None = None,
                   items: Sequence[str] | None = None,
                   bounds: tuple[float, float] = (-1.0, 1.0), *,
                   copy: bool = True) -> "ScoreMatrix":
        """Build from a 2-D array (NaN = unobserved); default names ``agent_0..``, ``item_0..``.

        ``copy=False`` adopts a float64 array as the dense view without copying
        it and makes it read-only (see :class:`ScoreMatrix`).
        """
        try:
            arr = np.asarray(values, dtype=float)
        except (TypeError, ValueError) as exc:
            raise InputError(f"scores must be numeric: {exc}") from None
        if arr.ndim != 2:
            raise InputError(f"a score matrix must be 2-D (agents x items); got shape {arr.shape}")
        K, J = arr.shape
        agents = [f"agent_{k}" for k in range(K)] if agents is None else list(agents)
        items = [f"item_{j}" for j in range(J)] if items is None else list(items)
        return cls(arr, agents, items, bounds, copy=copy)

    @classmethod
    def from_wide(cls, frame: pd.DataFrame, agent_column: str | None = None,
                  bounds: tuple[float, float] = (-1.0, 1.0)) -> "ScoreMatrix":
        """Build from a wide table: one row per agent, one column per item.

        ``agent_column`` names the column holding agent names; when ``None`` a
        column called ``agent`` is used if present, else the index. Cells may be
        numbers or strings (as :func:`evalcert.io.tables.read_table` gives them):
        empty and missing tokens (``NA``, ``nan``...) are unobserved; booleans and
        other text are refused.
        """
        values, agents, items = wide_cells(frame, agent_column)
        return cls(values, agents, items, bounds, copy=False)

    @classmethod
    def from_long(cls, frame: pd.DataFrame, agent: str = "agent", item: str = "item",
                  score: str = "score",
                  bounds: tuple[float, float] = (-1.0, 1.0)) -> "ScoreMatrix":
        """Build from a long table with one row per (agent, item, score); O(rows), no K x J.

        Agents and items keep their order of first appearance. Duplicate
        (agent, item) pairs raise :class:`InputError` (evalcert does not guess
        whether to average them); a row with an empty or missing-token score is
        not a cell: it is counted in ``n_missing`` and reported with a warning.
        """
        return cls.from_frame_cells(long_cells(frame, agent, item, score), bounds)

    # ----------------------------------------------------------- construction core
    def _setup(self, rows, cols, scores, agents, items, bounds, *, shape, n_missing,
               ordered, parent: "ScoreMatrix | None" = None, distinct_str: bool = False) -> None:
        # distinct_str: the names are distinct str already (a dictionary's
        # entries, from the long-table reader): no per-name conversion or set
        d = self.__dict__
        if parent is not None:          # names and bounds already checked: O(cells) restrict
            d["agents"], d["items"], d["bounds"] = parent.agents, parent.items, parent.bounds
        else:
            d["agents"] = tuple(agents) if distinct_str else tuple(map(str, agents))
            d["items"] = tuple(items) if distinct_str else tuple(map(str, items))
            d["bounds"] = (float(bounds[0]), float(bounds[1]))
        d["n_missing"] = int(n_missing)
        K, J = d["_shape"] = (int(shape[0]), int(shape[1]))
        if not ordered:
            _check_range(rows, cols, (K, J))
            rows, cols, scores, dup = _sort_cells(rows, cols, scores, (K, J))
            if len(dup):
                raise InputError("duplicate (agent, item) pairs: "
                                 + _list_cells(self._names(rows[dup], cols[dup]), len(dup))
                                 + "; aggregate them yourself (e.g. mean) before fitting")
        for a in (rows, cols, scores):
            a.setflags(write=False)
        d["_rows"], d["_cols"], d["_scores"] = rows, cols, scores
        if parent is None:
            self._validate_names(check_distinct=not distinct_str)
        self._validate_cells()

    def __setattr__(self, name, value):
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __getstate__(self) -> dict:
        # cells and names only: dense views are rebuilt on demand, never shipped to workers
        return {k: v for k, v in self.__dict__.items() if k not in ("values", "observed")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for k in ("_rows", "_cols", "_scores"):
            if state[k].flags.writeable:
                state[k].setflags(write=False)

    def __repr__(self) -> str:
        K, J = self.shape
        return f"<ScoreMatrix {K} agents x {J} items, {self.n_observed} observed cells>"

    # ------------------------------------------------------------------ validation
    def validate(self) -> None:
        """Check the matrix; raise :class:`InputError` naming the offending cells.

        Checks, in order: non-empty, names match the shape and are unique,
        bounds are ordered, no NaN or infinite scores, every score inside
        ``bounds``, no agent or item without a cell. O(cells + K + J).
        """
        self._validate_names()
        self._validate_cells()

    def _validate_names(self, check_distinct: bool = True) -> None:
        K, J = self.shape
        if K == 0 or J == 0:
            raise InputError(f"the score matrix is empty (shape {K} x {J}); give at least one "
                             "agent and one item")
        if len(self.agents) != K or len(self.items) != J:
            raise InputError(f"{len(self.agents)} agent names and {len(self.items)} item names "
                             f"for a {K} x {J} matrix")
        for kind, names in (("agent", self.agents), ("item", self.items)):
            if check_distinct and len(set(names)) != len(names):
                idx = pd.Index(names)
                raise InputError(f"duplicate {kind} names: "
                                 f"{_list_names(idx[idx.duplicated()].unique().tolist())}; "
                                 "names must be unique")
        lo, hi = self.bounds
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise InputError(f"bounds must be finite with lower < upper; got {self.bounds}")

    def _validate_cells(self) -> None:
        K, J = self.shape
        lo, hi = self.bounds
        r, c, s = self._rows, self._cols, self._scores
        # two reductions, no per-cell temporaries; the cells are listed only on failure
        low, high = (float(s.min()), float(s.max())) if len(s) else (lo, hi)
        for test, what, fix in ((np.isnan, "NaN", "leave unobserved cells out"),
                                (np.isinf, "infinite", "replace them by finite scores or "
                                                       "leave the cells unobserved")):
            bad = np.flatnonzero(test(s)) if not np.isfinite(low + high) else ()
            if len(bad):
                raise InputError(f"{what} scores at (agent, item) "
                                 + _list_cells(self._names(r[bad], c[bad]), len(bad)) + f"; {fix}")
        out = np.flatnonzero((s < lo) | (s > hi)) if low < lo or high > hi else ()
        if len(out):
            raise InputError(f"scores outside the bounds [{lo}, {hi}] at (agent, item) "
                             + _list_cells(self._names(r[out], c[out]), len(out))
                             + f" (first value {s[out[0]]!r}); rescale the scores or pass "
                             "bounds=(lo, hi); evalcert never clips input silently")
        # cells per agent from the row-major order (a search per agent, no pass
        # over the cells); per item one bincount
        per_agent = np.diff(np.searchsorted(r, np.arange(K + 1, dtype=r.dtype)))
        for kind, per, names in (("agents", per_agent, self.agents),
                                 ("items", np.bincount(c, minlength=J), self.items)):
            empty = np.flatnonzero(per == 0)
            if len(empty):
                raise InputError(f"{kind} with no observed score: "
                                 + _list_names([names[k] for k in empty[:_MAX_LISTED]], len(empty))
                                 + "; drop them before fitting (nothing can be learnt about them)")

    def _names(self, rows, cols) -> list[tuple[str, str]]:
        return [(self.agents[a], self.items[i]) for a, i in zip(rows[:_MAX_LISTED], cols[:_MAX_LISTED])]

    # ------------------------------------------------------------------ views
    @property
    def shape(self) -> tuple[int, int]:
        return self._shape

    @property
    def n_agents(self) -> int:
        return self._shape[0]

    @property
    def n_items(self) -> int:
        return self._shape[1]

    @property
    def n_observed(self) -> int:
        return len(self._scores)

    @property
    def coverage(self) -> float:
        """Fraction of cells observed."""
        return self.n_observed / (self.n_agents * self.n_items)

    def cells(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Observed cells in row-major order: ``(rows, cols, scores float64)``, read-only.

        ``rows`` and ``cols`` are ``int32`` when ``K * J < 2**31`` (any linear index
        ``row * J + col`` fits), else ``int64`` (:func:`evalcert.data.cells.index_dtype`).
        """
        return self._rows, self._cols, self._scores

    def _dense_bytes_check(self, dtype: str, what: str) -> None:
        K, J = self.shape
        require_memory(estimate_bytes((K, J), dtype), f"a dense {K} x {J} {what}",
                       "work on the observed cells instead: S.cells(), S.restrict(cell_mask), "
                       "S.connectivity()")

    def to_dense(self) -> np.ndarray:
        """A new writable K x J float array, NaN = unobserved (refused if it would not fit)."""
        self._dense_bytes_check("float64", "score array")
        out = np.full(self.shape, np.nan)
        out[self._rows, self._cols] = self._scores
        return out

    @functools.cached_property
    def values(self) -> np.ndarray:
        """Dense read-only K x J view, NaN = unobserved (built once; small matrices only)."""
        out = self.to_dense()
        out.setflags(write=False)
        return out

    @functools.cached_property
    def observed(self) -> np.ndarray:
        """Dense read-only boolean mask of observed cells (built once; small matrices only)."""
        self._dense_bytes_check("bool", "mask")
        mask = np.zeros(self.shape, dtype=bool)
        mask[self._rows, self._cols] = True
        mask.setflags(write=False)
        return mask

    def cell_mask(self, mask: np.ndarray) -> np.ndarray:
        """A boolean vector over :meth:`cells` from a K x J mask or a cell vector (checked)."""
        mask = np.asarray(mask)
        if mask.dtype == bool and mask.shape == (self.n_observed,):
            return mask
        if mask.dtype == bool and mask.shape == self.shape:
            return mask[self._rows, self._cols]
        raise InputError(f"mask must be a boolean array of shape {self.shape} or a boolean vector "
                         f"over the {self.n_observed} observed cells; got {mask.dtype} {mask.shape}")

    def restrict(self, mask: np.ndarray) -> "ScoreMatrix":
        """Keep only the cells where ``mask`` is True (others become unobserved); O(cells).

        ``mask`` is a K x J boolean array or a boolean vector over :meth:`cells`.
        Raises :class:`InputError` if ``mask`` has the wrong shape or leaves an
        agent or item with no observation.
        """
        keep = self.cell_mask(mask)
        out = ScoreMatrix.__new__(ScoreMatrix)
        out._setup(self._rows[keep], self._cols[keep], self._scores[keep], None, None, None,
                   shape=self.shape, n_missing=0, ordered=True, parent=self)
        return out

    def to_frame(self) -> pd.DataFrame:
        """Wide DataFrame (agents as index, items as columns); small matrices only."""
        return pd.DataFrame(self.values, index=pd.Index(self.agents, name="agent"),
                            columns=list(self.items))

    def to_long(self) -> pd.DataFrame:
        """Long DataFrame of observed cells: ``agent, item, score``."""
        r, c, s = self.cells()
        return pd.DataFrame({"agent": np.asarray(self.agents, dtype=object)[r],
                             "item": np.asarray(self.items, dtype=object)[c], "score": s})

    def summary(self) -> str:
        """Shape, observed cells, coverage, bounds and missing rows of the source."""
        K, J = self.shape
        text = (f"{K} agents x {J} items, {self.n_observed} observed cells "
                f"({self.coverage:.2%} coverage), bounds {list(self.bounds)}")
        return text + (f"; {self.n_missing} rows with a missing score were not used"
                       if self.n_missing else "")

    # ------------------------------------------------------------ connectivity
    def connectivity(self, mask: np.ndarray | None = None) -> ConnectivityReport:
        """Components and degrees of the bipartite observation graph; O(cells + K + J).

        ``mask`` (K x J boolean, or a boolean vector over :meth:`cells`)
        restricts the graph to a subset of the observed cells, e.g. the cells
        with positive bootstrap weight.
        """
        rows, cols = self._rows, self._cols
        if mask is not None:
            keep = self.cell_mask(mask)
            if not keep.all():
                rows, cols = rows[keep], cols[keep]
        K, J = self.shape
        lab_r, lab_c = bipartite_components(rows, cols, (K, J))
        n_comp = int(max(lab_r.max(), lab_c.max()) + 1)
        sizes = list(zip(np.bincount(lab_r, minlength=n_comp).tolist(),
                         np.bincount(lab_c, minlength=n_comp).tolist()))
        agent_deg = np.diff(np.searchsorted(rows, np.arange(K + 1, dtype=rows.dtype)))   # cells are row-major
        item_deg = np.bincount(cols, minlength=J)
        return ConnectivityReport(
            n_components=n_comp, component_sizes=[tuple(s) for s in sizes],
            agent_component=lab_r, item_component=lab_c,
            min_agent_degree=int(agent_deg.min()), min_item_degree=int(item_deg.min()),
            agent_degrees=agent_deg, item_degrees=item_deg)

    def require_connected(self, mask: np.ndarray | None = None) -> ConnectivityReport:
        """Return the connectivity report; raise :class:`ConnectivityError` if
        the design (restricted to ``mask`` if given) has more than one
        component or leaves an agent or item with no cell."""
        report = self.connectivity(mask)
        if not report.is_connected:
            small = np.flatnonzero(report.agent_component != 0)
            raise ConnectivityError(
                f"the observation design is disconnected: {report.n_components} components of "
                f"(agents, items) sizes {report.component_sizes[:_MAX_LISTED]}; abilities and "
                "difficulties of different components are not comparable. Observe cells that "
                "link them (see evalcert.diagnostics.connectivity) or fit each component separately"
                + (f"; agents outside the largest component: "
                   f"{_list_names([self.agents[k] for k in small[:_MAX_LISTED]], len(small))}"
                   if len(small) else ""),
                report.component_sizes)
        return report
