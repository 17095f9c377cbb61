"""Discrete integrability ("curl") test and link ablation (paper 000, Sec. 4.2-4.3).

For a rectangle of two distinct agents ``i, i'`` and two distinct items
``j, j'`` whose four cells are observed, the rectangle deviation (Eq. 8) is

    Delta(i, i', j, j') = s_ij - s_i'j - s_ij' + s_i'j'.

It vanishes for every rectangle iff ``s_ij = theta_i - b_j`` (Eqs. 9-10, Lemma
F.1). :func:`curl_test` draws one set of random rectangles and evaluates
``|Delta|`` on the same rectangles for every link: identity on the raw scores,
probit and logit on ``p = (1 + clip(s, -0.99, 0.99)) / 2`` (App. C). Medians,
95th percentiles, ECDF data (Fig. 1), the curl of fitted predictions (Table 6)
and bootstrap confidence intervals of median differences between links, by
resampling agents and items with replacement and drawing new rectangles
(Table 2), come back in one :class:`CurlResult`.

Example
-------
>>> import numpy as np
>>> from evalcert.data import ScoreMatrix
>>> S = ScoreMatrix.from_array(np.add.outer([0.5, 0.1, -0.2], [0.0, 0.2, -0.3]))
>>> curl_test(S, n_rectangles=100, seed=0).median["identity"] < 1e-12
True
"""

from __future__ import annotations

import dataclasses
import itertools
from fractions import Fraction
from typing import Sequence

import numpy as np
from scipy.special import logit, ndtri

from evalcert.data import ScoreMatrix
from evalcert.errors import InputError
from evalcert.results import ResultMixin, format_table

__all__ = ["LINKS", "link_transform", "sample_rectangles", "rectangle_deviation", "score_grid",
           "LinkDifference", "CurlResult", "curl_test"]

LINKS = ("identity", "probit", "logit")
_CLIP = 0.99
_MAX_ROUNDS = 64


def link_transform(values: np.ndarray, link: str) -> np.ndarray:
    """Map scores to the link scale (App. C).

    ``identity`` returns the raw scores; ``probit`` and ``logit`` return
    ``Phi^{-1}(p)`` and ``log(p / (1 - p))`` of ``p = (1 + clip(s, -0.99, 0.99)) / 2``.
    NaN stays NaN.

    >>> link_transform(np.array([0.0]), "logit")
    array([0.])
    """
    values = np.asarray(values, dtype=float)
    if link == "identity":
        return values
    p = (1.0 + np.clip(values, -_CLIP, _CLIP)) / 2.0
    if link == "probit":
        return ndtri(p)
    if link == "logit":
        return logit(p)
    raise InputError(f"unknown link {link!r}; choose one of {LINKS}")


def sample_rectangles(observed: np.ndarray, n: int,
                      seed: int | np.random.Generator = 0) -> np.ndarray:
    """Draw ``n`` random rectangles whose four cells are all observed.

    Each draw takes a uniform row ``i``, a uniform other row ``i' != i``, a
    uniform column ``j`` and a uniform other column ``j' != j``; draws with an
    unobserved corner are rejected, so the accepted rectangles are uniform over
    the complete rectangles (ordered corners).

    Parameters
    ----------
    observed : ndarray of bool, shape (K, J)
        Observed cells.
    n : int
        Number of rectangles.
    seed : int or Generator
        Randomness; the same seed gives the same rectangles.

    Returns
    -------
    ndarray of int, shape (n, 4)
        Columns ``i, i', j, j'``.

    Raises
    ------
    InputError
        If fewer than two rows or columns have an observed cell, or no complete
        rectangle turns up in ``64 * n`` draws.
    """
    observed = np.asarray(observed, dtype=bool)
    if observed.ndim != 2:
        raise InputError(f"observed must be a 2-D boolean mask; got shape {observed.shape}")
    rows = np.flatnonzero(observed.any(axis=1))
    cols = np.flatnonzero(observed.any(axis=0))
    if len(rows) < 2 or len(cols) < 2:
        raise InputError(f"rectangles need at least two observed rows and two observed columns; "
                         f"got {len(rows)} row(s) and {len(cols)} column(s)")
    rng = np.random.default_rng(seed)
    K, J = len(rows), len(cols)
    found: list[np.ndarray] = []
    total = 0
    for _ in range(_MAX_ROUNDS):
        i = rng.integers(0, K, n)
        ip = (i + rng.integers(1, K, n)) % K
        j = rng.integers(0, J, n)
        jp = (j + rng.integers(1, J, n)) % J
        rect = np.column_stack([rows[i], rows[ip], cols[j], cols[jp]])
        ok = (observed[rect[:, 0], rect[:, 2]] & observed[rect[:, 1], rect[:, 2]]
              & observed[rect[:, 0], rect[:, 3]] & observed[rect[:, 1], rect[:, 3]])
        found.append(rect[ok])
        total += int(ok.sum())
        if total >= n:
            return np.concatenate(found)[:n]
    raise InputError(f"only {total} complete rectangles (all four cells observed) in "
                     f"{_MAX_ROUNDS * n} random draws; the design is too sparse for the curl "
                     "test: test additivity on a denser subset (paper 000, Sec. 7.3)")


def rectangle_deviation(values: np.ndarray, rectangles: np.ndarray) -> np.ndarray:
    """Signed rectangle deviations ``s_ij - s_i'j - s_ij' + s_i'j'`` (Eq. 8)."""
    i, ip, j, jp = np.asarray(rectangles).T
    return values[i, j] - values[ip, j] - values[i, jp] + values[ip, jp]


def score_grid(values: np.ndarray, max_denominator: int = 1000, tol: float = 1e-6) -> int | None:
    """Smallest ``q <= max_denominator`` with every observed ``q * s`` within ``tol`` of an integer.

    TVD-MI scores are averages of 3-level critic differences over ``K - 1``
    partners, hence multiples of ``1 / (4 (K - 1))`` (1/116 for PubMed); on such a
    grid rectangle deviations and their median are exact fractions.

    >>> score_grid(np.array([[0.25, 0.5], [0.75, np.nan]]))
    4
    """
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    for q in range(1, max_denominator + 1):
        scaled = v * q
        if np.all(np.abs(scaled - np.round(scaled)) <= tol):
            return q
    return None


def _median_fraction(abs_dev_units: np.ndarray, q: int) -> Fraction:
    ordered = np.sort(abs_dev_units)
    n = len(ordered)
    lo, hi = int(ordered[(n - 1) // 2]), int(ordered[n // 2])
    return Fraction(lo + hi, 2 * q)


@dataclasses.dataclass(frozen=True)
class LinkDifference(ResultMixin):
    """Median curl of link ``a`` minus that of link ``b``, with a bootstrap CI (Table 2)."""

    a: str
    b: str
    estimate: float
    lower: float
    upper: float

    @property
    def excludes_zero(self) -> bool:
        return self.lower > 0 or self.upper < 0

    def summary(self) -> str:
        return f"{self.a} - {self.b}: {self.estimate:+.3f} [{self.lower:+.3f}, {self.upper:+.3f}]"


@dataclasses.dataclass(frozen=True)
class CurlResult(ResultMixin):
    """Outcome of :func:`curl_test`.

    Attributes
    ----------
    links : tuple of str
    n_rectangles, seed : int
    median, p95 : dict of str to float
        Median and 95th percentile of ``|Delta|`` per link (Table 1).
    median_exact : Fraction or None
        Exact identity median when the scores sit on a grid ``1/q`` (see
        :func:`score_grid`), e.g. ``15/116`` on PubMed.
    grid : int or None
        That ``q``.
    prediction_median, prediction_p95 : dict of str to float
        Curl of the link-transformed fitted predictions on the same rectangles
        (Table 6; 0 for identity on an additive fit); empty without predictions.
    differences : tuple of LinkDifference
        Bootstrap CIs of median differences (Table 2); empty when ``n_boot = 0``.
    n_boot : int
    abs_deviation : dict of str to ndarray
        ``|Delta|`` per rectangle and link (ECDF data, Fig. 1); not in ``to_dict``.
    rectangles : ndarray, shape (n, 4)
        The rectangles ``i, i', j, j'``; not in ``to_dict``.
    """

    links: tuple[str, ...]
    n_rectangles: int
    seed: int
    median: dict[str, float]
    p95: dict[str, float]
    median_exact: Fraction | None
    grid: int | None
    prediction_median: dict[str, float]
    prediction_p95: dict[str, float]
    differences: tuple[LinkDifference, ...]
    n_boot: int
    abs_deviation: dict[str, np.ndarray] = dataclasses.field(repr=False)
    rectangles: np.ndarray = dataclasses.field(repr=False)

    def ecdf(self, link: str) -> tuple[np.ndarray, np.ndarray]:
        """Sorted ``|Delta|`` and the ECDF heights ``k / n`` for ``link`` (Fig. 1)."""
        x = np.sort(self.abs_deviation[link])
        return x, np.arange(1, len(x) + 1) / len(x)

    def summary(self) -> str:
        rows = [(link, self.median[link], self.p95[link],
                 self.prediction_median.get(link, float("nan")),
                 self.prediction_p95.get(link, float("nan"))) for link in self.links]
        text = [f"Curl test: {self.n_rectangles} rectangles (seed {self.seed}), same for every link",
                format_table(rows, ["link", "median |D|", "P95 |D|", "median (pred)", "P95 (pred)"])]
        if self.median_exact is not None:
            text.append(f"identity median exactly {self.median_exact} (scores on the 1/{self.grid} grid)")
        if self.differences:
            text.append(f"median differences, {self.n_boot} bootstrap resamples of agents and items:")
            text.extend("  " + d.summary() for d in self.differences)
        return "\n".join(text)


def _medians(values: np.ndarray, links: Sequence[str], rect: np.ndarray) -> np.ndarray:
    return np.array([np.median(np.abs(rectangle_deviation(link_transform(values, link), rect)))
                     for link in links])


def _bootstrap_differences(values: np.ndarray, links: Sequence[str], n_boot: int,
                           n_rectangles: int, seed: int, confidence: float,
                           point: dict[str, float]) -> tuple[LinkDifference, ...]:
    K, J = values.shape
    observed = ~np.isnan(values)
    medians = np.empty((n_boot, len(links)))
    for b, child in enumerate(np.random.SeedSequence([seed, 1]).spawn(n_boot)):
        rng = np.random.default_rng(child)
        rows, cols = rng.integers(0, K, K), rng.integers(0, J, J)
        sub = values[np.ix_(rows, cols)]
        rect = sample_rectangles(observed[np.ix_(rows, cols)], n_rectangles, rng)
        medians[b] = _medians(sub, links, rect)
    alpha = (1.0 - confidence) / 2.0
    out = []
    for (ka, a), (kb, b) in itertools.combinations(enumerate(links), 2):
        diff = medians[:, ka] - medians[:, kb]
        lo, hi = np.quantile(diff, [alpha, 1.0 - alpha])
        out.append(LinkDifference(a, b, point[a] - point[b], float(lo), float(hi)))
    return tuple(out)


def curl_test(S: ScoreMatrix, links: Sequence[str] = LINKS, n_rectangles: int = 20_000,
              seed: int = 0, predictions: np.ndarray | None = None, n_boot: int = 0,
              boot_rectangles: int | None = None, confidence: float = 0.95) -> CurlResult:
    """Discrete integrability test on the same random rectangles for every link.

    Parameters
    ----------
    S : ScoreMatrix
        Scores; rectangles use observed cells only.
    links : sequence of str
        Any of ``identity``, ``probit``, ``logit`` (see :func:`link_transform`).
    n_rectangles : int
        Rectangles drawn (20,000 in the paper).
    seed : int
        Seed of the rectangles and of the bootstrap.
    predictions : ndarray, shape (K, J), optional
        Fitted score predictions (e.g. ``ClippedLinear().fit(S).predict()``);
        their curl per link is reported (Table 6).
    n_boot : int
        Bootstrap resamples of agents and items for the CIs of median
        differences (Table 2: 500); 0 skips the bootstrap.
    boot_rectangles : int, optional
        Rectangles per bootstrap resample; defaults to ``n_rectangles``.
    confidence : float
        Level of the percentile intervals.

    Returns
    -------
    CurlResult
    """
    links = tuple(links)
    for link in links:
        link_transform(np.zeros(1), link)
    values = S.values
    if predictions is not None and np.shape(predictions) != S.shape:
        raise InputError(f"predictions must have the score matrix's shape {S.shape}; "
                         f"got {np.shape(predictions)}")
    rect = sample_rectangles(S.observed, n_rectangles, seed)
    abs_dev = {link: np.abs(rectangle_deviation(link_transform(values, link), rect))
               for link in links}
    median = {link: float(np.median(d)) for link, d in abs_dev.items()}
    p95 = {link: float(np.quantile(d, 0.95)) for link, d in abs_dev.items()}
    grid = score_grid(values) if "identity" in links else None
    exact = None
    if grid is not None:
        units = np.round(values * grid)
        exact = _median_fraction(np.abs(rectangle_deviation(units, rect)), grid)
    pred_median: dict[str, float] = {}
    pred_p95: dict[str, float] = {}
    if predictions is not None:
        for link in links:
            d = np.abs(rectangle_deviation(link_transform(np.asarray(predictions), link), rect))
            pred_median[link], pred_p95[link] = float(np.median(d)), float(np.quantile(d, 0.95))
    differences = (_bootstrap_differences(values, links, n_boot, boot_rectangles or n_rectangles,
                                          seed, confidence, median) if n_boot else ())
    return CurlResult(links, int(n_rectangles), int(seed), median, p95, exact, grid, pred_median,
                      pred_p95, differences, int(n_boot), abs_dev, rect)
