"""Run ``evalcert.cli.main`` in-process with captured output and a time limit (for the
README and fuzz tests)."""

from __future__ import annotations

import contextlib
import io
import signal
import threading
from typing import Sequence

from evalcert.cli import main


class CaseTimeout(BaseException):
    """A CLI call ran past its time limit (a hang); BaseException so nothing swallows it."""


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raise :class:`CaseTimeout` in the main thread after ``seconds`` (SIGALRM; Python
    code is interrupted at the next bytecode, a long C call when it returns)."""
    if threading.current_thread() is not threading.main_thread():  # pragma: no cover
        yield
        return

    def expire(signum, frame):
        raise CaseTimeout(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_cli(argv: Sequence[str], seconds: float = 30) -> tuple[int, str, str]:
    """``(exit status, stdout, stderr)`` of ``evalcert ARGV``; raises :class:`CaseTimeout`
    past ``seconds``. An exception other than the CLI's typed errors propagates (a bug)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), time_limit(seconds):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()
