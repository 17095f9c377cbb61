"""Reading a user's table file as data, with one clear error per way it can be wrong.

Every reader of user files (scores, responses, judge logs, labels) goes through
:func:`read_table`, so a missing, empty, binary, compressed, corrupt or header-less
file is refused the same way everywhere, before any solver runs. Cells are read
as strings and nothing is converted behind the caller's back: ``NA``, ``None``,
``null``, ``N/A`` stay names; an empty cell is ``""`` (the caller decides what it
means and says how many there were); duplicate column names are refused instead
of being renamed ``q1.1``.

Files are data: CSV, TSV, Parquet, JSON Lines (one object per line) and JSON (a
list of objects) are parsed; nothing is unpickled or evaluated.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
>>> _ = p.write_text("agent,q1,q2\\nNA,0.5,\\n")
>>> read_table(p).to_dict("records")
[{'agent': 'NA', 'q1': '0.5', 'q2': ''}]
"""

from __future__ import annotations

import csv
import io
import json
import os
import stat
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from evalcert.errors import InputError
from evalcert.io._json import load_json

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["read_table", "table_format", "looks_numeric", "check_file", "load_json",
           "TABLE_SUFFIXES"]

#: file endings read by :func:`read_table`, by format
TABLE_SUFFIXES = {".csv": "csv", ".tsv": "tsv", ".txt": "csv", ".parquet": "parquet",
                  ".pq": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json"}

_MAGIC = {b"\x1f\x8b": "gzip", b"PK\x03\x04": "zip", b"BZh": "bzip2",
          b"\xfd7zXZ": "xz", b"(\xb5/\xfd": "zstd", b"PAR1": "parquet"}


def table_format(path: str | os.PathLike) -> str:
    """The format of ``path`` from its extension (``csv``, ``tsv``, ``parquet``, ``jsonl``, ``json``).

    Examples
    --------
    >>> table_format("scores.parquet"), table_format("log.jsonl"), table_format("x.tsv")
    ('parquet', 'jsonl', 'tsv')
    """
    suffix = Path(path).suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise InputError(f"{path}: unknown file type {suffix or '(no extension)'!r}; use one of "
                         f"{', '.join(sorted(TABLE_SUFFIXES))}")
    return TABLE_SUFFIXES[suffix]




_SPECIAL = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
            (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _not_regular(path: Path, mode: int) -> InputError:
    if stat.S_ISDIR(mode):
        return InputError(f"{path} is a directory; give the path of a data file")
    kind = next((name for test, name in _SPECIAL if test(mode)), "not a regular file")
    return InputError(f"{path} is {kind}, not a regular file; evalcert reads regular files "
                      "only (reading it could block forever): save the data to a file first")


def check_file(path: Path) -> bytes:
    """Refuse a missing, directory, special (FIFO, device, socket), unreadable or empty
    path; return its first 8 bytes.

    The path is checked before it is opened, and opened without blocking (a named
    pipe with no writer would block ``open`` forever) then checked again on the
    open file, so nothing swapped in between is read.

    Examples
    --------
    >>> check_file(Path("no/such/file.csv"))
    Traceback (most recent call last):
    ...
    evalcert.errors.InputError: no/such/file.csv: no such file; check the path
    """
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError(f"{path}: no such file; check the path") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror}); check the path") from None
    if not stat.S_ISREG(mode):
        raise _not_regular(path, mode)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror}); check its permissions") from None
    with os.fdopen(fd, "rb") as fh:
        mode = os.fstat(fh.fileno()).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(path, mode)
        try:
            head = fh.read(8)
        except OSError as exc:
            raise InputError(f"{path}: cannot be read ({exc.strerror})") from None
    if not head:
        raise InputError(f"{path} is empty; give a file with a header row and data")
    return head


def _decode(path: Path, raw: bytes) -> str:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start}: {raw[exc.start:exc.start + 1]!r}); "
                         "re-save the file as UTF-8") from None
    if "\x00" in text:
        raise InputError(f"{path}: contains NUL bytes, so it is not a text table; "
                         "check that this is the right file")
    return text


def _require_read_memory(path: Path) -> None:
    """Refuse, before reading, a text table whose cells would not fit in memory."""
    from evalcert.memory import (USABLE_FRACTION, count_fields, estimate_table_read_bytes,
                                 format_bytes, memory_available, require_memory)
    size = path.stat().st_size
    if estimate_table_read_bytes(size, size // 2 + 1) <= USABLE_FRACTION * memory_available():
        return  # fits even if every other byte were a separator: no need to count
    require_memory(estimate_table_read_bytes(size, count_fields(path)),
                   f"reading {path} ({format_bytes(size)} of text, every cell a string)",
                   "split the file or convert it to Parquet")


def _require_parquet_memory(path: Path) -> None:
    """Refuse, before reading, a Parquet file whose rows would not fit in memory as strings."""
    import pyarrow.parquet as pq

    from evalcert.memory import TABLE_READ_BYTES, require_memory
    meta = pq.read_metadata(path)
    require_memory(TABLE_READ_BYTES["per_cell"] * meta.num_rows * max(meta.num_columns, 1),
                   f"reading {path} ({meta.num_rows} rows x {meta.num_columns} columns, every "
                   "cell a string)", "split the file into smaller parts")


def __getattr__(name: str) -> Any:
    # looks_numeric lives in evalcert.data.frames (pandas, SciPy): imported on first use, so
    # a reader that needs only check_file / table_format (the pairwise logs) starts light
    if name == "looks_numeric":
        from evalcert.data.frames import looks_numeric
        return looks_numeric
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _read_delimited(path: Path, text: str, sep: str, header: bool) -> pd.DataFrame:
    import pandas as pd

    # csv's default cell limit (131,072 characters) raised _csv.Error on long cells (a
    # prompt, a transcript); no cell can be longer than the text. The limit is global
    # state, so it is restored afterwards.
    limit = csv.field_size_limit(min(max(len(text) + 1, 131_072), 2**31 - 1))
    try:
        rows = list(csv.reader(io.StringIO(text), delimiter=sep))
    except csv.Error as exc:
        raise InputError(f"{path}: not a valid {'TSV' if sep == chr(9) else 'CSV'} file "
                         f"({exc}); check the quoting") from None
    finally:
        csv.field_size_limit(limit)
    while rows and not any(cell.strip() for cell in rows[-1]):
        rows.pop()
    if not rows:
        raise InputError(f"{path} is empty; give a file with a header row and data")
    if not header:
        rows.insert(0, [str(k) for k in range(len(rows[0]))])
    header = rows[0]
    dup = sorted(name for name, n in Counter(header).items() if n > 1)
    if dup:
        raise InputError(f"{path}: duplicate column names {dup[:5]}; every column needs its own "
                         "name (rename or drop the repeats)")
    width = len(header)
    bad = [i + 2 for i, r in enumerate(rows[1:]) if len(r) != width and any(c.strip() for c in r)]
    if bad:
        raise InputError(f"{path}: {len(bad)} rows do not have {width} fields like the header "
                         f"(first at line {bad[0]}); check the delimiter and quoting")
    body = [r for r in rows[1:] if len(r) == width]
    if not body:
        return pd.DataFrame(columns=header, dtype=str)
    # one 2-D object block: building a wide frame column by column (or astype(str) on
    # it) takes minutes at 12 x 41,871 cells; csv already gives strings
    cells = np.empty((len(body), width), dtype=object)
    cells[:] = body
    return pd.DataFrame(cells, columns=header, copy=False)


def _records(path: Path, records: list) -> pd.DataFrame:
    import pandas as pd

    if not records:
        raise InputError(f"{path} holds no records")
    bad = [i + 1 for i, r in enumerate(records) if not isinstance(r, dict)]
    if bad:
        raise InputError(f"{path}: record {bad[0]} is not an object; each record must be "
                         "{\"column\": value, ...}")
    columns = list(dict.fromkeys(key for record in records for key in record))

    def text(v: object) -> str:
        if v is None:
            return ""
        if isinstance(v, (dict, list)):
            return json.dumps(v)
        return str(v).lower() if isinstance(v, bool) else str(v)

    # a key missing from a record is an empty cell, like a JSON null
    cells = np.empty((len(records), len(columns)), dtype=object)
    cells[:] = [[text(r.get(c)) for c in columns] for r in records]
    return pd.DataFrame(cells, columns=columns, copy=False)


def _read_json(path: Path, text: str, lines: bool) -> pd.DataFrame:
    def strict(pairs: list) -> dict:
        dup = sorted(key for key, n in Counter(k for k, _ in pairs).items() if n > 1)
        if dup:
            raise InputError(f"{path}: duplicate keys {dup[:5]} in one object; each key once")
        return dict(pairs)

    records = load_json(path, text, lines=lines, object_pairs_hook=strict)
    if not isinstance(records, list):
        raise InputError(f"{path}: expected a list of records; use the reader made for this "
                         "JSON layout")
    return _records(path, records)


def read_table(path: str | os.PathLike, *, required: Iterable[str] = (),
               format: str | None = None, header: bool = True) -> pd.DataFrame:
    """Read a CSV/TSV/Parquet/JSONL/JSON table with every cell as a string.

    Parameters
    ----------
    path : path-like
        The file. Its extension picks the format unless ``format`` is given.
    required : iterable of str
        Columns that must be present; a missing one is refused with the
        columns found (the usual sign of a file without a header row).
    format : str, optional
        ``csv``, ``tsv``, ``parquet``, ``jsonl`` or ``json``.
    header : bool
        ``False`` for a CSV/TSV file without a header row: every row is data and
        the columns are named ``"0"``, ``"1"``, ... (other formats name their
        columns and refuse ``header=False``).

    Returns
    -------
    pandas.DataFrame
        String cells; ``""`` where a cell is empty or null.

    Raises
    ------
    InputError
        Missing, empty, unreadable, binary or compressed file, invalid UTF-8,
        corrupt Parquet or JSON, duplicate column names, ragged rows, missing
        required columns.

    Examples
    --------
    Every cell comes back as a string, ``NA`` included (the caller decides):

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "scores.tsv"
    ...     _ = path.write_text("agent\\tq1\\tq2\\nNA\\t0.5\\t\\n")
    ...     read_table(path, required=["agent"]).to_dict("records")
    [{'agent': 'NA', 'q1': '0.5', 'q2': ''}]
    """
    import pandas as pd

    from evalcert.data.frames import decode_name, looks_numeric

    path = Path(path)
    head = check_file(path)
    fmt = format or table_format(path)
    if not header and fmt not in ("csv", "tsv"):
        raise InputError(f"{path}: a {fmt} file names its columns; a missing header row "
                         "(header=False, --no-header) applies to CSV/TSV files only")
    kind = next((k for magic, k in _MAGIC.items() if head.startswith(magic)), None)
    if fmt == "parquet":
        if kind != "parquet":
            raise InputError(f"{path}: not a Parquet file (no PAR1 header); check the file")
        try:
            _require_parquet_memory(path)
            frame = pd.read_parquet(path)
        except InputError:
            raise
        except Exception as exc:  # pyarrow raises several unrelated types for corrupt files
            raise InputError(f"{path}: corrupt or unreadable Parquet file ({type(exc).__name__}: "
                             f"{str(exc).splitlines()[0][:120]})") from None
        dup = sorted(name for name, n in Counter(frame.columns).items() if n > 1)
        if dup:
            raise InputError(f"{path}: duplicate column names {dup[:5]}")
        frame = frame.astype(object).where(frame.notna(), "")
        frame = frame.map(lambda v: str(v).lower() if isinstance(v, bool) else
                          decode_name(v, path) if isinstance(v, (bytes, bytearray)) else str(v))
    else:
        if kind is not None:
            raise InputError(f"{path}: this is {kind}-compressed or binary data, not {fmt} "
                             f"text; decompress it first or name it by its real type")
        _require_read_memory(path)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise InputError(f"{path}: cannot be read ({exc.strerror})") from None
        text = _decode(path, raw)
        if fmt in ("csv", "tsv"):
            frame = _read_delimited(path, text, "\t" if fmt == "tsv" else ",", header)
        else:
            frame = _read_json(path, text, lines=(fmt == "jsonl"))
    frame.columns = [str(c) for c in frame.columns]
    missing = [c for c in required if c not in frame.columns]
    if missing:
        found = list(frame.columns)[:8]
        hint = (" (the first row looks like data: does the file lack a header row?)"
                if found and all(looks_numeric(c) for c in found[1:] or found) else "")
        raise InputError(f"{path}: missing column(s) {missing}; found {found}{hint}")
    return frame
