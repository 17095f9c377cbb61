"""The results every alarm returns (paper 003): :class:`AlarmResult` (M=1, M=2, the full joint,
chained windows) and :class:`MinMaxCurve` (Figs. 7-8), in one module that no alarm owns, so the
M=2 and full-joint paths need not import the M=1 module for their result type."""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

import numpy as np

from evalcert.results import PageMixin, ResultMixin, format_table

__all__ = ["AlarmResult", "MinMaxCurve"]


@dataclasses.dataclass(frozen=True)
class MinMaxCurve(ResultMixin):
    """Per-key min-max values (Fig. 7) and per-label values (Fig. 8), exact as int ratios.

    Attributes
    ----------
    labels : tuple of str
    keys : ndarray, shape (K, R)
        Every answer key, in lexicographic order.
    numer, denom : ndarray, shape (K,)
        ``v(q) = numer / denom``.
    label_numer, label_denom : ndarray, shape (K, R)
        ``min_i min(q_l, R_{l,i}) / q_l``; ``label_denom == 0`` where ``q_l = 0`` (no demand).

    Examples
    --------
    >>> from evalcert.datasets.mtbench import paper_summaries
    >>> from evalcert.logic.alarms import minmax_curve
    >>> curve = minmax_curve(paper_summaries())
    >>> len(curve.values()), round(float(curve.values().max()), 4)
    (351, 0.6667)
    """

    labels: tuple[str, ...]
    keys: np.ndarray
    numer: np.ndarray
    denom: np.ndarray
    label_numer: np.ndarray
    label_denom: np.ndarray

    def values(self) -> np.ndarray:
        """``v(q)`` as floats (for plotting and sorting; float order is exact for Q < 10^7)."""
        return self.numer / self.denom

    def value(self, k: int) -> Fraction:
        """Exact ``v`` of the k-th key."""
        return Fraction(int(self.numer[k]), int(self.denom[k]))

    def label_values(self, label: int) -> np.ndarray:
        """Per-label values as floats, NaN where the key has no item of that label."""
        den = self.label_denom[:, label]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, self.label_numer[:, label] / np.maximum(den, 1), np.nan)

    def label_curves(self, max_points: int = 500) -> list[dict[str, Any]]:
        """Fig. 8 as numbers: per label, the exact values ``min_i min(q_l, R_{l,i}) / q_l``
        of the keys with ``q_l > 0``, sorted, thinned to at most ``max_points`` points
        (evenly spaced ranks, both extremes kept; ``positions`` are the ranks among the
        ``n_keys`` sorted values), with the exact range and a key attaining each end.

        Bounded: ``R x max_points`` values whatever the number of keys; ``thinned`` says
        whether points were left out.

        Examples
        --------
        >>> from evalcert.datasets.mtbench import paper_summaries
        >>> from evalcert.logic.alarms import minmax_curve
        >>> a = minmax_curve(paper_summaries()).label_curves(max_points=5)[0]
        >>> a["label"], a["n_keys"], a["min"], a["max"], a["positions"], a["thinned"]
        ('a', 325, '4/25', '1', [0, 81, 162, 243, 324], True)
        """
        out = []
        max_points = max(int(max_points), 2)            # both extremes kept
        for l, label in enumerate(self.labels):
            defined = np.flatnonzero(self.label_denom[:, l] > 0)
            vals = self.label_values(l)[defined]
            order = defined[np.argsort(vals, kind="stable")]   # float order is exact here
            n = len(order)
            if n > max_points:
                pos = np.unique(np.linspace(0, n - 1, max_points).round().astype(np.int64))
            else:
                pos = np.arange(n)
            exact = [Fraction(int(self.label_numer[k, l]), int(self.label_denom[k, l]))
                     for k in order[pos]]
            out.append({"label": label, "n_keys": n,
                        "min": str(exact[0]) if n else None,
                        "max": str(exact[-1]) if n else None,
                        "argmin": self.keys[order[0]].tolist() if n else None,
                        "argmax": self.keys[order[-1]].tolist() if n else None,
                        "positions": pos.tolist(), "values": [str(v) for v in exact],
                        "thinned": bool(len(pos) < n)})
        return out

    def to_frame(self) -> Any:
        """One row per answer key: its label counts and ``v(q)`` (exact numerator and
        denominator, and as a float)."""
        import pandas as pd

        frame = pd.DataFrame(self.keys, columns=list(self.labels))
        return frame.assign(numer=self.numer, denom=self.denom, value=self.values())

    def summary(self) -> str:
        v = self.values()
        k_max, k_min = int(np.argmax(v)), int(np.argmin(v))
        return (f"M=1 curve over {len(v)} keys; max v = {self.value(k_max)} at "
                f"{tuple(self.keys[k_max].tolist())}, min v = {self.value(k_min)} at "
                f"{tuple(self.keys[k_min].tolist())}")


@dataclasses.dataclass(frozen=True)
class AlarmResult(PageMixin, ResultMixin):
    """Verdict of a no-knowledge alarm.

    Attributes
    ----------
    threshold : Fraction
        The user's level ``x``: "every grader better than x on every label".
    fires : bool
        True iff no answer key is consistent with the spec, i.e. ``x >= T``.
    T : Fraction
        Exact alarm threshold: the alarm fires iff ``x >= T``.
    attaining_keys : tuple of tuple of int
        Answer keys with ``v(q) = T`` (at most ``max_keys`` listed).
    n_attaining : int or None
        Exact number of such keys; None when they were not all enumerated (M=2 / full
        joint with more candidates than ``max_checks``: the listed key is a witness).
    binding : tuple of (grader, label)
        Graders and labels whose best accuracy equals ``T`` at an attaining key.
    m : int or str
        Order of the summaries used: 1, 2 or ``"full"`` (the full joint).
    n_keys : int or None
        Size of the (bounded) Q-complex; None when not counted (chained windows, where
        only the window keys of item-level keys count).
    curve : MinMaxCurve or None
        Per-key min-max curve (Fig. 7) and per-label curves (Fig. 8), when asked.
    labels, graders : tuple of str
    method : str
    witness : dict or None
        M=2 / full joint: one consistent evaluation at an attaining key (key, correct counts
        per grader, App. C Eq. 18 pair statistics), re-checked in integers.
    n_solves : int
        Integer programs solved (0 for the closed form).
    seconds : float
        Wall time of the computation.
    T_upper : Fraction or None
        None when ``T`` is exact. Set when a time limit stopped the search: then ``T`` is a
        proven lower bound (a re-checked point attains it), ``T_upper`` a proven upper
        bound, and ``fires`` means ``x >= T_upper`` (certain); for ``T <= x < T_upper``
        the alarm is undecided.

    Examples
    --------
    >>> from evalcert.logic.alarms import alarm
    >>> r = alarm({"authors": {"a": 5, "b": 10, "tie": 10},
    ...            "gpt4": {"a": 4, "b": 18, "tie": 3}}, "1/2", curves=False)
    >>> r.fires, r.T, r.n_keys, r.attaining_keys
    (False, Fraction(2, 3), 351, ((6, 15, 4),))
    >>> print(r.summary().splitlines()[1])
    T = 2/3 (0.6667): the alarm fires iff x >= T
    """

    threshold: Fraction
    fires: bool
    T: Fraction
    attaining_keys: tuple[tuple[int, ...], ...]
    n_attaining: int | None
    binding: tuple[tuple[str, str], ...]
    m: int | str
    n_keys: int | None
    labels: tuple[str, ...]
    graders: tuple[str, ...]
    method: str
    curve: MinMaxCurve | None = None
    n_solves: int = 0
    seconds: float = 0.0
    witness: dict[str, Any] | None = None
    T_upper: Fraction | None = None

    def to_frame(self) -> Any:
        """The listed answer keys attaining ``T``: one row per key, one column per label."""
        import pandas as pd

        return pd.DataFrame(list(self.attaining_keys), columns=list(self.labels),
                            dtype="int64")

    def summary(self) -> str:
        verdict = "FIRES" if self.fires else "silent"
        if self.T_upper is not None and not self.fires and self.threshold >= self.T:
            verdict = "UNDECIDED (time limit)"
        which = "full joint" if self.m == "full" else f"M={self.m}"
        head = (f"no-knowledge alarm ({which}, {self.method}): {verdict} at x = "
                f"{self.threshold} ({float(self.threshold):.4f})\n"
                + (f"T = {self.T} ({float(self.T):.4f}): the alarm fires iff x >= T\n"
                   if self.T_upper is None else
                   f"time limit reached: T in [{self.T}, {self.T_upper}] ({float(self.T):.4f}"
                   f" to {float(self.T_upper):.4f}), proven bounds: the alarm fires at x >= "
                   f"{self.T_upper}, is silent at x < {self.T}\n")
                + f"labels {', '.join(self.labels)}; graders {', '.join(self.graders)}"
                + (f"; {self.n_keys} answer keys" if self.n_keys is not None else "")
                + (f"; {self.n_solves} integer programs in {self.seconds:.2f} s"
                   if self.n_solves else "") + "\n")
        rows = [[", ".join(map(str, k))] for k in self.attaining_keys[:10]]
        if self.n_attaining is None:
            title = "a key attaining T (witness; not all attaining keys enumerated)"
            more = ""
        else:
            title = f"keys attaining T ({self.n_attaining})"
            more = (f"\n... {self.n_attaining - len(rows)} more attaining keys"
                    if self.n_attaining > len(rows) else "")
        bind = "; ".join(f"{g} on {l}" for g, l in self.binding) or "-"
        text = head + format_table(rows, [title]) + more
        text += f"\nbinding (grader, label): {bind}"
        if self.witness is not None and self.witness.get("pair_statistics"):
            text += ("\nEq. 18 pair correctness covariance at the witness key "
                     f"{tuple(self.witness['key'])} (0: independent errors):")
            for pair, row in self.witness["pair_statistics"].items():
                text += f"\n  {pair}: " + ", ".join(f"{l} {v}" for l, v in row.items())
        if self.curve is not None:
            text += "\ncurve: " + self.curve.summary()
        return text
