"""Reading response matrices from files and tables: wide or long, nothing silent.

A response file is either *wide* (one row per model, first column = model
names, one column per item) or *long* (one row per model-item pair, columns
``model,item,correct``). Files go through :func:`evalcert.io.tables.read_table`, so
missing, empty, binary, compressed, non-UTF-8 and corrupt files are refused
with one line. Then:

* a header row that is all numbers is refused (the usual sign of a file
  without a header: its first data row would become item names; column
  numbers ``0..m-1`` or ``1..m`` are accepted), unless
  ``header=False`` says so, in which case models and items are named
  ``model0..`` and ``item0..`` and no name column is expected;
* a header row over items only, with no model-name column (LSAT6/LSAT7 as usually
  distributed: every column 0/1), is detected: when the first column's values are all
  responses and repeat (names never repeat), every column is an item, the models are
  named ``row1..rowN`` and :meth:`ResponseTable.describe` says so; ``names=False``
  (``--no-names``) says it outright, ``names=True`` insists on a name column;
* duplicate or empty model names, duplicate (model, item) pairs in a long
  table and duplicate item names are refused with examples;
* every cell must be a number of the response kind (``binary``: 0/1;
  ``unit``: in [0, 1]; ``ordinal``: integers); an empty cell is missing, and
  the number of missing cells is reported. Text such as ``true``, ``yes``,
  ``NA`` or ``nan`` is refused with the fix (write 1/0, leave missing cells
  empty).

Example
-------
>>> import pandas as pd
>>> long = pd.DataFrame({"model": ["a", "a", "b"], "item": ["q1", "q2", "q1"],
...                      "correct": [1, 0, 1]})
>>> res = responses_from_long(long)
>>> res.shape, res.n_missing, list(res.table.index)
((2, 2), 1, ['a', 'b'])
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import numpy as np
import pandas as pd

from evalcert.errors import InputError
from evalcert.io.tables import looks_numeric, read_table

__all__ = ["ResponseTable", "read_responses", "responses_from_long", "responses_from_wide",
           "RESPONSE_KINDS"]

RESPONSE_KINDS = ("binary", "unit", "ordinal")
_ALLOWED = {"binary": "0 or 1", "unit": "numbers in [0, 1]", "ordinal": "integers"}


@dataclasses.dataclass(frozen=True)
class ResponseTable:
    """A models x items float table (NaN = missing) and what reading it found.

    Examples
    --------
    >>> frame = pd.DataFrame({"model": ["a", "b"], "q1": ["1", "0"], "q2": ["", "1"]})
    >>> res = responses_from_wide(frame, where="demo")
    >>> res.shape, res.n_missing
    ((2, 2), 1)
    >>> res.describe()
    'read 2 models x 2 items from demo; 1 missing cells (25.0%)'
    """

    table: pd.DataFrame
    n_missing: int
    source: str = ""
    notes: tuple[str, ...] = ()

    @property
    def shape(self) -> tuple[int, int]:
        return self.table.shape  # type: ignore[return-value]

    def describe(self) -> str:
        """One line for stderr: the shape and the number of missing cells."""
        n, m = self.shape
        share = self.n_missing / max(n * m, 1)
        return (f"read {n} models x {m} items{f' from {self.source}' if self.source else ''}; "
                f"{self.n_missing} missing cells ({share:.1%})"
                + "".join(f"; {note}" for note in self.notes))


def _examples(values: Any, limit: int = 5) -> str:
    from evalcert.results import list_names
    return list_names([str(v) for v in values], limit=limit, quote=True)


def _parse_cells(cells: np.ndarray, kind: str, where: str) -> np.ndarray:
    """Strings -> floats (``""`` -> NaN), checked against the response ``kind``."""
    if kind not in RESPONSE_KINDS:
        raise InputError(f"kind must be one of {RESPONSE_KINDS}, got {kind!r}")
    cells = np.asarray(cells, dtype=object)
    uniq, inverse = np.unique(cells.astype(str), return_inverse=True)
    uniq = np.char.strip(uniq)
    parsed = np.empty(uniq.size)
    bad = []
    for k, text in enumerate(uniq):
        if text == "":
            parsed[k] = np.nan
            continue
        value = float(text) if looks_numeric(text) and text.lower().lstrip("+-") not in (
            "nan", "inf", "infinity") else None
        ok = value is not None and (
            value in (0.0, 1.0) if kind == "binary" else 0.0 <= value <= 1.0 if kind == "unit"
            else float(value).is_integer())
        if not ok:
            bad.append(text)
        parsed[k] = value if ok else np.nan
    if bad:
        count = int(np.isin(uniq[inverse.ravel()], bad).sum())
        lowered = {b.lower() for b in bad}
        fix = ("write 1/0 instead of booleans" if lowered & {"true", "false", "yes", "no", "t",
                                                              "f", "y", "n"} else
               "leave missing cells empty" if lowered & {"na", "nan", "none", "null", "n/a",
                                                         "-", "?"} else
               "threshold or rescale the values" if kind == "binary" else "fix the values")
        raise InputError(f"{where}: {count} cells are not {_ALLOWED[kind]} (values "
                         f"{_examples(bad)}); {fix}; empty cells are read as missing")
    return parsed[inverse].reshape(cells.shape)


def _column_numbers(names: list[str]) -> bool:
    """True for ``0..m-1`` or ``1..m``: column numbers (as pandas writes them), not data."""
    try:
        numbers = [int(n) for n in names]
    except ValueError:
        return False
    return numbers in (list(range(len(names))), list(range(1, len(names) + 1)))


def _unique_names(names: list[str], what: str, where: str) -> None:
    empty = [k for k, n in enumerate(names) if n.strip() == ""]
    if empty:
        raise InputError(f"{where}: {len(empty)} {what} have an empty name (first at position "
                         f"{empty[0] + 1}); name every {what[:-1]}")
    seen, dup = set(), []
    for n in names:
        if n in seen and n not in dup:
            dup.append(n)
        seen.add(n)
    if dup:
        count = len(names) - len(set(names))
        raise InputError(f"{where}: {count} duplicate {what[:-1]} names, e.g. {_examples(dup)}; "
                         f"each {what[:-1]} needs its own name (does the file lack a header "
                         "row, or should it be read with --format long?)")


def _no_name_column(frame: pd.DataFrame, kind: str) -> bool:
    """True when the first column looks like one more item: a named column whose values
    are all responses of ``kind`` and repeat (model names never repeat)."""
    if frame.shape[1] < 1 or str(frame.columns[0]).strip() == "" or len(frame) < 2:
        return False
    first = frame.iloc[:, 0].astype(str).str.strip()
    if first.duplicated().sum() == 0:
        return False
    try:
        _parse_cells(first.to_numpy(dtype=object), kind, "")
    except InputError:
        return False
    return bool((first != "").all())


def responses_from_wide(frame: pd.DataFrame | np.ndarray, *, kind: str = "binary",
                        header: bool = True, transpose: bool = False,
                        where: str = "responses", names: bool | None = None) -> ResponseTable:
    """A wide string table (as :func:`~evalcert.io.tables.read_table` returns) -> responses.

    With ``header=True`` the first column holds model names (items if
    ``transpose``) and the other column names are the items; with
    ``header=False`` the frame (or a 2-D array of strings) is all data.
    ``names=False``: a header row but no name column (every column is an item,
    models ``row1..rowN``); ``None`` detects that layout (see the module notes).

    Examples
    --------
    >>> frame = pd.DataFrame({"model": ["a", "b"], "q1": ["1", "0"], "q2": ["", "1"]})
    >>> res = responses_from_wide(frame)
    >>> list(res.table.columns), res.n_missing
    (['q1', 'q2'], 1)
    >>> responses_from_wide(np.array([["1", "0"], ["0", "1"]]), header=False).table.index.tolist()
    ['model0', 'model1']
    >>> lsat = pd.DataFrame({"Item 1": ["1", "0", "1"], "Item 2": ["0", "0", "1"]})
    >>> res = responses_from_wide(lsat)  # no name column: detected, and said
    >>> res.table.index.tolist(), res.notes[0][:40]
    (['row1', 'row2', 'row3'], 'no model-name column (the first column, ')
    """
    notes: tuple[str, ...] = ()
    if header and names is None and _no_name_column(frame, kind):
        names = False
        notes = (f"no model-name column (the first column, {str(frame.columns[0])!r}, holds "
                 "repeated responses, so it is an item): every column is an item and the "
                 "models are named row1..rowN (--no-names says so; a name column must come "
                 "first)",)
    if header and names is False:
        cols = [str(c) for c in frame.columns]
        body = frame.to_numpy(dtype=object)
        rows = [f"row{k + 1}" for k in range(body.shape[0])]
        if not notes:
            notes = ("no model-name column: the models are named row1..rowN",)
    elif header:
        cols = [str(c) for c in frame.columns]
        if len(cols) < 2:
            raise InputError(f"{where}: only {len(cols)} column; a wide table needs a name "
                             "column and at least one item column (or use --format long)")
        if all(looks_numeric(c) for c in cols[1:]) and not _column_numbers(cols[1:]):
            raise InputError(f"{where}: the header row is all numbers ({_examples(cols[1:], 3)})"
                             ": the file seems to lack a header row, so its first data row "
                             "would become item names; add a header row (name, item1, ...) "
                             "or pass --no-header (API: header=False)")
        rows = frame.iloc[:, 0].astype(str).tolist()
        body = frame.iloc[:, 1:].to_numpy(dtype=object)
        cols = cols[1:]
    else:
        body = frame.to_numpy(dtype=object) if hasattr(frame, "to_numpy") else \
            np.asarray(frame, dtype=object)
        rows = [str(k) for k in range(body.shape[0])]
        cols = [str(k) for k in range(body.shape[1])]
    if body.size == 0:
        raise InputError(f"{where}: no responses (the table has no data rows or no item columns)")
    values = _parse_cells(body, kind, where)
    if transpose:
        values, rows, cols = values.T, cols, rows
    if not header:
        rows = [f"model{r}" for r in rows]
        cols = [f"item{c}" for c in cols]
    _unique_names(rows, "models", where)
    _unique_names(cols, "items", where)
    table = pd.DataFrame(values, index=pd.Index(rows, dtype=object),
                         columns=pd.Index(cols, dtype=object))
    return ResponseTable(table, int(np.isnan(values).sum()), where, notes)


def responses_from_long(frame: pd.DataFrame, *, model_col: str = "model", item_col: str = "item",
                        response_col: str = "correct", kind: str = "binary",
                        where: str = "responses") -> ResponseTable:
    """A long table (one row per model-item pair) -> a wide models x items response table.

    Rows and columns keep the order of first appearance. An empty response is
    missing (counted); a pair that appears twice is refused.

    Examples
    --------
    >>> long = pd.DataFrame({"model": ["a", "a", "b"], "item": ["q1", "q2", "q1"],
    ...                      "correct": [1, 0, 1]})
    >>> res = responses_from_long(long)
    >>> res.table.to_numpy().tolist()
    [[1.0, 0.0], [1.0, nan]]
    """
    missing = [c for c in (model_col, item_col, response_col) if c not in frame.columns]
    if missing:
        raise InputError(f"{where}: missing column(s) {missing}; found {list(frame.columns)[:8]}"
                         "; name them with --model-col/--item-col/--response-col")
    models = frame[model_col].astype(str).to_numpy()
    items = frame[item_col].astype(str).to_numpy()
    for names, what in ((models, "model"), (items, "item")):
        empty = np.flatnonzero(np.char.strip(names.astype(str)) == "")
        if empty.size:
            raise InputError(f"{where}: {empty.size} rows have an empty {what} name (first at "
                             f"data row {empty[0] + 1}); fill them in or drop those rows")
    pairs = pd.MultiIndex.from_arrays([models, items])
    dup = pairs.duplicated(keep=False)
    if dup.any():
        shown = _examples(dict.fromkeys(f"({m}, {i})" for m, i in pairs[dup]))
        raise InputError(f"{where}: {int(pairs.duplicated().sum())} duplicate (model, item) "
                         f"pairs, e.g. {shown}; keep one response per pair")
    values = _parse_cells(frame[response_col].to_numpy(dtype=object), kind, where)
    row_names, r = np.unique(models, return_index=True)
    col_names, c = np.unique(items, return_index=True)
    row_names, col_names = row_names[np.argsort(r)], col_names[np.argsort(c)]
    row_at = {n: k for k, n in enumerate(row_names)}
    col_at = {n: k for k, n in enumerate(col_names)}
    from evalcert.memory import estimate_bytes, require_memory
    require_memory(estimate_bytes((row_names.size, col_names.size)),
                   f"{where}: a dense {row_names.size} x {col_names.size} response table "
                   f"from {len(frame)} rows",
                   "the IRT estimators work on dense models x items arrays: fit a subset of "
                   "models or items")
    wide = np.full((row_names.size, col_names.size), np.nan)
    wide[[row_at[m] for m in models], [col_at[i] for i in items]] = values
    table = pd.DataFrame(wide, index=pd.Index(row_names.tolist(), dtype=object),
                         columns=pd.Index(col_names.tolist(), dtype=object))
    return ResponseTable(table, int(np.isnan(wide).sum()), where)


def read_responses(path: str | os.PathLike, *, format: str = "wide", kind: str = "binary",
                   header: bool = True, transpose: bool = False, model_col: str = "model",
                   item_col: str = "item", response_col: str = "correct",
                   names: bool | None = None) -> ResponseTable:
    """Read a response file (CSV/TSV/Parquet/JSONL/JSON; wide or long) with every check above.

    ``names`` (wide files with a header row): ``False`` for a file without a
    model-name column, ``True`` to insist on one, ``None`` to detect it.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "responses.csv"
    ...     _ = path.write_text("model,q1,q2,q3\\na,1,0,1\\nb,0,,1\\n")
    ...     res = read_responses(path)
    >>> res.shape, res.n_missing, list(res.table.index)
    ((2, 3), 1, ['a', 'b'])
    """
    if format not in ("wide", "long"):
        raise InputError(f"format must be 'wide' or 'long', got {format!r}")
    if not header and format == "long":
        raise InputError("a long table needs its header row (model, item, response columns); "
                         "header=False (--no-header) is for wide files only")
    where = str(path)
    if header:
        try:
            frame = read_table(path)
        except InputError as exc:
            if "duplicate column names" not in str(exc):
                raise
            raise InputError(f"{exc} (if the file has no header row, pass --no-header; API: "
                             "header=False)") from None
    else:
        frame = read_table(path, header=False)
    if format == "long":
        return responses_from_long(frame, model_col=model_col, item_col=item_col,
                                   response_col=response_col, kind=kind, where=where)
    return responses_from_wide(frame, kind=kind, header=header, transpose=transpose,
                               where=where, names=names)
