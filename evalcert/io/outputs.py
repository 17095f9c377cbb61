"""Checks on the files a command will write, made before any work starts, and the
one way they are written.

A command that fits for minutes and then fails on ``--json nodir/x.json`` loses
the work; one that writes its JSON over its own input destroys the user's data.
:func:`check_output` refuses both up front with an :class:`~evalcert.errors.InputError`
(exit code 2 in the CLI) that names the path and the fix.

Symbolic links: a path that is a link (dangling or not) is refused unless the
user asks to write through it (``follow_symlinks``, ``--follow-symlinks`` in the
CLI); a file inside a folder the user named (``irt --out-dir``, ``bench --out``)
is never written through a link that leads outside that folder.

Every file is written by :func:`writing`: into a new temporary file beside the
target (created exclusively, never through a link), then moved into place. Without
``force`` the move is a hard link, which fails if anything appeared at the path
since the check; with ``force`` it is an atomic rename, which replaces a link
instead of writing through it. So a race between the check and the write cannot
make evalcert write through a link or over a file it was not allowed to replace.
The CLI sets the policy for one command with :func:`output_policy`; library calls
keep the usual Python behaviour (replace, follow links).

>>> from pathlib import Path
>>> import tempfile
>>> d = Path(tempfile.mkdtemp())
>>> check_output(d / "out.json", suffixes=(".json",)).name
'out.json'
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterable, Iterator

from evalcert.errors import InputError

__all__ = ["check_output", "check_outputs", "output_policy", "writing", "write_frame"]

#: (replace existing files, write through symbolic links) for :func:`writing`
_POLICY: contextvars.ContextVar[tuple[bool, bool]] = contextvars.ContextVar(
    "evalcert_output_policy", default=(True, True))


@contextlib.contextmanager
def output_policy(*, force: bool, follow_symlinks: bool) -> Iterator[None]:
    """Within the block, :func:`writing` replaces files only with ``force`` and writes
    through links only with ``follow_symlinks`` (the CLI's ``--force`` and
    ``--follow-symlinks``); :func:`check_output` follows links only with ``follow_symlinks``.

    Examples
    --------
    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp()) / "a.txt"
    >>> _ = out.write_text("old")
    >>> with output_policy(force=False, follow_symlinks=False):
    ...     with writing(out) as tmp:
    ...         _ = tmp.write_text("new")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    evalcert.errors.InputError: ... appeared after evalcert checked it; it was not replaced ...
    >>> out.read_text()
    'old'
    """
    token = _POLICY.set((bool(force), bool(follow_symlinks)))
    try:
        yield
    finally:
        _POLICY.reset(token)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _install(tmp: Path, final: Path, replace: bool, follow: bool) -> None:
    """Move the finished ``tmp`` to ``final`` without writing through a link (unless
    ``follow``, where ``final`` is already resolved) or over a file (unless ``replace``)."""
    if not replace:
        try:
            os.link(tmp, final, follow_symlinks=False)  # EEXIST for a file or any link
            return
        except FileExistsError:
            raise InputError(f"{final} appeared after evalcert checked it; it was not "
                             "replaced (pass --force to replace it)") from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV,
                                 errno.EMLINK, errno.ENOSYS):
                raise
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        try:                                   # no hard links here: create it exclusively
            fd = os.open(final, flags, 0o666)
        except FileExistsError:
            raise InputError(f"{final} appeared after evalcert checked it; it was not "
                             "replaced (pass --force to replace it)") from None
        with os.fdopen(fd, "wb") as dst, open(tmp, "rb") as src:
            shutil.copyfileobj(src, dst)
        return
    if not follow and final.is_symlink():
        raise InputError(f"{final} became a symbolic link after evalcert checked it; "
                         "nothing was written through it (pass --follow-symlinks to do so)")
    os.replace(tmp, final)                     # replaces a link itself, never its target


@contextlib.contextmanager
def writing(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a new temporary file beside ``path`` to write; when the block ends without
    an error, move it to ``path`` under the current :func:`output_policy`.

    The temporary file keeps ``path``'s extension (matplotlib picks the format from
    it) and is removed if the block fails, so a failed write leaves nothing behind
    and never a half-written ``path``.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> with writing(folder / "out.json") as tmp:
    ...     _ = tmp.write_text("{}")
    >>> sorted(p.name for p in folder.iterdir()), (folder / "out.json").read_text()
    (['out.json'], '{}')
    """
    replace, follow = _POLICY.get()
    final = Path(os.path.realpath(path)) if follow else Path(path)
    folder = final.parent if str(final.parent) else Path(".")
    try:
        fd, name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=final.suffix,
                                    dir=folder)
    except OSError as exc:
        raise InputError(f"{path}: cannot write in folder {folder} ({exc.strerror})") from None
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_umask())       # mkstemp makes 0600; give the usual mode
        try:
            _install(tmp, final, replace, follow)
        except OSError as exc:
            raise InputError(f"{path}: cannot be written ({exc.strerror})") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _link_target(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def _inside(path: Path, folder: Path) -> bool:
    real, top = Path(os.path.realpath(path)), Path(os.path.realpath(folder))
    return real == top or top in real.parents


def check_output(path: str | os.PathLike, *, inputs: Iterable[str | os.PathLike] = (),
                 force: bool = False, suffixes: Iterable[str] | None = None,
                 what: str = "output", flag: str | None = None,
                 follow_symlinks: bool | None = None,
                 within: str | os.PathLike | None = None) -> Path:
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
    follow_symlinks : bool, optional
        Accept a path that is a symbolic link (dangling or not) and check its
        target instead. ``None``: as the current :func:`output_policy` says
        (``--follow-symlinks`` in the CLI; library calls follow links).
    within : path-like, optional
        The folder the user named for this file (``--out-dir``): a link leading
        outside it is refused even with ``follow_symlinks``.

    Returns
    -------
    pathlib.Path
        The checked path.

    Raises
    ------
    InputError
        The path is an input, exists without ``force``, is a directory, has an
        unsupported extension, is a symbolic link (unless ``follow_symlinks``),
        leads outside ``within``, or its folder is missing or not writable.

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
    >>> link = Path(tmp.name) / "link.json"
    >>> link.symlink_to(Path(tmp.name) / "elsewhere.json")  # a dangling link
    >>> check_output(link, follow_symlinks=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    evalcert.errors.InputError: ... is a symbolic link (to ...); evalcert does not write through links: ...
    >>> tmp.cleanup()
    """
    out = Path(path)
    name = f"{flag} {out}" if flag else str(out)
    if follow_symlinks is None:
        follow_symlinks = _POLICY.get()[1]
    if within is not None and not _inside(out, within):
        raise InputError(f"{name} is a symbolic link to {os.path.realpath(out)}, outside "
                         f"{within}; evalcert never writes outside the folder named: remove "
                         "the link")
    if out.is_symlink():
        if not follow_symlinks:
            raise InputError(f"{name} is a symbolic link (to {_link_target(out)}); evalcert "
                             "does not write through links: remove it, choose another path, "
                             "or pass --follow-symlinks to write to its target")
        out = Path(os.path.realpath(out))
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
                  suffixes: dict[str, Iterable[str]] | None = None,
                  follow_symlinks: bool | None = None,
                  within: str | os.PathLike | None = None) -> None:
    """Check several outputs at once: ``{flag: path}`` (``None`` paths are skipped);
    the keywords are :func:`check_output`'s.

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
                           suffixes=(suffixes or {}).get(flag), flag=flag,
                           follow_symlinks=follow_symlinks, within=within)
        key = out.resolve()
        if key in seen:
            raise InputError(f"{flag} and {seen[key]} name the same file {out}; choose two paths")
        seen[key] = flag


def write_frame(frame: Any, out: Path, what: str = "the table") -> None:
    """Write a DataFrame as CSV or Parquet (by ``out``'s suffix) through :func:`writing`;
    another suffix is refused, naming ``what`` was being written.

    Examples
    --------
    >>> import pandas as pd, pathlib, tempfile
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> write_frame(pd.DataFrame({"a": [1]}), out); out.read_text()
    'a\\n1\\n'
    """
    suffix = out.suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise InputError(f"{out}: write {what} as .csv or .parquet")
    with writing(out) as tmp:
        if suffix == ".csv":
            frame.to_csv(tmp, index=False)
        else:
            frame.to_parquet(tmp, index=False)
