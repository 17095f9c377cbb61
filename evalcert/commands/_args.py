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
           "OUTPUT_FLAGS_HELP", "PLOT_SUFFIXES"]

#: the ``--force`` help text every verb that writes files uses
OUTPUT_FLAGS_HELP = "overwrite existing output files (never an input file)"

#: plot formats matplotlib's Agg canvas writes, checked before any work runs
PLOT_SUFFIXES = (".png", ".pdf", ".svg", ".svgz", ".eps", ".ps", ".jpg", ".jpeg", ".tif",
                 ".tiff", ".webp", ".pgf", ".raw", ".rgba")


def _int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None


def _float(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1 (counts of seeds, rectangles, workers)."""
    value = _int(text, "a positive integer")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def nonnegative_int(text: str) -> int:
    """An integer >= 0 (seeds, optional resample counts)."""
    value = _int(text, "an integer >= 0")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}")
    return value


def int_range(low: int, high: int):
    """A ``type=`` function for integers in ``[low, high]``: the upper end bounds the work
    (seeds, rectangles, resamples) before any array of that size is allocated.

    >>> int_range(1, 10)("10")
    10
    """
    def parse(text: str) -> int:
        value = _int(text, f"an integer in [{low}, {high}]")
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be an integer in [{low}, {high}], got "
                                             f"{text!r}")
        return value

    parse.__name__ = f"integer in [{low}, {high}]"
    return parse


def float_range(low: float, high: float, *, low_open: bool = False):
    """A ``type=`` function for finite numbers in ``[low, high]`` (``(low, high]`` with
    ``low_open``): the upper end keeps derived sizes finite.

    >>> float_range(0, 1e100)("1e-6"), float_range(0, 1e6, low_open=True)("1.6")
    (1e-06, 1.6)
    """
    span = f"{'(' if low_open else '['}{low:g}, {high:g}]"

    def parse(text: str) -> float:
        value = _float(text, f"a number in {span}")
        if not (low < value if low_open else low <= value) or value > high:
            raise argparse.ArgumentTypeError(f"must be a number in {span}, got {text!r}")
        return value

    parse.__name__ = f"number in {span}"
    return parse


def finite_float(text: str) -> float:
    """Any finite real number (no nan, no inf)."""
    return _float(text, "a finite number")


def positive_float(text: str) -> float:
    """A finite number > 0."""
    value = _float(text, "a finite number > 0")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def nonnegative_float(text: str) -> float:
    """A finite number >= 0 (ridge weights)."""
    value = _float(text, "a finite number >= 0")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value


def probability(text: str) -> float:
    """A number in [0, 1]."""
    value = _float(text, "a number in [0, 1]")
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1], got {text!r}")
    return value


def open_probability(text: str) -> float:
    """A number in (0, 1) (a held-out fraction: some cells held out, some kept)."""
    value = _float(text, "a number in (0, 1)")
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1), got {text!r}")
    return value


def fraction(text: str) -> float:
    """A number in (0, 1] (a fraction of rows or columns to keep)."""
    value = _float(text, "a number in (0, 1]")
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got {text!r}")
    return value
