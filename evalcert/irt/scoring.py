"""Scoring new models against frozen item parameters: ML, WLE, MAP and EAP abilities.

With the items of a fitted Rasch, 2PL or 3PL estimator held fixed, a new
model's log-likelihood is ``l(theta) = sum_j y_j log P_j + (1 - y_j) log(1 - P_j)``
over its observed items, and

* ``ml``: the root of ``l'(theta) = 0``; infinite for an all-0 or all-1 model
  (reported as ``-inf``/``+inf`` with a note), SE ``1 / sqrt(I(theta))``;
* ``wle``: Warm's (1989) weighted likelihood, the root of
  ``l'(theta) + J(theta) / (2 I(theta)) = 0`` with
  ``J = sum_j P_j' P_j'' / (P_j (1 - P_j))`` (Warm 1989, Eq. 8); finite for every
  response pattern, bias ``O(1/n^2)``; SE ``1 / sqrt(I(theta))``;
* ``map``: the mode of ``l(theta) + log N(theta; mu, sd^2)``, SE
  ``1 / sqrt(I(theta) + 1/sd^2)``;
* ``eap``: the posterior mean under the same prior and its posterior sd, by the
  trapezoid rule on a fixed grid (``n_quad`` nodes), refined per model to a finer
  local grid wherever the fixed one is too coarse for its posterior (criterion in
  :func:`_eap`).

Every fitted estimator has the same call as a method:
``est.score(Y_new, method="wle")`` is ``score_models(est, Y_new, "wle")``.

The prior defaults to the fit's ability distribution
(:func:`~.information.ability_prior`). All models are scored at once, and the
cost grows with the observed cells: on a grid of abilities every model's
log-likelihood (and estimating function) is one matrix product of its responses
with the item curves at the nodes (for Rasch and 2PL items, of the observed mask
with one item x node table, a column sum when no cell is missing; with a quarter
of the cells observed or more, a dense BLAS product whatever the missing share,
sparse below). EAP integrates on that grid; ML, WLE and MAP keep the
down-crossing of the estimating function with the largest criterion (3PL
likelihoods can have several) and Newton (Rasch, 2PL: from the root of the
cubic Hermite interpolant on the grid) or Fisher scoring (3PL) steps on the
observed cells, safeguarded by bisection, refine it to ``1e-12``.

Example
-------
>>> import numpy as np
>>> from evalcert.irt import Rasch
>>> Y = (np.random.default_rng(0).random((200, 20)) < 0.6).astype(float)
>>> est = Rasch(method="cml").fit(Y)
>>> res = score_models(est, Y[:3], method="wle")
>>> res.abilities.shape, bool(np.all(np.isfinite(res.standard_errors)))
((3,), True)
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from scipy.special import expit

from evalcert.errors import ConvergenceError, InputError
from evalcert.results import ResultMixin, format_table
from evalcert.irt.data import validate_responses
from evalcert.irt.information import (ItemParameters, ability_prior, icc_derivatives,
                                              item_parameters)

__all__ = ["ScoreResult", "score_models", "score_responses", "score_abilities",
           "SCORING_METHODS"]

SCORING_METHODS = ("ml", "wle", "map", "eap")
_CELLS = 1 << 21        # cells (or items x nodes) evaluated per block
_PASS_CELLS = 1 << 15   # cells per block of a pass over the responses (stays in cache)
_SPARSE_BELOW = 0.25    # observed share below which responses stay a sparse matrix
_STEP = 0.25            # grid spacing of ML/MAP/WLE on Rasch/2PL items with missing cells
_RATIO = 1.2            # a fixed-grid EAP is accepted when posterior sd >= _RATIO x spacing
_TAIL = 8.0             # ... and its mean lies _TAIL posterior sds inside the grid
_FINER = 1.5            # a too-coarse grid is refined 1.5^k-fold
# exp's argument is clipped to +-_EXP_RANGE (e^-700 ~ 1e-304 is 0 next to 1): numpy's exp
# takes ~25-130x longer on arguments whose result underflows to a subnormal or 0
_EXP_RANGE = 700.0


@dataclasses.dataclass(frozen=True)
class ScoreResult(ResultMixin):
    """Abilities of new models on a frozen item scale, with standard errors.

    Examples
    --------
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((60, 12)) < 0.5).astype(float)
    >>> est = Rasch(method="mml").fit(Y)
    >>> res = score_models(est, Y[:3])
    >>> res.method, res.model_names, res.item_model, res.n_items_used.tolist()
    ('wle', ('model0', 'model1', 'model2'), 'rasch', [12, 12, 12])
    """

    method: str
    model_names: tuple[str, ...]
    abilities: np.ndarray
    standard_errors: np.ndarray
    n_items_used: np.ndarray
    prior_mean: float
    prior_sd: float
    item_model: str
    notes: tuple[str, ...] = ()

    def to_frame(self) -> Any:
        """One row per scored model: ability, standard error, items used."""
        import pandas as pd

        return pd.DataFrame({"model": list(self.model_names), "ability": self.abilities,
                             "se": self.standard_errors, "n_items_used": self.n_items_used})

    def summary(self) -> str:
        order = np.argsort(-np.nan_to_num(self.abilities, nan=-np.inf), kind="stable")
        rows = [(k + 1, self.model_names[i], float(self.abilities[i]),
                 float(self.standard_errors[i]), int(self.n_items_used[i]))
                for k, i in enumerate(order)]
        head = (f"{self.method.upper()} abilities of {len(rows)} models on frozen "
                f"{self.item_model} items" + (f" (prior N({self.prior_mean:.3g}, "
                                              f"{self.prior_sd:.3g}^2))"
                                              if self.method in ("map", "eap") else ""))
        return head + "\n" + format_table(rows, ["rank", "model", "ability", "se", "items"]) + \
            "".join(f"\nnote: {n}" for n in self.notes)


class _Cells:
    """The observed responses of ``n`` models to ``n_items`` items.

    Complete data stay a dense 0/1 matrix; so do data with at least
    ``_SPARSE_BELOW`` of the cells observed (``y`` with the missing cells 0, and the
    observed mask as a 0/1 matrix), whose sums then are dense matrix products (BLAS)
    whatever the missing share; sparser data keep only the observed cells, row by
    row (CSR order), and missing cells cost nothing. ``dot(f1, f0)`` is ``sum_j O_ij
    [y_ij f1_j + (1 - y_ij) f0_j]`` for item x node matrices; ``obs(F)`` is ``sum_j
    O_ij F_j`` (a column sum for complete data); ``terms(theta, params)`` evaluates
    ``l, l', I, J`` at one ability per model.
    """

    def __init__(self, n_items: int, *, dense: np.ndarray | None = None,
                 indptr: np.ndarray | None = None, cols: np.ndarray | None = None,
                 y: np.ndarray | None = None, masked: tuple | None = None):
        self.n_items, self.dense = n_items, dense
        # masked: (responses, any value where missing; the observed mask as 0/1 floats)
        self._raw, self._O = masked if masked is not None else (None, None)
        self._R1: np.ndarray | None = None
        self._sums: dict[bytes, np.ndarray] = {}
        self.complete = dense is not None
        if dense is not None:
            self.n = dense.shape[0]
        elif masked is not None:
            self.n = masked[1].shape[0]
        else:
            self._cells = (indptr, cols, y)
            self.n = indptr.size - 1
        self._mats: tuple | None = None
        self._rows: np.ndarray | None = None

    indptr = property(lambda self: self._cells[0])
    cols = property(lambda self: self._cells[1])
    y = property(lambda self: self._cells[2])

    @property
    def rows(self) -> np.ndarray:
        """The model of each observed cell."""
        if self._rows is None:
            self._rows = np.repeat(np.arange(self.n), np.diff(self.indptr))
        return self._rows

    @property
    def masked(self) -> tuple | None:
        """``(R1, O)`` of masked dense responses (``R1``: ``y`` with missing cells 0, built
        on first use), else None."""
        if self._O is None:
            return None
        if self._R1 is None:
            self._R1 = self._clean(slice(None))
        return self._R1, self._O

    def _clean(self, rows: Any) -> np.ndarray:
        R1 = np.fmax(self._raw[rows], 0.0)     # NaN (a missing cell) -> 0, fast
        R1 *= self._O[rows]
        return R1

    @classmethod
    def from_dense(cls, Y: np.ndarray, O: np.ndarray) -> "_Cells":
        n_obs = np.count_nonzero(O)
        if n_obs == O.size:
            return cls(Y.shape[1], dense=np.asarray(Y, float))
        if n_obs >= _SPARSE_BELOW * O.size:
            return cls(Y.shape[1], masked=(np.asarray(Y, float), O.astype(float)))
        rows, cols = np.nonzero(O)
        indptr = np.concatenate([[0], np.cumsum(O.sum(axis=1))]).astype(np.int64)
        return cls(Y.shape[1], indptr=indptr, cols=cols, y=np.asarray(Y, float)[rows, cols])

    def take(self, idx: np.ndarray) -> "_Cells":
        """The models ``idx`` (integer index), in that order."""
        if self.dense is not None:
            return _Cells(self.n_items, dense=self.dense[idx])
        if self._O is not None:
            sub = _Cells(self.n_items, masked=(self._raw[idx], self._O[idx]))
            sub._R1 = None if self._R1 is None else self._R1[idx]
            return sub
        lengths = np.diff(self.indptr)[idx]
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        pos = np.repeat(self.indptr[idx] - indptr[:-1], lengths) + np.arange(indptr[-1])
        return _Cells(self.n_items, indptr=indptr, cols=self.cols[pos], y=self.y[pos])

    def _matrices(self) -> tuple:
        """``(R1, R0, O)``: ones, zeros and observed cells (sparse for cell lists;
        ``R0`` is built on first use)."""
        if self._mats is None:
            if self.dense is not None:
                self._mats = (self.dense, 1.0 - self.dense, None)
            elif self._O is not None:
                R1, O = self.masked
                self._mats = (R1, O - R1, O)
            else:
                from scipy.sparse import csr_matrix

                shape, y = (self.n, self.n_items), self.y
                self._mats = tuple(csr_matrix((v, self.cols, self.indptr), shape=shape)
                                   for v in (y, 1 - y, np.ones_like(y)))
        return self._mats

    def dot(self, f1: np.ndarray, f0: np.ndarray) -> np.ndarray:
        """``sum_j O_ij [y_ij f1_j + (1 - y_ij) f0_j]``, as ``R1 @ (f1 - f0) + O @ f0``."""
        if self.dense is not None:
            return self.dense @ (f1 - f0) + f0.sum(axis=0)
        if self._O is not None:
            R1, O = self.masked
            return R1 @ (f1 - f0) + O @ f0
        R1, R0, _ = self._matrices()
        return np.asarray(R1 @ f1) + np.asarray(R0 @ f0)

    def obs(self, F: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray:
        """``sum_j O_ij F_j`` per model (of the models ``idx``, default all)."""
        n = self.n if idx is None else idx.size
        if self.complete:
            return np.broadcast_to(F.sum(axis=0), (n,) + F.shape[1:])
        O = self._O if self._O is not None else self._matrices()[2]
        rows = _rows(idx)
        if self._O is not None and not isinstance(rows, slice) and 2 * idx.size >= self.n:
            return (O @ F)[rows]     # most rows: their product, not a copy of their mask rows
        return np.asarray(O[rows] @ F)

    def counts(self) -> np.ndarray:
        """Observed items per model."""
        if self.dense is not None:
            return np.full(self.n, self.n_items)
        if self._O is not None:
            return self._O.sum(axis=1)
        return np.diff(self.indptr)

    def ones(self, v: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray:
        """``sum_j O_ij y_ij v_j`` per model (of the models ``idx``, default all; ``v``
        a vector, or a matrix with ``idx`` only for dense and masked responses)."""
        if self.dense is not None:
            return self.dense[_rows(idx)] @ v
        if self._O is not None:
            rows = _rows(idx)
            if self._R1 is None and v.ndim == 1:    # in cache-sized blocks, R1 not stored
                key = v.tobytes()
                if key not in self._sums:
                    step = max(1, _PASS_CELLS // max(self.n_items, 1))
                    out = np.empty(self.n)
                    for lo in range(0, self.n, step):
                        out[lo:lo + step] = self._clean(slice(lo, lo + step)) @ v
                    self._sums[key] = out
                return self._sums[key][rows]
            if not isinstance(rows, slice) and 2 * idx.size >= self.n:
                return (self.masked[0] @ v)[rows]
            return self.masked[0][rows] @ v
        return np.bincount(self.rows, weights=self.y * v[self.cols], minlength=self.n)

    def terms(self, theta: np.ndarray, params: ItemParameters, need: str = "lgij",
              idx: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Per-model ``l`` (log-likelihood), ``g`` (``l'``), ``i`` (``I``), ``j`` (``J``)
        and, for Rasch/2PL items only, ``k`` (``J' = sum_j a_j^4 w_j (1 - 6 w_j)``,
        ``w = P (1 - P)``) at one ability per model (``theta[r]`` for the model
        ``idx[r]``; default all), over the observed cells only (keys in ``need``)."""
        if self.dense is None and self._O is None:       # cell lists
            sub = self if idx is None else self.take(idx)
            return sub._terms_cells(theta, params, need)
        rows = np.arange(self.n) if idx is None else idx
        out = {k: np.empty(rows.size) for k in need}
        a, b, c = params.a, params.b, params.c
        if not c.any():
            self._terms_logistic(theta, a, b, rows, need, out)
            return out
        step = max(1, _CELLS // max(self.n_items, 1))
        for lo in range(0, rows.size, step):
            sl = slice(lo, lo + step)
            r = rows[sl]
            if self.dense is not None:
                Y, O = self.dense[r], None
            else:
                Y, O = self.masked[0][r], self.masked[1][r]
            s = expit(a * np.subtract.outer(theta[sl], b))
            parts = self._parts(s, Y, a, c)
            for k in need:
                v = parts[k]()
                out[k][sl] = (v if O is None else v * O).sum(axis=1)
        return out

    def _terms_logistic(self, theta, a, b, rows, need, out) -> None:
        """:meth:`terms` of Rasch/2PL items on dense rows, in blocks that stay in cache
        (each sum over items a matrix-vector product; ``P`` is 0 on missing cells)."""
        if "l" in need:
            out["l"][:] = self._loglik_logistic(theta, a, b, rows)
        step = max(1, _PASS_CELLS // max(self.n_items, 1))
        O = self._O
        r = None if "g" not in need else self.ones(a, None if rows.size == self.n else rows)
        powers = {k: a ** (q + 1) for q, k in enumerate("gijk")}
        for lo in range(0, rows.size, step):
            sl = slice(lo, lo + step)
            x = np.subtract.outer(theta[sl], b)
            x *= -a
            np.clip(x, -_EXP_RANGE, _EXP_RANGE, out=x)      # no slow under/overflow paths
            np.exp(x, out=x)
            x += 1.0
            s = np.reciprocal(x, out=x)                 # P = expit(a (theta - b))
            if O is not None:
                s *= O[rows[sl]]
            if "g" in need:
                out["g"][sl] = r[sl] - s @ a
            if need == "g":
                continue
            w = s * s
            np.subtract(s, w, out=w)                    # P (1 - P), 0 where missing
            if "i" in need:
                out["i"][sl] = w @ powers["i"]
            if "j" in need:                             # w (1 - 2 P)
                out["j"][sl] = w @ powers["j"] - 2 * ((w * s) @ powers["j"])
            if "k" in need:                             # w (1 - 6 w)
                out["k"][sl] = w @ powers["k"] - 6 * (np.square(w, out=w) @ powers["k"])

    def _loglik_logistic(self, theta, a, b, rows) -> np.ndarray:
        R1, O = (self.dense, None) if self.dense is not None else self.masked
        x = a * np.subtract.outer(theta, b)
        lp = R1[rows] * x - _softplus(x)
        return (lp if O is None else lp * O[rows]).sum(axis=1)

    @staticmethod
    def _parts(s: np.ndarray, y: np.ndarray, a: np.ndarray, c: np.ndarray) -> dict:
        """Per-cell pieces of ``l, l', I, J`` given ``s = expit(a (theta - b))``."""
        sq = s * (1 - s)
        if not c.any():                     # Rasch, 2PL: P = s, P' = a s (1 - s)
            P, d1, pq = s, a * sq, a
        else:
            d1 = (1 - c) * a * sq
            P = np.clip(c + (1 - c) * s, 1e-300, 1 - 1e-16)
            pq = d1 / (P * (1 - P))
        return {"g": lambda: pq * (y - P), "i": lambda: pq * d1,
                "j": lambda: pq * d1 * a * (1 - 2 * s),
                "k": lambda: a ** 4 * sq * (1 - 6 * sq),
                "l": lambda: np.where(y > 0.5, np.log(np.clip(P, 1e-300, 1)),
                                      np.log(np.clip(1 - P, 1e-300, 1)))}

    def _terms_cells(self, theta: np.ndarray, params: ItemParameters, need: str
                     ) -> dict[str, np.ndarray]:
        out = {k: np.zeros(self.n) for k in need}
        for rows, y, j, th in self._blocks(theta):
            s = expit(params.a[j] * (th - params.b[j]))
            parts = self._parts(s, y, params.a[j], params.c[j])
            for k in need:
                local = self.rows[self.indptr[rows.start]:self.indptr[rows.stop]] - rows.start
                out[k][rows] += np.bincount(local, weights=parts[k](),
                                            minlength=rows.stop - rows.start)
        return out

    def _blocks(self, theta: np.ndarray):
        """(model index, responses, items, abilities) of blocks of about ``_CELLS`` cells."""
        cuts = np.unique(np.concatenate([np.searchsorted(self.indptr, np.arange(
            0, self.cols.size, _CELLS)), [self.n]]))
        for r0, r1 in zip(cuts[:-1], cuts[1:]):
            sl = slice(self.indptr[r0], self.indptr[r1])
            yield (slice(r0, r1), self.y[sl], self.cols[sl],
                   theta[self.rows[sl]])


def _rows(idx: np.ndarray | None) -> Any:
    """``idx`` as a slice when it is all rows or a run of them (no copy), else itself."""
    if idx is None:
        return slice(None)
    if idx.size and idx[-1] - idx[0] == idx.size - 1 and np.all(np.diff(idx) == 1):
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return idx


def _curves(nodes: np.ndarray, params: ItemParameters):
    """``P``, ``Q``, ``P'``, ``P''`` as item x node matrices (``P`` clipped for the logs)."""
    P, d1, d2 = (m.T for m in icc_derivatives(nodes, params))
    P = np.clip(P, 1e-300, 1 - 1e-16)
    return P, 1 - P, d1, d2


def _combine(method: str, theta, l, g, info, J, mu: float, sd: float):
    """Estimating function, the criterion used to choose among its roots, and the
    Fisher-scoring curvature (``I``, plus ``1/sd^2`` with a prior)."""
    if method == "ml":
        return g, l, info
    if method == "wle":
        with np.errstate(divide="ignore", invalid="ignore"):
            return g + J / (2 * info), l + 0.5 * np.log(info), info
    return (g - (theta - mu) / sd ** 2, l - 0.5 * ((theta - mu) / sd) ** 2,
            None if info is None else info + 1 / sd ** 2)


def _grid(lo: float, hi: float, step: float = 0.5) -> np.ndarray:
    """Nodes ``step`` apart on ``[lo, hi]``, then geometrically further out (up to +-64)."""
    far = 2.0 ** np.arange(0, 7)
    return np.concatenate([lo - far[::-1], np.arange(lo, hi + step / 2, step), hi + far])


def _hermite_root(x0, x1, g0, g1, d0, d1, start):
    """Root in ``(x0, x1)`` of the cubic Hermite interpolant of values ``g`` and slopes
    ``d`` at the ends (8 Newton steps on the cubic from ``start``; ``start`` where they
    leave the bracket)."""
    h = x1 - x0
    t = (start - x0) / h
    for _ in range(8):
        t2, t3 = t * t, t * t * t
        p = ((2 * t3 - 3 * t2 + 1) * g0 + (t3 - 2 * t2 + t) * h * d0
             + (-2 * t3 + 3 * t2) * g1 + (t3 - t2) * h * d1)
        dp = ((6 * t2 - 6 * t) * g0 + (3 * t2 - 4 * t + 1) * h * d0
              + (-6 * t2 + 6 * t) * g1 + (3 * t2 - 2 * t) * h * d1)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.clip(t - p / dp, 0.0, 1.0)
    root = x0 + t * h
    return np.where(np.isfinite(root) & (root > x0) & (root < x1), root, start)


def _logistic_grid(cells: _Cells, params: ItemParameters, grid: np.ndarray, need: str
                   ) -> dict[str, np.ndarray]:
    """``l, l', I, J, K`` (keys in ``need`` among ``"lgijk"``; ``K = J'``) of every model
    on the grid for Rasch/2PL items, as models x nodes arrays.

    They depend on a model's responses through ``r = sum_j y_j a_j``, ``s = sum_j y_j
    a_j b_j`` and its observed items: ``l' = r - sum_j O_j a_j P_j``, ``l = theta r - s
    - sum_j O_j log(1 + exp(a_j (theta - b_j)))``, ``I = sum_j O_j a_j^2 w_j``, ``J =
    sum_j O_j a_j^3 w_j (1 - 2 P_j)``, ``K = sum_j O_j a_j^4 w_j (1 - 6 w_j)`` with ``w =
    P (1 - P)``: every item x node table needed is summed over the observed items of
    every model in one matrix product (a column sum when nothing is missing), so the
    grid costs models x items x nodes multiply-adds whatever the missing share. A
    model with every observed item right (wrong) keeps ``l' > 0`` (``< 0``) exactly,
    as ``r - sum_j a_j P_j`` need not in floating point far out.
    """
    a, b = params.a[:, None], params.b[:, None]
    x = np.clip(a * (grid[None, :] - b), -_EXP_RANGE, _EXP_RANGE)
    s = expit(x)
    w = s * (1 - s)
    make = {"g": lambda: a * s, "i": lambda: a * a * w, "j": lambda: a ** 3 * w * (1 - 2 * s),
            "k": lambda: a ** 4 * w * (1 - 6 * w), "l": lambda: _softplus(x.copy())}
    keys = [k for k in "gijkl" if k in need]
    shape = (cells.n, grid.size)
    if cells.complete:
        sums = {k: np.broadcast_to(make[k]().sum(axis=0), shape) for k in keys}
    else:
        S = cells.obs(np.hstack([make[k]() for k in keys]))
        sums = {k: S[:, q * grid.size:(q + 1) * grid.size] for q, k in enumerate(keys)}
    out = {k: sums[k] for k in "ijk" if k in keys}
    r = cells.ones(params.a)
    if "l" in keys:
        out["l"] = r[:, None] * grid[None, :] - cells.ones(params.a * params.b)[:, None] \
            - sums["l"]
    if "g" in keys:
        g = r[:, None] - sums["g"]
        right = np.flatnonzero(cells.ones(np.ones(params.a.size)) == cells.counts())
        if right.size:                                   # sum_j O_j a_j Q_j > 0
            g[right] = cells.obs(a * expit(-x), right)
        out["g"] = g        # all wrong: r = 0 exactly, l' = -sum_j O_j a_j P_j < 0
    return out


def _solve(method: str, params: ItemParameters, cells: _Cells, mu: float, sd: float,
           lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """Root of the estimating function per model (+-inf when it keeps one sign: ML) and
    the test information there (NaN where the root is infinite).

    The estimating function and criterion of every model on a grid are matrix
    products (responses x item curves at the nodes); the down-crossing (+ to -)
    with the largest criterion is bracketed, then refined by Newton (Rasch, 2PL:
    the exact derivative, known on the grid too, so the root of the cubic Hermite
    interpolant of the estimating function starts it ~h^4 from the root) or Fisher
    scoring (3PL) steps on the observed cells, bisecting whenever a step leaves the
    bracket. A step stops the iteration when it is below ``1e-12 (1 + |theta|)``, or,
    for ML and MAP on Rasch/2PL items, when the Newton error bound after it, ``max_j
    a_j step^2 / 2`` (``|l'''| <= max_j a_j I``), is below ``1e-13 (1 + |theta|)``.
    """
    n = cells.n
    logistic = not params.c.any()
    # with no guessing ML's and MAP's estimating functions fall strictly: one crossing,
    # no criterion needed to choose among several
    single = method in ("ml", "map") and logistic
    K = None
    if logistic:
        grid = _grid(lo, hi, 0.1 if cells.complete else _STEP)
        T = _logistic_grid(cells, params, grid, "gi" if single else "lgijk")
        l, g, info, J, K = T.get("l", 0.0), T["g"], T["i"], T.get("j"), T.get("k")
    else:
        grid = _grid(lo, hi)
        P, Q, d1, d2 = _curves(grid, params)
        pq = d1 / (P * Q)
        l = 0.0 if single else cells.dot(np.log(P), np.log(Q))
        g = cells.dot(d1 / P, -d1 / Q)
        info = J = None
        if method == "wle":
            info, J = cells.obs(pq * d1), cells.obs(pq * d2)
    G, F, _ = _combine(method, grid[None, :], l, g, info, J, mu, sd)
    G = G.T                                  # nodes x models
    cols = np.arange(n)
    if single:                               # falling: the crossing precedes the first g < 0
        cell = np.clip(np.argmax(G < 0, axis=0) - 1, 0, grid.size - 2)
        found = (G[cell, cols] > 0) & (G[cell + 1, cols] < 0)
    else:
        F = np.broadcast_to(F, G.T.shape).T
        down = (G[:-1] > 0) & (G[1:] < 0)        # strict: g underflows to 0 far out
        score = np.where(down, np.maximum(F[:-1], F[1:]), -np.inf)
        cell = np.argmax(score, axis=0)
        found = down[cell, cols]
    left, right = grid[cell].copy(), grid[cell + 1].copy()
    g0, g1 = G[cell, cols], G[cell + 1, cols]
    with np.errstate(divide="ignore", invalid="ignore"):    # regula falsi start
        theta = np.where(found, left + (right - left) * g0 / (g0 - g1), 0.5 * (left + right))
    theta = np.where((theta > left) & (theta < right), theta, 0.5 * (left + right))
    if logistic:
        # the estimating function's slope is known on the grid: the root of the cubic
        # Hermite interpolant starts Newton ~h^4 from the root
        def slope(k):
            i0 = info[cols, k]
            if method == "wle":
                return _wle_slope(i0, J[cols, k], K[cols, k])
            return -(i0 + (1 / sd ** 2 if method == "map" else 0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            theta = _hermite_root(left, right, g0, g1, slope(cell), slope(cell + 1), theta)
    active = found.copy()
    info = np.full(n, np.nan)           # I(theta) at the root, for the standard errors
    last = right - left                 # previous step length (rtsafe's safeguard)
    need = ("gijk" if method == "wle" else "gij") if logistic else (
        "gij" if method == "wle" else "gi")
    amax = float(np.max(params.a))
    for _ in range(200):
        if not active.any():
            break
        idx = np.flatnonzero(active)
        t = theta[idx]
        T = cells.terms(t, params, need, idx)
        g, _, curv = _combine(method, t, 0.0, T["g"], T["i"], T.get("j"), mu, sd)
        if logistic and method == "wle":            # Newton: the exact slope when sound
            exact = -_wle_slope(T["i"], T["j"], T["k"])
            curv = np.where(np.isfinite(exact) & (exact >= 0.5 * curv), exact, curv)
        pos = g > 0
        lft, rgt = np.where(pos, t, left[idx]), np.where(pos, right[idx], t)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = g / curv
        new = t + step
        small = np.abs(step) <= 1e-12 * (1 + np.abs(t))
        # Newton step unless it leaves the bracket or does not halve the previous step
        inside = small | ((new > lft) & (new < rgt) & (np.abs(step) <= 0.5 * last[idx]))
        new = np.where(inside & np.isfinite(new), new, 0.5 * (lft + rgt))
        done = small | (rgt - lft <= 1e-12)
        info[idx] = T["i"]                  # at the last iterate: within 1e-12 of the root
        if single:                          # error after the step <= amax step^2 / 2
            bound = inside & (0.5 * amax * step ** 2 <= 1e-13 * (1 + np.abs(t)))
            info[idx] = np.where(bound, T["i"] + T["j"] * step, T["i"])    # I' = J
            done |= bound
        last[idx] = np.abs(new - t)
        theta[idx], left[idx], right[idx] = new, lft, rgt
        active[idx[done]] = False
    if active.any():
        raise ConvergenceError(f"{method} scoring: {int(active.sum())} abilities not located to "
                               f"1e-12 in 200 safeguarded steps (bracket width up to "
                               f"{np.max(right[active] - left[active]):.2g})", solver="scoring",
                               status="max_iter")
    # no down-crossing: the estimating function keeps one sign on the grid
    return np.where(found, theta, np.where(G[0] > 0, np.inf, -np.inf)), info


def _wle_slope(info, J, K):
    """Derivative of Warm's estimating function ``l' + J / (2 I)`` for Rasch/2PL items
    (``l'' = -I``, ``I' = J``, ``J' = K``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return -info + (K * info - J * J) / (2 * info * info)


def _softplus(x: np.ndarray) -> np.ndarray:
    """``log(1 + exp(x))`` in place, as ``max(x, 0) + log(1 + exp(-|x|))`` (absolute
    error below ``2e-16``; numpy's vectorised ``exp`` and ``log`` are several times
    faster than ``logaddexp``)."""
    pos = np.maximum(x, 0.0)
    np.abs(x, out=x)
    np.negative(x, out=x)
    np.maximum(x, -_EXP_RANGE, out=x)       # log1p(exp(-700)) is 0 in floating point
    np.exp(x, out=x)
    x += 1.0
    np.log(x, out=x)
    x += pos
    return x


class _LogLikGrid:
    """Log-likelihoods of many models on node sets, as matrix products.

    With no guessing (Rasch, 2PL) ``l_i(theta) = theta r_i - s_i - sum_j O_ij
    log(1 + exp(a_j (theta - b_j)))`` with ``r_i = sum_j y_ij a_j`` and ``s_i = sum_j
    y_ij a_j b_j``: one product with the observed mask (a column sum when nothing is
    missing); with guessing, ``sum_j O_ij [y_ij log P_j + (1 - y_ij) log Q_j]``.
    """

    def __init__(self, cells: _Cells, params: ItemParameters):
        self.cells, self.params = cells, params
        self.logistic = bool(np.all(params.c == 0))
        if self.logistic:
            self.r = cells.ones(params.a)
            self.s = cells.ones(params.a * params.b)

    def items(self, nodes: np.ndarray) -> tuple[np.ndarray, ...]:
        """The item x node matrices the products need (computed once per node set)."""
        p = self.params
        if self.logistic:
            return (_softplus(p.a[:, None] * (nodes[None, :] - p.b[:, None])),)
        P, Q, _, _ = _curves(nodes, p)
        logQ = np.log(Q)
        return np.log(P) - logQ, logQ

    def __call__(self, idx: np.ndarray, nodes: np.ndarray, mats: tuple) -> np.ndarray:
        cells = self.cells
        if self.logistic:
            if cells.complete:
                out = np.multiply.outer(self.r[idx], nodes)
                out -= mats[0].sum(axis=0)
            else:
                out = cells.obs(mats[0], idx)
                np.negative(out, out=out)
                out += np.multiply.outer(self.r[idx], nodes)
            out -= self.s[idx, None]
            return out
        if cells.complete:
            return cells.dense[idx] @ mats[0] + mats[1].sum(axis=0)
        if cells._O is not None:
            return cells.ones(mats[0], idx) + cells.obs(mats[1], idx)
        R1, _, O = cells._matrices()
        return np.asarray(R1[idx] @ mats[0]) + np.asarray(O[idx] @ mats[1])


def _eap(params: ItemParameters, cells: _Cells, mu: float, sd: float, n_nodes: int,
         log_prior: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Posterior means and sds on fixed grids, refined per model where one is too coarse.

    Every model starts on equally spaced nodes on ``mu +- 6 sd``, at most ``n_nodes``
    (spacing ``h``; coarser where a lower bound on the posterior sds of most models
    allows, or for a model whose posterior is surely wider, or, only to locate it,
    for a model answering many items). A model's grid result is accepted when its posterior sd is at least
    ``_RATIO h`` and its mean lies ``_TAIL`` posterior sds inside the grid: for a normal
    posterior the trapezoid rule's relative error is then below ``2 exp(-2 pi^2
    _RATIO^2) = 9e-13`` (Poisson summation) and the mass cut off below ``1e-15``.
    The others move, in groups of neighbouring models, to a grid ``1.5^k`` times finer
    (``h <= sd_hat / 1.5``, ``sd_hat`` from the log-posterior's curvature at its
    best node) on a window of ``+-((_TAIL + 1) sd_hat + h)`` around it, and are
    checked again. ``log_prior(theta)``, if given, replaces the normal prior's log
    density (a fitted non-normal latent density, :mod:`~.density`).
    """
    n = cells.n
    loglik = _LogLikGrid(cells, params)
    lo = mu - 6 * sd
    a2 = cells.obs((params.a ** 2)[:, None])[:, 0]
    # posterior sd >= 1 / sqrt(1/sd^2 + sum_j a_j^2 / 4) (information <= a^2/4 per item):
    # a spacing _RATIO times below that of the first quartile resolves 3/4 at least
    floor_sd = np.partition(1 / np.sqrt(1 / sd ** 2 + 0.25 * a2), n // 4)[n // 4] if n else sd
    h0 = 12 * sd / (n_nodes - 1)
    if log_prior is None:       # a fitted density may have finer features than the likelihood
        h0 = max(h0, floor_sd / _RATIO)
    mean, psd = np.full(n, np.nan), np.full(n, np.nan)
    # the first grid per model, from its typical posterior sd (information 0.2 a_j^2 per
    # observed item; up to 0.25 a_j^2): where that is below h / 2, a coarser grid only
    # locates it, spacing ~2 sqrt(sd sd_typical) (the first grid's nodes plus the
    # refined window's, least); where it is well above _RATIO h, a coarser grid resolves it
    typical = 1 / np.sqrt(1 / sd ** 2 + 0.2 * a2)
    target = np.where(typical < 0.5 * h0, 2 * np.sqrt(sd * typical),
                      np.where(typical < _RATIO * h0, h0, 0.8 * typical / _RATIO))
    coarse = np.floor(np.log(np.maximum(target / h0, 1.0)) / np.log(_FINER))
    level = -np.clip(coarse, 0, 0 if log_prior is not None else 8).astype(np.int64)
    first = np.zeros(n, np.int64)
    last = np.ceil(12 * sd / h0 * _FINER ** level.astype(float) - 1e-9).astype(np.int64)
    pending = np.arange(n)
    for _ in range(60):
        if pending.size == 0:
            return mean, psd
        retry = []
        for lev in np.unique(level[pending]):
            members = pending[level[pending] == lev]
            members = members[np.argsort(first[members], kind="stable")]
            h = h0 / _FINER ** lev
            a, b = first[members].min(), last[members].max()
            chunks = _chunks(members, first, last)
            # item curves on the union of the windows once, unless the chunks cover less
            spans = sum(int(last[c].max() - first[c].min()) + 1 for c in chunks)
            shared = (b - a + 1) * params.a.size <= _CELLS and b - a + 1 <= spans
            mats_all = loglik.items(lo + h * np.arange(a, b + 1)) if shared else None
            for chunk in chunks:
                c0, c1 = first[chunk].min(), last[chunk].max()
                nodes = lo + h * np.arange(c0, c1 + 1)
                mats = (tuple(m[:, c0 - a:c1 - a + 1] for m in mats_all) if shared
                        else loglik.items(nodes))
                L = loglik(chunk, nodes, mats)
                L += (-0.5 * ((nodes - mu) / sd) ** 2 if log_prior is None
                      else log_prior(nodes))
                k = np.argmax(L, axis=1)
                rows = np.arange(chunk.size)
                kk = np.clip(k, 1, nodes.size - 2)
                with np.errstate(divide="ignore", invalid="ignore"):
                    curv = -(L[rows, kk + 1] - 2 * L[rows, kk] + L[rows, kk - 1]) / h ** 2
                w = L
                w -= L[rows, k][:, None]
                np.maximum(w, -_EXP_RANGE, out=w)       # weights below e^-700 are 0 anyway
                np.exp(w, out=w)
                w /= w.sum(axis=1, keepdims=True)
                m = w @ nodes
                s = np.sqrt(np.maximum(w @ nodes ** 2 - m ** 2, 0.0))
                resolved = s >= _RATIO * h
                inside = (m - _TAIL * s >= nodes[0]) & (m + _TAIL * s <= nodes[-1])
                ok = resolved & inside
                mean[chunk[ok]], psd[chunk[ok]] = m[ok], s[ok]
                bad = ~ok
                if not bad.any():
                    continue
                s_hat = np.where(resolved, s, np.where(curv > 0, 1 / np.sqrt(curv), h / 4))
                s_hat = np.minimum(s_hat, np.where(resolved, s_hat, 0.5 * h))
                centre = np.where(resolved, m, nodes[k])
                half = (_TAIL + 1) * s_hat + h
                # a resolved posterior that did not fit: at least double the window
                half = np.where(resolved, np.maximum(half, (last[chunk] - first[chunk] + 1) * h),
                                half)
                new = np.maximum(lev, np.ceil(np.log(1.5 * h0 / s_hat) / np.log(_FINER))
                                 ).astype(np.int64)
                hn = h0 / _FINER ** new
                idx = chunk[bad]
                level[idx] = new[bad]
                first[idx] = np.floor((centre[bad] - half[bad] - lo) / hn[bad]).astype(np.int64)
                last[idx] = np.ceil((centre[bad] + half[bad] - lo) / hn[bad]).astype(np.int64)
                retry.append(idx)
        pending = np.concatenate(retry) if retry else np.array([], np.int64)
    raise ConvergenceError(f"eap scoring: {pending.size} posteriors not resolved by grids "
                           f"down to spacing {h0 / _FINER ** level[pending].max():.2g}",
                           solver="scoring", status="max_iter")


def _chunks(members: np.ndarray, first: np.ndarray, last: np.ndarray) -> list[np.ndarray]:
    """Neighbouring models (sorted by window start) in groups whose joint window stays
    within about one and a half of their own windows."""
    width = max((int(np.max(last[members] - first[members])) + 1) // 2, 32)
    if members.size <= 1024 and first[members[-1]] - first[members[0]] < width:
        return [members]
    group = (first[members] - first[members[0]]) // width
    cuts = np.flatnonzero(np.diff(group)) + 1
    return [c for part in np.split(members, cuts) for c in np.array_split(
        part, -(-part.size // 1024))]


def score_abilities(params: ItemParameters, Y: np.ndarray, observed: np.ndarray, *,
                    method: str = "wle", prior: tuple[float, float] = (0.0, 1.0),
                    n_quad: int = 121, log_prior: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Abilities and SEs of the rows of ``Y`` (0/1 where ``observed``; anything, NaN
    included, elsewhere) given ``params``.

    The array-level routine behind :func:`score_models`; items whose
    parameters are not finite must already be unobserved.

    Examples
    --------
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((60, 12)) < 0.5).astype(float)
    >>> est = Rasch(method="mml").fit(Y)
    >>> theta, se = score_abilities(item_parameters(est), Y[:3], np.ones((3, 12), dtype=bool))
    >>> theta.shape, bool(np.all(se > 0))
    ((3,), True)
    >>> Y[:3].sum(1).tolist()  # raw scores
    [4.0, 6.0, 4.0]
    >>> np.allclose(theta[0], theta[2]), bool(theta[1] > theta[0])  # Rasch: by raw score
    (True, True)
    """
    usable = params.usable
    if not usable.all():
        params, Y, observed = params.take(usable), Y[:, usable], observed[:, usable]
    return score_cells(params, _Cells.from_dense(Y, observed), method=method, prior=prior,
                       n_quad=n_quad, log_prior=log_prior)


def score_cells(params: ItemParameters, cells: _Cells, *, method: str = "wle",
                prior: tuple[float, float] = (0.0, 1.0), n_quad: int = 121,
                log_prior: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`score_abilities` on observed cells (``params`` all usable).

    ``log_prior(theta)``: the log density EAP integrates under instead of the
    normal ``prior`` (the fitted latent density of a non-normal fit)."""
    if method not in SCORING_METHODS:
        raise InputError(f"method must be one of {SCORING_METHODS}, got {method!r}")
    mu, sd = float(prior[0]), float(prior[1])
    if not (np.isfinite(mu) and np.isfinite(sd) and sd > 0):
        raise InputError(f"prior must be (mean, sd) with finite mean and sd > 0, got {prior}")
    if params.a.size == 0:
        raise InputError("no usable item parameters to score against")
    if int(n_quad) < 3:
        raise InputError(f"n_quad must be at least 3, got {n_quad}")
    b = np.clip(params.b, -20, 20)
    lo, hi = min(b.min(), mu - 6 * sd) - 6.0, max(b.max(), mu + 6 * sd) + 6.0
    if method == "eap":
        return _eap(params, cells, mu, sd, int(n_quad), log_prior)
    theta, info = _solve(method, params, cells, mu, sd, lo, hi)
    if np.isnan(info).any():                # ML at +-inf: I there (0 or tiny)
        far = np.flatnonzero(np.isnan(info))
        info[far] = cells.take(far).terms(np.clip(theta[far], lo, hi), params, "i")["i"]
    if method in ("ml", "wle"):
        with np.errstate(divide="ignore"):
            se = np.where(np.isfinite(theta), 1 / np.sqrt(info), np.inf)
        return theta, se
    return theta, 1 / np.sqrt(info + 1 / sd ** 2)


def score_models(estimator: Any, Y_new: Any, method: str = "wle", *,
                 prior: tuple[float, float] | None = None, n_quad: int = 121) -> ScoreResult:
    """Place new models on a fitted estimator's frozen item scale.

    Parameters
    ----------
    estimator : fitted Rasch, TwoPL or ThreePL
    Y_new : array-like or DataFrame, shape (n_new, n_items)
        0/1 responses (NaN = missing). A DataFrame's columns are matched to the
        fitted items by name (items it lacks count as not answered); an array
        must have the fitted items as columns, in order.
    method : {"ml", "wle", "map", "eap"}
    prior : (mean, sd), optional
        Ability prior of ``map``/``eap``; default :func:`~.information.ability_prior`.
        A fit with a non-normal latent density (``latent_density_``, :mod:`~.density`)
        scores ``eap`` under that density unless ``prior`` is given.
    n_quad : int
        Nodes of ``eap``'s fixed grid (refined per model where too coarse).

    Returns
    -------
    ScoreResult

    Examples
    --------
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((60, 12)) < 0.5).astype(float)
    >>> est = Rasch(method="mml").fit(Y)
    >>> res = score_models(est, Y[:3], method="eap")  # new models on the frozen items
    >>> res.method, res.abilities.shape, bool(np.all(res.standard_errors > 0))
    ('eap', (3,), True)
    """
    density = getattr(estimator, "latent_density_", None)
    fitted = density is not None and density.name != "normal" and prior is None
    return score_responses(item_parameters(estimator), Y_new, method,
                           prior=ability_prior(estimator) if prior is None else prior,
                           n_quad=n_quad, log_prior=density.log_pdf if fitted else None)


def score_responses(params: ItemParameters, Y_new: Any, method: str = "wle", *,
                    prior: tuple[float, float] = (0.0, 1.0), n_quad: int = 121,
                    log_prior: Any = None) -> ScoreResult:
    """:func:`score_models` from item parameters (e.g. :func:`evalcert.io.irt_tables.read_item_table`).

    Examples
    --------
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((60, 12)) < 0.5).astype(float)
    >>> est = Rasch(method="mml").fit(Y)
    >>> res = score_responses(item_parameters(est), Y[:3], prior=ability_prior(est))
    >>> res.method, res.abilities.shape
    ('wle', (3,))
    """
    notes = []
    if hasattr(Y_new, "columns"):
        known = set(params.item_names)
        unknown = [str(c) for c in Y_new.columns if str(c) not in known]
        if unknown:
            raise InputError(f"{len(unknown)} items of the new responses are not in the fitted "
                             f"items, e.g. {unknown[:5]}; score only fitted items")
        absent = len(params.item_names) - len(Y_new.columns)
        if absent:
            notes.append(f"{absent} fitted items are absent from the new responses (not "
                         "answered)")
        Y_new = Y_new.set_axis([str(c) for c in Y_new.columns], axis=1).reindex(
            columns=list(params.item_names))
    data = validate_responses(Y_new, kind="binary", allow_empty=True)
    if data.shape[1] != params.a.size:
        raise InputError(f"new data has {data.shape[1]} items, the fit has {params.a.size}; "
                         "columns must be the fitted items in the same order")
    observed = data.observed & params.usable[None, :]
    theta, se = score_abilities(params, data.values, observed, method=method, prior=prior,
                                n_quad=n_quad, log_prior=log_prior)
    if log_prior is not None and method == "eap":
        notes.append("EAP under the fit's latent density (not normal)")
    used = observed.sum(axis=1)
    if (used == 0).any():
        notes.append(f"{int((used == 0).sum())} models answered none of the usable items: "
                     "their score is the prior's" if method in ("map", "eap") else
                     f"{int((used == 0).sum())} models answered none of the usable items")
        if method not in ("map", "eap"):
            theta = np.where(used == 0, np.nan, theta)
            se = np.where(used == 0, np.nan, se)
    inf = int(np.isinf(theta).sum())
    if inf:
        notes.append(f"{inf} models answered all their items right or all wrong: their ML "
                     "ability is infinite (use method='wle', 'map' or 'eap')")
    dropped = int((data.observed & ~params.usable[None, :]).sum())
    if dropped:
        notes.append(f"{dropped} responses to {int((~params.usable).sum())} items the fit "
                     "excluded (all-0/all-1) were not used")
    return ScoreResult(method=method, model_names=data.model_names, abilities=theta,
                       standard_errors=se, n_items_used=used, prior_mean=float(prior[0]),
                       prior_sd=float(prior[1]), item_model=params.model, notes=tuple(notes))
