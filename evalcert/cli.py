"""The ``evalcert`` command line: a thin argparse layer over the public API.

Each module in :mod:`evalcert.commands` defines ``register(subparsers)`` that
adds one or more verbs; every verb calls one library function and prints its
result's ``summary()``. Typed evalcert errors are printed as one line and exit
with status 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from typing import Sequence

from evalcert import __version__, commands
from evalcert.errors import EvalcertError

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with every verb from :mod:`evalcert.commands`."""
    parser = argparse.ArgumentParser(
        prog="evalcert",
        description="Certified fits, exact judge audits and solver benchmarks for "
                    "label-free LLM evaluation.")
    parser.add_argument("--version", action="version", version=f"evalcert {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"evalcert.commands.{info.name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the process exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except EvalcertError as exc:
        print(f"evalcert: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
