"""The one JSON loader of evalcert: JSON and JSON Lines read as data, with one clear line
when a file is broken.

Tool files (:func:`read_json`, :func:`iter_jsonl`, streamed) are parsed by ``orjson`` when
it is installed (it is not a dependency), else by the standard library's ``json``; tables
and label counts (:func:`load_json`) by ``json`` with a hook (duplicate keys) and a check
of integer length. Every way a document can fail is refused through one function
(:func:`_refusal`): invalid or truncated JSON (with the line number), values nested
deeper than the parser allows (``RecursionError``), integers of more than 4,300 digits
(``ValueError``). A last line cut short is called a truncated file: nothing is skipped
silently.

>>> import pathlib, tempfile
>>> p = pathlib.Path(tempfile.mkdtemp()) / "x.jsonl"
>>> _ = p.write_text('{"a": 1}\\n\\n{"a": 2}\\n')
>>> [(n, r["a"]) for n, r in iter_jsonl(p)]
[(1, 1), (3, 2)]
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Iterator

from evalcert.errors import InputError

try:  # optional: several times faster than json on long lines
    import orjson as _orjson

    loads = _orjson.loads
    _DecodeErrors: tuple = (_orjson.JSONDecodeError, ValueError, RecursionError)
except ImportError:  # pragma: no cover - depends on the environment
    loads = json.loads
    # ValueError: an integer over 4,300 digits; RecursionError: values nested thousands deep
    _DecodeErrors = (json.JSONDecodeError, ValueError, RecursionError)

__all__ = ["iter_jsonl", "read_json", "load_json", "first_record"]

#: Python's own limit on the digits of an int parsed from text (int_max_str_digits)
MAX_DIGITS = 4300


def _refusal(path: Path | str, exc: BaseException, what: str = "JSON",
             fix: str = "re-export or fix the file", where: str = "") -> InputError:
    """The one line saying why ``path`` (at ``where``, e.g. ``"line 3"``) could not be
    parsed, ``exc`` from any parser.

    Examples
    --------
    >>> print(_refusal("x.jsonl", ValueError("unexpected character"), where="line 3"))
    x.jsonl: line 3 is not valid JSON (unexpected character); re-export or fix the file
    """
    if isinstance(exc, InputError):
        return exc
    if isinstance(exc, RecursionError) or "recursion" in str(exc).lower():
        return InputError(f"{path}: values nested deeper than the JSON reader allows "
                          f"(~{sys.getrecursionlimit()} levels); a table, a log or label "
                          "counts are never nested that deep: check the file")
    if isinstance(exc, json.JSONDecodeError):
        detail = f"line {exc.lineno}: {exc.msg}"
    else:                               # orjson's errors, ValueError on a 4,300-digit int
        detail = str(exc).splitlines()[0][:80] if str(exc) else type(exc).__name__
    return InputError(f"{path}: {where + ' is ' if where else ''}not valid {what} ({detail}); "
                      f"{fix}")


def _open(path: Path):
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file; check the path") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror})") from None


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """``(line number, object)`` for each non-blank line of a JSON Lines file.

    Raises InputError on a line that is not JSON (the last one: "truncated").

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "cut.jsonl"
    >>> _ = p.write_text('{"a": 1}\\n{"a": ')
    >>> list(iter_jsonl(p))
    Traceback (most recent call last):
    ...
    evalcert.errors.InputError: ...cut.jsonl: truncated (its last line is cut short); nothing was read from it; re-export or fix the file
    """
    path = Path(path)
    with _open(path) as fh:
        number = 0
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                yield number, loads(line)
            except _DecodeErrors as exc:
                if not line.endswith(b"\n") and fh.read(1) == b"":
                    raise InputError(f"{path}: truncated (its last line is cut short); nothing "
                                     "was read from it; re-export or fix the file") from None
                raise _refusal(path, exc, fix="nothing was read from it; re-export or fix "
                               "the file", where=f"line {number}") from None
        if number == 0:
            raise InputError(f"{path} is empty; give the file the tool wrote")


def read_json(path: str | Path, data: bytes | None = None) -> Any:
    """One JSON document (a file, or bytes read from a member of an archive).

    Examples
    --------
    >>> read_json("member.json", b'{"eval": {"model": "m"}}')["eval"]
    {'model': 'm'}
    """
    path = Path(path)
    if data is None:
        with _open(path) as fh:
            data = fh.read()
    if not data.strip():
        raise InputError(f"{path} is empty; give the file the tool wrote")
    try:
        return loads(data)
    except _DecodeErrors as exc:
        raise _refusal(path, exc, "JSON, truncated or corrupt") from None


def load_json(path: str | os.PathLike, text: str, *, lines: bool = False,
              object_pairs_hook=None) -> object:
    """Parse JSON (``lines``: JSON Lines, a list of the lines' values) as data with the
    standard library's reader, ``object_pairs_hook`` seeing every object (duplicate keys),
    integers longer than Python parses refused by their length, every failure one line
    (:func:`_refusal`).

    Examples
    --------
    >>> load_json("x.json", '{"a": [1, 2]}')
    {'a': [1, 2]}
    >>> load_json("deep.json", "[" * 100_000 + "]" * 100_000)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    evalcert.errors.InputError: deep.json: values nested deeper than ... levels); ...
    """
    def number(digits: str) -> int:
        if len(digits.lstrip("-")) > MAX_DIGITS:
            raise InputError(f"{path}: an integer of {len(digits.lstrip('-')):,} digits "
                             f"({digits[:20]}...); no score, count or name is that long: "
                             "check the file")
        return int(digits)

    try:
        if lines:
            return [json.loads(line, object_pairs_hook=object_pairs_hook, parse_int=number)
                    for line in text.splitlines() if line.strip()]
        return json.loads(text, object_pairs_hook=object_pairs_hook, parse_int=number)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise _refusal(path, exc, "JSON Lines" if lines else "JSON", "check the file") from None


def first_record(path: str | Path, limit: int = 1 << 22) -> Any:
    """The first JSON Lines record of ``path`` (at most ``limit`` bytes read), or None.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.jsonl"
    >>> _ = p.write_text('\\n{"model": "m"}\\n{"model": ')
    >>> first_record(p)
    {'model': 'm'}
    """
    with _open(Path(path)) as fh:
        for line in fh:
            if line.strip():
                try:
                    return loads(line[:limit])
                except _DecodeErrors:
                    return None
            if fh.tell() > limit:
                return None
    return None
