"""Keep what native solver libraries print off the result on stdout.

HiGHS (1.16) prints its banner ("Running HiGHS ...: Copyright ...") from C++ when the
first ``highspy.Highs()`` of a process is built, before any option can turn it off, so
``evalcert audit --m 2 | head -1`` showed a copyright line instead of the answer. Python's
``contextlib.redirect_stdout`` does not reach it: the library writes to file descriptor 1.
:func:`native_stdout` points descriptor 1 at ``os.devnull`` (or at stderr, for a user who
asked to see the solver's log) for the duration of a native call, and restores it.

:func:`solver_log` is that ask: inside it (the CLI's ``--verbose``) the backends turn their
solvers' own logs on (HiGHS ``output_flag``, OSQP/SCS/Clarabel/qpsolvers ``verbose``, PuLP
``msg``) and :func:`native_stdout` sends them to stderr, so stdout still holds the result only.

Example
-------
>>> with native_stdout():
...     n = os.write(1, b"chatter of a C library\\n")   # discarded
>>> print("the result")
the result
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading
from typing import Iterator

__all__ = ["native_stdout", "solver_log", "solver_log_enabled"]

_LOCK = threading.Lock()
_DEPTH = 0                    # blocks inside native_stdout() now
_SAVED: int | None = None    # the real descriptor 1 while _DEPTH > 0
_LOG = False                 # inside solver_log(): solvers log, to stderr


def _flush_c_stdio() -> None:
    """Flush C's stdio buffers, so a native library's buffered text goes where it was aimed."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):  # no libc to load (not POSIX): nothing buffered
        pass


def solver_log_enabled() -> bool:
    """Whether solvers should print their own log now (inside :func:`solver_log`).

    Examples
    --------
    >>> solver_log_enabled()
    False
    >>> with solver_log():
    ...     solver_log_enabled()
    True
    """
    return _LOG


@contextlib.contextmanager
def solver_log(enabled: bool = True) -> Iterator[None]:
    """Inside, solvers print their own log, and it goes to stderr (a ``--verbose`` run).

    Parameters
    ----------
    enabled : bool
        ``False`` leaves the solvers quiet (so ``with solver_log(args.verbose):`` reads
        the flag).

    While enabled, descriptor 1 points at stderr for the whole block (a solver that logs
    outside a :func:`native_stdout` block lands there too): keep the block to the
    computation and print the result after it. The switch is process-wide, like
    descriptor 1 itself; it does not reach worker processes started by joblib.

    Examples
    --------
    >>> with solver_log(), native_stdout():
    ...     n = os.write(1, b"a solver's log line\\n")   # lands on stderr
    >>> solver_log_enabled()
    False
    """
    global _LOG
    before, _LOG = _LOG, bool(enabled)
    try:
        if enabled:
            with native_stdout(to_stderr=True):
                yield
        else:
            yield
    finally:
        _LOG = before


def _flush_python_stdout() -> None:
    try:
        sys.stdout.flush()
    except (AttributeError, ValueError):  # a closed or replaced sys.stdout
        pass


@contextlib.contextmanager
def native_stdout(to_stderr: bool | None = None) -> Iterator[None]:
    """Send what native code writes to file descriptor 1 nowhere (or to stderr) while inside.

    Parameters
    ----------
    to_stderr : bool or None
        ``True`` sends it to file descriptor 2 (a ``--verbose`` run), ``False`` discards
        it; ``None`` (default) is ``True`` inside :func:`solver_log`, else ``False``.

    Descriptor 1 is process-wide: keep the block to the native call. Nested and
    concurrent blocks share one redirection (the first to enter sets it, the last to
    leave restores it; the first one's ``to_stderr`` applies).

    Examples
    --------
    >>> with native_stdout(to_stderr=True):
    ...     n = os.write(1, b"solver log\\n")   # lands on stderr
    >>> n
    11
    """
    global _DEPTH, _SAVED
    with _LOCK:
        if _DEPTH == 0:
            if to_stderr is None:
                to_stderr = _LOG
            _flush_python_stdout()
            _flush_c_stdio()
            try:
                saved = os.dup(1)
            except OSError:  # no descriptor 1 (a daemon): nothing to protect
                saved = None
            if saved is not None:
                target = os.dup(2) if to_stderr else os.open(os.devnull, os.O_WRONLY)
                os.dup2(target, 1)
                os.close(target)
            _SAVED = saved
        _DEPTH += 1
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH -= 1
            if _DEPTH == 0 and _SAVED is not None:
                _flush_python_stdout()  # a Python-level log (CVXPY's) written inside
                _flush_c_stdio()
                os.dup2(_SAVED, 1)
                os.close(_SAVED)
                _SAVED = None
