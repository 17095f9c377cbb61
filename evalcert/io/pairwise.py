"""Reader of pairwise-comparison logs: CSV, TSV, JSON Lines, JSON arrays and Parquet.

One row per comparison with columns ``model_a, model_b, winner`` (other columns, such
as ``judge`` or ``item``, are ignored unless a filter names them). ``winner`` is
``model_a``/``a``, ``model_b``/``b``, ``tie``, ``tie (bothbad)`` or ``draw``
(any case), or the name of one of the two models. Rows are streamed in batches (Arrow's
CSV, JSON and Parquet readers; a JSON array through :func:`iter_json_array`) and
aggregated at once into :class:`~evalcert.compare.counts.PairwiseCounts`, so memory
grows with the number of model pairs, never with the number of rows. Names arrive
dictionary-encoded: each distinct name becomes a Python string once per batch.

Nothing is dropped silently: rows without a model name, self-battles and rows
removed by a filter are counted in ``counts.dropped``; a winner that is none of the
words above is refused with how many rows and an example.

Example
-------
>>> import pathlib, tempfile
>>> path = pathlib.Path(tempfile.mkdtemp()) / "votes.csv"
>>> _ = path.write_text("model_a,model_b,winner\\ngpt,llama,model_a\\nllama,gpt,tie\\n")
>>> read_pairwise(path).table().tolist()
[[1, 0, 1]]
"""

from __future__ import annotations

import json
import re
from operator import itemgetter
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np

from evalcert.compare.counts import CountsBuilder, PairwiseCounts, outcome_code
from evalcert.errors import InputError
from evalcert.io.tables import check_file, table_format

__all__ = ["read_pairwise", "iter_json_array", "BATCH_ROWS"]

#: rows per batch when streaming
BATCH_ROWS = 1 << 18
_CHUNK = 1 << 22


_SPACE = re.compile(r"[ \t\r\n]*")
_SEPARATOR = re.compile(r"[ \t\r\n]*(,?)[ \t\r\n]*")


def iter_json_array(path: str | Path, chunk_bytes: int = _CHUNK) -> Iterator[dict]:
    """Yield the objects of a top-level JSON array one at a time, in constant memory.

    The file is read ``chunk_bytes`` at a time and each element is parsed by the standard
    library's C scanner (the one behind ``json.loads``); an element cut by a chunk boundary
    is completed from the next chunk. Elements must be objects.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.json"
    >>> _ = p.write_text('[{"x": 1}, {"x": [2, 3]} ,{"x": "]"}]')
    >>> [r["x"] for r in iter_json_array(p, chunk_bytes=4)]
    [1, [2, 3], ']']
    """
    scan = json.JSONDecoder().scan_once
    path = Path(path)
    with open(path, "r", encoding="utf-8", errors="strict") as fh:
        try:
            buf = fh.read(chunk_bytes)
            pos = _SPACE.match(buf).end()
            while pos == len(buf):
                piece = fh.read(chunk_bytes)
                if not piece:
                    break
                buf, pos = piece, _SPACE.match(piece).end()
            if buf[pos:pos + 1] != "[":
                raise InputError(f"{path}: not a JSON array (it must start with '['); a file "
                                 "with one object per line needs the .jsonl extension")
            pos += 1
            first = True
            eof = False
            while True:
                m = _SEPARATOR.match(buf, pos)
                if m.end() >= len(buf) - 1 and not eof:     # refill before the next element
                    piece = fh.read(chunk_bytes)
                    eof = not piece
                    buf, pos = buf[pos:] + piece, 0
                    continue
                c = buf[m.end():m.end() + 1]
                if c == "]" and not m.group(1):
                    return
                if not c:
                    raise InputError(f"{path}: the JSON array is not closed (truncated file?)")
                if bool(m.group(1)) == first:
                    raise InputError(f"{path}: malformed JSON array (expected "
                                     f"{'an object' if first else repr(',') + ' or ' + repr(']')}"
                                     f", found {c or 'the end of the file'!r})")
                if c != "{":
                    raise InputError(f"{path}: every element of the array must be an object "
                                     f"with model_a, model_b, winner; found {c!r}"
                                     if c else f"{path}: the JSON array is not closed "
                                     "(truncated file?)")
                pos = m.end()
                while True:
                    try:
                        obj, end = scan(buf, pos)
                        break
                    except (StopIteration, json.JSONDecodeError):
                        piece = "" if eof else fh.read(chunk_bytes)
                        if not piece:
                            raise InputError(f"{path}: corrupt or truncated JSON in the "
                                             "array") from None
                        buf, pos = buf[pos:] + piece, 0
                pos = end
                first = False
                yield obj
        except UnicodeDecodeError:
            raise InputError(f"{path}: not valid UTF-8 text; save it as UTF-8") from None


def _signed_ids() -> set:
    import pyarrow as pa
    return {pa.int8().id, pa.int16().id, pa.int32().id, pa.int64().id}


_SIGNED: set = set()


def _indices(column, null_code: int) -> np.ndarray:
    """The dictionary indices of ``column`` as a NumPy view, ``null_code`` where null (no
    pandas round trip: Arrow's copying ``to_numpy`` imports pandas)."""
    if not _SIGNED:
        _SIGNED.update(_signed_ids())
    indices = column.indices
    if column.null_count:
        indices = indices.fill_null(null_code)
    dtype = np.dtype(f"{'int' if indices.type.id in _SIGNED else 'uint'}{indices.type.bit_width}")
    return np.frombuffer(indices.buffers()[1], dtype=dtype, count=len(indices),
                         offset=indices.offset * dtype.itemsize)


def _dictionary(column):
    """One dictionary-encoded array of a column (chunks combined, non-strings as strings)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if not pa.types.is_dictionary(column.type):
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            column = pc.cast(column, pa.string())
        column = column.dictionary_encode()
    return column


def _to_codes(builder: CountsBuilder, column, codes=None) -> np.ndarray:
    """Global codes of a string column (-1 where null) via Arrow dictionary encoding."""
    column = _dictionary(column)
    words = column.dictionary.to_pylist()
    codes = builder.codes if codes is None else codes
    local = np.append(codes([str(w) for w in words]), -1) if words else np.array([-1])
    idx = _indices(column, len(words))
    return local[idx.astype(np.int64)]


def _outcomes(column, a_col, b_col) -> np.ndarray:
    """Outcome codes of a winner column: 0, 1, 2; -1 unknown word; -2 null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = _dictionary(column)
    words = column.dictionary.to_pylist()
    local = np.array([outcome_code(w) for w in words] + [-2], dtype=np.int64)
    idx = _indices(column, len(words))
    out = local[idx.astype(np.int64)]
    unknown = np.flatnonzero(out == -1)
    if len(unknown):                   # the winner may be a model's name
        named = np.asarray(words, dtype=object)[idx[unknown]]
        take = pa.array(unknown)
        a_names = np.asarray(pc.cast(a_col.take(take), pa.string()).to_pylist(), dtype=object)
        b_names = np.asarray(pc.cast(b_col.take(take), pa.string()).to_pylist(), dtype=object)
        out[unknown[named == a_names]] = 0
        out[unknown[named == b_names]] = 1
    return out


class _Batches:
    """Turn Arrow batches (or lists of records) into counts, with every row accounted for."""

    def __init__(self, path: Path, cols: Mapping[str, str | None], where: Mapping[str, Any]):
        self.path, self.cols, self.where = path, cols, dict(where)
        self.builder = CountsBuilder()
        self.rows = 0
        self.bad: dict[str, int] = {}
        self.bad_example: str | None = None

    def add(self, batch) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        n = batch.num_rows
        self.rows += n
        if self.where:
            keep = np.ones(n, bool)
            for col, value in self.where.items():
                column = batch.column(col)
                if isinstance(value, bool):
                    column = pc.cast(column, pa.bool_()) if not pa.types.is_boolean(column.type) \
                        else column
                    hit = pc.equal(column, pa.scalar(value))
                else:
                    hit = pc.equal(pc.cast(column, pa.string()), pa.scalar(str(value)))
                keep &= hit.fill_null(False).to_numpy(zero_copy_only=False)
            self.builder.drop("filtered out (" + ", ".join(f"{c}={v!r}" for c, v in
                                                          self.where.items()) + ")",
                              int(n - keep.sum()))
            if not keep.all():
                batch = batch.filter(pa.array(keep))
        a = _to_codes(self.builder, batch.column(self.cols["model_a"]))
        b = _to_codes(self.builder, batch.column(self.cols["model_b"]))
        outcome = _outcomes(batch.column(self.cols["winner"]), batch.column(self.cols["model_a"]),
                            batch.column(self.cols["model_b"]))
        missing_model = (a < 0) | (b < 0)
        self.builder.drop("without a model name", int(missing_model.sum()))
        no_winner = (outcome == -2) & ~missing_model
        self.builder.drop("without a winner", int(no_winner.sum()))
        unknown = (outcome == -1) & ~missing_model
        if unknown.any():
            self.bad["unknown"] = self.bad.get("unknown", 0) + int(unknown.sum())
            if self.bad_example is None:
                w = batch.column(self.cols["winner"])
                self.bad_example = str(w[int(np.flatnonzero(unknown)[0])].as_py())
        ok = ~missing_model & (outcome >= 0)
        judge = None
        if self.cols.get("judge"):
            judge = _to_codes(self.builder, batch.column(self.cols["judge"]),
                              self.builder.judge_codes)
            self.builder.drop("without a judge", int((ok & (judge < 0)).sum()))
            ok &= judge >= 0
        if not ok.all():
            a, b, outcome = a[ok], b[ok], outcome[ok]
            judge = None if judge is None else judge[ok]
        self.builder.add(a, b, outcome, judge=judge)

    def build(self) -> PairwiseCounts:
        if self.bad:
            n = self.bad["unknown"]
            raise InputError(f"{self.path}: {n} rows have a winner that is not model_a, model_b, "
                             f"tie, tie (bothbad) or one of the two model names (e.g. "
                             f"{self.bad_example!r}); fix or remove them")
        return self.builder.build()


def _require(path: Path, names, found) -> None:
    missing = [c for c in names if c not in found]
    if missing:
        raise InputError(f"{path}: no column(s) {missing}; found {sorted(found)[:12]}. Name "
                         "the columns with model_a=, model_b=, winner= (--model-a, --model-b, "
                         "--winner)")


def _parquet_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.parquet"))
        if not files:
            raise InputError(f"{path} is a folder without .parquet files")
        return files
    return [path]


def read_pairwise(path: str | Path, *, model_a: str = "model_a", model_b: str = "model_b",
                  winner: str = "winner", judge: str | None = None,
                  where: Mapping[str, Any] | None = None,
                  batch_rows: int = BATCH_ROWS) -> PairwiseCounts:
    """Read a pairwise-comparison log into per-pair counts.

    Parameters
    ----------
    path : str or Path
        ``.csv``, ``.tsv``, ``.jsonl``, ``.json`` (an array of objects) or ``.parquet``
        (or a folder of Parquet files).
    model_a, model_b, winner : str
        Column names.
    judge : str, optional
        Column naming who judged each battle: counts are then kept per judge (for the
        judge-weighted fit, :func:`evalcert.compare.judges.fit_judge_weighted`).
    where : mapping, optional
        Keep only rows whose column equals the value (e.g. ``{"anony": True}``); the
        rows removed are counted in ``dropped``.
    batch_rows : int
        Rows per streamed batch.

    Raises
    ------
    InputError
        Missing file or columns, corrupt file, unknown winner values, no battle left.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "votes.jsonl"
    >>> _ = path.write_text('{"model_a": "x", "model_b": "y", "winner": "y"}\\n'
    ...                     '{"model_a": "x", "model_b": "x", "winner": "tie"}\\n')
    >>> c = read_pairwise(path)
    >>> c.table().tolist(), c.dropped
    ([[0, 1, 0]], {'self-battle': 1})
    """
    import pyarrow as pa

    path = Path(path)
    where = dict(where or {})
    cols = {"model_a": model_a, "model_b": model_b, "winner": winner, "judge": judge}
    wanted = list(dict.fromkeys([model_a, model_b, winner, *([judge] if judge else []),
                                 *where]))
    fmt = "parquet" if path.is_dir() else table_format(path)
    if not path.is_dir():
        check_file(path)
    acc = _Batches(path, cols, where)
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq
            for file in _parquet_files(path):
                _require(file, wanted, pq.read_schema(file).names)
                pf = pq.ParquetFile(file, read_dictionary=[c for c in (model_a, model_b, winner,
                                                                      judge) if c])
                for batch in pf.iter_batches(batch_size=batch_rows, columns=wanted):
                    acc.add(batch)
        elif fmt in ("csv", "tsv"):
            from pyarrow import csv as pacsv
            reader = pacsv.open_csv(
                path, read_options=pacsv.ReadOptions(block_size=1 << 24),
                parse_options=pacsv.ParseOptions(delimiter="\t" if fmt == "tsv" else ","),
                convert_options=pacsv.ConvertOptions(
                    column_types={c: pa.string() for c in wanted}, strings_can_be_null=True,
                    include_columns=wanted, include_missing_columns=False))
            _require(path, wanted, reader.schema.names)
            for batch in reader:
                acc.add(batch)
        elif fmt == "jsonl":
            from pyarrow import json as pajson
            reader = pajson.open_json(path, read_options=pajson.ReadOptions(block_size=1 << 24))
            _require(path, wanted, reader.schema.names)
            for batch in reader:
                acc.add(batch)
        else:
            _read_json_array(path, acc, wanted, batch_rows)
    except pa.ArrowInvalid as exc:
        raise InputError(f"{path}: cannot be read as {fmt} ({str(exc).splitlines()[0]})") from None
    except (pa.ArrowKeyError, KeyError) as exc:
        raise InputError(f"{path}: missing column {exc}; it needs {wanted}") from None
    return acc.build()


def _arrow_column(values: list):
    import pyarrow as pa

    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([None if v is None else (v if isinstance(v, bool) else str(v))
                         for v in values])


def _read_json_array(path: Path, acc: _Batches, wanted: list[str], batch_rows: int) -> None:
    import pyarrow as pa

    rows: list[tuple] = []
    seen = False
    get = itemgetter(*wanted)

    def flush() -> None:
        if rows:
            acc.add(pa.RecordBatch.from_arrays([_arrow_column(list(col)) for col in zip(*rows)],
                                               names=wanted))
            rows.clear()

    for record in iter_json_array(path):
        if not seen:
            _require(path, wanted, record.keys())
            seen = True
        try:
            rows.append(get(record))
        except KeyError:
            rows.append(tuple(record.get(c) for c in wanted))
        if len(rows) >= batch_rows:
            flush()
    flush()
    if not seen:
        raise InputError(f"{path}: the JSON array is empty; no battles to count")
