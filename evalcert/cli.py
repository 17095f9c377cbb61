"""The ``evalcert`` command line: a thin argparse layer over the public API.

Each module in :mod:`evalcert.commands` defines ``register(subparsers)`` that
adds one or more verbs; every verb calls one library function and prints its
result's ``summary()``. Running out of memory (past evalcert's own estimates) is
one line with status 2 too. Every file a verb writes goes through
:func:`evalcert.io.outputs.writing` under the verb's ``--force`` and
``--follow-symlinks`` (without them: no file replaced, no link written
through, even if one appears while the verb runs). Typed evalcert errors and bad options are printed as one
line and exit with status 2; Ctrl-C exits 130 and a closed pipe (``evalcert demo |
head -1``) exits 1, both without a traceback; anything else is a bug and keeps its
traceback.

Building the parser imports no heavy module (CVXPY, PuLP, SciPy's optimisers,
pandas, matplotlib): verb modules import those inside their run functions, so
``evalcert --help`` starts about as fast as ``import numpy``
(``benchmarks/bench_cli.py`` measures it).
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import re
import sys
from typing import Sequence

from evalcert import __version__, commands
from evalcert.errors import EvalcertError

__all__ = ["build_parser", "main"]


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr (exit status 2)."""

    def error(self, message: str):  # noqa: D102
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with every verb from :mod:`evalcert.commands`.

    Modules whose name starts with ``_`` are helpers, not verbs.

    Examples
    --------
    >>> args = build_parser().parse_args(["curl", "scores.csv", "--rectangles", "500"])
    >>> args.command, args.rectangles, args.func.__name__
    ('curl', 500, 'run_curl')
    """
    parser = _Parser(
        prog="evalcert",
        description="Certified fits, exact judge audits and solver benchmarks for "
                    "label-free LLM evaluation.")
    parser.add_argument("--version", action="version", version=f"evalcert {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"evalcert.commands.{info.name}")
        module.register(subparsers)
    return parser


def _silence_stdout() -> None:
    """Point stdout at /dev/null after the reader closed the pipe, so the interpreter's
    final flush cannot raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (e.g. captured in tests)
        pass


def _one_line(message: str) -> str:
    """The message on one line, every word longer than 200 characters (a cell of a
    file quoted in it, a megabyte long) clipped to its first 80 and its length.

    Examples
    --------
    >>> out = _one_line("bad value " + "y" * 300 + " and more")
    >>> out[:12], out[-32:], len(out)
    ('bad value yy', 'yyy... (300 characters) and more', 119)
    >>> len(_one_line("z" * 10**6)) < 120
    True
    """
    return re.sub(r"\S{200,}", lambda m: f"{m.group()[:80]}... ({len(m.group()):,} characters)",
                  message.replace("\n", " "))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the process exit status.

    0 on success, 2 on a bad option or a typed :class:`~evalcert.errors.EvalcertError`
    (one line on stderr), 130 on Ctrl-C, 1 when stdout was closed early.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = Path(tmp.name) / "scores.csv"  # additive scores: 3 agents x 4 items
    >>> _ = path.write_text("agent,q1,q2,q3,q4\\na,0.5,0.2,-0.1,0.3\\n"
    ...                     "b,0.3,0.0,-0.3,0.1\\nc,0.1,-0.2,-0.5,-0.1\\n")
    >>> main(["curl", str(path), "--rectangles", "100"])
    Curl test: 100 rectangles (seed 0), same for every link
    ...
    0
    >>> main(["curl", str(Path(tmp.name) / "missing.csv")])  # one line on stderr
    2
    >>> tmp.cleanup()
    """
    parser = build_parser()
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help, --version or a bad option
            sys.stdout.flush()
            return exc.code if isinstance(exc.code, int) else 2
        from evalcert.io.outputs import output_policy
        with output_policy(force=getattr(args, "force", False),
                           follow_symlinks=getattr(args, "follow_symlinks", False)):
            status = int(args.func(args) or 0)
        sys.stdout.flush()
        return status
    except EvalcertError as exc:
        print(_one_line(f"evalcert: error: {type(exc).__name__}: {exc}"), file=sys.stderr)
        return 2
    except MemoryError as exc:
        # a backstop: evalcert sizes its large allocations first (evalcert.memory), but a
        # library it calls can still ask for more than the machine or ``ulimit -v`` allows
        detail = f" ({str(exc).splitlines()[0][:160]})" if str(exc) else ""
        print(_one_line(f"evalcert: error: MemoryError: out of memory{detail}; free memory, "
                        "raise the limit (ulimit -v) or give a smaller input"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
