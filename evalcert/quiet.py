"""Keep what native solver libraries print off the result on stdout.

HiGHS (1.16) prints its banner ("Running HiGHS ...: Copyright ...") from C++ when the
first ``highspy.Highs()`` of a process is built, before any option can turn it off, so
``evalcert audit --m 2 | head -1`` showed a copyright line instead of the answer. Python's
``contextlib.redirect_stdout`` does not reach it: the library writes to file descriptor 1.
:func:`native_stdout` points descriptor 1 at ``os.devnull`` (or at stderr, for a user who
asked to see the solver's log) for the duration of a native call, and restores it.

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

__all__ = ["native_stdout"]

_LOCK = threading.Lock()
_DEPTH = 0                    # blocks inside native_stdout() now
_SAVED: int | None = None    # the real descriptor 1 while _DEPTH > 0


def _flush_c_stdio() -> None:
    """Flush C's stdio buffers, so a native library's buffered text goes where it was aimed."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):  # no libc to load (not POSIX): nothing buffered
        pass


@contextlib.contextmanager
def native_stdout(to_stderr: bool = False) -> Iterator[None]:
    """Send what native code writes to file descriptor 1 nowhere (or to stderr) while inside.

    Parameters
    ----------
    to_stderr : bool
        ``True`` sends it to file descriptor 2 (a ``--verbose`` run), ``False`` (default)
        discards it.

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
            try:
                sys.stdout.flush()
            except (AttributeError, ValueError):  # a closed or replaced sys.stdout
                pass
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
                _flush_c_stdio()
                os.dup2(_SAVED, 1)
                os.close(_SAVED)
                _SAVED = None
