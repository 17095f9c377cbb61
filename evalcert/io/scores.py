"""Readers of score files: wide and long tables, long Parquet scanned in batches.

:func:`read_scores` reads CSV, TSV, JSON Lines and JSON through
:func:`evalcert.io.tables.read_table` (every cell a string, parsed here) and long
Parquet files (or folders of them) in batches of ``batch_rows`` rows, so a file
larger than memory is read in O(observed cells). Every reader ends in one
:class:`~evalcert.data.ScoreMatrix`, validated once.

Tables become cells in :mod:`evalcert.data.frames` (the long table batch by batch, about
16 bytes a cell while scanning, 24 in the result).

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

from pathlib import Path
from typing import Literal

from evalcert.data import ScoreMatrix
from evalcert.data.frames import BOOLEAN_TOKENS, LongBuilder, looks_numeric
from evalcert.errors import InputError
from evalcert.progress import progress_bar

__all__ = ["read_scores"]


def _scan_parquet(path: Path, names: dict[str, str], bounds: tuple[float, float],
                  batch_rows: int, verbose: bool) -> ScoreMatrix:
    """Long Parquet file (or folder of them) scanned in batches of ``batch_rows`` rows."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    from evalcert.io.tables import check_file
    if not path.is_dir():
        check_file(path)
    try:
        # names come as Arrow dictionaries straight from Parquet's dictionary
        # pages: no Python string, nor Arrow string, per row
        data = ds.dataset(path, format=ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(
            dictionary_columns=[names["agent"], names["item"]])))
        for part in data.files:                # not a FIFO or device: it could block forever
            check_file(Path(part))
        for fragment in data.get_fragments():  # a part without a column would read as nulls
            lacks = [c for c in names.values() if c not in fragment.physical_schema.names]
            if lacks:
                raise InputError(f"{fragment.path}: lacks column(s) {lacks} that the other "
                                 f"parts of {path} have (found "
                                 f"{fragment.physical_schema.names[:8]}); its rows would read "
                                 "as missing: fix or remove that file")
        found = data.schema.names
        missing = [c for c in names.values() if c not in found]
        if missing:
            raise InputError(f"{path}: missing column(s) {missing}; found {found[:8]}; name them "
                             "with agent=, item=, score=")
        n_rows = data.count_rows()
        from evalcert.memory import TABLE_READ_BYTES, require_memory
        require_memory(TABLE_READ_BYTES["per_row"] * n_rows, f"reading the {n_rows} rows of "
                       f"{path}", "split it into smaller parts or aggregate the rows")
        builder = LongBuilder()
        with progress_bar(verbose, n_rows, "reading", unit="rows", leave=True) as bar:
            for batch in data.to_batches(columns=list(names.values()), batch_size=batch_rows):
                builder.add(*(batch.column(k) for k in range(3)))
                bar.update(batch.num_rows)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{path}: corrupt or unreadable Parquet data ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0][:120]})") from None
    if builder.n_rows == 0:
        raise InputError(f"{path}: the long table has no rows")
    return ScoreMatrix.from_frame_cells(builder.finish(), bounds)


def _check_wide_header(path: Path, columns: list[str]) -> None:
    items = columns[1:]
    numeric = [looks_numeric(c) for c in items]
    if (columns[0] and looks_numeric(columns[0])) or any(c.lower() in BOOLEAN_TOKENS for c in columns) \
            or (items and all(numeric) and not all(float(c).is_integer() for c in items)):
        raise InputError(f"{path}: the header row looks like data ({', '.join(columns[:4])}...); "
                         "the first row must name the columns (agent, then one name per item): "
                         "add a header row")


def _dense_from_parquet(parquet, columns: list[str], K: int, block: int = 256):
    """Numeric Parquet columns -> one C-order float64 (rows x columns) array, NaN for nulls.

    The columns are read ``block`` at a time (Arrow holds one block, never the whole
    table) and copied through a small item-major buffer, so the only large allocation
    is the result: no Arrow copy of the file and no second rows x columns array for the
    transpose. Arrow's memory pool gives the blocks back to the system at the end.
    """
    import numpy as np
    import pyarrow as pa

    values = np.empty((K, len(columns)))
    buffer = np.empty((min(block, len(columns)), K))
    try:
        for j0 in range(0, len(columns), block):
            part = parquet.read(columns=columns[j0:j0 + block], use_threads=True)
            width = part.num_columns
            for k, column in enumerate(part.columns):
                start = 0
                for chunk in column.chunks:
                    buffer[k, start:start + len(chunk)] = chunk.to_numpy(zero_copy_only=False)
                    start += len(chunk)
            del part
            values[:, j0:j0 + width] = buffer[:width].T
    finally:
        pa.default_memory_pool().release_unused()
    return values


def _wide_parquet(path: Path, bounds: tuple[float, float]) -> ScoreMatrix | None:
    """A wide Parquet file whose item columns are all numbers, read numeric end to end.

    The item columns go from Arrow into one float64 array and into the matrix without a
    string per cell (25e6 cells: 41.7 s through strings, now about pyarrow's own read
    time), a block of columns at a time (peak memory: the matrix and one block, not an
    Arrow copy of the whole file beside it); ``None`` when a column is not numeric (text,
    booleans), which the string path reads and checks cell by cell.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from evalcert.data.frames import _name_text
    from evalcert.io.tables import check_file
    if check_file(path)[:4] != b"PAR1":
        raise InputError(f"{path}: not a Parquet file (no PAR1 header); check the file")
    try:
        parquet = pq.ParquetFile(path)
        schema = parquet.schema_arrow
        names = [str(c) for c in schema.names]
        if len(names) < 2 or len(set(names)) != len(names):
            return None                               # the string path says what is wrong
        agent_column = "agent" if "agent" in names else names[0]
        items = [n for n in names if n != agent_column]
        if not all(pa.types.is_integer(schema.field(n).type)
                   or pa.types.is_floating(schema.field(n).type) for n in items):
            return None
        _check_wide_header(path, [agent_column] + items)
        agents = [_name_text(a) for a in
                  parquet.read(columns=[agent_column]).column(0).to_pylist()]
        empty = [k for k, a in enumerate(agents) if a == ""]
        if empty:
            raise InputError(f"empty agent name in data row {empty[0] + 1} (of {len(empty)} "
                             "such rows); every row needs an agent name")
        values = _dense_from_parquet(parquet, items, len(agents))
    except InputError:
        raise
    except Exception as exc:  # pyarrow raises several unrelated types for corrupt files
        raise InputError(f"{path}: corrupt or unreadable Parquet file ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0][:120]})") from None
    return ScoreMatrix(values, agents, items, bounds, copy=False)


def read_scores(path: str | Path, format: Literal["wide", "long"] = "wide",
                bounds: tuple[float, float] = (-1.0, 1.0), *, batch_rows: int = 1_000_000,
                verbose: bool = False, **columns: str) -> ScoreMatrix:
    """Read a :class:`ScoreMatrix` from a CSV, TSV, Parquet, JSON Lines or JSON file.

    Files are parsed as data only (:func:`evalcert.io.tables.read_table`).

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
    from evalcert.io.tables import read_table, table_format
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
    if table_format(path) == "parquet":
        S = _wide_parquet(path, bounds)
        if S is not None:
            return S
    frame = read_table(path)
    if frame.shape[1] < 2:
        raise InputError(f"{path}: a wide score file needs an agent column and at least one item "
                         f"column; found {list(frame.columns)} (for agent,item,score rows use "
                         "format='long')")
    _check_wide_header(path, list(frame.columns))
    agent_column = "agent" if "agent" in frame.columns else frame.columns[0]
    return ScoreMatrix.from_wide(frame, agent_column=agent_column, bounds=bounds)
