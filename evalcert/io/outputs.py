"""Checks on the files a command will write, made before any work starts.

A command that fits for minutes and then fails on ``--json nodir/x.json`` loses
the work; one that writes its JSON over its own input destroys the user's data.
:func:`check_output` refuses both up front with an :class:`~evalcert.errors.InputError`
(exit code 2 in the CLI) that names the path and the fix.

>>> from pathlib import Path
>>> import tempfile
>>> d = Path(tempfile.mkdtemp())
>>> check_output(d / "out.json", suffixes=(".json",)).name
'out.json'
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from evalcert.errors import InputError

__all__ = ["check_output", "check_outputs"]


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_output(path: str | os.PathLike, *, inputs: Iterable[str | os.PathLike] = (),
                 force: bool = False, suffixes: Iterable[str] | None = None,
                 what: str = "output", flag: str | None = None) -> Path:
    """Check that ``path`` can be written, before the work that produces it runs.

    Parameters
    ----------
    path : path-like
        The file the command will write.
    inputs : iterable of path-like
        Files the command reads; ``path`` may never be one of them.
    force : bool
        Allow replacing an existing file (never an input).
    suffixes : iterable of str, optional
        Accepted extensions (lower case, with the dot), e.g. ``(".png", ".pdf")``.
    what : str
        What is written, for the message (``"JSON"``, ``"plot"``).
    flag : str, optional
        The CLI flag that names the path, for the message (``"--json"``).

    Returns
    -------
    pathlib.Path
        The checked path.

    Raises
    ------
    InputError
        The path is an input, exists without ``force``, is a directory, has an
        unsupported extension, or its folder is missing or not writable.

    Examples
    --------
    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> out = Path(tmp.name) / "out.json"
    >>> check_output(out, suffixes=(".json",)).name
    'out.json'
    >>> _ = out.write_text("{}")
    >>> check_output(out, force=True).name  # replacing it: only with force
    'out.json'
    >>> check_output(out, inputs=[out], force=True)  # never an input, even with force
    Traceback (most recent call last):
    ...
    evalcert.errors.InputError: ... is an input file; writing output there would destroy it: ...
    >>> tmp.cleanup()
    """
    out = Path(path)
    name = f"{flag} {out}" if flag else str(out)
    for source in inputs:
        if source is not None and (_same_file(out, Path(source))
                                   or out.resolve() == Path(source).resolve()):
            raise InputError(f"{name} is an input file; writing {what} there would destroy "
                             "it: choose another path")
    if suffixes is not None:
        allowed = tuple(s.lower() for s in suffixes)
        if out.suffix.lower() not in allowed:
            raise InputError(f"{name}: unsupported extension {out.suffix or '(none)'!r} for "
                             f"{what}; use one of {', '.join(allowed)}")
    if out.is_dir():
        raise InputError(f"{name} is a directory; give a file path for {what}")
    if out.exists() and not force:
        raise InputError(f"{name} exists; pass --force to overwrite it or choose another path")
    folder = out.parent if str(out.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"{name}: folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK):
        raise InputError(f"{name}: folder {folder} is not writable")
    return out


def check_outputs(paths: dict[str, str | os.PathLike | None], *,
                  inputs: Iterable[str | os.PathLike] = (), force: bool = False,
                  suffixes: dict[str, Iterable[str]] | None = None) -> None:
    """Check several outputs at once: ``{flag: path}`` (``None`` paths are skipped).

    Two flags naming the same file are refused too.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> check_outputs({"--json": folder / "out.json", "--plot": None},
    ...               suffixes={"--json": (".json",)}) is None  # all paths usable
    True
    >>> check_outputs({"--json": folder / "out.txt"}, suffixes={"--json": (".json",)})
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    evalcert.errors.InputError: ...
    """
    inputs = [p for p in inputs if p is not None]
    seen: dict[Path, str] = {}
    for flag, path in paths.items():
        if path is None:
            continue
        out = check_output(path, inputs=inputs, force=force,
                           suffixes=(suffixes or {}).get(flag), flag=flag)
        key = out.resolve()
        if key in seen:
            raise InputError(f"{flag} and {seen[key]} name the same file {out}; choose two paths")
        seen[key] = flag
