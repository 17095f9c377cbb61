"""Holdout and structured sparse sampling regimes (paper 000, Sec. 5, App. D.1-D.2).

The protocol draws the holdout first (default: each observed cell with
probability 0.2, fixed by its own seed), then a training design from the remaining cells under one of
four regimes, and enforces d-core >= 3 by topping up from the remaining cells
(:func:`evalcert.diagnostics.connectivity.enforce_dcore`):

* ``row``: every agent observes ``round(alpha * J)`` random items;
* ``column``: every item is evaluated by ``round(beta * K)`` random agents;
* ``hybrid``: every cell independently with probability ``alpha * beta``;
* ``nlogn``: ``|Omega| = round(C (K + J) ln(K + J))`` random cells.

Masks are boolean arrays, True = cell in the set. The holdout can follow any
masking scheme of paper 002 (Sec. 3.7: entry-wise, row holdout, column
holdout, L-mask), imported from :mod:`evalcert.diagnostics.masks`.

Everything runs on the observed cells: :func:`holdout_on_cells` and
:func:`sample_training_cells` take a :class:`~evalcert.data.ScoreMatrix` and
return boolean vectors over ``S.cells()`` (O(cells) memory, fine at 0.1%
coverage of 10^4 x 10^6); :func:`holdout_mask` and :func:`sample_training` are
their K x J mask forms for small matrices and draw the same cells.

Example
-------
>>> import numpy as np
>>> observed = np.ones((30, 200), bool)
>>> hold = holdout_mask(observed, 0.2, seed=0)
>>> design = sample_training(observed, hold, "nlogn", C=1.6, seed=1)
>>> round(design.coverage, 2)
0.33
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

import numpy as np

from evalcert.data import ScoreMatrix
from evalcert.diagnostics import masks
from evalcert.diagnostics.connectivity import DCoreResult, check_mask, enforce_dcore_cells
from evalcert.errors import InputError
from evalcert.results import ResultMixin

__all__ = ["REGIMES", "HOLDOUT_SCHEMES", "holdout_mask", "holdout_on_cells", "nlogn_budget",
           "SamplingResult", "sample_training", "sample_training_cells"]

REGIMES = ("row", "column", "hybrid", "nlogn")
Regime = Literal["row", "column", "hybrid", "nlogn"]
HoldoutScheme = Literal["entrywise", "row", "column", "L"]
HOLDOUT_SCHEMES = {"entrywise": masks.entrywise_mask, "row": masks.row_holdout_mask,
                   "column": masks.column_holdout_mask, "L": masks.l_mask}


def holdout_mask(observed: np.ndarray, fraction: float = 0.2, seed: int = 0,
                 scheme: HoldoutScheme = "entrywise") -> np.ndarray:
    """Held-out cells, drawn first and kept fixed across experiments (App. D.1).

    Parameters
    ----------
    observed : ndarray of bool, shape (K, J)
        Cells with a score (``ScoreMatrix.observed``); only these are held out.
    fraction : float
        Share held out, in (0, 1): of the cells (``entrywise``, the paper's
        protocol), of the agents (``row``), of the items (``column``), or of both
        (``L``, block of ``fraction`` of the agents times ``fraction`` of the items).
    seed : int
        Keep it fixed across experiments: the paper's holdout never changes.
    scheme : {"entrywise", "row", "column", "L"}
        Masking scheme of paper 002, Sec. 3.7.1 (:mod:`evalcert.diagnostics.masks`).

    Examples
    --------
    >>> observed = np.ones((30, 200), bool)
    >>> hold = holdout_mask(observed, 0.2, seed=0)
    >>> hold.shape, bool(0.15 < hold.mean() < 0.25)
    ((30, 200), True)
    """
    observed = check_mask(observed, "observed")
    if scheme not in HOLDOUT_SCHEMES:
        raise InputError(f"unknown holdout scheme {scheme!r}; choose one of {tuple(HOLDOUT_SCHEMES)}")
    if scheme == "L":
        return masks.l_mask(observed.shape, fraction, fraction, seed=seed, observed=observed)
    return HOLDOUT_SCHEMES[scheme](observed.shape, fraction, seed=seed, observed=observed)


def holdout_on_cells(S: ScoreMatrix, fraction: float = 0.2, seed: int = 0,
                     scheme: HoldoutScheme = "entrywise") -> np.ndarray:
    """:func:`holdout_mask` on cells: a boolean vector over ``S.cells()``, O(cells).

    Randomness is drawn per observed cell, so a complete matrix gets exactly
    the cells of :func:`holdout_mask`; with missing cells the draw differs but
    has the same distribution.

    Parameters
    ----------
    S : ScoreMatrix
        The scores; only their observed cells are used.
    fraction, seed, scheme
        As in :func:`holdout_mask`.

    Returns
    -------
    ndarray of bool, shape (S.n_observed,)
        The held-out cells, in the order of ``S.cells()``.

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert.data import ScoreMatrix
    >>> S = ScoreMatrix.from_array(np.zeros((4, 5)))
    >>> hold = holdout_on_cells(S, 0.25, seed=0)
    >>> hold.shape, bool(np.array_equal(hold, holdout_mask(S.observed, 0.25, seed=0).ravel()))
    ((20,), True)
    """
    if scheme not in HOLDOUT_SCHEMES:
        raise InputError(f"unknown holdout scheme {scheme!r}; choose one of {tuple(HOLDOUT_SCHEMES)}")
    rows, cols, _ = S.cells()
    return masks.holdout_cells(rows, cols, S.shape, scheme, fraction, seed)


def nlogn_budget(K: int, J: int, C: float) -> int:
    """``round(C (K + J) ln(K + J))`` cells (App. D.2; 2001 for 30 x 200 at C = 1.6).

    Examples
    --------
    >>> nlogn_budget(30, 200, 1.6), nlogn_budget(30, 200, 1.0)
    (2001, 1251)
    """
    return int(round(C * (K + J) * math.log(K + J)))


@dataclasses.dataclass(frozen=True)
class SamplingResult(ResultMixin):
    """A training design: the regime, its parameters and the d-core report.

    Attributes
    ----------
    regime : str
    params : dict of str to float
    seed : int
    n_sampled : int
        Cells drawn by the regime, before the d-core top-up.
    n_cells : int
        Cells in the final design.
    coverage : float
        ``n_cells / (K * J)``.
    dcore : DCoreResult
    mask : ndarray of bool
        The training design: K x J (:func:`sample_training`) or over ``S.cells()``
        (:func:`sample_training_cells`); not in ``to_dict``.

    Examples
    --------
    >>> import numpy as np
    >>> observed = np.ones((30, 200), bool)
    >>> design = sample_training(observed, holdout_mask(observed, 0.2, seed=0), "nlogn", C=1.6,
    ...                          seed=1)
    >>> design.regime, design.mask.shape, bool(0 < design.coverage < 0.8)
    ('nlogn', (30, 200), True)
    """

    regime: str
    params: dict[str, float]
    seed: int
    n_sampled: int
    n_cells: int
    coverage: float
    dcore: DCoreResult
    mask: np.ndarray = dataclasses.field(repr=False)

    def summary(self) -> str:
        params = ", ".join(f"{k}={v:g}" for k, v in self.params.items())
        return (f"{self.regime} sampling ({params}, seed {self.seed}): {self.n_sampled} cells drawn, "
                f"{self.n_cells - self.n_sampled} added for d-core >= {self.dcore.d}; "
                f"{self.n_cells} cells = {self.coverage:.1%} coverage\n" + self.dcore.summary())


def _per_line(lines: np.ndarray, other: np.ndarray, n_lines: int, available: np.ndarray,
              count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` random available cells of every line (fewer if the line has fewer)."""
    order = np.lexsort((other, lines))
    ptr = np.searchsorted(lines[order], np.arange(n_lines + 1))
    out = np.zeros(len(lines), dtype=bool)
    for k in range(n_lines):
        seg = order[ptr[k]:ptr[k + 1]]
        free = seg[available[seg]]
        out[rng.choice(free, min(count, len(free)), replace=False)] = True
    return out


def _require(name: str, value: float | None, upper: float | None = 1.0) -> float:
    if value is None or not value > 0 or (upper is not None and value > upper):
        bound = f"in (0, {upper}]" if upper is not None else "> 0"
        raise InputError(f"this regime needs {name} {bound}; got {value}")
    return float(value)


def sample_training(observed: np.ndarray, holdout: np.ndarray, regime: Regime, *,
                    alpha: float | None = None, beta: float | None = None,
                    C: float | None = None, d: int = 3, seed: int = 0) -> SamplingResult:
    """Draw a training design outside the holdout and enforce d-core >= ``d`` (App. D.2).

    Parameters
    ----------
    observed : ndarray of bool, shape (K, J)
        Cells with a score.
    holdout : ndarray of bool, shape (K, J)
        Held-out cells (never sampled, never used for the top-up).
    regime : {"row", "column", "hybrid", "nlogn"}
    alpha, beta : float
        Row fraction (``row``, ``hybrid``) and column fraction (``column``, ``hybrid``).
    C : float
        n log n constant (``nlogn``).
    d : int
        Minimum degree of the d-core (paper: 3).
    seed : int
        Randomness of the sampling and of the top-up.

    Raises
    ------
    InputError
        Unknown regime, missing or out-of-range parameters, masks of the wrong shape.
    ConnectivityError
        The available cells cannot give d-core >= ``d``.

    Notes
    -----
    The K x J form of :func:`sample_training_cells`, which it calls on the
    cells of ``observed``.

    Examples
    --------
    >>> observed = np.ones((30, 200), bool)
    >>> hold = holdout_mask(observed, 0.2, seed=0)
    >>> design = sample_training(observed, hold, "nlogn", C=1.6, seed=1)
    >>> design.regime, round(design.coverage, 2), bool((design.mask & hold).any())
    ('nlogn', 0.33, False)
    """
    observed = check_mask(observed, "observed")
    holdout = check_mask(holdout, "holdout", observed.shape)
    rows, cols = np.nonzero(observed)
    res = _sample(rows, cols, observed.shape, holdout[rows, cols], regime, alpha, beta, C, d, seed)
    mask = np.zeros(observed.shape, dtype=bool)
    mask[rows[res.mask], cols[res.mask]] = True
    return dataclasses.replace(res, mask=mask, dcore=dataclasses.replace(res.dcore, mask=mask))


def sample_training_cells(S: ScoreMatrix, holdout: np.ndarray, regime: Regime, *,
                          alpha: float | None = None, beta: float | None = None,
                          C: float | None = None, d: int = 3, seed: int = 0) -> SamplingResult:
    """:func:`sample_training` on the observed cells of ``S``; O(cells), no K x J array.

    ``holdout`` is a boolean vector over ``S.cells()`` (or a K x J mask); the
    result's ``mask`` is a boolean vector over ``S.cells()``. The draws are
    those of :func:`sample_training` on ``S.observed`` (``hybrid`` draws one
    number per observed cell).

    Parameters
    ----------
    S : ScoreMatrix
        The scores; the design is drawn among their observed cells.
    holdout : ndarray of bool, shape (S.n_observed,) or (K, J)
        Cells never used for training (e.g. from :func:`holdout_on_cells`).
    regime, alpha, beta, C, d, seed
        As in :func:`sample_training`.

    Returns
    -------
    SamplingResult
        With ``mask`` a boolean vector over ``S.cells()``.

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert.data import ScoreMatrix
    >>> S = ScoreMatrix.from_array(np.zeros((30, 200)))
    >>> design = sample_training_cells(S, holdout_on_cells(S, 0.2, seed=0), "nlogn", C=1.6,
    ...                                seed=1)
    >>> dense = sample_training(S.observed, holdout_mask(S.observed, 0.2, seed=0), "nlogn",
    ...                         C=1.6, seed=1)
    >>> design.mask.shape, bool(np.array_equal(design.mask, dense.mask.ravel()))
    ((6000,), True)
    """
    rows, cols, _ = S.cells()
    return _sample(rows, cols, S.shape, S.cell_mask(holdout), regime, alpha, beta, C, d, seed)


def _sample(rows, cols, shape, holdout, regime, alpha, beta, C, d, seed) -> SamplingResult:
    available = ~holdout
    K, J = shape
    rng = np.random.default_rng(seed)
    if regime == "row":
        params = {"alpha": _require("alpha", alpha)}
        mask = _per_line(rows, cols, K, available, int(round(params["alpha"] * J)), rng)
    elif regime == "column":
        params = {"beta": _require("beta", beta)}
        mask = _per_line(cols, rows, J, available, int(round(params["beta"] * K)), rng)
    elif regime == "hybrid":
        params = {"alpha": _require("alpha", alpha), "beta": _require("beta", beta)}
        mask = available & (rng.random(len(rows)) < params["alpha"] * params["beta"])
    elif regime == "nlogn":
        params = {"C": _require("C", C, None)}
        cells = np.flatnonzero(available)
        budget = min(nlogn_budget(K, J, params["C"]), len(cells))
        mask = np.zeros(len(rows), dtype=bool)
        mask[rng.choice(cells, budget, replace=False)] = True
    else:
        raise InputError(f"unknown sampling regime {regime!r}; choose one of {REGIMES}")
    core = enforce_dcore_cells(rows, cols, shape, mask, d, "top_up", pool=available, seed=rng)
    n = int(core.mask.sum())
    return SamplingResult(regime, params, int(seed), int(mask.sum()), n, n / (K * J), core,
                          core.mask)
