"""UK AISI Inspect logs: ``.eval`` archives and ``.json`` logs, any number, one model each.

A log holds ``eval{task, model, ...}`` and ``samples[{id, epoch, scores{<scorer>: {value,
...}}, error}]``. The ``.eval`` format is a zip of ``header.json`` and
``samples/<id>_epoch_<n>.json`` whose members are Zstandard-compressed (zip method 93),
which Python's ``zipfile`` cannot inflate: the members are located with ``zipfile`` and
decompressed with the ``zstandard`` package (deflated and stored members are read by
``zipfile`` itself). The matrix:

* model = ``eval.model``; item = ``<task>|<sample id>`` (``|epoch=<n>`` with
  ``epochs="keep"``);
* score = the scorer ``scorer`` (default: the first scorer of the log); its value mapped as
  inspect's ``value_to_float``: ``C`` 1, ``I`` 0, ``P`` 0.5, ``N`` 0, ``yes``/``true`` 1,
  ``no``/``false`` 0, numbers kept; a dict value needs ``score_key``;
* epochs: ``mean`` (default) of the epochs scored, ``first`` (the lowest epoch) or ``keep``
  (one item per epoch);
* a sample that errored (``error`` set, no score) is a **missing cell, counted per model**
  (``report.errored``), never dropped from the denominator in silence.

Example
-------
>>> value_to_float("C"), value_to_float("P"), value_to_float(0.25), value_to_float("no")
(1.0, 0.5, 0.25, 0.0)
"""

from __future__ import annotations

import struct
import zipfile
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator, Sequence

from evalcert.errors import InputError
from evalcert.io._json import read_json
from evalcert.io.results import CellCollector, ResultsRead

__all__ = ["read_inspect", "value_to_float", "EPOCHS"]

EPOCHS = ("mean", "first", "keep")
_LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
_WORDS = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}
_ZSTD = 93


def value_to_float(value: Any) -> float:
    """An Inspect score value as a number, as inspect's ``value_to_float`` maps it.

    Raises ValueError for a value with no number (a dict, a list, other text).

    Examples
    --------
    >>> value_to_float("I"), value_to_float(True), value_to_float("0.75")
    (0.0, 1.0, 0.75)
    """
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if text in _LETTERS:
            return _LETTERS[text]
        if text.lower() in _WORDS:
            return _WORDS[text.lower()]
        try:
            return float(text)
        except ValueError:
            pass
    raise ValueError(repr(value)[:40])


def _read_member(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo,
                 fh) -> bytes:
    if info.compress_type != _ZSTD:
        return archive.read(info)
    import zstandard

    fh.seek(info.header_offset)
    header = fh.read(30)
    if len(header) < 30 or header[:4] != b"PK\x03\x04":
        raise InputError(f"{path}: member {info.filename} has no local header (corrupt or "
                         "truncated .eval file)")
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    fh.seek(info.header_offset + 30 + name_len + extra_len)
    data = fh.read(info.compress_size)
    if len(data) < info.compress_size:
        raise InputError(f"{path}: member {info.filename} is cut short (truncated .eval file)")
    try:
        return zstandard.ZstdDecompressor().decompress(data, max_output_size=info.file_size)
    except zstandard.ZstdError as exc:
        raise InputError(f"{path}: member {info.filename} does not decompress ({exc}); "
                         "the .eval file is corrupt") from None


def _eval_archive(path: Path) -> tuple[dict, Iterator[dict]]:
    try:
        fh = open(path, "rb")
        archive = zipfile.ZipFile(fh)
    except zipfile.BadZipFile:
        raise InputError(f"{path}: not a readable .eval archive (corrupt or truncated zip); "
                         "re-run or re-copy the log") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror})") from None
    members = {i.filename: i for i in archive.infolist()}
    head = members.get("header.json") or members.get("_journal/start.json")
    if head is None:
        fh.close()
        raise InputError(f"{path}: .eval archive without header.json; is this an Inspect log?")
    header = read_json(Path(f"{path}:{head.filename}"), _read_member(path, archive, head, fh))
    samples = sorted(n for n in members if n.startswith("samples/") and n.endswith(".json"))

    def rows() -> Iterator[dict]:
        try:
            for name in samples:
                yield read_json(Path(f"{path}:{name}"),
                                _read_member(path, archive, members[name], fh))
        finally:
            fh.close()

    return header, rows()


def is_inspect_json(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("eval"), dict) and "model" in doc["eval"]


def iter_log_samples(path: Path) -> tuple[dict, Iterator[dict]]:
    """``(eval spec, samples)`` of one ``.eval`` or ``.json`` log."""
    if path.suffix == ".eval":
        header, rows = _eval_archive(path)
    else:
        header = read_json(path)
        if not is_inspect_json(header):
            raise InputError(f"{path}: not an Inspect log (no eval.model); give .eval or "
                             ".json logs written by inspect")
        rows = iter(header.get("samples") or [])
    spec = header.get("eval") if isinstance(header, dict) else None
    if not isinstance(spec, dict) or "model" not in spec:
        raise InputError(f"{path}: the log names no model (eval.model); is it an Inspect log?")
    return spec, rows


def _find_logs(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    logs = sorted(path.rglob("*.eval"))
    for p in sorted(path.rglob("*.json")):
        if p.name.startswith("logs") or "_journal" in p.parts:
            continue
        logs.append(p)
    return logs


def read_inspect(path: str | Path, *, scorer: str | None = None, score_key: str | None = None,
                 epochs: str = "mean", bounds: tuple[float, float] | None = None,
                 paths: Sequence[str | Path] | None = None) -> ResultsRead:
    """Read Inspect logs (a log, or a folder of ``.eval``/``.json`` logs).

    Parameters
    ----------
    path : path-like
    scorer : str, optional
        The scorer read (default the first in the log).
    score_key : str, optional
        For dict-valued scores: the key read.
    epochs : {"mean", "first", "keep"}
        How several epochs of a sample become cells.
    bounds : tuple of float, optional
    paths : sequence of path-like, optional
        Read these logs instead of searching ``path``.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> log = pathlib.Path(tempfile.mkdtemp()) / "log.json"
    >>> samples = [{"id": 1, "epoch": 1, "scores": {"match": {"value": "C"}}},
    ...            {"id": 2, "epoch": 1, "error": {"message": "timeout"}}]
    >>> _ = log.write_text(json.dumps({"eval": {"task": "t", "model": "m"}, "samples": samples}))
    >>> read = read_inspect(log)
    >>> read.matrix.items, read.report.errored
    (('t|1',), {'m': 1})
    """
    if epochs not in EPOCHS:
        raise InputError(f"epochs={epochs!r}; use one of {EPOCHS}")
    path = Path(path)
    if paths is None and not path.exists():
        raise InputError(f"{path}: no such file or folder; check the path")
    logs = [Path(p) for p in paths] if paths is not None else _find_logs(path)
    out = CellCollector(str(path), "inspect")
    read_any = False
    for log in logs:
        if log.suffix == ".json" and path.is_dir():
            doc_ok = _peek_inspect(log)
            if not doc_ok:
                out.skip("files that are not Inspect logs")
                continue
        spec, rows = iter_log_samples(log)
        model, task = str(spec["model"]), str(spec.get("task", log.stem))
        n = _read_samples(log, model, task, rows, scorer, score_key, epochs, out)
        if n == 0:
            out.skip("logs without samples (written with --no-log-samples?)")
        read_any = read_any or n > 0
    if not read_any:
        raise InputError(f"{path}: no Inspect samples found (.eval or .json logs with samples)")
    return out.finish(bounds)


def _peek_inspect(path: Path) -> bool:
    with open(path, "rb") as fh:
        head = fh.read(4096)
    return b'"eval"' in head or b'"version"' in head


def _read_samples(log: Path, model: str, task: str, rows: Iterator[dict], scorer: str | None,
                  score_key: str | None, epochs: str, out: CellCollector) -> int:
    scored: dict[str, dict[int, float]] = defaultdict(dict)
    errored: dict[str, set[int]] = defaultdict(set)     # the sample failed (error set)
    unscored: dict[str, set[int]] = defaultdict(set)    # no error, but no score either
    n = 0
    for sample in rows:
        n += 1
        sid, epoch = str(sample.get("id")), int(sample.get("epoch", 1) or 1)
        scores = sample.get("scores") or {}
        if sample.get("error") or not scores:
            (errored if sample.get("error") else unscored)[sid].add(epoch)
            continue
        name = scorer or next(iter(scores))
        if name not in scores:
            raise InputError(f"{log}: sample {sid} has no scorer {name!r}; it has "
                             f"{list(scores)}; pick one with --scorer")
        out.note(f"{task}: scorer {name}")
        value = scores[name].get("value") if isinstance(scores[name], dict) else scores[name]
        if isinstance(value, dict):
            if score_key is None or score_key not in value:
                raise InputError(f"{log}: scorer {name} gives dict values with keys "
                                 f"{list(value)}; pick one with --score-key")
            value = value[score_key]
        try:
            scored[sid][epoch] = value_to_float(value)
        except ValueError as bad:
            raise InputError(f"{log}: sample {sid} scorer {name} value {bad} is not a "
                             "number nor C/I/P/N; pick another --scorer or --score-key") from None
    for sid in dict.fromkeys([*scored, *errored, *unscored]):
        got, bad = scored.get(sid, {}), errored.get(sid, set())
        failed = bad | unscored.get(sid, set())
        base = f"{task}|{sid}"
        if epochs == "keep":
            for e, v in sorted(got.items()):
                out.add(model, f"{base}|epoch={e}", v)
            for e in sorted(failed - set(got)):
                out.add_missing(model, f"{base}|epoch={e}", errored=e in bad)
            continue
        out.errored[model] += len(bad)
        if epochs == "first":
            value = got.get(min(set(got) | failed))
        else:
            value = sum(got.values()) / len(got) if got else None
        if value is None:
            out.add_missing(model, base)
        else:
            out.add(model, base, value)
    if epochs == "mean" and any(len(v) > 1 for v in scored.values()):
        out.note(f"{task}: epochs averaged per sample (epochs='mean'); errored epochs left out "
                 "of the mean and counted")
    return n
