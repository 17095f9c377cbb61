"""Say on stderr what a long step is doing, once it has run a few seconds.

A step without a loop evalcert controls (a crowd-kit fit, parsing a large file)
cannot drive a progress bar; :func:`heartbeat` runs it as is and, from a second
thread, prints what it is doing once it passes ``after`` seconds (3 by default),
then every ``every`` seconds, and how long it took. Steps that end sooner print
nothing, so short runs stay quiet.

>>> with heartbeat("counting"):  # a step of a moment: nothing is printed
...     total = sum(range(10))
>>> total
45
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from typing import IO, Iterator

__all__ = ["heartbeat"]


@contextlib.contextmanager
def heartbeat(what: str, *, enabled: bool = True, after: float = 3.0, every: float = 15.0,
              stream: IO[str] | None = None) -> Iterator[None]:
    """Run the block; past ``after`` seconds say ``what`` is running (then every ``every``
    seconds) and, at the end, how long it took.

    Parameters
    ----------
    what : str
        The step, as a phrase: ``"Dawid-Skene (crowd-kit) on 10^6 decisions"``.
    enabled : bool
        ``False`` prints nothing (library calls without progress).
    after, every : float
        Seconds before the first line and between lines.
    stream : file, optional
        Where to print (default: ``sys.stderr`` at the time of printing).

    Examples
    --------
    >>> import io
    >>> err = io.StringIO()
    >>> with heartbeat("a quick step", stream=err):  # done before 3 s: nothing printed
    ...     pass
    >>> err.getvalue()
    ''
    """
    if not enabled:
        yield
        return
    start = time.perf_counter()
    done = threading.Event()
    said = threading.Event()

    def say(text: str) -> None:
        print(f"evalcert: {text}", file=stream or sys.stderr, flush=True)

    def beat() -> None:
        wait = after
        while not done.wait(wait):
            say(f"{what} ... ({time.perf_counter() - start:.0f} s so far)")
            said.set()
            wait = every

    thread = threading.Thread(target=beat, name="evalcert-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        if said.is_set():
            say(f"{what}: done in {time.perf_counter() - start:.1f} s")
