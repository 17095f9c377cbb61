"""Tables in memory -> cells of a :class:`~evalcert.data.ScoreMatrix` (no file is read here).

A wide frame (one row per agent, one column per item) or a long frame (one row per
``(agent, item, score)``) is turned into validated cells. A long table is turned into cells batch
by batch: names become int32 codes (Arrow dictionary encoding in C; each distinct name becomes a
Python string once, and a dictionary repeated across batches is mapped once), scores float64; the
cells are then put in row-major order by two stable counting sorts (O(cells + K + J), no
O(n log n) argsort) and duplicates are found on neighbours. About 16 bytes a cell are held while
scanning, 24 in the result. The readers of files (:mod:`evalcert.io.scores`) feed these builders.

Example
-------
>>> import pandas as pd
>>> cells = long_cells(pd.DataFrame({"agent": ["m2", "m1", "m1"], "item": ["q1", "q1", "q2"],
...                                  "score": ["0.5", "-0.25", "1.0"]}), "agent", "item", "score")
>>> cells.agents, cells.items, cells.rows.tolist()    # first appearance; row-major cells
(['m2', 'm1'], ['q1', 'q2'], [0, 1, 1])
"""

from __future__ import annotations

import os
import warnings
from typing import NamedTuple

import numpy as np
import pandas as pd

from evalcert.data.cells import _MAX_LISTED, _list_cells, _list_names, _sort_cells, index_dtype
from evalcert.errors import InputError

__all__ = ["wide_cells", "long_cells", "looks_numeric", "decode_name", "LongBuilder", "Cells",
           "MISSING_TOKENS", "BOOLEAN_TOKENS"]

class Cells(NamedTuple):
    """Observed cells in row-major order with their names (the frame layer's output).

    :meth:`evalcert.data.ScoreMatrix.from_frame_cells` builds the matrix from them.

    Examples
    --------
    >>> cells = Cells(np.array([0, 1]), np.array([1, 0]), np.array([0.5, -1.0]), ["a", "b"],
    ...               ["x", "y"], 0)
    >>> cells.rows.tolist(), cells.items, cells.n_missing
    ([0, 1], ['x', 'y'], 0)
    """

    rows: np.ndarray
    cols: np.ndarray
    scores: np.ndarray
    agents: list
    items: list
    n_missing: int


def looks_numeric(text: str) -> bool:
    """True if ``text`` parses as a float (used to spot a missing header row).

    Examples
    --------
    >>> looks_numeric("0.25"), looks_numeric(" 1e-3 "), looks_numeric("gpt-4")
    (True, True, False)
    """
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True


#: score cells read as "unobserved" (besides an empty cell); counted, never guessed
MISSING_TOKENS = frozenset({"", "NA", "NaN", "nan", "N/A", "null", "None"})
BOOLEAN_TOKENS = frozenset({"true", "false"})
#: largest number of distinct agent or item names (int32 codes)
_MAX_NAMES = 2 ** 31 - 2
#: candidate names (see _NameCodes) held before they are unified, at least
_UNIFY_EVERY = 1 << 22


def _refuse_bad_scores(bad: np.ndarray, text: np.ndarray, name_of) -> None:
    lowered = np.char.lower(text[bad].astype(str))
    cells = name_of(bad[:_MAX_LISTED])
    if np.isin(lowered, list(BOOLEAN_TOKENS)).any():
        raise InputError("boolean scores (true/false) at (agent, item) " + _list_cells(cells, len(bad))
                         + "; evalcert does not read booleans as 1/0: write the scores as numbers "
                         "(e.g. 1 and 0) in the file")
    raise InputError("non-numeric scores at (agent, item) " + _list_cells(cells, len(bad))
                     + f" (first value {str(text[bad[0]])!r}); use numbers, or leave the cell "
                     "empty for unobserved")


#: pandas < 3 parses strings with a fast strtod that is off by one unit in the last place
#: for about a third of 17-digit decimals (measured: 36,297 of 100,000 on pandas 2.1 and
#: 2.2, 0 on 3.1), so a CSV's scores differed from the same scores read from Parquet
_INEXACT_TO_NUMERIC = int(pd.__version__.split(".")[0]) < 3


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
    if _INEXACT_TO_NUMERIC:
        ok = np.flatnonzero(~np.isnan(values))
        try:  # float() is correctly rounded: the file's "0.32010149509647", not a neighbour
            values[ok] = np.fromiter(map(float, text[ok]), dtype=float, count=len(ok))
        except ValueError:  # a form pandas reads and float() does not: keep pandas' value
            pass
    bad = np.flatnonzero(np.isnan(values) & ~pd.Series(text).isin(MISSING_TOKENS).to_numpy())
    if len(bad):
        _refuse_bad_scores(bad, text, name_of)
    return values


def decode_name(value: bytes, path: str | os.PathLike | None = None) -> str:
    """A binary cell (Parquet ``binary``) as the UTF-8 text it holds, never ``"b'a'"``.

    Examples
    --------
    >>> decode_name(b"gpt-4")
    'gpt-4'
    >>> decode_name(b"\\xff\\xfe")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    evalcert.errors.InputError: a binary cell (b'\\xff\\xfe') is not UTF-8 text; ...
    """
    try:
        return bytes(value).decode("utf-8")
    except UnicodeDecodeError:
        where = f"{path}: " if path is not None else ""
        raise InputError(f"{where}a binary cell ({bytes(value[:20])!r}) is not UTF-8 text; "
                         "store names and labels as text (strings)") from None


def _name_text(value) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    if isinstance(value, (bytes, bytearray)):              # a binary Parquet column
        return decode_name(value)
    return str(value).lower() if isinstance(value, (bool, np.bool_)) else str(value)


class _NameCodes:
    """The names of one column (agents or items) across batches, coded in C.

    Each batch's names new to its Arrow dictionary (used in the batch, not yet
    met in that dictionary) are appended, in order of first appearance, to a
    list of *candidates* as Arrow strings; the batch's cells get candidate
    numbers. :meth:`unify` dictionary-encodes all candidates at once, which
    numbers the distinct names in order of first appearance in the file and
    maps candidates to them; it runs at the end, and whenever the candidates
    not yet unified outnumber both ``_UNIFY_EVERY`` and the distinct names
    (so they stay O(distinct names), at O(1) amortised cost per candidate). A
    dictionary repeated across batches (a Parquet row group read in several
    batches) is mapped once. No Python object per row, one per distinct name.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.chunks: list = []      # Arrow string arrays of candidates
        self.size = 0               # candidates so far
        self.unique = 0             # candidates [0, unique) are distinct and unified
        self.dictionary, self.slots = None, None   # the last dictionary, its candidates

    def codes(self, column, row0: int) -> np.ndarray:
        """Candidate numbers (int32) of the names in ``column`` (rows ``row0 + 0..``)."""
        import pyarrow as pa
        import pyarrow.compute as pc
        if hasattr(column, "type"):
            arr = column if pa.types.is_dictionary(column.type) else \
                pc.dictionary_encode(column, null_encoding="encode")
            if arr.null_count:
                self._refuse_empty(row0 + int(np.flatnonzero(arr.is_null().to_numpy(
                    zero_copy_only=False))[0]))
            codes, values = arr.indices.to_numpy(zero_copy_only=False), arr.dictionary
            if self.dictionary is None or not self.dictionary.equals(values):
                self.dictionary, self.slots = values, np.full(len(values), -1, dtype=np.int32)
            slots = self.slots
        else:
            codes, values = pd.factorize(column, use_na_sentinel=False)
            slots = np.full(len(values), -1, dtype=np.int32)
        used = np.zeros(len(slots), dtype=bool)
        used[codes] = True
        new = np.flatnonzero(used & (slots < 0))
        if len(new):
            first = np.full(len(slots), len(codes), dtype=np.int64)
            first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)  # O(n) first appearance
            at = first[new]
            if not bool(np.all(at[1:] > at[:-1])):   # a Parquet dictionary: sorted already
                new = new[np.argsort(at, kind="stable")]
            del at
            names = values.take(new) if hasattr(values, "take") and hasattr(values, "type") \
                else values[new]
            if hasattr(names, "type") and pa.types.is_large_string(names.type):
                names = names.cast(pa.string())            # one type for all candidates
            elif not (hasattr(names, "type") and pa.types.is_string(names.type)):
                raw = names.to_pylist() if hasattr(names, "to_pylist") else list(names)
                names = pa.array(list(map(_name_text, raw)), type=pa.string())
            length = pc.binary_length(names).to_numpy(zero_copy_only=False)
            empty = np.flatnonzero(~(length > 0))              # "" or null (NaN length)
            if len(empty):
                self._refuse_empty(row0 + int(first[new[empty[0]]]))
            if self.size + len(new) > _MAX_NAMES:
                raise InputError(f"more than {_MAX_NAMES} distinct {self.kind} names; "
                                 "split the file")
            slots[new] = np.arange(self.size, self.size + len(new), dtype=np.int32)
            self.chunks.append(names)
            self.size += len(new)
        return slots[codes]

    def _refuse_empty(self, row: int) -> None:
        raise InputError(f"empty {self.kind} name in data row {row + 1} of the long table; "
                         f"every row needs an {self.kind} name (fill it in or drop the row)")

    @property
    def due(self) -> bool:
        return self.size - self.unique > max(_UNIFY_EVERY, self.unique)

    def unify(self) -> np.ndarray:
        """Number the distinct names; return the map candidate -> name number (int32)."""
        import pyarrow as pa
        import pyarrow.compute as pc
        if not self.chunks:
            return np.zeros(0, dtype=np.int32)
        encoded = pc.dictionary_encode(pa.concat_arrays(self.chunks))
        mapping = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32, copy=False)
        self.chunks = [encoded.dictionary]
        self.size = self.unique = len(encoded.dictionary)
        if self.slots is not None:
            self.slots = np.where(self.slots >= 0, mapping[np.maximum(self.slots, 0)], -1)
            self.slots = self.slots.astype(np.int32, copy=False)
        return mapping

    def names_of(self, codes) -> list[str]:
        """The names of candidates ``codes`` (for messages)."""
        import pyarrow as pa
        return pa.chunked_array(self.chunks, type=pa.string()).take(
            np.asarray(codes, dtype=np.int64)).to_pylist()

    def names(self) -> list[str]:
        """Every distinct name, in order of first appearance (after :meth:`unify`)."""
        return self.chunks[0].to_pylist() if self.chunks else []


class LongBuilder:
    """Accumulates batches of long-table rows into int32 codes, then row-major :class:`Cells`.

    Examples
    --------
    >>> builder = LongBuilder()
    >>> builder.add(pd.Series(["m1", "m2"]), pd.Series(["q1", "q1"]), pd.Series(["0.5", "1"]))
    >>> builder.add(pd.Series(["m1"]), pd.Series(["q2"]), pd.Series([""]))   # a missing score
    >>> cells = builder.finish()
    >>> cells.agents, cells.items, cells.scores.tolist(), cells.n_missing
    (['m1', 'm2'], ['q1', 'q2'], [0.5, 1.0], 1)
    """

    def __init__(self) -> None:
        self.names = (_NameCodes("agent"), _NameCodes("item"))
        self.parts: tuple[list, list, list] = ([], [], [])   # rows, cols (int32), scores
        self.n_rows = 0

    def add(self, agents, items, scores) -> None:
        rows, cols = (names.codes(column, self.n_rows)
                      for names, column in zip(self.names, (agents, items)))

        def name_of(idx):
            return list(zip(self.names[0].names_of(rows[idx]), self.names[1].names_of(cols[idx])))

        values = _parse_scores(scores, name_of)
        for part, array in zip(self.parts, (rows, cols, values)):
            part.append(array)
        self.n_rows += len(rows)
        for names, part in zip(self.names, self.parts):
            if names.due:
                mapping = names.unify()
                part[:] = [mapping[codes] for codes in part]

    def finish(self) -> "Cells":
        rows, cols, scores = (_concatenate(part) for part in self.parts)
        for names, codes in zip(self.names, (rows, cols)):
            if names.size != names.unique:
                np.take(names.unify(), codes, out=codes)    # candidates -> names, in place
        agents, items = (names.names() for names in self.names)
        rows, cols, scores, dup = _sort_cells(rows, cols, scores, (len(agents), len(items)))
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
        del missing
        itype = index_dtype(len(agents), len(items))   # int32 codes kept while they fit
        rows, cols = rows.astype(itype, copy=False), cols.astype(itype, copy=False)
        return Cells(rows, cols, scores, agents, items, n_missing)


def _concatenate(parts: list) -> np.ndarray:
    """One array from the batches' arrays, releasing them as it goes."""
    out = np.concatenate(parts) if len(parts) != 1 else np.ascontiguousarray(parts[0])
    parts.clear()
    return out


def wide_cells(frame: pd.DataFrame,
               agent_column: str | None) -> tuple[np.ndarray, list[str], list[str]]:
    """A wide frame's scores (dense, NaN = unobserved), agent names and item names.

    See :meth:`evalcert.data.ScoreMatrix.from_wide`, which builds the matrix from them.

    Examples
    --------
    >>> values, agents, items = wide_cells(pd.DataFrame({"agent": ["m1", "m2"],
    ...                                                  "q1": ["0.5", ""], "q2": ["1", "-1"]}),
    ...                                    "agent")
    >>> values.tolist(), agents, items
    ([[0.5, 1.0], [nan, -1.0]], ['m1', 'm2'], ['q1', 'q2'])
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
    return values, names, items


def long_cells(frame: pd.DataFrame, agent: str, item: str, score: str) -> "Cells":
    """A long frame's observed cells, row-major, checked for repeats.

    See :meth:`evalcert.data.ScoreMatrix.from_long`, which builds the matrix from them.

    Examples
    --------
    >>> cells = long_cells(pd.DataFrame({"a": ["m1", "m1"], "i": ["q2", "q1"], "s": [1, 0.5]}),
    ...                    "a", "i", "s")
    >>> cells.cols.tolist(), cells.scores.tolist()             # row-major: q2 came first
    ([0, 1], [1.0, 0.5])
    """
    missing = [c for c in (agent, item, score) if c not in frame.columns]
    if missing:
        raise InputError(f"long table lacks column(s) {missing}; it has {list(frame.columns)}; "
                         "name them with agent=, item=, score= or use the wide format")
    if len(frame) == 0:
        raise InputError("the long table has no rows")
    builder = LongBuilder()
    builder.add(frame[agent], frame[item], frame[score])
    return builder.finish()


