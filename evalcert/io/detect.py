"""One auto-detector for the tools' files, and one dispatch per kind of data.

:func:`detect_format` looks at a file's name and first record (or a folder's files) and
names the tool that wrote it; ``None`` when it is none of them (the caller then reads its
own wide/long tables). Formats, by kind:

* results (per-(model, item) scores -> :class:`~evalcert.io.results.ResultsRead`):
  ``lm-eval``, ``helm``, ``inspect``, ``eee``, ``py-irt``;
* decisions (per-(grader, item) labels for ``evalcert audit``): ``fastchat-pair``,
  ``fastchat-single``, ``alpaca-eval``;
* comparisons (pairwise battles for a ranking): ``arena`` (read by
  :mod:`evalcert.io.arena` when that module is installed).

Example
-------
>>> import json, pathlib, tempfile
>>> p = pathlib.Path(tempfile.mkdtemp()) / "r.jsonl"
>>> _ = p.write_text(json.dumps({"subject_id": "m", "responses": {"q": 1}}) + "\\n")
>>> detect_format(p), kind_of("py-irt")
('py-irt', 'results')
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

from evalcert.errors import InputError

__all__ = ["RESULTS_FORMATS", "DECISION_FORMATS", "COMPARISON_FORMATS", "FORMATS",
           "detect_format", "kind_of", "read_results", "read_judgments", "read_comparisons"]

RESULTS_FORMATS = ("lm-eval", "helm", "inspect", "eee", "py-irt")
DECISION_FORMATS = ("fastchat-pair", "fastchat-single", "alpaca-eval")
COMPARISON_FORMATS = ("arena",)
FORMATS = RESULTS_FORMATS + DECISION_FORMATS + COMPARISON_FORMATS

#: the options each results reader takes (others are refused, naming the format)
OPTIONS = {"lm-eval": ("metric", "filter", "tasks", "all_runs", "bounds"),
           "helm": ("stat", "bounds"), "inspect": ("scorer", "score_key", "epochs", "bounds"),
           "eee": ("bounds",), "py-irt": ("bounds",)}
_READERS = {"lm-eval": ("evalcert.io.lm_eval", "read_lm_eval"),
            "helm": ("evalcert.io.helm", "read_helm"),
            "inspect": ("evalcert.io.inspect_logs", "read_inspect"),
            "eee": ("evalcert.io.eee", "read_eee"),
            "py-irt": ("evalcert.io.py_irt", "read_py_irt"),
            "fastchat-pair": ("evalcert.io.fastchat", "read_fastchat_pair"),
            "fastchat-single": ("evalcert.io.fastchat", "read_fastchat_single"),
            "alpaca-eval": ("evalcert.io.alpaca_eval", "read_alpaca_eval")}
_SAMPLES = re.compile(r"^samples_.+_\d{4}-\d{2}-\d{2}T.+\.(jsonl|parquet)$")


def kind_of(format: str) -> str:
    """``results``, ``decisions`` or ``comparisons``.

    Examples
    --------
    >>> kind_of("lm-eval"), kind_of("fastchat-pair"), kind_of("arena")
    ('results', 'decisions', 'comparisons')
    """
    if format in RESULTS_FORMATS:
        return "results"
    if format in DECISION_FORMATS:
        return "decisions"
    if format in COMPARISON_FORMATS:
        return "comparisons"
    raise InputError(f"unknown format {format!r}; use one of {', '.join(FORMATS)}")


def _by_keys(keys: set[str]) -> str | None:
    if {"subject_id", "responses"} <= keys:
        return "py-irt"
    if {"sample_id", "model_id", "evaluation"} <= keys:
        return "eee"
    if {"doc_id", "metrics"} <= keys:
        return "lm-eval"
    if {"g1_winner", "g2_winner", "model_1", "model_2"} <= keys:
        return "fastchat-pair"
    if {"question_id", "model", "score", "judge"} <= keys:
        return "fastchat-single"
    if {"instruction", "generator_1", "generator_2", "preference"} <= keys:
        return "alpaca-eval"
    if {"model_a", "model_b", "winner"} <= keys and ("tstamp" in keys or "judge" in keys
                                                      or "anony" in keys):
        return "arena"
    return None


def _head_keys(text: bytes) -> set[str]:
    """Top-level-looking keys in the first bytes of a JSON document (no full parse)."""
    return set(m.decode("utf-8", "replace") for m in re.findall(rb'"([A-Za-z_0-9]+)"\s*:', text))


def _detect_file(path: Path) -> str | None:
    name, suffix = path.name, path.suffix.lower()
    if suffix == ".eval":
        return "inspect"
    if name == "per_instance_stats.json":
        return "helm"
    if _SAMPLES.match(name):
        return "lm-eval"
    if suffix == ".parquet":
        try:
            import pyarrow.parquet as pq

            return _by_keys(set(pq.read_schema(path).names))
        except Exception:  # not Parquet: the table readers say why
            return None
    if suffix not in (".json", ".jsonl", ".ndjson"):
        return None
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return None
    stripped = head.lstrip()
    if suffix == ".json" and stripped.startswith(b"{"):
        keys = _head_keys(head)
        if "eval" in keys and ("samples" in keys or "version" in keys or "status" in keys):
            return "inspect"
    if suffix in (".jsonl", ".ndjson") or stripped.startswith(b"{"):
        from evalcert.io._json import first_record

        record = first_record(path)
        if isinstance(record, dict):
            return _by_keys(set(record))
        return None
    if stripped.startswith(b"["):
        return _by_keys(_head_keys(head[:1 << 16]))
    return None


def detect_format(path: str | Path) -> str | None:
    """The tool format of a file or folder, or ``None`` for anything else.

    A folder is the format of its files: HELM run folders, lm-eval sample logs, Inspect
    logs, FastChat judgments, AlpacaEval annotations; a folder that mixes formats is
    refused, naming them.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "samples_gsm8k_2024-05-01T10-00-00.123.jsonl").write_text("{}\\n")
    >>> detect_format(folder), detect_format(folder / "nothing.csv")
    ('lm-eval', None)
    """
    path = Path(path)
    if path.is_file():
        return _detect_file(path)
    if not path.is_dir():
        return None
    found = set()
    if next(path.rglob("per_instance_stats.json"), None) is not None:
        found.add("helm")
    if any(_SAMPLES.match(p.name) for p in path.rglob("samples_*")):
        found.add("lm-eval")
    if next(path.rglob("*.eval"), None) is not None:
        found.add("inspect")
    if next(path.rglob("*_pair.jsonl"), None) is not None:
        found.add("fastchat-pair")
    if next(path.rglob("*_single.jsonl"), None) is not None:
        found.add("fastchat-single")
    if next(path.rglob("annotations.json"), None) is not None:
        found.add("alpaca-eval")
    if not found:
        kinds = {_detect_file(p) for p in path.rglob("*") if p.is_file()
                 and p.suffix.lower() in (".json", ".jsonl", ".parquet")}
        found = {k for k in kinds if k is not None and k not in ("helm", "arena")}
        if "lm-eval" in found and "inspect" in found:   # lm-eval's results_*.json are not logs
            found.discard("inspect")
    if len(found) > 1:
        raise InputError(f"{path} holds files of several tools ({', '.join(sorted(found))}); "
                         "give one folder per tool or pick --format")
    return found.pop() if found else None


def _reader(format: str):
    module, name = _READERS[format]
    return getattr(importlib.import_module(module), name)


def _resolve(path: Path, format: str, want: str) -> str:
    if format == "auto":
        found = detect_format(path)
        if found is None:
            raise InputError(f"{path}: not a file of a known tool ({', '.join(FORMATS)}); "
                             "pick --format")
        format = found
    if kind_of(format) != want:
        raise InputError(f"{path}: {format} holds {kind_of(format)}, not {want}; use the "
                         f"verb for {kind_of(format)} (evalcert convert reads all)")
    return format


def read_results(path: str | Path, format: str = "auto", **options: Any):
    """Read a tool's per-item results into a :class:`~evalcert.io.results.ResultsRead`.

    ``options`` go to the format's reader (``metric``, ``filter``, ``tasks``, ``all_runs``
    for lm-eval; ``stat`` for HELM; ``scorer``, ``score_key``, ``epochs`` for Inspect;
    ``bounds`` for all); ``None`` values are ignored; an option the format does not take is
    refused.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.jsonl"
    >>> _ = p.write_text(json.dumps({"subject_id": "m", "responses": {"q": 1}}) + "\\n")
    >>> read_results(p, metric="acc")
    Traceback (most recent call last):
    ...
    evalcert.errors.InputError: --metric does not apply to py-irt files (it takes bounds)
    """
    path = Path(path)
    format = _resolve(path, format, "results")
    given = {k: v for k, v in options.items() if v is not None and v is not False}
    wrong = sorted(set(given) - set(OPTIONS[format]))
    if wrong:
        flags = ", ".join("--" + w.replace("_", "-") for w in wrong)
        raise InputError(f"{flags} does not apply to {format} files (it takes "
                         f"{', '.join(OPTIONS[format])})")
    return _reader(format)(path, **given)


def read_judgments(path: str | Path, format: str = "auto"):
    """Read a judge log into ``(frame, source)``: the long ``item, grader, label`` table and
    the reader's facts (rows, unparseable verdicts) for the audit's report.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "gpt-4_single.jsonl"
    >>> _ = p.write_text(json.dumps({"question_id": 1, "model": "x", "score": -1,
    ...                              "judge": ["gpt-4", "single-v1"]}) + "\\n")
    >>> read_judgments(p)
    Traceback (most recent call last):
    ...
    evalcert.errors.InputError: ...: no usable decision in 1 rows (unparseable: {'-1': 1})
    """
    path = Path(path)
    format = _resolve(path, format, "decisions")
    frame, source = _reader(format)(path)
    if source.get("thresholded"):
        source["format"] += f" ({source['thresholded']} continuous preferences thresholded " \
                            "at 1.5)"
    if frame.empty:
        raise InputError(f"{path}: no usable decision in {source['rows']} rows "
                         f"(unparseable: {source['unparseable']})")
    return frame, source


def read_comparisons(path: str | Path, **options: Any):
    """The Chatbot Arena battle dump through :func:`evalcert.io.arena.read_arena` (the
    comparisons table it returns), or a one-line refusal when that reader is absent.

    Examples
    --------
    >>> callable(read_comparisons)
    True
    """
    try:
        module = importlib.import_module("evalcert.io.arena")
    except ImportError:
        raise InputError(f"{path}: a Chatbot Arena battle dump, but the arena reader "
                         "(evalcert.io.arena) is not available in this version") from None
    return module.read_arena(path, **options)
