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

Everything runs on the observed cells (O(cells), no K x J array). Rectangles
come from the observed structure: in a dense design (coverage >= 1/2) uniform
draws of two rows and two columns are accepted when all four corners are
observed; in a sparse one a random "wedge" (two agents sharing an item, drawn
in proportion to the pairs each item offers) is completed by a random other
item of the first agent and accepted with probability ``(deg_i - 1) /
(max deg - 1)`` if the fourth corner is observed. Both give every complete
rectangle the same probability, and the wedge draws find rectangles at 0.1%
coverage, where four random corners are all observed once in 10^12 draws.

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
from typing import Any, Sequence

import numpy as np
from scipy.special import logit, ndtri

from evalcert.data import ScoreMatrix
from evalcert.errors import InputError
from evalcert.results import PageMixin, ResultMixin, format_table

__all__ = ["LINKS", "link_transform", "sample_rectangles", "rectangle_deviation", "score_grid",
           "LinkDifference", "CurlResult", "curl_test"]

LINKS = ("identity", "probit", "logit")
_CLIP = 0.99
_MAX_ROUNDS = 64
_DENSE_COVERAGE = 0.5        # at or above: uniform corner draws (acceptance >= 1/16)
_MAX_BATCH = 2_000_000       # wedge draws per round (grows with the observed acceptance rate)


def link_transform(values: np.ndarray, link: str) -> np.ndarray:
    """Map scores to the link scale (App. C).

    ``identity`` returns the raw scores; ``probit`` and ``logit`` return
    ``Phi^{-1}(p)`` and ``log(p / (1 - p))`` of ``p = (1 + clip(s, -0.99, 0.99)) / 2``.
    NaN stays NaN.

    Examples
    --------
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


class _Cells:
    """Observed cells in row-major order with O(log n) lookup of any (row, col)."""

    def __init__(self, rows: np.ndarray, cols: np.ndarray, scores: np.ndarray | None,
                 shape: tuple[int, int]) -> None:
        self.rows, self.cols, self.scores, self.shape = rows, cols, scores, shape
        self.keys = rows * np.int64(shape[1]) + cols

    @classmethod
    def of(cls, observed) -> "_Cells":
        if isinstance(observed, ScoreMatrix):
            return cls(*observed.cells(), observed.shape)
        observed = np.asarray(observed, dtype=bool)
        if observed.ndim != 2:
            raise InputError(f"observed must be a 2-D boolean mask; got shape {observed.shape}")
        r, c = np.nonzero(observed)
        return cls(r.astype(np.int64), c.astype(np.int64), None, observed.shape)

    def find(self, r: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(found, position)`` of cells ``(r, c)``."""
        key = r * np.int64(self.shape[1]) + c
        pos = np.minimum(np.searchsorted(self.keys, key), max(len(self.keys) - 1, 0))
        return self.keys[pos] == key, pos

    def corners(self, rect: np.ndarray) -> np.ndarray:
        """Scores at ``(i, j), (i', j), (i, j'), (i', j')`` of each rectangle, shape (n, 4)."""
        i, ip, j, jp = np.asarray(rect).T
        return np.column_stack([self.scores[self.find(a, b)[1]]
                                for a, b in ((i, j), (ip, j), (i, jp), (ip, jp))])


def _uniform_draws(cells: _Cells, n: int, rng: np.random.Generator) -> np.ndarray | None:
    rows, cols = np.unique(cells.rows), np.unique(cells.cols)
    K, J = len(rows), len(cols)
    found, total = [], 0
    for _ in range(_MAX_ROUNDS):
        i = rng.integers(0, K, n)
        ip = (i + rng.integers(1, K, n)) % K
        j = rng.integers(0, J, n)
        jp = (j + rng.integers(1, J, n)) % J
        rect = np.column_stack([rows[i], rows[ip], cols[j], cols[jp]])
        ok = np.ones(n, bool)
        for a, b in ((0, 2), (1, 2), (0, 3), (1, 3)):
            ok &= cells.find(rect[:, a], rect[:, b])[0]
        found.append(rect[ok])
        total += int(ok.sum())
        if total >= n:
            return np.concatenate(found)[:n]
    return None


def _wedge_draws(cells: _Cells, n: int, rng: np.random.Generator) -> np.ndarray | None:
    rows, cols = cells.rows, cells.cols
    K, J = cells.shape
    row_ptr = np.searchsorted(rows, np.arange(K + 1))
    deg_r = np.diff(row_ptr)
    by_col = np.lexsort((rows, cols))
    col_ptr = np.searchsorted(cols[by_col], np.arange(J + 1))
    deg_c = np.diff(col_ptr)
    cum = np.cumsum(deg_c * (deg_c - 1.0))
    top = int(deg_r.max())
    if cum[-1] == 0 or top < 2:
        return None
    m = max(4 * n, 10_000)
    found, total, drawn = [], 0, 0
    for _ in range(_MAX_ROUNDS):
        j = np.minimum(np.searchsorted(cum, rng.random(m) * cum[-1], side="right"), J - 1)
        a = (rng.random(m) * deg_c[j]).astype(np.int64)
        b = (rng.random(m) * (deg_c[j] - 1)).astype(np.int64)
        b += b >= a
        i, ip = rows[by_col[col_ptr[j] + a]], rows[by_col[col_ptr[j] + b]]
        pos_j = cells.find(i, j)[1] - row_ptr[i]
        k = (rng.random(m) * (deg_r[i] - 1)).astype(np.int64)
        k += k >= pos_j
        jp = cols[np.minimum(row_ptr[i] + k, len(cols) - 1)]
        ok = (rng.random(m) * (top - 1) < deg_r[i] - 1) & cells.find(ip, jp)[0] & (jp != j)
        found.append(np.column_stack([i, ip, j, jp])[ok])
        total += int(ok.sum())
        drawn += m
        if total >= n:
            return np.concatenate(found)[:n]
        m = int(min(_MAX_BATCH, max(m, 1.2 * (n - total) * drawn / max(total, 1))))
    return None


def sample_rectangles(observed, n: int, seed: int | np.random.Generator = 0) -> np.ndarray:
    """Draw ``n`` random rectangles whose four cells are all observed.

    Every complete rectangle (ordered corners: rows ``i != i'``, columns
    ``j != j'``) is equally likely. Dense designs (coverage of the non-empty
    rows and columns >= 1/2) take a uniform row ``i``, other row ``i'``, column
    ``j`` and other column ``j'`` and reject draws with an unobserved corner;
    sparse designs draw wedges from the observed cells (see the module notes).

    Parameters
    ----------
    observed : ScoreMatrix or ndarray of bool, shape (K, J)
        Observed cells (a ScoreMatrix is used through its cells, never densified).
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
        If fewer than two rows or columns have an observed cell, or too few
        complete rectangles turn up in ``64`` rounds of draws.

    Examples
    --------
    >>> import numpy as np
    >>> rect = sample_rectangles(np.ones((3, 4), dtype=bool), 5, seed=0)
    >>> rect.shape  # one row (i, i', j, j') per rectangle, all four cells observed
    (5, 4)
    """
    return _draw_rectangles(_Cells.of(observed), n, seed)


def _draw_rectangles(cells: _Cells, n: int, seed: int | np.random.Generator) -> np.ndarray:
    """:func:`sample_rectangles` on cells."""
    n_rows, n_cols = len(np.unique(cells.rows)), len(np.unique(cells.cols))
    if n_rows < 2 or n_cols < 2:
        raise InputError(f"rectangles need at least two observed rows and two observed columns; "
                         f"got {n_rows} row(s) and {n_cols} column(s)")
    if not (isinstance(n, (int, np.integer)) and n >= 1):
        raise InputError(f"the number of rectangles must be a positive integer; got {n!r}")
    rng = np.random.default_rng(seed)
    dense = len(cells.rows) >= _DENSE_COVERAGE * n_rows * n_cols
    rect = (_uniform_draws if dense else _wedge_draws)(cells, int(n), rng)
    if rect is None:
        raise InputError(f"fewer than {n} complete rectangles (all four cells observed) turned up "
                         f"in {_MAX_ROUNDS} rounds of draws; the design is too sparse for the curl "
                         "test: test additivity on a denser subset (paper 000, Sec. 7.3)")
    return rect


def rectangle_deviation(values: np.ndarray, rectangles: np.ndarray) -> np.ndarray:
    """Signed rectangle deviations ``s_ij - s_i'j - s_ij' + s_i'j'`` (Eq. 8).

    Examples
    --------
    >>> values = np.array([[0.5, 0.2], [0.1, 0.0]])
    >>> np.round(rectangle_deviation(values, np.array([[0, 1, 0, 1]])), 6)  # rows i, i', cols j, j'
    array([0.2])
    """
    i, ip, j, jp = np.asarray(rectangles).T
    return values[i, j] - values[ip, j] - values[i, jp] + values[ip, jp]


def score_grid(values: np.ndarray, max_denominator: int = 1000, tol: float = 1e-6) -> int | None:
    """Smallest ``q <= max_denominator`` with every observed ``q * s`` within ``tol`` of an integer.

    TVD-MI scores are averages of 3-level critic differences over ``K - 1``
    partners, hence multiples of ``1 / (4 (K - 1))`` (1/116 for PubMed); on such a
    grid rectangle deviations and their median are exact fractions.

    Examples
    --------
    >>> score_grid(np.array([[0.25, 0.5], [0.75, np.nan]]))
    4
    """
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    head = v[:10_000]                    # screen each q on a slice, confirm on all scores
    for q in range(1, max_denominator + 1):
        if all(np.all(np.abs(x * q - np.round(x * q)) <= tol) for x in (head, v)):
            return q
    return None


def _median_fraction(abs_dev_units: np.ndarray, q: int) -> Fraction:
    ordered = np.sort(abs_dev_units)
    n = len(ordered)
    lo, hi = int(ordered[(n - 1) // 2]), int(ordered[n // 2])
    return Fraction(lo + hi, 2 * q)


@dataclasses.dataclass(frozen=True)
class LinkDifference(ResultMixin):
    """Median curl of link ``a`` minus that of link ``b``, with a bootstrap CI (Table 2).

    Examples
    --------
    >>> diff = LinkDifference("logit", "identity", 0.08, 0.05, 0.11)
    >>> diff.excludes_zero, diff.summary()
    (True, 'logit - identity: +0.080 [+0.050, +0.110]')
    """

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
class CurlResult(PageMixin, ResultMixin):
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

    Examples
    --------
    Additive scores have zero curl under the identity link; a logistic link bends them:

    >>> import numpy as np
    >>> from evalcert.data import ScoreMatrix
    >>> S = ScoreMatrix.from_array(np.add.outer([0.5, 0.1, -0.2], [0.0, 0.2, -0.3]))
    >>> r = curl_test(S, n_rectangles=100, seed=0)
    >>> r.links, bool(r.median["identity"] < 1e-12), bool(r.median["logit"] > 0.01)
    (('identity', 'probit', 'logit'), True, True)
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

    def to_frame(self) -> Any:
        """One row per link: median and P95 of ``|Delta|`` (and of the predictions' curl)."""
        import pandas as pd

        table: dict[str, Any] = {"link": list(self.links),
                                 "median": [self.median[k] for k in self.links],
                                 "p95": [self.p95[k] for k in self.links]}
        if self.prediction_median:
            table["prediction_median"] = [self.prediction_median[k] for k in self.links]
            table["prediction_p95"] = [self.prediction_p95[k] for k in self.links]
        return pd.DataFrame(table)

    def summary(self) -> str:
        # The "(pred)" columns (Table 6) exist only when predictions were passed; without
        # them they would be NaN, so they are left out and the summary says why.
        header = ["link", "median |D|", "P95 |D|"]
        rows = [[link, self.median[link], self.p95[link]] for link in self.links]
        if self.prediction_median:
            header += ["median (pred)", "P95 (pred)"]
            for row, link in zip(rows, self.links):
                row += [self.prediction_median[link], self.prediction_p95[link]]
        text = [f"Curl test: {self.n_rectangles} rectangles (seed {self.seed}), same for every link",
                format_table(rows, header)]
        if not self.prediction_median:
            text.append("curl of fitted predictions (Table 6): not computed; pass "
                        "predictions= (e.g. ClippedLinear().fit(S).predict())")
        if self.median_exact is not None:
            text.append(f"identity median exactly {self.median_exact} (scores on the 1/{self.grid} grid)")
        if self.differences:
            text.append(f"median differences, {self.n_boot} bootstrap resamples of agents and items:")
            text.extend("  " + d.summary() for d in self.differences)
        return "\n".join(text)


def _deviation(corners: np.ndarray) -> np.ndarray:
    return corners[:, 0] - corners[:, 1] - corners[:, 2] + corners[:, 3]


def _medians(corners: np.ndarray, links: Sequence[str]) -> np.ndarray:
    return np.array([np.median(np.abs(_deviation(link_transform(corners, link))))
                     for link in links])


def _resample(cells: _Cells, pick_r: np.ndarray, pick_c: np.ndarray) -> _Cells:
    """Cells of the matrix with rows ``pick_r`` and columns ``pick_c`` (repeats allowed)."""
    r, c, s = cells.rows, cells.cols, cells.scores
    for axis, pick in ((0, pick_r), (1, pick_c)):
        line = r if axis == 0 else c
        n_lines = cells.shape[axis]
        order = np.argsort(pick, kind="stable")
        count = np.bincount(pick, minlength=n_lines)
        start = np.cumsum(count) - count
        rep = count[line]
        idx = np.repeat(np.arange(len(line)), rep)
        offset = np.arange(len(idx)) - np.repeat(np.cumsum(rep) - rep, rep)
        new = order[start[line[idx]] + offset]
        r, c, s = (new, c[idx], s[idx]) if axis == 0 else (r[idx], new, s[idx])
    perm = np.lexsort((c, r))
    return _Cells(r[perm], c[perm], s[perm], (len(pick_r), len(pick_c)))


def _bootstrap_differences(cells: _Cells, links: Sequence[str], n_boot: int,
                           n_rectangles: int, seed: int, confidence: float,
                           point: dict[str, float]) -> tuple[LinkDifference, ...]:
    K, J = cells.shape
    medians = np.empty((n_boot, len(links)))
    for b, child in enumerate(np.random.SeedSequence([seed, 1]).spawn(n_boot)):
        rng = np.random.default_rng(child)
        sub = _resample(cells, rng.integers(0, K, K), rng.integers(0, J, J))
        rect = _draw_rectangles(sub, n_rectangles, rng)
        medians[b] = _medians(sub.corners(rect), links)
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

    Examples
    --------
    >>> S = ScoreMatrix.from_array(np.add.outer([0.5, 0.1, -0.2], [0.0, 0.2, -0.3]))
    >>> res = curl_test(S, n_rectangles=100, seed=0)
    >>> res.links, res.n_rectangles, bool(res.median["identity"] < 1e-12)  # additive: no curl
    (('identity', 'probit', 'logit'), 100, True)
    """
    links = tuple(links)
    for link in links:
        link_transform(np.zeros(1), link)
    if predictions is not None and np.shape(predictions) != S.shape:
        raise InputError(f"predictions must have the score matrix's shape {S.shape}; "
                         f"got {np.shape(predictions)}")
    cells = _Cells.of(S)
    rect = _draw_rectangles(cells, n_rectangles, seed)
    corners = cells.corners(rect)
    abs_dev = {link: np.abs(_deviation(link_transform(corners, link))) for link in links}
    median = {link: float(np.median(d)) for link, d in abs_dev.items()}
    p95 = {link: float(np.quantile(d, 0.95)) for link, d in abs_dev.items()}
    grid = score_grid(cells.scores) if "identity" in links else None
    exact = None
    if grid is not None:
        exact = _median_fraction(np.abs(_deviation(np.round(corners * grid))), grid)
    pred_median: dict[str, float] = {}
    pred_p95: dict[str, float] = {}
    if predictions is not None:
        for link in links:
            d = np.abs(rectangle_deviation(link_transform(np.asarray(predictions), link), rect))
            pred_median[link], pred_p95[link] = float(np.median(d)), float(np.quantile(d, 0.95))
    differences = (_bootstrap_differences(cells, links, n_boot, boot_rectangles or n_rectangles,
                                          seed, confidence, median) if n_boot else ())
    return CurlResult(links, int(n_rectangles), int(seed), median, p95, exact, grid, pred_median,
                      pred_p95, differences, int(n_boot), abs_dev, rect)
