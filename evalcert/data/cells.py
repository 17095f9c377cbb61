"""Algorithms on the coordinates of observed cells, O(cells + K + J) each.

Row-major ordering by two stable counting sorts, duplicate (row, col) pairs,
and the connected components of the bipartite agent-item graph, with the
:class:`ConnectivityReport` that :meth:`evalcert.data.ScoreMatrix.connectivity`
returns. Nothing here is K x J.

Example
-------
>>> import numpy as np
>>> rows, cols = np.array([1, 0, 1]), np.array([0, 1, 1])
>>> _row_major_permutation(rows, cols, (2, 2)).tolist()   # cells (0,1), (1,0), (1,1)
[1, 0, 2]
>>> bipartite_components(rows, cols, (2, 2))
(array([0, 0]), array([0, 0]))
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from evalcert.results import MAX_LISTED, ResultMixin, format_table, list_names

#: names or cells shown in one message before "... and N more" (results.list_names)
_MAX_LISTED = MAX_LISTED


def _list_cells(cells, total: int) -> str:
    return list_names([f"({a!s}, {i!s})" for a, i in list(cells)[:_MAX_LISTED]], total)


def _list_names(names, total: int | None = None) -> str:
    return list_names(names, total)


__all__ = ["bipartite_components", "ConnectivityReport", "index_dtype"]


def index_dtype(K: int, J: int) -> type[np.signedinteger]:
    """The integer type of cell coordinates in a K x J matrix: ``int32`` when every
    linear index ``row * J + col`` fits in it (K J < 2^31, 4 bytes a coordinate
    instead of 8), else ``int64``.

    Examples
    --------
    >>> index_dtype(5000, 5000).__name__, index_dtype(10 ** 4, 10 ** 6).__name__
    ('int32', 'int64')
    """
    return np.int32 if int(K) * int(J) < 2 ** 31 - 1 else np.int64


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
    rows, cols = np.asarray(rows), np.asarray(cols)
    n_cells = len(rows)
    itype = np.int32 if K + J + n_cells < 2 ** 31 - 1 else np.int64
    if n_cells > 1 and not bool(np.all(rows[1:] >= rows[:-1])):
        order = _counting_order(rows, K, np.arange(n_cells, dtype=itype))
        rows, cols = rows[order], cols[order]
    starts = np.searchsorted(rows, np.arange(K + 1, dtype=rows.dtype))
    if _one_agent_sees_all(rows, cols, starts, J):
        return np.zeros(K, dtype=np.int64), np.zeros(J, dtype=np.int64)
    # Each item joined to one agent that observed it (its "centre"): the graph
    # on the agents whose edges are the cells (agent, centre of the item) has
    # the bipartite graph's components (an item is in its centre's). Written
    # straight as CSR (cells grouped by agent): K nodes, so scipy's internal
    # transpose sorts into K buckets, not K + J (~25% less CPU at 10^6 items).
    centre = np.zeros(J, dtype=itype)
    centre[cols] = rows                 # any one of the item's agents will do
    observed = np.zeros(J, dtype=bool)
    observed[cols] = True
    indptr = starts.astype(itype)                                # rows sorted: no pass
    graph = sp.csr_matrix((np.ones(n_cells), centre[cols], indptr), shape=(K, K))
    n_agents, agent_labels = connected_components(graph, directed=True, connection="weak")
    del graph
    # an item without a cell is its own component, numbered after the agents'
    # (scipy numbers components by their first node: agents, then items, as
    # on the bipartite graph)
    alone = ~observed
    labels = np.empty(K + J, dtype=np.int64)
    labels[:K] = agent_labels
    labels[K:] = agent_labels[centre] if K else 0
    labels[K:][alone] = n_agents + np.arange(np.count_nonzero(alone))
    n = n_agents + int(np.count_nonzero(alone))
    sizes = np.bincount(labels, minlength=n)
    relabel = np.empty(n, dtype=np.int64)
    relabel[np.argsort(-sizes, kind="stable")] = np.arange(n)
    labels = relabel[labels]
    return labels[:K], labels[K:]


def _one_agent_sees_all(rows: np.ndarray, cols: np.ndarray, starts: np.ndarray,
                        J: int) -> bool:
    """Whether every agent has a cell and one agent (the busiest) has a cell on every
    item: then the graph is one component (every item meets that agent, every agent
    one of the items), found in O(K + J) instead of a graph search over the cells (a
    complete or nearly complete design, the common wide file)."""
    degree = np.diff(starts)
    if len(degree) == 0 or J == 0 or int(degree.min()) == 0:
        return False
    busiest = int(np.argmax(degree))
    if int(degree[busiest]) < J:
        return False
    seen = np.zeros(J, dtype=bool)
    seen[cols[starts[busiest]:starts[busiest + 1]]] = True
    return bool(seen.all())


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
    >>> from evalcert.data import ScoreMatrix
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

    def to_frame(self) -> Any:
        """One row per connected component: its agents and items."""
        import pandas as pd

        return pd.DataFrame(self.component_sizes, columns=["agents", "items"]).rename_axis(
            "component")

    def summary(self) -> str:
        rows = [(k, a, i) for k, (a, i) in enumerate(self.component_sizes)]
        head = (f"{self.n_components} component(s); min degree: agents "
                f"{self.min_agent_degree}, items {self.min_item_degree}")
        return head + "\n" + format_table(rows, ["component", "agents", "items"])


def _counting_order(keys: np.ndarray, size: int, carry: np.ndarray) -> np.ndarray:
    """``carry`` reordered by ``keys`` (ints in ``[0, size)``), stably, in O(n + size).

    A one-row CSR matrix with column indices ``keys`` converted to CSC: scipy's
    transpose is a counting sort in C that keeps the order within a column.
    """
    n = len(keys)
    itype = carry.dtype
    one_row = sp.csr_matrix((carry, keys.astype(itype, copy=False),
                             np.array([0, n], dtype=itype)), shape=(1, size))
    return one_row.tocsc().data


def _row_major_permutation(rows: np.ndarray, cols: np.ndarray,
                           shape: tuple[int, int]) -> np.ndarray | None:
    """Stable permutation to row-major order, or None if already strictly sorted.

    Two stable counting sorts (by column, then by row: O(cells + K + J), 4-8
    bytes a cell) instead of an O(n log n) argsort of ``row * J + col``; one
    when the cells come grouped by column already (a file written item by
    item), where the first sort is the identity.
    """
    K, J = shape
    n = len(rows)
    key = rows * np.int64(J) + cols
    if n < 2 or bool(np.all(key[1:] > key[:-1])):
        return None
    del key
    itype = np.int32 if n < 2 ** 31 - 1 and max(K, J) < 2 ** 31 - 1 else np.int64
    perm = np.arange(n, dtype=itype)
    if not bool(np.all(cols[1:] >= cols[:-1])):
        perm = _counting_order(cols, J, perm)
        rows = rows[perm]
    return _counting_order(rows, K, perm)


def _sort_cells(rows: np.ndarray, cols: np.ndarray, scores: np.ndarray,
                shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The cells in row-major order (stably) and the positions, in that order,
    of cells repeating their predecessor's pair (duplicates); O(cells + K + J)."""
    perm = _row_major_permutation(rows, cols, shape)
    if perm is None:
        return rows, cols, scores, np.zeros(0, dtype=np.int64)
    rows, cols, scores = rows[perm], cols[perm], scores[perm]
    del perm
    # comparisons of neighbours (no int64 keys): same row, then the columns
    same_row = rows[1:] == rows[:-1]
    if bool(np.any(rows[1:] < rows[:-1])) or bool(np.any(same_row & (cols[1:] < cols[:-1]))):
        raise RuntimeError("the counting sort of the cells failed: scipy's CSR to CSC "
                           "transpose no longer keeps order; please report this to evalcert "
                           "with your scipy version")
    return rows, cols, scores, np.flatnonzero(same_row & (cols[1:] == cols[:-1])) + 1
