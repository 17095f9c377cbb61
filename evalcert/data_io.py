"""Readers of score files: wide and long tables, long Parquet scanned in batches.

:func:`read_scores` reads CSV, TSV, JSON Lines and JSON through
:func:`evalcert.tables.read_table` (every cell a string, parsed here) and long
Parquet files (or folders of them) in batches of ``batch_rows`` rows, so a file
larger than memory is read in O(observed cells). Every reader ends in one
:class:`~evalcert.data.ScoreMatrix`, validated once.

A long table is turned into cells batch by batch: names become int32 codes
(Arrow dictionary encoding in C; each distinct name becomes a Python string
once, and a dictionary repeated across batches is mapped once), scores
float64; the cells are then put in row-major order by two stable counting
sorts (O(cells + K + J), no O(n log n) argsort) and duplicates are found on
neighbours. About 16 bytes a cell are held while scanning, 24 in the result.

Example
-------
>>> import pathlib, tempfile
>>> path = pathlib.Path(tempfile.mkdtemp()) / "long.csv"
>>> _ = path.write_text("agent,item,score\\nm2,q1,0.5\\nm1,q1,-0.25\\nm1,q2,1.0\\n")
>>> S = read_scores(path, format="long")
>>> S.agents, S.items, S.cells()[0].tolist()          # first appearance; row-major cells
(('m2', 'm1'), ('q1', 'q2'), [0, 1, 1])
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from evalcert.data import _MAX_LISTED, ScoreMatrix, _list_cells, _list_names
from evalcert.data_cells import _sort_cells
from evalcert.errors import InputError
from evalcert.tables import looks_numeric

__all__ = ["read_scores", "MISSING_TOKENS"]

#: score cells read as "unobserved" (besides an empty cell); counted, never guessed
MISSING_TOKENS = frozenset({"", "NA", "NaN", "nan", "N/A", "null", "None"})
_BOOLEANS = frozenset({"true", "false"})
#: largest number of distinct agent or item names (int32 codes)
_MAX_NAMES = 2 ** 31 - 2
#: candidate names (see _NameCodes) held before they are unified, at least
_UNIFY_EVERY = 1 << 22


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


class _LongBuilder:
    """Accumulates batches of long-table rows into int32 codes, then one ScoreMatrix."""

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

    def finish(self, bounds: tuple[float, float]) -> ScoreMatrix:
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
        rows, cols = rows.astype(np.int64), cols.astype(np.int64)
        S = ScoreMatrix.__new__(ScoreMatrix)
        S._setup(rows, cols, scores, agents, items, bounds, shape=(len(agents), len(items)),
                 n_missing=n_missing, ordered=True, distinct_str=True)
        return S


def _concatenate(parts: list) -> np.ndarray:
    """One array from the batches' arrays, releasing them as it goes."""
    out = np.concatenate(parts) if len(parts) != 1 else np.ascontiguousarray(parts[0])
    parts.clear()
    return out


def scores_from_wide(frame: pd.DataFrame, agent_column: str | None,
                     bounds: tuple[float, float]) -> ScoreMatrix:
    """:meth:`ScoreMatrix.from_wide` (see there)."""
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
    return ScoreMatrix(values, names, list(items), bounds, copy=False)


def scores_from_long(frame: pd.DataFrame, agent: str, item: str, score: str,
                     bounds: tuple[float, float]) -> ScoreMatrix:
    """:meth:`ScoreMatrix.from_long` (see there)."""
    missing = [c for c in (agent, item, score) if c not in frame.columns]
    if missing:
        raise InputError(f"long table lacks column(s) {missing}; it has {list(frame.columns)}; "
                         "name them with agent=, item=, score= or use the wide format")
    if len(frame) == 0:
        raise InputError("the long table has no rows")
    builder = _LongBuilder()
    builder.add(frame[agent], frame[item], frame[score])
    return builder.finish(bounds)


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
        # names come as Arrow dictionaries straight from Parquet's dictionary
        # pages: no Python string, nor Arrow string, per row
        data = ds.dataset(path, format=ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(
            dictionary_columns=[names["agent"], names["item"]])))
        found = data.schema.names
        missing = [c for c in names.values() if c not in found]
        if missing:
            raise InputError(f"{path}: missing column(s) {missing}; found {found[:8]}; name them "
                             "with agent=, item=, score=")
        n_rows = data.count_rows()
        from evalcert.memory import TABLE_READ_BYTES, require_memory
        require_memory(TABLE_READ_BYTES["per_row"] * n_rows, f"reading the {n_rows} rows of "
                       f"{path}", "split it into smaller parts or aggregate the rows")
        builder = _LongBuilder()
        with tqdm(total=n_rows, disable=not verbose, unit="rows", desc="reading") as bar:
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
