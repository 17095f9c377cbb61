"""The one progress bar: tqdm on stderr, or a silent stand-in.

Every long step of evalcert (iterative solves, ILP sweeps, batch reads, forked benchmark runs,
parallel maps) reports through :func:`progress_bar`, so stdout keeps the result only. Steps that
run with progress on by default pass ``delay=DELAY`` (drawn once the work passes about three
seconds); an explicit ``verbose=True`` / ``--progress`` draws at once. Disabled, the bar is a
stand-in with the same ``update``/``close``/``set_postfix_str`` methods (no tqdm import).
"""

from __future__ import annotations

import sys
from typing import Any, Iterable

__all__ = ["progress_bar", "DELAY"]

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
