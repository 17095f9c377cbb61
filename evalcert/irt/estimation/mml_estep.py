"""The two E-steps of :func:`~.mml.mml_em` (internal; see :mod:`~.mml` for the method).

``_AdaptiveEStep`` puts Gauss-Hermite nodes at every model's posterior and works
on the observed cells; ``_CompleteEStep`` shares one grid (or pools models by raw
score) when every model answered every item. Both return, for item parameters
``(a, d)`` and node placements ``(mu, sd)``, the new posterior means and sds, the
expected complete-data scores ``g0, g1`` and curvatures ``h0, h1, h2`` per item
(None when called with ``curvature=False``: the M-step then reuses older ones,
and the E-step skips about a quarter of its work), and the marginal
log-likelihood at ``(a, d)``.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy.sparse import csr_matrix

from evalcert.errors import ConvergenceError, InputError
from evalcert.irt.base import map_blocks, resolve_threads
from evalcert.irt.data import observed_cells

__all__: list[str] = []

_MAX_GRID = 20_000      # nodes of the shared grid
_CHUNK = 1 << 22        # cells (items x nodes) up to which the complete-data E-step keeps p, 1-p
_THREAD_CHUNK = 1 << 15  # cells (items x nodes) per block of the complete-data E-step (in cache:
                         # 1.3-1.6x faster per E-step than 1 << 18 on 100 x 5000 and PSN-IRT)
_BLOCK = 1 << 17        # cells x nodes per block of short rows in the adaptive E-step
_LONG = 1024            # cells from which a model is a block of its own (adaptive E-step)
_GROUP = 1 << 20        # cells per group of adaptive blocks summed by item in one product


def _start(hits: np.ndarray, answered: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starting posteriors: standardised logits of the row proportions, sd ~ 2/sqrt(M_i)."""
    row = (hits + 0.5) / (answered + 1.0)
    mu = np.log(row / (1 - row))
    mu = (mu - mu.mean()) / max(mu.std(), 1e-3)
    return mu, np.minimum(1.0, 2.0 / np.sqrt(answered))


class _AdaptiveEStep:
    """Per-model Gauss-Hermite nodes at the current posterior mean and sd.

    Works on the observed cells only, stored row-major (CSR order): ``Yo`` is
    read at the cells where ``O`` (bool or 0/1) is set and neither is kept, so
    an iteration costs ``O(Q x observed cells)`` time and ``O(observed cells)``
    memory whatever the share of missing cells, with no ``models x items``
    array. Models are processed in blocks: a model with at least ``_LONG``
    observed cells is a block of its own, worked on as a handful of matrix
    products with its ``Q`` node positions (:meth:`_row`); runs of shorter
    rows are packed into blocks of at most ``_BLOCK`` cells x nodes, where the
    per-model sums over cells are ``np.add.reduceat`` on contiguous segments
    (:meth:`_rows`). Each block writes five per-cell totals (``sum_q w p (1,
    theta)`` and ``sum_q w p (1 - p) (1, theta, theta^2)``) into a (statistic,
    cell) buffer; they are summed by item one group of whole blocks (at most
    ``_GROUP`` cells) at a time, one ``np.bincount`` per statistic, and
    ``sum_i y_ij E[theta_i]`` is one sparse product with the new posterior
    means. Blocks and statistics run on ``n_threads`` threads
    (:func:`~.base.map_blocks`), each computed as on one thread and written to
    disjoint slices, and the groups are added in order, so the result does not
    depend on the thread count.

    Why :meth:`_row` (300 models x 20,000 items, half the cells missing, 3 x
    10^6 cells, 7 nodes): one row per block was already the case, but as ~45
    array calls each allocating a (nodes, cells) temporary, writing the
    per-cell totals as strided columns. An E-step took 390 ms on one thread
    and 350 ms on two: a freshly allocated 0.5 MB output made the same ufunc
    scale 0.1-0.6x on two threads against 1.3-1.8x into a kept buffer, and the
    threads handed the GIL over ~5,000 times an E-step. :meth:`_row` works in
    per-thread buffers with a dozen large calls.
    """

    def __init__(self, Yo: np.ndarray, O: np.ndarray, n_quad: int, n_threads: int | None = 1):
        z, w = hermegauss(n_quad)
        self.Z2, self.Z3 = np.vstack([np.ones_like(z), z]), np.vstack([np.ones_like(z), z, z ** 2])
        self.z, self.log_w = z, np.log(w / w.sum()) + 0.5 * z ** 2
        self.shape = n, m = O.shape
        starts, self.cols, self.y = observed_cells(Yo, O)
        counts = np.diff(starts)
        if not counts.all():
            raise InputError("mml: every model needs at least one observed response")
        self.starts = starts
        self.hits = np.add.reduceat(self.y, starts[:-1])
        # the cells are a (models x items) CSR matrix: its transpose sums y_ij E[theta_i] by item
        self.y_items = csr_matrix((self.y, self.cols, starts), shape=(n, m)).T
        self.ones = np.bincount(self.cols, weights=self.y, minlength=m)
        self.answered = np.bincount(self.cols, minlength=m)
        self.weights = np.ones(n)
        self.longest = int(counts.max())
        # long rows alone; runs of short rows in blocks of at most _BLOCK cells x nodes
        long = np.flatnonzero(counts >= _LONG)
        self.blocks = []
        for lo, hi in zip(np.concatenate([[0], long + 1]), np.concatenate([long, [n]])):
            self.blocks += self._split(int(lo), int(hi), _BLOCK // z.size)
            if hi < n:
                self.blocks.append((int(hi), int(hi) + 1))
        self.threads = resolve_threads(n_threads, len(self.blocks), self.y.size * z.size)
        # groups of whole blocks with at most _GROUP cells (bounds the per-cell buffer)
        self.groups = []
        for first, last in self._runs(self.blocks, _GROUP):
            inner = self.blocks[first:last]
            self.groups.append((self.starts[inner[0][0]], self.starts[inner[-1][1]], inner))

    def _split(self, lo: int, hi: int, cells: int) -> list[tuple[int, int]]:
        """Consecutive row ranges of ``lo:hi`` with at most ``cells`` cells (one row at least)."""
        bounds = [lo]
        while bounds[-1] < hi:
            first = bounds[-1]
            end = int(np.searchsorted(self.starts, self.starts[first] + cells, side="right")) - 1
            bounds.append(min(hi, max(end, first + 1)))
        return list(zip(bounds[:-1], bounds[1:]))

    def _runs(self, blocks: list[tuple[int, int]], cells: int) -> list[tuple[int, int]]:
        """Runs ``blocks[first:last]`` of at most ``cells`` cells (one block at least).

        (A group is whole blocks: a block that crossed a group's end wrote past
        that group's cells, a ValueError on some shapes.)
        """
        ends = self.starts[[hi for _, hi in blocks]]
        bounds = [0]
        while bounds[-1] < len(blocks):
            first = bounds[-1]
            last = int(np.searchsorted(ends, self.starts[blocks[first][0]] + cells, side="right"))
            bounds.append(max(last, first + 1))
        return list(zip(bounds[:-1], bounds[1:]))

    def start(self, a: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _start(self.hits, np.diff(self.starts))

    def per_model(self, values: np.ndarray) -> np.ndarray:
        return values

    def describe(self) -> str:
        return f"adaptive Gauss-Hermite, {self.z.size} nodes per model"

    def __call__(self, a: np.ndarray, d: np.ndarray, mu: np.ndarray,
                 sd: np.ndarray, curvature: bool = True) -> dict[str, Any]:
        N = self.shape[0]
        new_mu, new_sd, ll = np.empty(N), np.empty(N), np.empty(N)
        # per cell: sum_q w p (1, theta) and, with ``curvature``, sum_q w p (1 - p) (1,
        # theta, theta^2); rows of disjoint blocks (the block reads the width of ``cell``)
        width = 5 if curvature else 2
        cell = np.empty((width, max(c1 - c0 for c0, c1, _ in self.groups)))
        sums = np.zeros((width, self.shape[1]))
        ad = np.column_stack([a, d])                 # (M, 2): one 16-byte gather per cell
        # per-thread buffers of _row: a freshly allocated large temporary per array call
        # kept two threads from running side by side (see the class docstring)
        local = threading.local()
        bound = (float(np.max(np.abs(a))), float(np.max(np.abs(d))))
        for c0, c1, inner in self.groups:
            out = (new_mu, new_sd, ll, cell, c0, local)
            # blocks write disjoint slices of ``out``: any thread count gives the same bits
            map_blocks(lambda block: self._block(*block, ad, bound, mu, sd, out), inner,
                       self.threads)

            def item_sums(k, c0=c0, c1=c1):          # one statistic's sums over items' cells
                sums[k] += np.bincount(self.cols[c0:c1], weights=cell[k, :c1 - c0],
                                       minlength=self.shape[1])
            map_blocks(item_sums, range(width), self.threads)
        h0, h1, h2 = sums[2:] if curvature else (None,) * 3
        return {"mu": new_mu, "sd": new_sd, "g0": self.ones - sums[0],
                "g1": self.y_items @ new_mu - sums[1], "h0": h0, "h1": h1, "h2": h2,
                "loglik": float(ll.sum())}

    def _block(self, lo: int, hi: int, ad: np.ndarray, bound: tuple[float, float],
               mu: np.ndarray, sd: np.ndarray, out: tuple) -> None:
        if hi - lo == 1 and self.starts[hi] - self.starts[lo] >= _LONG:
            self._row(lo, ad, bound, mu, sd, out)
        else:
            self._rows(lo, hi, ad, mu, sd, out)

    def _row(self, i: int, ad: np.ndarray, bound: tuple[float, float], mu: np.ndarray,
             sd: np.ndarray, out: tuple) -> None:
        """Posterior of model ``i`` and its cells' node sums, written into ``out``.

        With one model its nodes ``theta_q`` are fixed, so the logits are one
        ``(Q, 2) @ (2, cells)`` product, the node sums two ``(k, Q) @ (Q, cells)``
        products written straight into ``cell``, and ``sum_j log(1 + e^eta)``
        takes one ``log`` per product of up to ``R`` cells (:func:`_log_sum`).
        Every (nodes, cells) array is a view of this thread's buffer.
        """
        new_mu, new_sd, ll, cell, offset, local = out
        c0, c1 = self.starts[i], self.starts[i + 1]
        Q = self.z.size
        if not hasattr(local, "buffer"):          # this thread's, reused by its rows
            local.buffer = np.empty((2 * Q, self.longest))
            local.pairs = np.empty((self.longest, 2))
        e, q = local.buffer[:Q, :c1 - c0], local.buffer[Q:, :c1 - c0]
        g = np.take(ad, self.cols[c0:c1], axis=0, out=local.pairs[:c1 - c0], mode="clip").T
        theta = mu[i] + sd[i] * self.z                             # g: (2, cells) a_j, d_j
        np.matmul(np.column_stack([theta, np.ones_like(theta)]), g, out=e)  # a theta + d
        top = bound[0] * float(np.max(np.abs(theta))) + bound[1]  # >= |eta|
        if top > 700:                                              # exp(700) < inf
            np.clip(e, -700.0, 700.0, out=e)
        np.exp(e, out=e)
        np.add(e, 1.0, out=q)
        softplus = _log_sum(q, top, axis=1)                        # (Q,)
        np.reciprocal(q, out=q)                                    # 1 - p
        e *= q                                                     # p
        y_ad = g @ self.y[c0:c1]                                   # sum_j y (a_j, d_j)
        log_joint = (self.log_w + np.log(sd[i]) - 0.5 * theta ** 2 + theta * y_ad[0] + y_ad[1]
                     - softplus)
        post, ll[i], new_mu[i], new_sd[i] = _posterior(log_joint, theta)
        block = cell[:, c0 - offset:c1 - offset]
        np.matmul(np.vstack([post, post * theta]), e, out=block[:2])    # sum_q w p (1, theta)
        if cell.shape[0] == 2:                                     # no curvature this time
            return
        e *= q                                                     # p (1 - p)
        np.matmul(np.vstack([post, post * theta, post * theta ** 2]), e, out=block[2:])

    def _rows(self, lo: int, hi: int, ad: np.ndarray, mu: np.ndarray, sd: np.ndarray,
              out: tuple) -> None:
        """Posteriors of models ``lo:hi`` (short rows) and their cells' node sums, into ``out``."""
        new_mu, new_sd, ll, cell, offset, _ = out
        z, starts = self.z, self.starts
        c0, c1 = starts[lo], starts[hi]
        seg, counts = starts[lo:hi] - c0, np.diff(starts[lo:hi + 1])
        y = self.y[c0:c1]
        ac, dc = np.take(ad, self.cols[c0:c1], axis=0).T
        y_ac = np.add.reduceat(y * ac, seg)                       # sum_j y a_j per model
        y_dc = np.add.reduceat(y * dc, seg)
        m_c, s_c = np.repeat(mu[lo:hi], counts), np.repeat(sd[lo:hi], counts)
        base, slope = ac * m_c + dc, ac * s_c
        # (Q, cells): log(1 + e^eta), p and 1 - p from one exp (see _logistic)
        e = self.Z2.T @ np.vstack([base, slope])                  # base + z slope
        if np.max(np.abs(base) + z[-1] * np.abs(slope)) > 700:   # exp(700) < inf
            np.clip(e, -700.0, 700.0, out=e)
        np.exp(e, out=e)
        q = e + 1.0
        softplus_sum = np.add.reduceat(np.log(q), seg, axis=1)    # (Q, models)
        np.reciprocal(q, out=q)                                   # 1 - p
        e *= q                                                    # p
        theta = mu[lo:hi, None] + sd[lo:hi, None] * z[None, :]     # (models, Q)
        log_joint = (self.log_w + np.log(sd[lo:hi])[:, None] - 0.5 * theta ** 2
                     + (y_dc + mu[lo:hi] * y_ac)[:, None]
                     + (sd[lo:hi] * y_ac)[:, None] * z[None, :] - softplus_sum.T)
        post, ll[lo:hi], new_mu[lo:hi], new_sd[lo:hi] = _posterior(log_joint, theta)
        wp = np.repeat(post.T, counts, axis=1)                      # (Q, cells)
        wp *= e                                                     # w p
        S = self.Z2 @ wp                                            # sum_q w p (1, z)
        block = cell[:, c0 - offset:c1 - offset]
        block[0] = S[0]
        block[1] = m_c * S[0] + s_c * S[1]
        if cell.shape[0] == 2:                                      # no curvature this time
            return
        wp *= q                                                     # w p (1 - p)
        H = self.Z3 @ wp
        block[2] = H[0]
        block[3] = m_c * H[0] + s_c * H[1]
        block[4] = m_c ** 2 * H[0] + 2 * m_c * s_c * H[1] + s_c ** 2 * H[2]


def _posterior(log_joint: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, ...]:
    """Normalised weights over the nodes (last axis) from log joint densities at ``theta``.

    Returns the weights, the log of their total (the marginal log-likelihood),
    and the posterior means and sds (floored at 1e-6) along the last axis;
    the log-sum-exp by hand (scipy's costs ~0.5 ms a call on these small arrays).

    Examples
    --------
    >>> post, ll, m, s = _posterior(np.log([[1.0, 3.0]]), np.array([[0.0, 1.0]]))
    >>> (np.round(post, 12).tolist(), round(float(ll[0]), 4), np.round(m, 12).tolist(),
    ...  round(float(s[0]), 4))
    ([[0.25, 0.75]], 1.3863, [0.75], 0.433)
    """
    top = log_joint.max(-1, keepdims=True)
    post = np.exp(log_joint - top)
    total = post.sum(-1, keepdims=True)
    post /= total
    m = (post * theta).sum(-1)
    var = (post * (theta - m[..., None]) ** 2).sum(-1)
    return post, (top + np.log(total))[..., 0], m, np.sqrt(np.maximum(var, 1e-12))


def _log_sum(q: np.ndarray, bound: float, axis: int) -> np.ndarray:
    """``log(q).sum(axis)`` for ``1 <= q <= 1 + e^bound`` (2-D), one ``log`` per product of ``R``.

    ``q <= e^(bound + 1)``, so products of ``R = 700 // (bound + 1)`` values
    (at most 32) stay finite, and each ``log`` of a product is within ``R``
    ulps of the sum of the ``log``s. The summed axis is split as ``(R, rest)``
    and the products taken over ``R``, so every product runs along the other
    axis as well as ``rest``: long contiguous loops whichever axis is summed
    (on ``(items, nodes)`` chunks of 7 to 1,560 nodes 1.0-4.6x faster than
    products of ``R`` consecutive items, whose innermost loop was the nodes).

    Examples
    --------
    >>> q = 1 + np.exp(np.linspace(-5, 5, 100))[None, :]
    >>> bool(np.allclose(_log_sum(q, 5.0, 1), np.log(q).sum(1), rtol=1e-14))
    True
    >>> bool(np.allclose(_log_sum(q.T, 5.0, 0), np.log(q).sum(1), rtol=1e-14))
    True
    """
    R = int(min(32, 700 // (min(bound, 700.0) + 1.0)))
    n = q.shape[axis]
    whole = n // R * R if R > 1 else 0
    head = (slice(None), slice(0, whole)) if axis else (slice(0, whole),)
    tail = (slice(None), slice(whole, None)) if axis else (slice(whole, None),)
    if R > 1:       # fewer than R values: one log of their product (a log costs ~8 products)
        sums = np.log(np.multiply.reduce(q[tail], axis=axis))
    else:
        sums = np.log(q[tail]).sum(axis)
    if whole:
        shape = (q.shape[0], R, -1) if axis else (R, -1, q.shape[1])
        sums += np.log(np.multiply.reduce(q[head].reshape(shape), axis=axis)).sum(axis)
    return sums


class _CompleteEStep:
    """E-step for a complete matrix: item sums shared by all models.

    Models are pooled by raw score for the Rasch model (its posterior depends on
    nothing else). Every iteration uses whichever node set is smaller: one
    uniform grid shared by all groups, or ``Q`` Gauss-Hermite nodes per group.
    Items are processed in chunks of at most ``_THREAD_CHUNK`` cells (items x
    nodes), fixed by the shape and run on ``n_threads`` threads; the per-node
    sums are added in chunk order, so any thread count gives the same bits. Per
    cell one ``exp``, one ``log`` and one reciprocal give ``log(1 + e^eta)``, ``p``
    and ``1 - p`` (:func:`_logistic`); both probabilities are kept for the second
    pass up to ``_CHUNK`` cells, and the five item sums are two matrix products.
    """

    def __init__(self, Yo: np.ndarray, *, pool_by_score: bool, n_quad: int, shared_only: bool,
                 n_threads: int | None = 1):
        n = Yo.shape[0]
        self.n_threads = n_threads
        resolve_threads(n_threads, 1, 0)            # refuse a bad value before any work
        if pool_by_score:
            _, self.group, self.weights = np.unique(Yo.sum(1), return_inverse=True,
                                                    return_counts=True)
            self.group = self.group.ravel()
        else:
            self.group, self.weights = np.arange(n), np.ones(n, dtype=np.int64)
        G = self.weights.size
        members = csr_matrix((np.ones(n), (self.group, np.arange(n))), shape=(G, n))
        self.hits = np.asarray(members @ Yo)          # (G, M) correct answers per group
        self.ones = Yo.sum(0)
        z, w = hermegauss(n_quad)
        self.gh_z, self.gh_log_w = z, np.log(w / w.sum()) + 0.5 * z ** 2
        self.shared_only = shared_only
        self.last = ""
        self._buffer: np.ndarray | None = None     # p and 1 - p, reused by every call

    def start(self, a: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Laplace approximation (mode, curvature) of every group's posterior.

        Newton starts from the standardised logits of the groups' raw scores,
        two of its six iterations closer than 0 on 2PL 100 x 5000, and stops at
        1e-2 posterior sd (the first E-step re-centres the nodes; the E-step
        counts on ChemBench, 100 x 5000 and the Rasch model are those of 1e-6).
        """
        hits = self.hits.sum(1) / self.weights
        return self._laplace(a, d, self.hits @ a / self.weights,
                             _start(hits, np.full(hits.size, float(a.size)))[0], tol=1e-2)

    def _laplace(self, a: np.ndarray, d: np.ndarray, t: np.ndarray,
                 z: np.ndarray | None = None,
                 tol: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
        """Posterior modes and ``1/sqrt(curvature)`` for person statistics ``t``.

        The log posterior ``t z - sum_j softplus(a_j z + d_j) - z^2 / 2`` is
        strictly concave; its mode solves a decreasing equation whose root lies
        in ``|z| <= sum |a_j|``, found by Newton's method (from ``z``, default 0)
        safeguarded by bisection, until a step is below ``tol`` posterior sds.
        """
        bound = np.abs(a).sum() + 1.0
        lo, hi = np.full(t.size, -bound), np.full(t.size, bound)
        z = np.zeros(t.size) if z is None else np.clip(z, -bound, bound)
        rows = max(1, _CHUNK // a.size)
        for _ in range(100):
            grad, curv = np.empty(t.size), np.empty(t.size)
            for k in range(0, t.size, rows):
                c = slice(k, k + rows)
                p = a[:, None] * z[None, c] + d[:, None]
                np.clip(p, -700.0, 700.0, out=p)        # sigma by SIMD exp: 4x expit
                p = np.reciprocal(np.add(np.exp(np.negative(p, out=p), out=p), 1.0, out=p), out=p)
                grad[c] = t[c] - a @ p - z[c]
                curv[c] = (a ** 2) @ (p * (1 - p)) + 1.0
            lo, hi = np.where(grad > 0, z, lo), np.where(grad > 0, hi, z)
            new = z + grad / curv
            new = np.where((new >= lo) & (new <= hi), new, 0.5 * (lo + hi))
            done = np.max(np.abs(new - z) * np.sqrt(curv)) < tol
            z = new
            if done:
                break
        return z, 1 / np.sqrt(curv)

    def per_model(self, values: np.ndarray) -> np.ndarray:
        return values[self.group]

    def describe(self) -> str:
        return f"{self.last}, {self.weights.size} model groups"

    def _nodes(self, mu: np.ndarray, sd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Node positions and log prior-times-rule weights: (K,) shared or (G, Q) per group."""
        lo = min(float(np.min(mu)), max(-9.0, float(np.min(mu - 10 * sd))))
        hi = max(float(np.max(mu)), min(9.0, float(np.max(mu + 10 * sd))))
        K = int(min(_MAX_GRID, max(3, np.ceil((hi - lo) / (np.min(sd) / 1.5)) + 1)))
        if self.shared_only or K <= mu.size * self.gh_z.size:
            z = np.linspace(lo, hi, K)
            self.last = f"shared uniform grid, {K} nodes"
            return z, -0.5 * z ** 2 - 0.5 * np.log(2 * np.pi) + np.log(z[1] - z[0])
        theta = mu[:, None] + sd[:, None] * self.gh_z[None, :]
        self.last = f"Gauss-Hermite, {self.gh_z.size} nodes per group"
        return theta, self.gh_log_w + np.log(sd)[:, None] - 0.5 * theta ** 2

    def __call__(self, a: np.ndarray, d: np.ndarray, mu: np.ndarray,
                 sd: np.ndarray, curvature: bool = True) -> dict[str, Any]:
        t = self.hits @ a / self.weights
        ad = np.column_stack([a, d])
        for attempt in range(4):
            nodes, log_base = self._nodes(mu, sd)
            flat = nodes.ravel()
            rows = max(1, _THREAD_CHUNK // flat.size)   # fixed by the shape, not the threads
            chunks = [slice(k, k + rows) for k in range(0, a.size, rows)]
            threads = resolve_threads(self.n_threads, len(chunks), a.size * flat.size)
            keep = a.size * flat.size <= _CHUNK         # keep p and 1 - p for the second pass
            bound = float(np.max(np.abs(a)) * np.max(np.abs(flat)) + np.max(np.abs(d)))
            nodes1 = np.vstack([flat, np.ones_like(flat)])

            if keep:                                    # p and 1 - p of every chunk
                shape = (2, a.size, flat.size)
                if self._buffer is None or self._buffer.shape != shape:
                    self._buffer = np.empty(shape)
                pq = self._buffer

            def softplus_sums(c, nodes1=nodes1, keep=keep, bound=bound):
                log1p_exp, p, q = _logistic(ad[c], nodes1, bound, *((pq[0, c], pq[1, c])
                                                                   if keep else ()))
                return log1p_exp, ((p, q) if keep else None)

            parts = map_blocks(softplus_sums, chunks, threads)
            S = parts[0][0].copy()
            for part in parts[1:]:                      # in chunk order: same bits any threads
                S += part[0]
            if nodes.ndim == 1:
                log_joint = log_base - S + np.outer(t, nodes)                 # (G, K)
            else:
                log_joint = log_base - S.reshape(nodes.shape) + t[:, None] * nodes
            top = log_joint.max(1)                      # log-sum-exp by hand: scipy's
            ll_g = top + np.log(np.exp(log_joint - top[:, None]).sum(1))   # costs ~2 ms a call
            log_post = log_joint - ll_g[:, None]
            post = np.where(log_post < -700.0, 0.0, np.exp(np.maximum(log_post, -700.0)))  # no subnormals
            new_mu = (post * nodes).sum(1) if nodes.ndim == 2 else post @ nodes
            centred = nodes - new_mu[:, None]           # (G, K) or (G, Q): no cancellation
            new_sd = np.sqrt(np.maximum((post * centred ** 2).sum(1), 1e-24))
            if nodes.ndim == 2:
                break
            # a shared grid must contain and resolve every posterior; repair the
            # groups whose (mu, sd) guess was off with their Laplace approximation
            bad = ((post[:, :2].sum(1) + post[:, -2:].sum(1) > 1e-9)
                   | (new_sd < nodes[1] - nodes[0]))
            if not bad.any():
                break
            if attempt == 3:
                raise ConvergenceError(f"mml: the shared quadrature grid does not resolve the "
                                       f"posteriors of {int(bad.sum())} model groups; use "
                                       "quadrature='adaptive'", solver="em", status="quadrature")
            mu, sd = new_mu.copy(), new_sd.copy()
            mu[bad], sd[bad] = self._laplace(a, d, t[bad])
        N = (self.weights @ post if nodes.ndim == 1
             else (self.weights[:, None] * post).ravel())                  # weight per node
        Nz = N * flat
        first, second = np.column_stack([N, Nz]), np.column_stack([N, Nz, Nz * flat])
        stats = np.empty((a.size, 5))

        def item_sums(i):
            c = chunks[i]
            p, q = parts[i][1] if keep else _logistic(ad[c], nodes1, bound)[1:]
            stats[c, :2] = p @ first                    # sum_k N_k p (1, z_k)
            if not curvature:
                return
            p *= q                                      # p (1 - p), in place (no longer kept)
            stats[c, 2:] = p @ second                   # sum_k N_k p (1 - p) (1, z_k, z_k^2)

        map_blocks(item_sums, range(len(chunks)), threads)
        return {"mu": new_mu, "sd": new_sd, "g0": self.ones - stats[:, 0],
                "g1": self.hits.T @ new_mu - stats[:, 1],
                **dict(zip(("h0", "h1", "h2"), stats[:, 2:].T if curvature else (None,) * 3)),
                "loglik": float(self.weights @ ll_g + self.ones @ d)}


def _logistic(ad: np.ndarray, nodes1: np.ndarray, bound: float,
              e_out: np.ndarray | None = None,
              q_out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``sum_j log(1 + e^eta_j)``, ``p = sigma(eta)`` and ``1 - p`` of ``eta = a z + d``, one ``exp``.

    ``ad`` holds the items' ``(a_j, d_j)`` as rows and ``nodes1`` the rows
    ``(z, 1)``, so ``eta = ad @ nodes1`` is one small matrix product (5x faster
    than an outer product plus a broadcast sum on ~150 nodes).
    ``p`` and ``1 - p`` are ``(items, nodes)``; the first output sums over
    items, per node. ``p = e q`` and ``q = 1 / (1 + e)`` (``e = e^eta``) keep
    their relative precision in both tails, and ``log(1 + e)`` is within an
    ulp of ``eta`` above and ``1e-16`` absolute below. ``bound`` is
    ``max|a| max|z| + max|d|`` (at least ``|eta|``): above 700 ``eta`` is clipped
    to ``+-700`` (no overflow); below, the sums take one ``log`` per product of
    up to 32 items (:func:`_log_sum`; a third of the cost of one per cell).
    ``e_out`` and ``q_out`` (``(items, nodes)``, optional) receive ``p`` and ``1 - p``.

    Examples
    --------
    >>> s, p, q = _logistic(np.array([[1.0, 0.0]]), np.array([[0.0, 40.0], [1.0, 1.0]]), 40.0)
    >>> np.round(s, 4).tolist(), float(p[0, 0]), bool(abs(q[0, 1] / np.exp(-40.0) - 1) < 1e-15)
    ([0.6931, 40.0], 0.5, True)
    """
    e = np.matmul(ad, nodes1, out=e_out)
    if bound > 700:
        np.clip(e, -700.0, 700.0, out=e)
    np.exp(e, out=e)
    q = np.add(e, 1.0, out=q_out)
    sums = _log_sum(q, bound, axis=0)
    np.reciprocal(q, out=q)
    e *= q
    return sums, e, q
