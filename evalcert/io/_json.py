"""JSON and JSON Lines read as data, streamed, with one clear line when a file is broken.

``orjson`` parses when it is installed (it is not a dependency); the standard library's
``json`` otherwise. A line that does not parse is refused with its number, and a last line
cut short is called a truncated file: nothing is skipped silently.

>>> import pathlib, tempfile
>>> p = pathlib.Path(tempfile.mkdtemp()) / "x.jsonl"
>>> _ = p.write_text('{"a": 1}\\n\\n{"a": 2}\\n')
>>> [(n, r["a"]) for n, r in iter_jsonl(p)]
[(1, 1), (3, 2)]
"""

from __future__ import annotations

import json
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

__all__ = ["iter_jsonl", "read_json"]


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
                cut = not line.endswith(b"\n") and fh.read(1) == b""
                what = "truncated (its last line is cut short)" if cut else \
                    f"line {number} is not valid JSON ({str(exc).splitlines()[0][:80]})"
                raise InputError(f"{path}: {what}; nothing was read from it; re-export "
                                 "or fix the file") from None
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
        raise InputError(f"{path}: not valid JSON, truncated or corrupt "
                         f"({str(exc).splitlines()[0][:80]}); re-export or fix the file") from None


def first_record(path: str | Path, limit: int = 1 << 22) -> Any:
    """The first JSON Lines record of ``path`` (at most ``limit`` bytes read), or None."""
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
