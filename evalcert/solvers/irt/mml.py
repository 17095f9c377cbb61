"""Marginal ML by EM with adaptive quadrature (Sec. 3.3.3, 3.4.2).

Abilities are integrated out (Eq. 3.7) under ``theta ~ N(0, 1)``; item logits
are ``eta = a_j theta + d_j``. With one common slope ``a`` this is the Rasch
model with ``theta = a z ~ N(0, a^2)`` and ``b_j = -d_j``; with free slopes it is
the 2PL. Deviation from the chapter's fixed nodes: with thousands of items the
posterior of ``theta_i`` is far narrower than the spacing of any fixed
Gauss-Hermite grid, so the quadrature follows the posteriors. Two E-steps:

* ``"adaptive"`` (any missingness): ``Q`` Gauss-Hermite nodes per model,
  re-centred at its posterior mean and scaled by its posterior sd every
  iteration (adaptive quadrature, Rabe-Hesketh, Skrondal and Pickles 2005).
  Cost ``O(Q x observed cells)`` per iteration: missing cells cost nothing.
* ``"grid"`` (every model answered every item): one uniform grid shared by all
  models, spaced at 2/3 of the narrowest posterior sd and spanning every
  posterior +-10 sd (within +-9 prior sd). The trapezoid rule on such a grid is
  exact to ``exp(-2 pi^2 (sd/h)^2) ~ 1e-19`` for smooth integrands, and the
  item sums ``sum_j log(1 + e^eta_j(z))`` are shared by all models, so the cost
  is ``O(K M)`` per iteration. In the Rasch model a model's posterior depends
  only on its raw score, so models are pooled by score as well.

The M-step is one vectorised Newton step on the expected complete-data
log-likelihood, whose stationary point is Sec. 3.4.2's "expected = observed"
equation, followed by a parameter-expansion step (PX-EM): the ability
distribution's mean and variance are fitted and mapped back into ``(a, d)``,
which removes EM's crawl along the overall scale (plain EM's rate there is
about ``1 - 10 / n_items``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy.sparse import csr_matrix
from scipy.special import expit, logsumexp

from evalcert.errors import ConvergenceError, InputError
from evalcert.solvers.irt.base import progress_bar, softplus_sigmoid
from evalcert.solvers.irt.louis import observed_information

__all__ = ["mml_em", "QUADRATURES"]

QUADRATURES = ("auto", "adaptive", "grid")
_MAX_GRID = 20_000      # nodes of the shared grid
_CHUNK = 1 << 23        # cells (items x nodes) per block of the complete-data E-step


def mml_em(Y: np.ndarray, observed: np.ndarray, *, common_slope: bool, n_quad: int,
           tol: float, max_iter: int, what: str, slope_prec: float = 0.0,
           quadrature: str = "auto", verbose: bool = False) -> dict[str, Any]:
    """Run EM to convergence; return slopes, intercepts, posteriors and SEs.

    ``slope_prec > 0`` adds a ``log a ~ N(0, 1/slope_prec)`` prior on free slopes
    (marginal MAP): an item that a few models split perfectly has no finite
    marginal ML slope. ``quadrature`` is ``"adaptive"``, ``"grid"`` (complete
    data only) or ``"auto"`` (grid when the data are complete).

    Returns
    -------
    dict with ``a`` (M,), ``d`` (M,), ``se_a``, ``se_d``, ``cov_ad`` (from the
    observed-data information, :mod:`~.louis`; ``se_full`` False when only
    each item's own block was inverted), ``eap`` and ``psd`` (posterior mean and sd of the
    standardised ability), ``loglik`` (marginal), ``n_iter`` and
    ``quadrature`` (a description of the E-step used).

    Examples
    --------
    Rasch data (one common slope), 200 models x 8 items of increasing difficulty:

    >>> rng = np.random.default_rng(0)
    >>> theta, b = rng.normal(size=200), np.linspace(-1, 1, 8)
    >>> Y = (rng.random((200, 8)) < 1 / (1 + np.exp(b - theta[:, None]))).astype(float)
    >>> out = mml_em(Y, np.ones(Y.shape, dtype=bool), common_slope=True, n_quad=15,
    ...              tol=1e-6, max_iter=500, what="demo")
    >>> bool(np.ptp(out["a"]) < 1e-12), out["eap"].shape  # one slope; an EAP per model
    (True, (200,))
    >>> bool(np.corrcoef(-out["d"] / out["a"], b)[0, 1] > 0.9)  # difficulties recovered
    True
    """
    if quadrature not in QUADRATURES:
        raise InputError(f"quadrature must be one of {QUADRATURES}, got {quadrature!r}")
    complete = bool(np.all(observed))
    if quadrature == "grid" and not complete:
        raise InputError("quadrature='grid' needs every model to answer every item; use "
                         "'adaptive' (or 'auto') with missing cells")
    O = observed.astype(float)
    Yo = Y * O
    share = (Yo.sum(0) + 0.5) / (O.sum(0) + 1.0)
    a = np.ones(Y.shape[1])
    d = np.log(share / (1 - share))
    if quadrature == "adaptive" or not complete:
        estep: _AdaptiveEStep | _CompleteEStep = _AdaptiveEStep(Yo, O, n_quad)
    else:
        estep = _CompleteEStep(Yo, pool_by_score=common_slope, n_quad=n_quad,
                               shared_only=quadrature == "grid")
    mu, sd = estep.start(a, d)
    weights = estep.weights / estep.weights.sum()
    change = np.inf
    bar = progress_bar(verbose, max_iter, what)
    for n_iter in range(1, max_iter + 1):
        bar.update(1)
        a_old, d_old = a, d
        s = estep(a, d, mu, sd)
        mu, sd = s["mu"], s["sd"]
        g0, g1, h0, h1, h2 = s["g0"], s["g1"], s["h0"], s["h1"], s["h2"]
        if common_slope:
            da = (g1.sum() - np.sum(h1 * g0 / h0)) / (h2.sum() - np.sum(h1 ** 2 / h0))
            dd = (g0 - h1 * da) / h0
        elif slope_prec > 0:    # Fisher scoring in log a under log a ~ N(0, 1/slope_prec)
            g1, h1 = a * g1 - slope_prec * np.log(a), a * h1
            h2 = a ** 2 * h2 + slope_prec
            det = h0 * h2 - h1 ** 2
            dd, dlog = (h2 * g0 - h1 * g1) / det, (h0 * g1 - h1 * g0) / det
            da = a * np.expm1(np.clip(dlog, -1, 1))
        else:
            det = h0 * h2 - h1 ** 2
            dd, da = (h2 * g0 - h1 * g1) / det, (h0 * g1 - h1 * g0) / det
        dd, da = np.clip(dd, -1, 1), np.clip(da, -1, 1)
        d, a = d + dd, a + da
        # PX-EM: fit z ~ N(m, v) too, then map back to N(0, 1) (Liu, Rubin and Wu 1998)
        m = weights @ mu
        v = weights @ (mu ** 2 + sd ** 2) - m ** 2
        d, a = d + a * m, a * np.sqrt(v)
        mu, sd = (mu - m) / np.sqrt(v), sd / np.sqrt(v)
        change = max(np.max(np.abs(d - d_old)), np.max(np.abs(a - a_old)))
        bar.set_postfix_str(f"change {change:.2g}")
        if change < tol:
            break
    else:
        bar.close()
        raise ConvergenceError(f"{what}: EM did not converge in {max_iter} iterations "
                               f"(last change {change:.3g}); raise max_iter or tol. EM "
                               "crawls when few models face many items (e.g. 12 x 40,000, "
                               "where the 2PL slopes are barely identified); the Rasch "
                               "model converges quickly there",
                               solver="em", status="max_iter")
    bar.close()
    eap, psd = estep.per_model(mu), estep.per_model(sd)
    info = observed_information(Yo, O, a, d, eap, psd, common_slope=common_slope,
                                slope_prec=0.0 if common_slope else slope_prec)
    return {"a": a, "d": d, "se_a": np.sqrt(info["var_a"]), "se_d": np.sqrt(info["var_d"]),
            "cov_ad": info["cov_ad"], "se_full": info["full"], "cov_d": info.get("cov_d"),
            "eap": eap, "psd": psd, "loglik": s["loglik"], "n_iter": n_iter,
            "quadrature": estep.describe()}


def _start(Yo: np.ndarray, O: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starting posteriors: standardised logits of the row proportions, sd ~ 2/sqrt(M_i)."""
    row = (Yo.sum(1) + 0.5) / (O.sum(1) + 1.0)
    mu = np.log(row / (1 - row))
    mu = (mu - mu.mean()) / max(mu.std(), 1e-3)
    return mu, np.minimum(1.0, 2.0 / np.sqrt(O.sum(1)))


class _AdaptiveEStep:
    """Per-model Gauss-Hermite nodes at the current posterior mean and sd.

    Works on the observed cells only (coordinates and ``np.bincount``), so an
    iteration costs ``O(Q x observed cells)`` whatever the share of missing cells.
    """

    def __init__(self, Yo: np.ndarray, O: np.ndarray, n_quad: int):
        z, w = hermegauss(n_quad)
        self.z, self.log_w = z, np.log(w / w.sum()) + 0.5 * z ** 2
        self.Yo, self.O = Yo, O
        self.rows, self.cols = np.nonzero(O)
        self.y = Yo[self.rows, self.cols]
        self.shape = O.shape
        self.ones = np.bincount(self.cols, weights=self.y, minlength=O.shape[1])
        self.weights = np.ones(O.shape[0])

    def start(self, a: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _start(self.Yo, self.O)

    def per_model(self, values: np.ndarray) -> np.ndarray:
        return values

    def describe(self) -> str:
        return f"adaptive Gauss-Hermite, {self.z.size} nodes per model"

    def __call__(self, a: np.ndarray, d: np.ndarray, mu: np.ndarray,
                 sd: np.ndarray) -> dict[str, Any]:
        N, M = self.shape
        rows, cols, y = self.rows, self.cols, self.y
        ac, dc = a[cols], d[cols]
        theta = mu[:, None] + sd[:, None] * self.z[None, :]                # (N, Q)
        log_joint = self.log_w + np.log(sd)[:, None] - 0.5 * theta ** 2
        log_joint += np.bincount(rows, weights=y * dc, minlength=N)[:, None]
        log_joint += theta * np.bincount(rows, weights=y * ac, minlength=N)[:, None]
        theta_t = np.ascontiguousarray(theta.T)                              # (Q, N)
        for q in range(self.z.size):
            softplus, _ = softplus_sigmoid(theta_t[q][rows] * ac + dc)
            log_joint[:, q] -= np.bincount(rows, weights=softplus, minlength=N)
        ll_i = logsumexp(log_joint, axis=1)
        post = np.exp(log_joint - ll_i[:, None])
        mu = (post * theta).sum(1)
        sd = np.sqrt(np.maximum((post * theta ** 2).sum(1) - mu ** 2, 1e-12))
        g0 = self.ones.copy()
        g1 = np.bincount(cols, weights=y * mu[rows], minlength=M)
        h0, h1, h2 = np.zeros(M), np.zeros(M), np.zeros(M)
        post_t = np.ascontiguousarray(post.T)
        for q in range(self.z.size):
            t = theta_t[q][rows]
            p = expit(t * ac + dc)
            wq = post_t[q][rows]
            wp, H = wq * p, wq * p * (1 - p)
            g0 -= np.bincount(cols, weights=wp, minlength=M)
            g1 -= np.bincount(cols, weights=wp * t, minlength=M)
            h0 += np.bincount(cols, weights=H, minlength=M)
            H *= t
            h1 += np.bincount(cols, weights=H, minlength=M)
            h2 += np.bincount(cols, weights=H * t, minlength=M)
        return {"mu": mu, "sd": sd, "g0": g0, "g1": g1, "h0": h0, "h1": h1, "h2": h2,
                "loglik": float(ll_i.sum())}


class _CompleteEStep:
    """E-step for a complete matrix: item sums shared by all models.

    Models are pooled by raw score for the Rasch model (its posterior depends on
    nothing else). Every iteration uses whichever node set is smaller: one
    uniform grid shared by all groups, or ``Q`` Gauss-Hermite nodes per group.
    Items are processed in chunks so no array exceeds ``_CHUNK`` cells.
    """

    def __init__(self, Yo: np.ndarray, *, pool_by_score: bool, n_quad: int, shared_only: bool):
        n = Yo.shape[0]
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
                p = expit(a[:, None] * z[None, c] + d[:, None])
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
            rows = max(1, _CHUNK // flat.size)
            chunks = [slice(k, k + rows) for k in range(0, a.size, rows)]
            S = np.zeros(flat.size)
            for c in chunks:
                softplus, P = softplus_sigmoid(a[c, None] * flat[None, :] + d[c, None])
                S += softplus.sum(0)
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
        for c in chunks:
            if len(chunks) > 1:
                P = softplus_sigmoid(a[c, None] * flat[None, :] + d[c, None])[1]
            H = P * (1 - P)
            stats["PN"][c], stats["PNz"][c] = P @ N, P @ Nz
            stats["h0"][c], stats["h1"][c], stats["h2"][c] = H @ N, H @ Nz, H @ (Nz * flat)
        return {"mu": new_mu, "sd": new_sd, "g0": self.ones - stats["PN"],
                "g1": self.hits.T @ new_mu - stats["PNz"], "h0": stats["h0"],
                "h1": stats["h1"], "h2": stats["h2"],
                "loglik": float(self.weights @ ll_g + self.ones @ d)}
