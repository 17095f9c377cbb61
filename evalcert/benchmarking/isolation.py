"""Run benchmark tasks in forked processes with a hard time limit.

A solver called from Python cannot be interrupted: a run that ignores its own
time limit (or crashes the interpreter, as quadprog does on singular QPs)
would stall or kill a whole benchmark. :func:`run_forked` runs each task in a
child forked from this process (so every solver library the parent imported
is already loaded), at most ``n_jobs`` at a time, and

* returns the child's result when it finishes in time;
* kills the child when it passes ``deadline(task)`` seconds and records
  ``on_timeout(task, seconds)`` instead;
* records ``on_crash(task, message)`` when the child dies without a result
  (a signal, an exception) -- one broken run never stops the grid.

Each child also reports its peak resident memory above what it inherited
(``ru_maxrss`` minus the resident size at the start), which includes the
solvers' own C/Rust heaps, unlike ``tracemalloc``.

Needs the ``fork`` start method (Linux, macOS); :data:`AVAILABLE` says
whether it is there.

Example
-------
>>> run_forked(abs, [-1, 2, -3], n_jobs=2, deadline=lambda t: 5.0,
...            on_timeout=None, on_crash=None, progress=False)[0]
[1, 2, 3]
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import sys
import time
from multiprocessing.connection import wait
from typing import Any, Callable, Sequence

from evalcert.progress import progress_bar

__all__ = ["AVAILABLE", "run_forked"]

AVAILABLE = "fork" in multiprocessing.get_all_start_methods()
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _resident_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except OSError:
        return 0


def _child(conn, fn: Callable, task: Any) -> None:
    start = _resident_bytes()
    try:
        result = fn(task)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent as a crash
        conn.send(("error", f"{type(exc).__name__}: {str(exc)[:200]}", 0))
    else:
        scale = 1 if sys.platform == "darwin" else 1024   # ru_maxrss: bytes on macOS, KiB on Linux
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
        conn.send(("ok", result, max(0, peak - start)))
    finally:
        conn.close()


def run_forked(fn: Callable[[Any], Any], tasks: Sequence[Any], *, n_jobs: int,
               deadline: Callable[[Any], float],
               on_timeout: Callable[[Any, float], Any] | None,
               on_crash: Callable[[Any, str], Any] | None,
               progress: bool = True, desc: str = "runs") -> tuple[list[Any], list[int]]:
    """``[fn(task) for task in tasks]`` in forked children, ``n_jobs`` at a time.

    Returns the results in task order and, per task, the child's peak resident
    bytes above its start (0 for a killed or crashed run).

    Examples
    --------
    >>> import time
    >>> def nap(seconds):
    ...     time.sleep(seconds)
    ...     return seconds
    >>> results, peaks = run_forked(nap, [0, 30], n_jobs=2, deadline=lambda t: 0.3,
    ...                             on_timeout=lambda t, sec: "killed", on_crash=None,
    ...                             progress=False)
    >>> results, len(peaks)  # the 30 s task was killed at its 0.3 s deadline
    ([0, 'killed'], 2)
    """
    ctx = multiprocessing.get_context("fork")
    results: list[Any] = [None] * len(tasks)
    peaks = [0] * len(tasks)
    pending = list(range(len(tasks)))[::-1]
    running: dict[Any, tuple[int, Any, float]] = {}
    bar = progress_bar(progress, len(tasks), desc, leave=True)
    try:
        while pending or running:
            while pending and len(running) < max(1, n_jobs):
                k = pending.pop()
                reader, writer = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_child, args=(writer, fn, tasks[k]), daemon=True)
                proc.start()
                writer.close()
                running[reader] = (k, proc, time.perf_counter())
            now = time.perf_counter()
            nearest = min(start + deadline(tasks[k]) for k, _, start in running.values())
            ready = wait(list(running), timeout=max(0.0, nearest - now))
            for reader in ready:
                k, proc, start = running.pop(reader)
                try:
                    kind, value, peak = reader.recv()
                except (EOFError, OSError):
                    proc.join()
                    kind, value, peak = "error", f"process died (exit code {proc.exitcode})", 0
                reader.close()
                proc.join()
                if kind == "ok":
                    results[k], peaks[k] = value, peak
                else:
                    results[k] = on_crash(tasks[k], value) if on_crash else None
                bar.update()
            now = time.perf_counter()
            for reader, (k, proc, start) in list(running.items()):
                if now - start >= deadline(tasks[k]):
                    proc.kill()
                    proc.join()
                    reader.close()
                    del running[reader]
                    results[k] = on_timeout(tasks[k], now - start) if on_timeout else None
                    bar.update()
    finally:
        for reader, (_, proc, _) in running.items():
            proc.kill()
            proc.join()
            reader.close()
        bar.close()
    return results, peaks
