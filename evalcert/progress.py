"""The one progress bar: tqdm on stderr, or a silent stand-in.

Every long step of evalcert (iterative solves, ILP sweeps, batch reads, forked benchmark runs,
parallel maps) reports through :func:`progress_bar`, so stdout keeps the result only. Steps that
run with progress on by default pass ``delay=DELAY`` (drawn once the work passes about three
seconds); an explicit ``verbose=True`` / ``--progress`` draws at once. Disabled, the bar is a
stand-in with the same ``update``/``close``/``set_postfix_str`` methods (no tqdm import).

A step without a loop evalcert controls (a crowd-kit fit, parsing a large file) cannot
drive a bar; :func:`heartbeat` runs it as is and, from a second thread, says what it is
doing once it passes :data:`DELAY` seconds, then every 15 s, and how long it took.
Steps that end sooner print nothing, so short runs stay quiet.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from typing import IO, Any, Iterable, Iterator

__all__ = ["progress_bar", "heartbeat", "DELAY"]

#: seconds of work before a bar that is on by default is drawn
DELAY = 3.0


class _NoBar:
    """Stands in for a tqdm bar when progress is off."""

    def __init__(self, iterable: Iterable[Any] | None = None) -> None:
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable if self.iterable is not None else ())

    def __enter__(self) -> "_NoBar":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def update(self, n: float = 1) -> None:
        pass

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass

    def set_description_str(self, s: str = "", refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(enabled: bool, total: float | None = None, desc: str = "", *,
                 unit: str = "it", iterable: Iterable[Any] | None = None,
                 delay: float = 0.0, leave: bool = False) -> Any:
    """A tqdm bar on stderr (drawn after ``delay`` seconds), or a no-op when not ``enabled``.

    Parameters
    ----------
    enabled : bool
        Show progress at all (``verbose=`` / ``--verbose`` / ``--progress``).
    total : float, optional
        Units of work expected (``None``: a counter).
    desc : str
        What is being done, as the user should read it.
    unit : str
        The unit counted (``"it"``, ``"ILP"``, ``"rows"``...).
    iterable : iterable, optional
        Wrap an iterable instead of updating by hand.
    delay : float
        Seconds before the bar is first drawn (:data:`DELAY` for bars on by default, so
        short work prints nothing).
    leave : bool
        Keep the finished bar on screen.

    Examples
    --------
    >>> bar = progress_bar(False, total=10, desc="demo")   # off: a silent stand-in
    >>> bar.update(1); bar.close(); type(bar).__name__
    '_NoBar'
    >>> list(progress_bar(False, iterable=range(3)))
    [0, 1, 2]
    """
    if not enabled:
        return _NoBar(iterable)
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, unit=unit, file=sys.stderr, delay=delay,
                leave=leave)


@contextlib.contextmanager
def heartbeat(what: str, *, enabled: bool = True, after: float = DELAY, every: float = 15.0,
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
