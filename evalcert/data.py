"""The score-matrix data model: agents x items, NaN = unobserved.

:class:`ScoreMatrix` is validated once, when it is built, so nothing downstream
re-validates: every value is finite and inside ``bounds``, no row or column is
empty, and names are unique. Readers accept numpy arrays, wide DataFrames (one
row per agent, one column per item) and long tables ``agent,item,score``, from
CSV or Parquet files.

Example
-------
>>> import numpy as np
>>> S = ScoreMatrix.from_array(np.array([[0.5, np.nan], [0.1, -0.2]]))
>>> S.n_observed, S.connectivity().is_connected
(3, True)
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Iterable, Literal, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from evalcert.errors import ConnectivityError, InputError
from evalcert.results import ResultMixin, format_table

__all__ = ["ScoreMatrix", "ConnectivityReport", "read_scores"]

_MAX_LISTED = 8


def _list_cells(cells: Iterable[tuple[str, str]], total: int) -> str:
    cells = list(cells)[:_MAX_LISTED]
    text = ", ".join(f"({a!s}, {i!s})" for a, i in cells)
    return text + (f", ... ({total} in all)" if total > len(cells) else "")


def _list_names(names: Sequence[str], total: int | None = None) -> str:
    total = len(names) if total is None else total
    shown = ", ".join(str(n) for n in list(names)[:_MAX_LISTED])
    return shown + (f", ... ({total} in all)" if total > _MAX_LISTED else "")


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


@dataclasses.dataclass(frozen=True, eq=False)
class ScoreMatrix:
    """Scores of agents (rows) on items (columns); NaN marks an unobserved cell.

    Build it with :meth:`from_array`, :meth:`from_wide`, :meth:`from_long` or
    :func:`read_scores`; the constructor validates (see :meth:`validate`).

    Attributes
    ----------
    values : ndarray, shape (K, J)
        Read-only float array; NaN = unobserved.
    agents, items : tuple of str
        Unique row and column names.
    bounds : tuple of float
        Allowed score range, ``(-1.0, 1.0)`` by default (TVD-MI scores).

    Parameters
    ----------
    copy : bool, default True
        Copy ``values``. With ``copy=False`` a C-contiguous float64 array is
        adopted as it is and made read-only, which halves the memory of large
        matrices; the caller must not change it through another reference.
    """

    values: np.ndarray
    agents: tuple[str, ...]
    items: tuple[str, ...]
    bounds: tuple[float, float] = (-1.0, 1.0)
    copy: dataclasses.InitVar[bool] = True

    def __post_init__(self, copy: bool) -> None:
        values = np.array(self.values, dtype=float, copy=True if copy else None, order="C")
        if values.ndim != 2:
            raise InputError(f"a score matrix must be 2-D (agents x items); got shape {values.shape}")
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "agents", tuple(str(a) for a in self.agents))
        object.__setattr__(self, "items", tuple(str(i) for i in self.items))
        object.__setattr__(self, "bounds", (float(self.bounds[0]), float(self.bounds[1])))
        self.validate()                 # before freezing: a rejected array stays the caller's
        values.setflags(write=False)

    # ------------------------------------------------------------------ validation
    def validate(self) -> None:
        """Check the matrix; raise :class:`InputError` naming the offending cells.

        Checks, in order: non-empty, names match the shape and are unique,
        bounds are ordered, no infinite values, every observed value inside
        ``bounds``, no all-NaN row (agent) or column (item).
        """
        K, J = self.values.shape
        if K == 0 or J == 0:
            raise InputError(f"the score matrix is empty (shape {K} x {J}); give at least one "
                             "agent and one item")
        if len(self.agents) != K or len(self.items) != J:
            raise InputError(f"{len(self.agents)} agent names and {len(self.items)} item names "
                             f"for a {K} x {J} matrix")
        for kind, names in (("agent", self.agents), ("item", self.items)):
            if len(set(names)) == len(names):
                continue
            dup = pd.Index(names)[pd.Index(names).duplicated()].unique().tolist()
            if dup:
                raise InputError(f"duplicate {kind} names: {_list_names(dup)}; names must be unique")
        lo, hi = self.bounds
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise InputError(f"bounds must be finite with lower < upper; got {self.bounds}")
        v = self.values
        bad = np.argwhere(np.isinf(v))
        if len(bad):
            raise InputError("infinite scores at (agent, item) "
                             + _list_cells(self._names(bad), len(bad))
                             + "; replace them by finite scores or NaN (unobserved)")
        with np.errstate(invalid="ignore"):
            out = np.argwhere((v < lo) | (v > hi))
        if len(out):
            r, c = out[0]
            raise InputError(f"scores outside the bounds [{lo}, {hi}] at (agent, item) "
                             + _list_cells(self._names(out), len(out))
                             + f" (first value {v[r, c]!r}); rescale the scores or pass "
                             "bounds=(lo, hi); evalcert never clips input silently")
        obs = ~np.isnan(v)
        empty_rows = np.flatnonzero(~obs.any(axis=1))
        if len(empty_rows):
            raise InputError("agents with no observed score: "
                             + _list_names([self.agents[k] for k in empty_rows])
                             + "; drop them before fitting (nothing can be learnt about them)")
        empty_cols = np.flatnonzero(~obs.any(axis=0))
        if len(empty_cols):
            raise InputError("items with no observed score: "
                             + _list_names([self.items[k] for k in empty_cols])
                             + "; drop them before fitting (nothing can be learnt about them)")

    def _names(self, cells: np.ndarray) -> list[tuple[str, str]]:
        return [(self.agents[r], self.items[c]) for r, c in cells]

    # ---------------------------------------------------------------- constructors
    @classmethod
    def from_array(cls, values: np.ndarray, agents: Sequence[str] | None = None,
                   items: Sequence[str] | None = None,
                   bounds: tuple[float, float] = (-1.0, 1.0), *,
                   copy: bool = True) -> "ScoreMatrix":
        """Build from a 2-D array; default names ``agent_0..``, ``item_0..``.

        ``copy=False`` adopts a float64 array without copying it and makes it
        read-only (see :class:`ScoreMatrix`).
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
        return cls(arr, tuple(agents), tuple(items), bounds, copy=copy)

    @classmethod
    def from_wide(cls, frame: pd.DataFrame, agent_column: str | None = None,
                  bounds: tuple[float, float] = (-1.0, 1.0)) -> "ScoreMatrix":
        """Build from a wide table: one row per agent, one column per item.

        ``agent_column`` names the column holding agent names; when ``None`` a
        column called ``agent`` is used if present, else the index.
        """
        frame = frame.copy()
        if agent_column is None and "agent" in frame.columns:
            agent_column = "agent"
        if agent_column is not None:
            if agent_column not in frame.columns:
                raise InputError(f"no column {agent_column!r}; columns are {list(frame.columns)[:8]}")
            frame = frame.set_index(agent_column)
        numeric = frame.apply(pd.to_numeric, errors="coerce")
        bad = numeric.isna() & frame.notna()
        if bad.to_numpy().any():
            cells = [(frame.index[r], frame.columns[c]) for r, c in np.argwhere(bad.to_numpy())]
            first = frame.iat[np.argwhere(bad.to_numpy())[0][0], np.argwhere(bad.to_numpy())[0][1]]
            raise InputError("non-numeric scores at (agent, item) " + _list_cells(cells, len(cells))
                             + f" (first value {first!r}); use numbers, or leave the cell empty "
                             "for unobserved")
        return cls(numeric.to_numpy(dtype=float), tuple(map(str, frame.index)),
                   tuple(map(str, frame.columns)), bounds)

    @classmethod
    def from_long(cls, frame: pd.DataFrame, agent: str = "agent", item: str = "item",
                  score: str = "score",
                  bounds: tuple[float, float] = (-1.0, 1.0)) -> "ScoreMatrix":
        """Build from a long table with one row per observed (agent, item, score).

        Agents and items keep their order of first appearance. Duplicate
        (agent, item) pairs raise :class:`InputError` (evalcert does not guess
        whether to average them).
        """
        missing = [c for c in (agent, item, score) if c not in frame.columns]
        if missing:
            raise InputError(f"long table lacks column(s) {missing}; it has {list(frame.columns)}; "
                             "name them with agent=, item=, score= or use the wide format")
        if len(frame) == 0:
            raise InputError("the long table has no rows")
        a = frame[agent].astype(str).to_numpy()
        i = frame[item].astype(str).to_numpy()
        raw = frame[score]
        s = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
        bad = np.flatnonzero(np.isnan(s) & raw.notna().to_numpy())
        if len(bad):
            cells = [(a[k], i[k]) for k in bad]
            raise InputError("non-numeric scores at (agent, item) " + _list_cells(cells, len(bad))
                             + f" (first value {raw.iloc[bad[0]]!r})")
        dup = pd.DataFrame({"a": a, "i": i}).duplicated(keep=False).to_numpy()
        if dup.any():
            cells = sorted(set(zip(a[dup], i[dup])))
            raise InputError("duplicate (agent, item) pairs in the long table: "
                             + _list_cells(cells, len(cells))
                             + "; aggregate them yourself (e.g. mean) before fitting")
        agents = list(dict.fromkeys(a))
        items = list(dict.fromkeys(i))
        ra = {n: k for k, n in enumerate(agents)}
        ci = {n: k for k, n in enumerate(items)}
        values = np.full((len(agents), len(items)), np.nan)
        values[[ra[x] for x in a], [ci[x] for x in i]] = s
        return cls(values, tuple(agents), tuple(items), bounds, copy=False)

    # ------------------------------------------------------------------ views
    @property
    def shape(self) -> tuple[int, int]:
        return self.values.shape  # type: ignore[return-value]

    @property
    def n_agents(self) -> int:
        return self.values.shape[0]

    @property
    def n_items(self) -> int:
        return self.values.shape[1]

    @functools.cached_property
    def observed(self) -> np.ndarray:
        """Boolean mask of observed cells (computed once, read-only)."""
        mask = ~np.isnan(self.values)
        mask.setflags(write=False)
        return mask

    @property
    def n_observed(self) -> int:
        return int(self.observed.sum())

    @property
    def coverage(self) -> float:
        """Fraction of cells observed."""
        return self.n_observed / self.values.size

    def cells(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Observed cells in row-major order: ``(rows, cols, scores)``."""
        rows, cols = np.nonzero(self.observed)
        return rows, cols, self.values[rows, cols]

    def restrict(self, mask: np.ndarray) -> "ScoreMatrix":
        """Keep only cells where ``mask`` is True (others become unobserved).

        Raises :class:`InputError` if ``mask`` has the wrong shape or leaves an
        agent or item with no observation.
        """
        mask = np.asarray(mask)
        if mask.shape != self.shape or mask.dtype != bool:
            raise InputError(f"mask must be a boolean array of shape {self.shape}; "
                             f"got {mask.dtype} {mask.shape}")
        values = np.where(mask, self.values, np.nan)
        return ScoreMatrix(values, self.agents, self.items, self.bounds, copy=False)

    def to_frame(self) -> pd.DataFrame:
        """Wide DataFrame (agents as index, items as columns)."""
        return pd.DataFrame(self.values, index=pd.Index(self.agents, name="agent"),
                            columns=list(self.items))

    def to_long(self) -> pd.DataFrame:
        """Long DataFrame of observed cells: ``agent, item, score``."""
        r, c, s = self.cells()
        return pd.DataFrame({"agent": np.asarray(self.agents, dtype=object)[r],
                             "item": np.asarray(self.items, dtype=object)[c], "score": s})

    # ------------------------------------------------------------ connectivity
    def connectivity(self, mask: np.ndarray | None = None) -> ConnectivityReport:
        """Components and degrees of the bipartite observation graph.

        ``mask`` (boolean, K x J) restricts the graph to a subset of the
        observed cells, e.g. the cells with positive bootstrap weight.
        """
        obs = self.observed if mask is None else np.asarray(mask, dtype=bool) & self.observed
        K, J = self.shape
        rows, cols = np.nonzero(obs)
        n = K + J
        graph = sp.coo_matrix((np.ones(len(rows)), (rows, K + cols)), shape=(n, n))
        n_comp, labels = connected_components(graph, directed=False)
        sizes = [(int((labels[:K] == c).sum()), int((labels[K:] == c).sum()))
                 for c in range(n_comp)]
        order = sorted(range(n_comp), key=lambda c: (-(sizes[c][0] + sizes[c][1]), c))
        relabel = np.empty(n_comp, dtype=int)
        relabel[order] = np.arange(n_comp)
        labels = relabel[labels]
        agent_deg = obs.sum(axis=1)
        item_deg = obs.sum(axis=0)
        return ConnectivityReport(
            n_components=int(n_comp), component_sizes=[sizes[c] for c in order],
            agent_component=labels[:K], item_component=labels[K:],
            min_agent_degree=int(agent_deg.min()), min_item_degree=int(item_deg.min()),
            agent_degrees=agent_deg, item_degrees=item_deg)

    def require_connected(self, mask: np.ndarray | None = None) -> ConnectivityReport:
        """Return the connectivity report; raise :class:`ConnectivityError` if
        the design (restricted to ``mask`` if given) has more than one
        component or leaves an agent or item with no cell."""
        report = self.connectivity(mask)
        if not report.is_connected:
            small = [k for k in range(len(self.agents)) if report.agent_component[k] != 0]
            raise ConnectivityError(
                f"the observation design is disconnected: {report.n_components} components of "
                f"(agents, items) sizes {report.component_sizes}; abilities and difficulties of "
                "different components are not comparable. Observe cells that link them "
                "(see evalcert.diagnostics.connectivity) or fit each component separately"
                + (f"; agents outside the largest component: {_list_names([self.agents[k] for k in small])}"
                   if small else ""),
                report.component_sizes)
        return report


def read_scores(path: str | Path, format: Literal["wide", "long"] = "wide",
                bounds: tuple[float, float] = (-1.0, 1.0), **columns: str) -> ScoreMatrix:
    """Read a :class:`ScoreMatrix` from a CSV or Parquet file.

    Parameters
    ----------
    path : str or Path
        ``.csv`` (or ``.csv.gz``) or ``.parquet``/``.pq`` file. Files are parsed
        as data only.
    format : {"wide", "long"}
        ``wide``: first column (or one named ``agent``) holds agent names, other
        columns are items. ``long``: columns ``agent, item, score``.
    bounds : tuple of float
        Allowed score range.
    **columns : str
        For long tables, ``agent=``, ``item=``, ``score=`` column names.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such file: {path}")
    suffixes = "".join(path.suffixes).lower()
    if suffixes.endswith((".parquet", ".pq")):
        frame = pd.read_parquet(path)
    elif ".csv" in suffixes or ".txt" in suffixes:
        try:
            frame = pd.read_csv(path)
        except pd.errors.ParserError as exc:
            raise InputError(f"{path} is not a readable CSV file: {exc}") from None
        except pd.errors.EmptyDataError:
            raise InputError(f"{path} is empty") from None
    else:
        raise InputError(f"cannot tell the format of {path}: use a .csv or .parquet file")
    if format == "long":
        return ScoreMatrix.from_long(frame, bounds=bounds, **columns)
    if format != "wide":
        raise InputError(f"format must be 'wide' or 'long', got {format!r}")
    agent_column = "agent" if "agent" in frame.columns else frame.columns[0]
    if frame[agent_column].dtype.kind in "fc" and agent_column != "agent":
        frame = frame.reset_index().rename(columns={"index": "agent"})
        agent_column = "agent"
    return ScoreMatrix.from_wide(frame, agent_column=agent_column, bounds=bounds)
