"""argparse ``type=`` functions shared by the CLI verbs.

Each checks one range and raises :class:`argparse.ArgumentTypeError`, so a bad
option is refused by the parser (one ``usage`` line plus one error line, exit
status 2) before any file is read or any solver runs. Python's ``float`` accepts
``nan`` and ``inf``; these do not.

>>> positive_int("3"), nonnegative_int("0"), finite_float("-1.5"), probability("0.2")
(3, 0, -1.5, 0.2)
>>> positive_int("0")
Traceback (most recent call last):
argparse.ArgumentTypeError: must be a positive integer, got '0'
"""

from __future__ import annotations

import argparse
import math

__all__ = ["positive_int", "nonnegative_int", "int_range", "float_range", "finite_float",
           "positive_float", "nonnegative_float", "probability", "open_probability", "fraction",
           "OUTPUT_FLAGS_HELP", "FOLLOW_SYMLINKS_HELP", "PLOT_SUFFIXES", "add_output_flags"]

#: the ``--force`` help text every verb that writes files uses
OUTPUT_FLAGS_HELP = "overwrite existing output files (never an input file)"
#: the ``--follow-symlinks`` help text
FOLLOW_SYMLINKS_HELP = ("write through an output path that is a symbolic link (to its target); "
                        "without it such a path is refused, and a file in a folder you name "
                        "(--out-dir, --out) is never written outside that folder")

#: plot formats matplotlib's Agg canvas writes, checked before any work runs
PLOT_SUFFIXES = (".png", ".pdf", ".svg", ".svgz", ".eps", ".ps", ".jpg", ".jpeg", ".tif",
                 ".tiff", ".webp", ".pgf", ".raw", ".rgba")


def add_output_flags(parser: argparse.ArgumentParser, force_help: str = OUTPUT_FLAGS_HELP) -> None:
    """Add ``--force`` and ``--follow-symlinks`` (every verb that writes files has both;
    :func:`evalcert.cli.main` applies them to every file the verb writes).

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> add_output_flags(p)
    >>> vars(p.parse_args(["--follow-symlinks"]))
    {'force': False, 'follow_symlinks': True}
    """
    parser.add_argument("--force", action="store_true", help=force_help)
    parser.add_argument("--follow-symlinks", action="store_true", help=FOLLOW_SYMLINKS_HELP)


def _checked(convert, text: str, what: str, ok):
    """``convert(text)`` when it parses and ``ok`` holds of it; otherwise the parser's
    refusal ``must be {what}, got {text!r}``."""
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    return value


def _int(text: str, what: str, ok=lambda value: True) -> int:
    return _checked(int, text, what, ok)


def _float(text: str, what: str, ok=lambda value: True) -> float:
    """Never nan or inf, whatever ``ok`` says."""
    return _checked(float, text, what, lambda value: math.isfinite(value) and ok(value))


def positive_int(text: str) -> int:
    """An integer >= 1 (counts of seeds, rectangles, workers).

    Examples
    --------
    >>> positive_int("3")
    3
    >>> positive_int("0")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: must be a positive integer, got '0'
    """
    return _int(text, "a positive integer", lambda value: value >= 1)


def nonnegative_int(text: str) -> int:
    """An integer >= 0 (seeds, optional resample counts).

    Examples
    --------
    >>> nonnegative_int("0")
    0
    >>> nonnegative_int("-1")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: must be an integer >= 0, got '-1'
    """
    return _int(text, "an integer >= 0", lambda value: value >= 0)


def int_range(low: int, high: int):
    """A ``type=`` function for integers in ``[low, high]``: the upper end bounds the work
    (seeds, rectangles, resamples) before any array of that size is allocated.

    Examples
    --------
    >>> int_range(1, 10)("10")
    10
    """
    def parse(text: str) -> int:
        return _int(text, f"an integer in [{low}, {high}]", lambda value: low <= value <= high)

    parse.__name__ = f"integer in [{low}, {high}]"
    return parse


def float_range(low: float, high: float, *, low_open: bool = False):
    """A ``type=`` function for finite numbers in ``[low, high]`` (``(low, high]`` with
    ``low_open``): the upper end keeps derived sizes finite.

    Examples
    --------
    >>> float_range(0, 1e100)("1e-6"), float_range(0, 1e6, low_open=True)("1.6")
    (1e-06, 1.6)
    """
    span = f"{'(' if low_open else '['}{low:g}, {high:g}]"

    def parse(text: str) -> float:
        return _float(text, f"a number in {span}",
                      lambda value: (low < value if low_open else low <= value) and value <= high)

    parse.__name__ = f"number in {span}"
    return parse


def finite_float(text: str) -> float:
    """Any finite real number (no nan, no inf).

    Examples
    --------
    >>> finite_float("-1.5")
    -1.5
    >>> finite_float("nan")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: must be a finite number, got 'nan'
    """
    return _float(text, "a finite number")


def positive_float(text: str) -> float:
    """A finite number > 0.

    Examples
    --------
    >>> positive_float("0.5")
    0.5
    >>> positive_float("0")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: must be a finite number > 0, got '0'
    """
    return _float(text, "a finite number > 0", lambda value: value > 0)


def nonnegative_float(text: str) -> float:
    """A finite number >= 0 (ridge weights).

    Examples
    --------
    >>> nonnegative_float("0")
    0.0
    >>> nonnegative_float("-0.1")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: must be a finite number >= 0, got '-0.1'
    """
    return _float(text, "a finite number >= 0", lambda value: value >= 0)


def probability(text: str) -> float:
    """A number in [0, 1].

    Examples
    --------
    >>> probability("1")
    1.0
    >>> probability("1.5")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: must be a number in [0, 1], got '1.5'
    """
    return _float(text, "a number in [0, 1]", lambda value: 0 <= value <= 1)


def open_probability(text: str) -> float:
    """A number in (0, 1) (a held-out fraction: some cells held out, some kept).

    Examples
    --------
    >>> open_probability("0.2")
    0.2
    >>> open_probability("1")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: must be a number in (0, 1), got '1'
    """
    return _float(text, "a number in (0, 1)", lambda value: 0 < value < 1)


def fraction(text: str) -> float:
    """A number in (0, 1] (a fraction of rows or columns to keep).

    Examples
    --------
    >>> fraction("1")
    1.0
    >>> fraction("0")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: must be a number in (0, 1], got '0'
    """
    return _float(text, "a number in (0, 1]", lambda value: 0 < value <= 1)
