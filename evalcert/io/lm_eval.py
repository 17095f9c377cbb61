"""lm-evaluation-harness sample logs (``--log_samples``) and Open LLM Leaderboard v2 details.

lm-eval writes, per model, ``samples_<task>_<date>.jsonl`` (one row per document and
filter: ``doc_id``, ``doc``, ``filter``, ``metrics``, ``doc_hash``, ..., then one key per
metric) beside ``results_<date>.json`` (``model_name``). A folder of runs, nested
(``<org>__<model>/...``) or flat, is read as one models x items matrix:

* item = ``<task>|<doc_id>``; the same item must have the same ``doc_hash`` for every model
  (else the documents differ and the error names the task and the doc);
* model = ``model_name`` of the ``results_<date>.json`` of the same run (else of the
  folder), else the folder's name with ``__`` read as ``/``;
* score = the metric ``metric`` (default: the first of each row's ``metrics``); ``null``
  is a missing cell (counted);
* a task logged with several filters needs ``filter=`` (the error names them);
* the newest run of each (model, task) is read (older ones are counted as skipped) unless
  ``all_runs=True``, which names models ``<model>@<date>``.

The Open LLM Leaderboard v2 "details" datasets hold the same rows, as JSONL or as Parquet
(``samples_*.parquet`` or any ``.parquet`` with ``doc_id`` and ``metrics`` columns).
Lines are streamed (``orjson`` if installed, else ``json``): memory grows with the cells
kept, not with the size of the logs. Files are parsed through ``joblib.Parallel`` under the
caller's ``joblib.parallel_config`` (one process, in order, by default).

Example
-------
>>> import json, pathlib, tempfile
>>> run = pathlib.Path(tempfile.mkdtemp()) / "org__m1"
>>> run.mkdir()
>>> rows = [{"doc_id": k, "filter": "none", "metrics": ["acc"], "doc_hash": f"h{k}",
...          "acc": float(k % 2)} for k in range(3)]
>>> _ = (run / "samples_demo_2024-01-01T00-00-00.jsonl").write_text(
...     "".join(json.dumps(r) + "\\n" for r in rows))
>>> read = read_lm_eval(run.parent)
>>> read.matrix.agents, read.matrix.items
(('org/m1',), ('demo|0', 'demo|1', 'demo|2'))
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Sequence

from evalcert.errors import InputError
from evalcert.io._json import _DecodeErrors, loads, read_json
from evalcert.io.results import CellCollector, ResultsRead

__all__ = ["read_lm_eval"]

_SAMPLES = re.compile(r"^samples_(?P<task>.+?)_(?P<date>\d{4}-\d{2}-\d{2}T[0-9:.\-]+)"
                      r"\.(?P<ext>jsonl|parquet)$")
_RESULTS = re.compile(r"^results_(?P<date>\d{4}-\d{2}-\d{2}T[0-9:.\-]+)\.json$")


def find_sample_files(path: Path) -> list[Path]:
    """``samples_*.jsonl`` / ``samples_*.parquet`` under ``path`` (or ``path`` itself)."""
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("samples_*") if p.is_file()
                  and p.suffix in (".jsonl", ".parquet"))


def _model_of(sample: Path, date: str | None, cache: dict) -> str:
    folder = sample.parent
    if folder not in cache:
        names = {}
        for res in folder.glob("results_*.json"):
            match = _RESULTS.match(res.name)
            try:
                doc = read_json(res)
            except InputError:
                continue
            name = doc.get("model_name") if isinstance(doc, dict) else None
            if not name and isinstance(doc, dict):
                args = str((doc.get("config") or {}).get("model_args") or "")
                found = re.search(r"pretrained=([^,]+)", args)
                name = found.group(1) if found else None
            if name:
                names[match.group("date") if match else res.name] = str(name)
        cache[folder] = names
    names = cache[folder]
    if date in names:
        return names[date]
    if len(set(names.values())) == 1:
        return next(iter(names.values()))
    return folder.name.replace("__", "/")


_DOC_ID = re.compile(rb'^\{"doc_id": (-?\d+), ')
_FILTER = b'"filter": '


def _tail(line: bytes) -> dict | None:
    """The row without its large fields, or None to parse the whole line.

    lm-eval writes each row's keys in one order: ``doc_id`` first, then ``doc``,
    ``target``, ``arguments``, ``resps``, ``filtered_resps`` (the bulk of the bytes), then
    ``filter``, ``metrics``, the hashes and the metric values. A ``"filter":`` key followed
    by ``:`` cannot occur inside a JSON string (its quote would be escaped), so its last
    occurrence starts the small tail, which parses as an object on its own. Any other
    layout (or a tail that does not parse) falls back to parsing the whole line.
    """
    head = _DOC_ID.match(line)
    at = line.rfind(_FILTER)
    if head is None or at < 0 or not line.rstrip().endswith(b"}"):
        return None
    try:
        row = loads(b"{" + line[at:])
    except _DecodeErrors:
        return None
    if not isinstance(row, dict) or "metrics" not in row:
        return None
    row["doc_id"] = int(head.group(1))
    return row


def _rows_jsonl(path: Path) -> Iterable[tuple[int, dict]]:
    """Rows of a samples file, streamed; only the tail of each line is parsed when the
    layout allows (see :func:`_tail`)."""
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror})") from None
    with fh:
        number = 0
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            row = _tail(line)
            if row is None:
                try:
                    row = loads(line)
                except _DecodeErrors as exc:
                    cut = not line.endswith(b"\n") and fh.read(1) == b""
                    what = "truncated (its last line is cut short)" if cut else \
                        f"line {number} is not valid JSON ({str(exc).splitlines()[0][:80]})"
                    raise InputError(f"{path}: {what}; nothing was read from it; re-export "
                                     "or fix the file") from None
            if not isinstance(row, dict):
                raise InputError(f"{path}: line {number} is not an object; an lm-eval "
                                 "samples file has one JSON object per line")
            yield number, row
        if number == 0:
            raise InputError(f"{path} is empty; give the file lm-eval wrote")


def _rows_parquet(path: Path, metric: str | None) -> Iterable[tuple[int, dict]]:
    import pyarrow.parquet as pq

    try:
        table = pq.ParquetFile(path)
        columns = table.schema_arrow.names
        need = [c for c in ("doc_id", "metrics") if c not in columns]
        if need:
            raise InputError(f"{path}: not lm-eval/Open LLM Leaderboard details (no column "
                             f"{need}); columns are {columns[:8]}")
        if metric is None:
            first = table.read_row_group(0, columns=["metrics"]).column(0)[0].as_py()
            metric = first[0] if first else None
        keep = [c for c in ("doc_id", "filter", "metrics", "doc_hash", metric) if c in columns]
        number = 0
        for batch in table.iter_batches(columns=keep, batch_size=65536):
            for row in batch.to_pylist():
                number += 1
                yield number, row
    except InputError:
        raise
    except Exception as exc:  # pyarrow raises several unrelated types on corrupt files
        raise InputError(f"{path}: corrupt or unreadable Parquet file ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0][:100]})") from None


def _score(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    raise TypeError(type(value).__name__)


def read_lm_eval(path: str | Path, *, metric: str | None = None, filter: str | None = None,
                 tasks: Sequence[str] | None = None, all_runs: bool = False,
                 bounds: tuple[float, float] | None = None) -> ResultsRead:
    """Read lm-eval sample logs (a file, a run folder or a folder of runs).

    Parameters
    ----------
    path : path-like
        A ``samples_*.jsonl``/``.parquet`` file or a folder searched recursively.
    metric : str, optional
        The per-row metric key; default the first of each row's ``metrics``.
    filter : str, optional
        The filter to read; required when a task was logged with several.
    tasks : sequence of str, optional
        Read only these tasks (unknown names are refused).
    all_runs : bool
        Read every run, naming models ``<model>@<date>``; default the newest per
        (model, task), older runs counted as skipped.
    bounds : tuple of float, optional
        Score range of the matrix (default ``(-1, 1)`` widened to the scores).

    Returns
    -------
    ResultsRead
        ``.matrix`` (models x ``task|doc_id``) and ``.report``.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> log = pathlib.Path(tempfile.mkdtemp()) / "samples_t_2024-01-01T00-00-00.jsonl"
    >>> rows = [{"doc_id": 0, "filter": f, "metrics": ["acc"], "acc": 1.0} for f in ("a", "b")]
    >>> _ = log.write_text("".join(json.dumps(r) + "\\n" for r in rows))
    >>> read_lm_eval(log, filter="b").report.skipped
    {'rows of filter a (not b)': 1}
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder; check the path")
    files = find_sample_files(path)
    runs: dict[tuple[str, str], list[tuple[str, Path]]] = defaultdict(list)
    cache: dict = {}
    for f in files:
        match = _SAMPLES.match(f.name)
        task, date = (match.group("task"), match.group("date")) if match else (f.stem, "")
        model = _model_of(f, date or None, cache)
        runs[(model, task)].append((date, f))
    if not runs:
        raise InputError(f"{path}: no lm-eval sample logs (samples_<task>_<date>.jsonl) here; "
                         "run lm_eval with --log_samples --output_path")
    found_tasks = sorted({t for _, t in runs})
    if tasks is not None:
        unknown = sorted(set(tasks) - set(found_tasks))
        if unknown:
            raise InputError(f"{path}: no task {unknown}; the logs hold {found_tasks}")
    out = CellCollector(str(path), "lm-eval")
    jobs: list[tuple[Path, str, str]] = []
    for (model, task), found in sorted(runs.items()):
        if tasks is not None and task not in tasks:
            out.skip(f"files of task {task} (not in --tasks)", len(found))
            continue
        found.sort()
        picked = found if all_runs else found[-1:]
        if not all_runs and len(found) > 1:
            out.skip("files of older runs of a (model, task) (all_runs=True reads them)",
                     len(found) - 1)
        jobs += [(f, f"{model}@{date}" if all_runs and len(found) > 1 else model, task)
                 for date, f in picked]
    # files are parsed by joblib under the caller's joblib.parallel_config (in this
    # process, in order, without one); cells are joined here, in file order
    import joblib

    parsed = joblib.Parallel()(joblib.delayed(_parse_file)(f, metric) for f, _, _ in jobs)
    hashes: dict[tuple[str, Any], tuple[str, str]] = {}
    for (f, model, task), result in zip(jobs, parsed):
        _read_file(f, result, model, task, metric, filter, hashes, out)
    return out.finish(bounds)


def _parse_file(f: Path, metric: str | None) -> tuple[dict, set]:
    """``({filter: [(doc_id, score or None, doc_hash)]}, metrics read)`` of one file.

    Module-level and self-contained, so joblib can run it in a worker.
    """
    rows = _rows_parquet(f, metric) if f.suffix == ".parquet" else _rows_jsonl(f)
    by_filter: dict[str, list[tuple[Any, float | None, Any]]] = defaultdict(list)
    metrics_seen: set[str] = set()
    for number, row in rows:
        try:
            doc_id = row["doc_id"]
        except KeyError:
            raise InputError(f"{f}: line {number} has no doc_id; this is not an lm-eval "
                             "samples file") from None
        name = metric
        if name is None:
            names = row.get("metrics") or []
            if not names:
                raise InputError(f"{f}: line {number} lists no metrics; pick one with "
                                 "--metric")
            name = names[0]
        metrics_seen.add(name)
        if name not in row:
            keys = [k for k in (row.get("metrics") or [])]
            raise InputError(f"{f}: line {number} has no metric {name!r}; it has {keys}; "
                             "pick one with --metric")
        try:
            value = _score(row[name])
        except TypeError as kind:
            raise InputError(f"{f}: metric {name!r} holds a {kind} per document, not a "
                             "number (a corpus-level metric such as bleu); pick a per-item "
                             "metric with --metric") from None
        by_filter[str(row.get("filter", "none"))].append((doc_id, value, row.get("doc_hash")))
    if not by_filter:
        raise InputError(f"{f} holds no rows")
    return dict(by_filter), metrics_seen


def _read_file(f: Path, parsed: tuple[dict, set], model: str, task: str, metric: str | None,
               filter: str | None, hashes: dict, out: CellCollector) -> None:
    by_filter, metrics_seen = parsed
    for rows in by_filter.values():
        for doc_id, _, doc_hash in rows:
            if doc_hash is None:
                continue
            seen = hashes.setdefault((task, doc_id), (doc_hash, model))
            if seen[0] != doc_hash:
                raise InputError(f"task {task}, doc {doc_id}: {model} and {seen[1]} scored "
                                 f"different documents (doc_hash {str(doc_hash)[:12]} vs "
                                 f"{str(seen[0])[:12]}); the same doc_id must be the same "
                                 "document for every model (same dataset and version)")
    if len(metrics_seen) > 1 and metric is None:
        out.note(f"task {task}: rows list different first metrics {sorted(metrics_seen)}; "
                 "each row's first was read (pick one with --metric)")
    else:
        out.note(f"task {task}: metric {next(iter(metrics_seen))}")
    filters = sorted(by_filter)
    if filter is not None and filter in by_filter:
        chosen = filter
    elif len(filters) == 1:                # a task logged with one filter: that one
        chosen = filters[0]
    elif filter is None:
        raise InputError(f"task {task} was logged with several filters {filters}; pick "
                         "one with --filter (API: filter=)")
    else:
        raise InputError(f"task {task} has no filter {filter!r}; its filters are {filters}")
    if filter is not None and chosen != filter:
        out.note(f"task {task}: its only filter {chosen} was read (no filter {filter})")
    for other in filters:
        if other != chosen:
            out.skip(f"rows of filter {other} (not {chosen})", len(by_filter[other]))
    for doc_id, value, _ in by_filter[chosen]:
        item = f"{task}|{doc_id}"
        if value is None:
            out.add_missing(model, item)
        else:
            out.add(model, item, value)
