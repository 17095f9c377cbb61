"""The two E-steps of :func:`~.mml.mml_em` (internal; see :mod:`~.mml` for the method).

``_AdaptiveEStep`` puts Gauss-Hermite nodes at every model's posterior and works
on the observed cells; ``_CompleteEStep`` shares one grid (or pools models by raw
score) when every model answered every item. Both return, for item parameters
``(a, d)`` and node placements ``(mu, sd)``, the new posterior means and sds, the
expected complete-data scores ``g0, g1`` and curvatures ``h0, h1, h2`` per item,
and the marginal log-likelihood at ``(a, d)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy.sparse import csr_matrix
from scipy.special import logsumexp

from evalcert.errors import ConvergenceError, InputError
from evalcert.solvers.irt.base import map_blocks, resolve_threads, softplus_sigmoid

__all__: list[str] = []

_MAX_GRID = 20_000      # nodes of the shared grid
_CHUNK = 1 << 23        # cells (items x nodes) up to which the complete-data E-step keeps P
_THREAD_CHUNK = 1 << 18  # cells (items x nodes) per block of the complete-data E-step
_BLOCK = 1 << 17        # cells x nodes per block of the adaptive E-step (fits in cache)


def _start(Yo: np.ndarray, O: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starting posteriors: standardised logits of the row proportions, sd ~ 2/sqrt(M_i)."""
    row = (Yo.sum(1) + 0.5) / (O.sum(1) + 1.0)
    mu = np.log(row / (1 - row))
    mu = (mu - mu.mean()) / max(mu.std(), 1e-3)
    return mu, np.minimum(1.0, 2.0 / np.sqrt(O.sum(1)))


class _AdaptiveEStep:
    """Per-model Gauss-Hermite nodes at the current posterior mean and sd.

    Works on the observed cells only, stored row-major (CSR order), so an
    iteration costs ``O(Q x observed cells)`` whatever the share of missing
    cells, with no ``models x items x nodes`` array. Models are processed in
    blocks of whole rows holding at most ``_BLOCK`` cells x nodes; within a
    block the per-model sums over cells are ``np.add.reduceat`` on contiguous
    segments and the sums over nodes are one small matrix product per
    statistic, so only six per-cell totals are summed by item (one sparse
    product) per iteration, not five per node. Blocks run on ``n_threads``
    threads (:func:`~.base.map_blocks`) and write disjoint slices, so the
    result does not depend on the thread count.
    """

    def __init__(self, Yo: np.ndarray, O: np.ndarray, n_quad: int, n_threads: int | None = 1):
        z, w = hermegauss(n_quad)
        self.Z2, self.Z3 = np.vstack([np.ones_like(z), z]), np.vstack([np.ones_like(z), z, z ** 2])
        self.z, self.log_w = z, np.log(w / w.sum()) + 0.5 * z ** 2
        self.Yo, self.O = Yo, O
        self.rows, self.cols = np.nonzero(O)                 # row-major: rows sorted
        self.y = Yo[self.rows, self.cols]
        self.shape = O.shape
        counts = np.bincount(self.rows, minlength=O.shape[0])
        if not counts.all():
            raise InputError("mml: every model needs at least one observed response")
        self.starts = np.concatenate([[0], np.cumsum(counts)])
        self.ones = np.bincount(self.cols, weights=self.y, minlength=O.shape[1])
        self.weights = np.ones(O.shape[0])
        # (items x cells) incidence: one sparse product sums every per-cell statistic by
        # item, 2x faster than a bincount per statistic (and the same sums, in cell order)
        self.to_items = csr_matrix((np.ones(self.y.size), (self.cols, np.arange(self.y.size))),
                                   shape=(O.shape[1], self.y.size))
        # blocks of whole rows with at most _BLOCK cells x nodes (one row at least)
        bounds, n = [0], O.shape[0]
        while bounds[-1] < n:
            lo = bounds[-1]
            hi = int(np.searchsorted(self.starts, self.starts[lo] + _BLOCK // z.size,
                                     side="right")) - 1
            bounds.append(min(n, max(hi, lo + 1)))
        self.blocks = list(zip(bounds[:-1], bounds[1:]))
        self.threads = resolve_threads(n_threads, len(self.blocks), self.y.size * z.size)

    def start(self, a: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _start(self.Yo, self.O)

    def per_model(self, values: np.ndarray) -> np.ndarray:
        return values

    def describe(self) -> str:
        return f"adaptive Gauss-Hermite, {self.z.size} nodes per model"

    def __call__(self, a: np.ndarray, d: np.ndarray, mu: np.ndarray,
                 sd: np.ndarray) -> dict[str, Any]:
        N = self.shape[0]
        new_mu, new_sd, ll = np.empty(N), np.empty(N), np.empty(N)
        # per cell: y t, sum_q w p (1, t), w p (1 - p) (1, t, t^2); rows of disjoint blocks
        cell = np.empty((self.y.size, 6))
        out = (new_mu, new_sd, ll, cell)
        # blocks write disjoint slices of ``out``: any thread count gives the same bits
        map_blocks(lambda block: self._block(*block, a, d, mu, sd, out), self.blocks,
                   self.threads)
        sums = self.to_items @ cell               # (M, 6) sums over each item's cells
        h0, h1, h2 = sums[:, 3], sums[:, 4], sums[:, 5]
        return {"mu": new_mu, "sd": new_sd, "g0": self.ones - sums[:, 1],
                "g1": sums[:, 0] - sums[:, 2], "h0": h0, "h1": h1, "h2": h2,
                "loglik": float(ll.sum())}

    def _block(self, lo: int, hi: int, a: np.ndarray, d: np.ndarray, mu: np.ndarray,
               sd: np.ndarray, out: tuple) -> None:
        """Posteriors of models ``lo:hi`` and their cells' node sums, written into ``out``."""
        new_mu, new_sd, ll, cell = out
        z, starts = self.z, self.starts
        c0, c1 = starts[lo], starts[hi]
        seg, counts = starts[lo:hi] - c0, np.diff(starts[lo:hi + 1])
        cols, y = self.cols[c0:c1], self.y[c0:c1]
        ac, dc = a[cols], d[cols]
        y_ac = np.add.reduceat(y * ac, seg)                       # sum_j y a_j per model
        y_dc = np.add.reduceat(y * dc, seg)
        m_c, s_c = np.repeat(mu[lo:hi], counts), np.repeat(sd[lo:hi], counts)
        base, slope = ac * m_c + dc, ac * s_c
        q = np.multiply.outer(z, slope)                           # eta, (Q, cells)
        q += base
        if np.max(np.abs(base) + z[-1] * np.abs(slope)) > 700:   # exp(700) < inf
            np.clip(q, -700.0, 700.0, out=q)
        # 1 - p = 1 / (1 + e^eta): exp, add, reciprocal are SIMD ufuncs, 4x expit's speed
        q = np.reciprocal(np.add(np.exp(q, out=q), 1.0, out=q), out=q)
        softplus_sum = -np.add.reduceat(np.log(q), seg, axis=1)    # (Q, models)
        theta = mu[lo:hi, None] + sd[lo:hi, None] * z[None, :]     # (models, Q)
        log_joint = (self.log_w + np.log(sd[lo:hi])[:, None] - 0.5 * theta ** 2
                     + (y_dc + mu[lo:hi] * y_ac)[:, None]
                     + (sd[lo:hi] * y_ac)[:, None] * z[None, :] - softplus_sum.T)
        top = log_joint.max(1)                      # log-sum-exp by hand: scipy's costs
        post = np.exp(log_joint - top[:, None])     # 0.5 ms a call on these small blocks
        total = post.sum(1)
        ll[lo:hi] = top + np.log(total)
        post /= total[:, None]
        new_mu[lo:hi] = m = (post * theta).sum(1)
        new_sd[lo:hi] = np.sqrt(np.maximum((post * theta ** 2).sum(1) - m ** 2, 1e-12))
        wp = np.repeat(post.T, counts, axis=1)                      # (Q, cells)
        wp *= 1.0 - q                                               # w p
        S = self.Z2 @ wp                                            # sum_q w p (1, z)
        wp *= q                                                     # w p (1 - p)
        H = self.Z3 @ wp
        block = cell[c0:c1]
        block[:, 0] = y * np.repeat(m, counts)
        block[:, 1] = S[0]
        block[:, 2] = m_c * S[0] + s_c * S[1]
        block[:, 3] = H[0]
        block[:, 4] = m_c * H[0] + s_c * H[1]
        block[:, 5] = m_c ** 2 * H[0] + 2 * m_c * s_c * H[1] + s_c ** 2 * H[2]


class _CompleteEStep:
    """E-step for a complete matrix: item sums shared by all models.

    Models are pooled by raw score for the Rasch model (its posterior depends on
    nothing else). Every iteration uses whichever node set is smaller: one
    uniform grid shared by all groups, or ``Q`` Gauss-Hermite nodes per group.
    Items are processed in chunks of at most ``_THREAD_CHUNK`` cells (items x
    nodes), fixed by the shape and run on ``n_threads`` threads; the per-node
    sums are added in chunk order, so any thread count gives the same bits. The
    probabilities are kept for the second pass up to ``_CHUNK`` cells.
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

    def start(self, a: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Laplace approximation (mode, curvature) of every group's posterior."""
        return self._laplace(a, d, self.hits @ a / self.weights)

    def _laplace(self, a: np.ndarray, d: np.ndarray,
                 t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior modes and ``1/sqrt(curvature)`` for person statistics ``t``.

        The log posterior ``t z - sum_j softplus(a_j z + d_j) - z^2 / 2`` is
        strictly concave; its mode solves a decreasing equation whose root lies
        in ``|z| <= sum |a_j|``, found by Newton's method safeguarded by bisection.
        """
        bound = np.abs(a).sum() + 1.0
        lo, hi = np.full(t.size, -bound), np.full(t.size, bound)
        z = np.zeros(t.size)
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
            done = np.max(np.abs(new - z) * np.sqrt(curv)) < 1e-6
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
                 sd: np.ndarray) -> dict[str, Any]:
        t = self.hits @ a / self.weights
        for attempt in range(4):
            nodes, log_base = self._nodes(mu, sd)
            flat = nodes.ravel()
            rows = max(1, _THREAD_CHUNK // flat.size)   # fixed by the shape, not the threads
            chunks = [slice(k, k + rows) for k in range(0, a.size, rows)]
            threads = resolve_threads(self.n_threads, len(chunks), a.size * flat.size)
            keep = a.size * flat.size <= _CHUNK         # keep P for the second pass

            def softplus_sums(c, flat=flat, keep=keep):
                softplus, P = softplus_sigmoid(a[c, None] * flat[None, :] + d[c, None])
                return softplus.sum(0), (P if keep else None)

            parts = map_blocks(softplus_sums, chunks, threads)
            S = parts[0][0].copy()
            for part in parts[1:]:                      # in chunk order: same bits any threads
                S += part[0]
            if nodes.ndim == 1:
                log_joint = log_base - S + np.outer(t, nodes)                 # (G, K)
            else:
                log_joint = log_base - S.reshape(nodes.shape) + t[:, None] * nodes
            ll_g = logsumexp(log_joint, axis=1)
            log_post = log_joint - ll_g[:, None]
            post = np.where(log_post < -700.0, 0.0, np.exp(np.maximum(log_post, -700.0)))  # no subnormals
            new_mu = (post * nodes).sum(1) if nodes.ndim == 2 else post @ nodes
            second = (post * nodes ** 2).sum(1) if nodes.ndim == 2 else post @ nodes ** 2
            new_sd = np.sqrt(np.maximum(second - new_mu ** 2, 1e-24))
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
        stats = {k: np.empty(a.size) for k in ("PN", "PNz", "h0", "h1", "h2")}

        def item_sums(i):
            c = chunks[i]
            P = parts[i][1] if keep else softplus_sigmoid(a[c, None] * flat[None, :]
                                                          + d[c, None])[1]
            H = P * (1 - P)
            stats["PN"][c], stats["PNz"][c] = P @ N, P @ Nz
            stats["h0"][c], stats["h1"][c], stats["h2"][c] = H @ N, H @ Nz, H @ (Nz * flat)

        map_blocks(item_sums, range(len(chunks)), threads)
        return {"mu": new_mu, "sd": new_sd, "g0": self.ones - stats["PN"],
                "g1": self.hits.T @ new_mu - stats["PNz"], "h0": stats["h0"],
                "h1": stats["h1"], "h2": stats["h2"],
                "loglik": float(self.weights @ ll_g + self.ones @ d)}
