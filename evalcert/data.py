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
(:meth:`ScoreMatrix.from_long`) or from a file (:func:`read_scores`; long
Parquet files are scanned in batches, so a file larger than memory is read in
O(observed cells)). The dense views ``values`` / ``observed`` / ``to_dense()``
exist for small matrices and refuse sizes that would not fit in memory.

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
import warnings
from pathlib import Path
from typing import Literal, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from evalcert.errors import ConnectivityError, InputError
from evalcert.memory import estimate_bytes, require_memory
from evalcert.results import ResultMixin, format_table
from evalcert.tables import looks_numeric

__all__ = ["ScoreMatrix", "ConnectivityReport", "read_scores", "bipartite_components",
           "MISSING_TOKENS"]

_MAX_LISTED = 8
#: score cells read as "unobserved" (besides an empty cell); counted, never guessed
MISSING_TOKENS = frozenset({"", "NA", "NaN", "nan", "N/A", "null", "None"})
_BOOLEANS = frozenset({"true", "false"})


def _list_cells(cells, total: int) -> str:
    cells = list(cells)[:_MAX_LISTED]
    text = ", ".join(f"({a!s}, {i!s})" for a, i in cells)
    return text + (f", ... ({total} in all)" if total > len(cells) else "")


def _list_names(names: Sequence[str], total: int | None = None) -> str:
    total = len(names) if total is None else total
    shown = ", ".join(str(n) for n in list(names)[:_MAX_LISTED])
    return shown + (f", ... ({total} in all)" if total > _MAX_LISTED else "")


def bipartite_components(rows: np.ndarray, cols: np.ndarray,
                         shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Component labels of rows and columns of the bipartite graph of cells ``(rows, cols)``.

    O(cells + K + J). Label 0 is the largest component (by rows + columns, ties
    by first appearance); a row or column without a cell is its own component.

    Examples
    --------
    >>> bipartite_components(np.array([0, 1]), np.array([0, 1]), (3, 2))
    (array([0, 1, 2]), array([0, 1]))
    """
    K, J = shape
    graph = sp.coo_matrix((np.ones(len(rows), dtype=np.int8), (rows, K + np.asarray(cols))),
                          shape=(K + J, K + J))
    n, labels = connected_components(graph, directed=False)
    sizes = np.bincount(labels, minlength=n)
    relabel = np.empty(n, dtype=np.int64)
    relabel[np.argsort(-sizes, kind="stable")] = np.arange(n)
    labels = relabel[labels]
    return labels[:K], labels[K:]


@dataclasses.dataclass(frozen=True)
class ConnectivityReport(ResultMixin):
    """Connectivity of the bipartite agent-item observation graph.

    Attributes
    ----------
    n_components : int
        Number of connected components (agents and items as nodes, observed
        cells as edges).
    component_sizes : list of tuple of int
        ``(n_agents, n_items)`` per component, largest first.
    agent_component, item_component : ndarray of int
        Component label of every agent and item (0 = largest component).
    min_agent_degree, min_item_degree : int
        Fewest observed items of any agent and fewest observed agents of any item.
    agent_degrees, item_degrees : ndarray of int
        Observed cells per agent and per item.

    Examples
    --------
    Two agents that share no item cannot be put on one scale:

    >>> import numpy as np
    >>> S = ScoreMatrix.from_array(np.array([[0.5, np.nan], [np.nan, 0.2]]))
    >>> report = S.connectivity()
    >>> report.n_components, report.min_agent_degree
    (2, 1)
    """

    n_components: int
    component_sizes: list[tuple[int, int]]
    agent_component: np.ndarray
    item_component: np.ndarray
    min_agent_degree: int
    min_item_degree: int
    agent_degrees: np.ndarray
    item_degrees: np.ndarray

    @property
    def is_connected(self) -> bool:
        return self.n_components == 1

    def summary(self) -> str:
        rows = [(k, a, i) for k, (a, i) in enumerate(self.component_sizes)]
        head = (f"{self.n_components} component(s); min degree: agents "
                f"{self.min_agent_degree}, items {self.min_item_degree}")
        return head + "\n" + format_table(rows, ["component", "agents", "items"])


def _sorted_cells(rows: np.ndarray, cols: np.ndarray, n_items: int) -> np.ndarray | None:
    """Permutation to row-major order, or None if already strictly sorted."""
    key = rows * np.int64(n_items) + cols
    if len(key) < 2 or bool(np.all(key[1:] > key[:-1])):
        return None
    return np.argsort(key, kind="stable")


def _duplicate_pairs(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Indices (into sorted cells) of cells equal to their predecessor."""
    return np.flatnonzero((rows[1:] == rows[:-1]) & (cols[1:] == cols[:-1])) + 1


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
            arr = np.array(values, dtype=float, copy=True if copy else None, order="C")
        except (TypeError, ValueError) as exc:
            raise InputError(f"scores must be numeric: {exc}") from None
        if arr.ndim != 2:
            raise InputError(f"a score matrix must be 2-D (agents x items); got shape {arr.shape}")
        rows, cols = np.nonzero(~np.isnan(arr))
        self._setup(rows.astype(np.int64), cols.astype(np.int64), arr[rows, cols], agents, items,
                    bounds, shape=arr.shape, n_missing=0, ordered=True)
        if not copy:                    # after validation: a rejected array stays the caller's
            arr.setflags(write=False)
            self.__dict__["values"] = arr

    # ---------------------------------------------------------------- constructors
    @classmethod
    def from_cells(cls, rows: Sequence[int], cols: Sequence[int], scores: Sequence[float],
                   agents: Sequence[str], items: Sequence[str],
                   bounds: tuple[float, float] = (-1.0, 1.0), *,
                   n_missing: int = 0) -> "ScoreMatrix":
        """Build from observed cells ``(rows[k], cols[k], scores[k])``; never allocates K x J.

        Cells may come in any order (they are sorted row-major); a repeated
        (row, col) pair, an index out of range or a NaN score is refused.
        """
        self = cls.__new__(cls)
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        scores = np.asarray(scores, dtype=float)
        if not (rows.ndim == cols.ndim == scores.ndim == 1 and len(rows) == len(cols) == len(scores)):
            raise InputError(f"rows, cols and scores must be 1-D of one length; got "
                             f"{rows.shape}, {cols.shape}, {scores.shape}")
        self._setup(rows, cols, scores, agents, items, bounds,
                    shape=(len(agents), len(items)), n_missing=n_missing, ordered=False)
        return self

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
        numbers or strings (as :func:`evalcert.tables.read_table` gives them):
        empty and missing tokens (``NA``, ``nan``...) are unobserved; booleans and
        other text are refused.
        """
        if agent_column is None and "agent" in frame.columns:
            agent_column = "agent"
        if agent_column is not None:
            if agent_column not in frame.columns:
                raise InputError(f"no column {agent_column!r}; columns are {list(frame.columns)[:8]}")
            names = [_name_text(a) for a in frame[agent_column]]
            frame = frame.drop(columns=[agent_column])
        else:
            names = [_name_text(a) for a in frame.index]
        dup = pd.Index(frame.columns)
        if dup.has_duplicates:
            raise InputError(f"duplicate item columns {_list_names(dup[dup.duplicated()].unique().tolist())}; "
                             "every item needs its own column")
        empty = [k for k, a in enumerate(names) if a == ""]
        if empty:
            raise InputError(f"empty agent name in data row {empty[0] + 1} (of {len(empty)} such "
                             "rows); every row needs an agent name")
        items = [str(c) for c in frame.columns]
        values = np.empty((len(names), len(items)))
        for j, item in enumerate(items):
            values[:, j] = _parse_scores(frame.iloc[:, j],
                                         lambda idx, item=item: [(names[k], item) for k in idx])
        return cls(values, names, list(items), bounds, copy=False)

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
        missing = [c for c in (agent, item, score) if c not in frame.columns]
        if missing:
            raise InputError(f"long table lacks column(s) {missing}; it has {list(frame.columns)}; "
                             "name them with agent=, item=, score= or use the wide format")
        if len(frame) == 0:
            raise InputError("the long table has no rows")
        builder = _LongBuilder()
        builder.add(frame[agent], frame[item], frame[score])
        return builder.finish(bounds)

    # ----------------------------------------------------------- construction core
    def _setup(self, rows, cols, scores, agents, items, bounds, *, shape, n_missing,
               ordered, parent: "ScoreMatrix | None" = None) -> None:
        d = self.__dict__
        if parent is not None:          # names and bounds already checked: O(cells) restrict
            d["agents"], d["items"], d["bounds"] = parent.agents, parent.items, parent.bounds
        else:
            d["agents"] = tuple(str(a) for a in agents)
            d["items"] = tuple(str(i) for i in items)
            d["bounds"] = (float(bounds[0]), float(bounds[1]))
        d["n_missing"] = int(n_missing)
        K, J = d["_shape"] = (int(shape[0]), int(shape[1]))
        if not ordered:
            if len(rows) and (rows.min() < 0 or rows.max() >= K or cols.min() < 0 or cols.max() >= J):
                raise InputError(f"cell indices out of range for {K} agents x {J} items")
            perm = _sorted_cells(rows, cols, J)
            if perm is not None:
                rows, cols, scores = rows[perm], cols[perm], scores[perm]
                dup = _duplicate_pairs(rows, cols)
                if len(dup):
                    raise InputError("duplicate (agent, item) pairs: "
                                     + _list_cells(self._names(rows[dup], cols[dup]), len(dup))
                                     + "; aggregate them yourself (e.g. mean) before fitting")
        for a in (rows, cols, scores):
            a.setflags(write=False)
        d["_rows"], d["_cols"], d["_scores"] = rows, cols, scores
        if parent is None:
            self._validate_names()
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

    def _validate_names(self) -> None:
        K, J = self.shape
        if K == 0 or J == 0:
            raise InputError(f"the score matrix is empty (shape {K} x {J}); give at least one "
                             "agent and one item")
        if len(self.agents) != K or len(self.items) != J:
            raise InputError(f"{len(self.agents)} agent names and {len(self.items)} item names "
                             f"for a {K} x {J} matrix")
        for kind, names in (("agent", self.agents), ("item", self.items)):
            if len(set(names)) != len(names):
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
        for test, what, fix in ((np.isnan, "NaN", "leave unobserved cells out"),
                                (np.isinf, "infinite", "replace them by finite scores or "
                                                       "leave the cells unobserved")):
            bad = np.flatnonzero(test(s))
            if len(bad):
                raise InputError(f"{what} scores at (agent, item) "
                                 + _list_cells(self._names(r[bad], c[bad]), len(bad)) + f"; {fix}")
        out = np.flatnonzero((s < lo) | (s > hi))
        if len(out):
            raise InputError(f"scores outside the bounds [{lo}, {hi}] at (agent, item) "
                             + _list_cells(self._names(r[out], c[out]), len(out))
                             + f" (first value {s[out[0]]!r}); rescale the scores or pass "
                             "bounds=(lo, hi); evalcert never clips input silently")
        for kind, idx, n, names in (("agents", r, K, self.agents), ("items", c, J, self.items)):
            empty = np.flatnonzero(np.bincount(idx, minlength=n) == 0)
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
        """Observed cells in row-major order: ``(rows int64, cols int64, scores float64)``, read-only."""
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
            rows, cols = rows[keep], cols[keep]
        K, J = self.shape
        lab_r, lab_c = bipartite_components(rows, cols, (K, J))
        n_comp = int(max(lab_r.max(), lab_c.max()) + 1)
        sizes = list(zip(np.bincount(lab_r, minlength=n_comp).tolist(),
                         np.bincount(lab_c, minlength=n_comp).tolist()))
        agent_deg = np.bincount(rows, minlength=K)
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


# ---------------------------------------------------------------------- readers
def _refuse_bad_scores(bad: np.ndarray, text: np.ndarray, name_of) -> None:
    lowered = np.char.lower(text[bad].astype(str))
    cells = name_of(bad[:_MAX_LISTED])
    if np.isin(lowered, list(_BOOLEANS)).any():
        raise InputError("boolean scores (true/false) at (agent, item) " + _list_cells(cells, len(bad))
                         + "; evalcert does not read booleans as 1/0: write the scores as numbers "
                         "(e.g. 1 and 0) in the file")
    raise InputError("non-numeric scores at (agent, item) " + _list_cells(cells, len(bad))
                     + f" (first value {str(text[bad[0]])!r}); use numbers, or leave the cell "
                     "empty for unobserved")


def _parse_scores(column, name_of) -> np.ndarray:
    """Scores of one column as floats, NaN where empty or a missing token.

    ``column`` is a pandas Series (numbers or strings) or a pyarrow array;
    ``name_of(indices)`` names the (agent, item) of rows for error messages.
    """
    if hasattr(column, "type"):                          # pyarrow
        import pyarrow as pa
        if pa.types.is_boolean(column.type):
            _refuse_bad_scores(np.arange(len(column)), np.array(["true"]).repeat(len(column)),
                               name_of)
        if pa.types.is_integer(column.type) or pa.types.is_floating(column.type):
            return column.to_numpy(zero_copy_only=False).astype(float, copy=False)
        column = column.to_pandas()
    if column.dtype == bool:
        _refuse_bad_scores(np.arange(len(column)), np.array(["true"]).repeat(len(column)), name_of)
    if column.dtype.kind in "iuf":
        return column.to_numpy(dtype=float)
    text = np.asarray(column.astype(object).where(column.notna(), "").astype(str), dtype=object)
    values = pd.to_numeric(pd.Series(text), errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(np.isnan(values) & ~pd.Series(text).isin(MISSING_TOKENS).to_numpy())
    if len(bad):
        _refuse_bad_scores(bad, text, name_of)
    return values


def _name_text(value) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    return str(value).lower() if isinstance(value, (bool, np.bool_)) else str(value)


class _LongBuilder:
    """Accumulates batches of long-table rows into codes, then one ScoreMatrix."""

    def __init__(self) -> None:
        self.names: dict[str, dict[str, int]] = {"agent": {}, "item": {}}
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.n_rows = 0
        self._last: dict[str, tuple] = {}       # kind -> (arrow dictionary, its global codes)

    def _refuse_empty(self, kind: str, row: int) -> None:
        raise InputError(f"empty {kind} name in data row {self.n_rows + row + 1} of the long "
                         f"table; every row needs an {kind} name (fill it in or drop the row)")

    def _codes(self, column, kind: str) -> np.ndarray:
        """Global codes of the names in ``column``, numbered in order of first appearance.

        Arrow columns are dictionary-encoded in C; each distinct name becomes a
        Python string once, and a dictionary repeated across batches (Parquet
        dictionary pages) is mapped once for the whole file.
        """
        if hasattr(column, "type"):
            import pyarrow as pa
            import pyarrow.compute as pc
            arr = column if pa.types.is_dictionary(column.type) else \
                pc.dictionary_encode(column, null_encoding="encode")
            if arr.null_count:
                self._refuse_empty(kind, int(np.flatnonzero(arr.is_null().to_numpy(
                    zero_copy_only=False))[0]))
            codes = arr.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            values = arr.dictionary
            last = self._last.get(kind)
            if last is not None and last[0].equals(values):
                glob = last[1]
            else:
                glob = np.full(len(values), -1, dtype=np.int64)
                self._last[kind] = (values, glob)
        else:
            codes, values = pd.factorize(column, use_na_sentinel=False)
            glob = np.full(len(values), -1, dtype=np.int64)
        first = np.full(len(glob), len(codes), dtype=np.int64)
        first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)      # O(n) first appearance
        new = np.flatnonzero((first < len(codes)) & (glob < 0))
        new = new[np.argsort(first[new], kind="stable")]
        if len(new):
            raw = values.take(new).to_pylist() if hasattr(values, "to_pylist") else list(values[new])
            texts = raw if all(type(v) is str for v in raw) else [_name_text(v) for v in raw]
            if "" in texts:
                self._refuse_empty(kind, int(first[new[texts.index("")]]))
            mapping = self.names[kind]
            glob[new] = [mapping.setdefault(t, len(mapping)) for t in texts]
        return glob[codes]

    def add(self, agents, items, scores) -> None:
        rows, cols = self._codes(agents, "agent"), self._codes(items, "item")
        names = [list(self.names["agent"]), list(self.names["item"])]
        values = _parse_scores(scores, lambda idx: [(names[0][rows[k]], names[1][cols[k]])
                                                    for k in idx])
        self.parts.append((rows, cols, values))
        self.n_rows += len(rows)

    def finish(self, bounds: tuple[float, float]) -> ScoreMatrix:
        rows, cols, scores = (np.concatenate([p[k] for p in self.parts]) for k in range(3))
        self.parts.clear()
        agents, items = list(self.names["agent"]), list(self.names["item"])
        perm = _sorted_cells(rows, cols, len(items))
        if perm is not None:
            rows, cols, scores = rows[perm], cols[perm], scores[perm]
            dup = _duplicate_pairs(rows, cols)
            if len(dup):
                cells = [(agents[rows[k]], items[cols[k]]) for k in dup[:_MAX_LISTED]]
                raise InputError("duplicate (agent, item) pairs in the long table: "
                                 + _list_cells(cells, len(dup))
                                 + "; aggregate them yourself (e.g. mean) before fitting")
        missing = np.isnan(scores)
        n_missing = int(missing.sum())
        if n_missing:
            warnings.warn(f"{n_missing} of {self.n_rows} rows of the long table have an empty or "
                          f"missing score ({', '.join(sorted(t for t in MISSING_TOKENS if t))} or "
                          "empty); they are not observed cells", stacklevel=3)
            rows, cols, scores = rows[~missing], cols[~missing], scores[~missing]
        S = ScoreMatrix.__new__(ScoreMatrix)
        S._setup(rows, cols, scores, agents, items, bounds, shape=(len(agents), len(items)),
                 n_missing=n_missing, ordered=True)
        return S


def _scan_parquet(path: Path, names: dict[str, str], bounds: tuple[float, float],
                  batch_rows: int, verbose: bool) -> ScoreMatrix:
    """Long Parquet file (or folder of them) scanned in batches of ``batch_rows`` rows."""
    import pyarrow as pa
    import pyarrow.dataset as ds
    from tqdm.auto import tqdm

    from evalcert.tables import check_file
    if not path.is_dir():
        check_file(path)
    try:
        data = ds.dataset(path, format="parquet")
        found = data.schema.names
        missing = [c for c in names.values() if c not in found]
        if missing:
            raise InputError(f"{path}: missing column(s) {missing}; found {found[:8]}; name them "
                             "with agent=, item=, score=")
        builder = _LongBuilder()
        with tqdm(total=data.count_rows(), disable=not verbose, unit="rows", desc="reading") as bar:
            for batch in data.to_batches(columns=list(names.values()), batch_size=batch_rows):
                builder.add(*(batch.column(k) for k in range(3)))
                bar.update(batch.num_rows)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{path}: corrupt or unreadable Parquet data ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0][:120]})") from None
    if builder.n_rows == 0:
        raise InputError(f"{path}: the long table has no rows")
    return builder.finish(bounds)


def _check_wide_header(path: Path, columns: list[str]) -> None:
    items = columns[1:]
    numeric = [looks_numeric(c) for c in items]
    if (columns[0] and looks_numeric(columns[0])) or any(c.lower() in _BOOLEANS for c in columns) \
            or (items and all(numeric) and not all(float(c).is_integer() for c in items)):
        raise InputError(f"{path}: the header row looks like data ({', '.join(columns[:4])}...); "
                         "the first row must name the columns (agent, then one name per item): "
                         "add a header row")


def read_scores(path: str | Path, format: Literal["wide", "long"] = "wide",
                bounds: tuple[float, float] = (-1.0, 1.0), *, batch_rows: int = 1_000_000,
                verbose: bool = False, **columns: str) -> ScoreMatrix:
    """Read a :class:`ScoreMatrix` from a CSV, TSV, Parquet, JSON Lines or JSON file.

    Files are parsed as data only (:func:`evalcert.tables.read_table`).

    Parameters
    ----------
    path : str or Path
        The file; a folder of Parquet files is read as one long table.
    format : {"wide", "long"}
        ``wide``: the first column (or one named ``agent``) holds agent names,
        always read as names (``NA``, ``0.25`` are names); every other column is
        an item; an empty cell is unobserved. ``long``: columns
        ``agent, item, score``, one row per observed cell; a row with an empty
        score is counted in ``S.n_missing`` and reported with a warning.
    bounds : tuple of float
        Allowed score range.
    batch_rows : int
        Rows per batch when scanning long Parquet data (memory grows with the
        observed cells, never with the file or with K x J).
    verbose : bool
        Progress bar (stderr) while scanning Parquet.
    **columns : str
        For long tables, ``agent=``, ``item=``, ``score=`` column names.

    Raises
    ------
    InputError
        Unreadable file, no header row, duplicate item columns or (agent, item)
        pairs, empty agent names, booleans or text as scores, scores outside
        ``bounds``, agents or items without a score.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "scores.csv"
    >>> _ = path.write_text("agent,q1,q2\\nm1,0.5,-0.25\\nm2,,1.0\\n")  # an empty cell is unobserved
    >>> S = read_scores(path)
    >>> S.agents, S.items, S.n_observed
    (('m1', 'm2'), ('q1', 'q2'), 3)
    """
    from evalcert.tables import read_table, table_format
    path = Path(path)
    unknown = set(columns) - {"agent", "item", "score"}
    if unknown:
        raise InputError(f"unknown column option(s) {sorted(unknown)}; use agent=, item=, score=")
    if format == "long":
        names = {k: columns.get(k, k) for k in ("agent", "item", "score")}
        if path.is_dir() or table_format(path) == "parquet":
            return _scan_parquet(path, names, bounds, int(batch_rows), verbose)
        return ScoreMatrix.from_long(read_table(path, required=list(names.values())),
                                     bounds=bounds, **names)
    if format != "wide":
        raise InputError(f"format must be 'wide' or 'long', got {format!r}")
    frame = read_table(path)
    if frame.shape[1] < 2:
        raise InputError(f"{path}: a wide score file needs an agent column and at least one item "
                         f"column; found {list(frame.columns)} (for agent,item,score rows use "
                         "format='long')")
    _check_wide_header(path, list(frame.columns))
    agent_column = "agent" if "agent" in frame.columns else frame.columns[0]
    return ScoreMatrix.from_wide(frame, agent_column=agent_column, bounds=bounds)
