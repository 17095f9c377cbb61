"""Elementary symmetric functions of Rasch item parameters, in log space.

``gamma_r(b) = sum_{|A| = r} exp(-sum_{j in A} b_j)`` (Eq. 3.6) is the
normaliser of the conditional likelihood ``P(Y_i | S_i, b)``. Its values span
thousands of orders of magnitude at LLM-benchmark sizes, so everything here is
returned as ``log gamma``.

Two algorithms:

* :func:`log_esf` - every order ``r = 0..M`` by the summation algorithm in log
  space, ``O(M^2)``; exact, the reference for small and medium ``M``.
* :func:`conditional_terms` (dense) and :func:`conditional_cells` (on the
  observed cells) - for each model only the order it needs,
  ``log gamma_{S_i}(b_{O_i})`` over its observed items ``O_i``, together with
  the conditional success probabilities
  ``pi_ij = P(Y_ij = 1 | S_i) = exp(-b_j) gamma_{S_i - 1}(b_{-j}) / gamma_{S_i}``
  that make the CML gradient. Under the tilt ``p_j = sigma(theta_i - b_j)`` at
  the saddle point ``sum_j p_j = S_i`` (``theta_i`` the ML ability) the score
  is Poisson-binomial and ``gamma_r = P(S = r) exp(-r theta) prod_j (1 +
  e^{theta - b_j})``. ``P(S = r) = (1/K) sum_k phi(t_k) exp(-i t_k r)`` on ``K``
  points of the circle is exact up to aliasing of the mass ``K`` scores away
  (``K >= 12 sd + 40``; Bernstein's inequality bounds it), and ``|phi(t)| <=
  exp(-v (1 - cos t))`` with ``v = sum p_j q_j`` lets all nodes where ``v (1 -
  cos t) > 40`` be dropped: 15-30 nodes per model at any size. The
  leave-one-out law is ``phi(t) / (q_j + p_j e^{it})``, so
  ``pi_j = p_j g(p_j) / A`` with ``A = K P(S = r)`` and
  ``g(p) = Re sum_k W_k / (p + (1 - p) e^{-i t_k})``, one smooth function of
  ``p`` for all items.

  Both sums over items are evaluated by Chebyshev expansion in ``p`` on
  ``[0, 1]`` when the kept nodes allow it: ``log(q + p e^{it})`` and ``g``
  are analytic in ``p`` except at ``p = 1/2 + i cot(t/2)/2``, so their
  Chebyshev coefficients fall like ``cot(t/4)^-c``. Then ``log phi(t_k) =
  sum_c a_c(t_k) sum_j T_c(2 p_j - 1)`` and ``g(p_j) = sum_c g_c T_c(2 p_j -
  1)``: two products with one ``C x n`` matrix of Chebyshev polynomials
  (``C`` ~ 20) instead of transcendental functions at every (node, item)
  pair, about 5x faster. Where the nodes reach too far round the circle
  (small ``v``: few items, or extreme ``p``), or a model has fewer than four
  items per term, the sums are taken node by node. Each evaluation bounds its
  relative truncation error: aliasing (Bernstein), dropped nodes (``e^-40``
  each) and the Chebyshev tail (a posteriori, from the last two coefficients);
  it is about 1e-15 in practice. Models (tilt groups) of similar size are
  evaluated in batches of padded arrays, on a thread pool for large designs.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
from scipy.special import expit

from evalcert.irt.base import map_blocks, resolve_threads
from evalcert.irt.estimation.pooling import group_rows

__all__ = ["log_esf", "conditional_terms", "conditional_cells", "ObservedSets"]

_DROP = 40.0        # nodes with |phi| <= exp(-40) are dropped
_ALIAS_SD = 12.0    # K >= 12 sd + 40 points on the circle
_CHEB_MAX = 64      # at most this many Chebyshev terms, else node by node
_CHEB_LOG_TOL = 60 * np.log(2.0)    # per-node Chebyshev error <= 2^-60 |phi| / n
_THREADED = 200_000  # observed cells from which batches run on all available cores
_BATCH = 2 ** 19     # elements of the largest (groups x nodes x items) array of a batch


def log_esf(difficulties: np.ndarray) -> np.ndarray:
    """``log gamma_r(b)`` for ``r = 0..M`` by the summation algorithm in log space.

    Examples
    --------
    >>> np.exp(log_esf(np.zeros(3)))   # binomial coefficients
    array([1., 3., 3., 1.])
    """
    b = np.asarray(difficulties, dtype=float)
    out = np.full(b.size + 1, -np.inf)
    out[0] = 0.0
    for j, lb in enumerate(-b):
        out[1:j + 2] = np.logaddexp(out[1:j + 2], out[:j + 1] + lb)
    return out


@dataclasses.dataclass(frozen=True)
class ObservedSets:
    """Each model's observed items as compressed rows, and models grouped by equal sets.

    Attributes
    ----------
    indptr : (n_models + 1,) int, model ``i``'s cells are ``indptr[i]:indptr[i + 1]``.
    rows, items : (n_cells,) int, the model and item of every observed cell (row-major).
    pattern : (n_models,) int, models with equal observed item sets share a value.

    Examples
    --------
    >>> sets = ObservedSets.from_mask(np.array([[1, 0, 1], [1, 0, 1], [0, 1, 1]], bool))
    >>> sets.indptr.tolist(), sets.items.tolist(), bool(sets.pattern[0] == sets.pattern[1])
    ([0, 2, 4, 6], [0, 2, 0, 2, 1, 2], True)
    """

    indptr: np.ndarray
    rows: np.ndarray
    items: np.ndarray
    pattern: np.ndarray

    @classmethod
    def from_mask(cls, observed: np.ndarray) -> "ObservedSets":
        """The sets of an (n_models, n_items) boolean mask, in O(n_models x n_items / 8)."""
        obs = np.asarray(observed, dtype=bool)
        rows, items = np.nonzero(obs)
        indptr = np.concatenate([[0], np.cumsum(obs.sum(1))])
        _, pattern = group_rows(obs, np.zeros(obs.shape[0], np.int64))
        return cls(indptr=indptr, rows=rows, items=items, pattern=pattern)

    @property
    def n_models(self) -> int:
        """Number of models (rows)."""
        return self.indptr.size - 1


def conditional_terms(difficulties: np.ndarray, observed: np.ndarray, scores: np.ndarray,
                      item_weights: np.ndarray | None = None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-model ``log gamma_{S_i}`` over observed items and ``pi_ij = P(Y_ij=1|S_i)``.

    The dense form of :func:`conditional_cells`.

    Parameters
    ----------
    difficulties : (M,) item difficulties ``b``.
    observed : (N, M) bool, the items each model answered.
    scores : (N,) int, ``0 < S_i <`` the number of observed items.
    item_weights : (M,) int, optional
        Column ``j`` stands for ``w_j`` items with the same difficulty and
        observed models (default 1); ``gamma`` runs over all of them.

    Returns
    -------
    log_gamma : (N,)
    pi : (N, M), zero on unobserved cells, for one item of each column;
        ``pi @ w`` equals ``S_i``.
    theta : (N,) ML abilities given ``b``.

    Examples
    --------
    >>> b = np.array([-1.0, 0.0, 1.0])
    >>> log_gamma, pi, theta = conditional_terms(b, np.ones((2, 3), dtype=bool),
    ...                                          np.array([1, 2]))
    >>> bool(np.allclose(log_gamma, log_esf(b)[[1, 2]]))  # the exact ESFs
    True
    >>> np.round(pi.sum(1), 6)  # each row of pi sums to the score
    array([1., 2.])
    """
    obs = np.asarray(observed, dtype=bool)
    sets = ObservedSets.from_mask(obs)
    log_gamma, pi_cells, theta, _ = conditional_cells(difficulties, sets, scores,
                                                      item_weights=item_weights)
    pi = np.zeros(obs.shape)
    pi[sets.rows, sets.items] = pi_cells
    return log_gamma, pi, theta


def conditional_cells(difficulties: np.ndarray, sets: ObservedSets, scores: np.ndarray,
                      item_weights: np.ndarray | None = None,
                      start: np.ndarray | None = None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """``log gamma_{S_i}``, ``pi`` on the observed cells, ML abilities and an error bound.

    Models with the same observed items whose scores lie within two standard
    deviations of the score law share one tilt, so the characteristic function
    is evaluated once per group. Work is ``O(observed cells x ~20)``.

    Parameters
    ----------
    difficulties : (M,) item difficulties ``b``.
    sets : the observed cells (:class:`ObservedSets`).
    scores : (N,) ``0 < S_i < sum of the weights of model i's items``.
    item_weights : (M,), optional, as in :func:`conditional_terms`.
    start : (N,), optional, abilities to start the saddle-point Newton from
        (the previous iteration's, in a CML solve).

    Returns
    -------
    log_gamma : (N,)
    pi : (n_cells,) ``P(Y_ij = 1 | S_i)`` in the order of ``sets.items``.
    theta : (N,) ML abilities given ``b``.
    error_bound : float, the largest relative truncation error of ``gamma`` and
        ``pi`` (aliasing, dropped nodes, Chebyshev tail; rounding comes on top).

    Examples
    --------
    >>> sets = ObservedSets.from_mask(np.array([[1, 1, 0], [1, 1, 1]], bool))
    >>> b = np.array([-1.0, 0.0, 1.0])
    >>> log_gamma, pi, theta, bound = conditional_cells(b, sets, np.array([1, 2]))
    >>> bool(np.isclose(log_gamma[1], log_esf(b)[2])), bool(bound < 1e-12)
    (True, True)
    >>> float(np.round(pi[:2].sum(), 12))      # model 0's pi sum to its score
    1.0
    """
    b = np.asarray(difficulties, dtype=float)
    scores = np.asarray(scores, dtype=float)
    w = np.ones(b.size) if item_weights is None else np.asarray(item_weights, dtype=float)
    theta, sd = _saddle_abilities(b, sets, scores, w, start)
    log_gamma = np.empty(scores.size)
    pi = np.empty(sets.items.size)
    sizes = np.diff(sets.indptr)
    weighted = np.add.reduceat(w[sets.items], sets.indptr[:-1])

    def run(batch: list[np.ndarray]) -> float:     # writes disjoint entries: thread-safe
        n_max, m_max = sizes[batch[-1][0]], max(len(members) for members in batch)
        model = np.full((len(batch), m_max), -1)      # the model of each (group, member) slot
        for g, members in enumerate(batch):
            model[g, :len(members)] = members
        used = model >= 0
        model = np.where(used, model, model[:, :1])    # padding: a copy of the first member
        head = model[:, 0]
        cols = np.arange(n_max)
        has = cols < sizes[head][:, None]              # (G, n): real items of each group
        index = sets.items[np.where(has, sets.indptr[head][:, None] + cols, 0)]
        tilts = theta[[members[len(members) // 2] for members in batch]]
        lg, pi_b, err = _batch_terms(b[index], np.where(has, w[index], 0.0), tilts,
                                     scores[model])
        log_gamma[model[used]] = lg[used]
        target = sets.indptr[model][:, :, None] + cols  # (G, m, n) destinations in pi
        keep = used[:, :, None] & has[:, None, :]
        pi[target[keep]] = pi_b[keep]
        return float(np.max(err[used]))

    batches = _batches(_tilt_groups(sets.pattern, scores, sd), sizes, weighted, sd ** 2)
    # every available core from _THREADED cells (NumPy releases the GIL in each batch)
    workers = (resolve_threads(None, len(batches), np.inf) if sets.items.size >= _THREADED
               else 1)
    bound = max(map_blocks(run, batches, workers))
    return log_gamma, pi, theta, bound


def _saddle_abilities(b: np.ndarray, sets: ObservedSets, scores: np.ndarray, w: np.ndarray,
                      start: np.ndarray | None, iters: int = 60
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Solve ``sum_{j in O_i} w_j sigma(theta_i - b_j) = S_i``; return ``theta`` and the sd of S.

    Safeguarded Newton on the observed cells (steps capped at 2 logits),
    stopped after a step below 1e-6 logits: the error is then below
    ``max |f''/2f'| step^2 <= step^2 / 2`` (``|sum p q (1 - 2p)| <= sum p q``).
    """
    wc, bc = w[sets.items], b[sets.items]
    rows, heads = sets.rows, sets.indptr[:-1]       # every model has cells: 0 < S_i < n_i
    if start is None:
        n_i = np.add.reduceat(wc, heads)
        theta = np.log(scores / (n_i - scores)) + np.add.reduceat(wc * bc, heads) / n_i
    else:
        theta = np.array(start, dtype=float)
    for _ in range(iters):
        wp = wc * expit(theta[rows] - bc)
        var = np.add.reduceat(wp - wp * wp / wc, heads)
        step = np.clip((np.add.reduceat(wp, heads) - scores) / np.maximum(var, 1e-300),
                       -2.0, 2.0)
        theta -= step
        if np.max(np.abs(step)) < 1e-6:
            break
    return theta, np.sqrt(var)


def _tilt_groups(pattern: np.ndarray, scores: np.ndarray, sd: np.ndarray) -> list[np.ndarray]:
    """Group models by observed pattern, then greedily by score within 2 sd of a tilt."""
    order = np.lexsort((scores, pattern))
    groups, start = [], 0
    for k in range(1, order.size + 1):
        first = order[start]
        if (k == order.size or pattern[order[k]] != pattern[first]
                or scores[order[k]] - scores[first] > 2 * sd[first] or sd[first] < 3):
            groups.append(order[start:k])
            start = k
    return groups


@functools.lru_cache(maxsize=None)
def _cheb_transform(C: int) -> np.ndarray:
    """``(C, C)`` matrix taking values at ``cos(pi (l + 1/2) / C)`` to Chebyshev coefficients."""
    k, l = np.arange(C)[:, None], np.arange(C)[None, :]
    out = 2.0 / C * np.cos(np.pi * k * (l + 0.5) / C)
    out[0] /= 2
    return out


def _batches(groups: list[np.ndarray], sizes: np.ndarray, weighted: np.ndarray,
             var: np.ndarray) -> list[list[np.ndarray]]:
    """Tilt groups in batches of one summation path and similar item counts.

    ``sizes``, ``weighted``: items and their total multiplicity per model;
    ``var``: the variance of each model's score law at its abilities. Each
    batch stays within ``_BATCH`` elements per (groups x nodes x items) array.
    """
    heads = np.array([members[len(members) // 2] for members in groups])
    _, t, keep = _circle(var[heads], weighted[heads])
    cheb = np.isfinite(_chebyshev_degree(t, keep, var[heads], weighted[heads], sizes[heads]))
    batches, current, members_max, path = [], [], 0, None
    for g in np.lexsort((sizes[heads], cheb)):
        members = groups[g]
        members_max = max(members_max, len(members))
        if current and (cheb[g] != path
                        or (len(current) + 1) * sizes[members[0]] * (64 + members_max) > _BATCH):
            batches.append(current)
            current, members_max = [], len(members)
        current.append(members)
        path = cheb[g]
    return batches + [current] if current else batches


def _batch_terms(b: np.ndarray, mult: np.ndarray, tilt: np.ndarray,
                 scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fourier inversion of the score law of G groups, each under one tilt for several scores.

    ``b``, ``mult``: (G, n) difficulties and multiplicities (0 on padding): column
    ``j`` stands for ``mult_j`` identical items, the characteristic function is
    a product over all of them and ``pi_j`` is for one of them. ``tilt``: (G,);
    ``scores``: (G, m). Returns ``log gamma`` (G, m), ``pi`` (G, m, n) and the
    relative error bound (G, m).
    """
    p, q = expit(tilt[:, None] - b), expit(b - tilt[:, None])
    var, n, mu = (mult * p * q).sum(1), mult.sum(1), (mult * p).sum(1)
    K, t, keep = _circle(var, n)
    weight = np.where(keep, np.where(t == 0, 1.0, 2.0), 0.0)   # conjugates folded in
    terms = _chebyshev_sums(p, mult, t, keep, var, n)
    if terms is None:
        terms = _node_sums(p, q, mult, t)
    log_phi, loo, tail = terms                      # log_phi: log phi(t) - i t mu
    W = (np.exp(log_phi[:, None, :] + 1j * (mu[:, None] - scores)[:, :, None] * t[:, None, :])
         * weight[:, None, :])                      # (G, m, nodes)
    A = W.real.sum(2)                               # K * P_tilt(S = r)
    g, g_tail = loo(W)                              # K * P(S_-j = r - 1) / p_j
    log_gamma = (np.log(A / K[:, None]) - scores * tilt[:, None]
                 - (mult * np.log(q)).sum(1)[:, None])
    # aliasing (Bernstein: mass K - |r - mu| scores away) and dropped nodes (each e^-40),
    # for the full and the leave-one-out law (variance one p q lower: factor e^0.5)
    u = np.maximum(K[:, None] - np.abs(scores - mu[:, None]), 0.0)
    alias = np.where((K > n)[:, None], 0.0,
                     np.minimum(1.0, 2 * np.exp(-u ** 2 / (2 * (var[:, None] + u / 3)))))
    dropped = (K - (2 * keep.sum(1) - 1)) * np.exp(-_DROP)
    err = (np.exp(0.5) * (K[:, None] * alias + dropped[:, None])
           + np.einsum("gml,gl->gm", np.abs(W), tail) + g_tail) / A
    return log_gamma, p[:, None, :] * g / A[:, :, None], err


def _node_sums(p: np.ndarray, q: np.ndarray, mult: np.ndarray, t: np.ndarray):
    """``log phi(t_k) - i t_k mu`` and the leave-one-out sums, node by node."""
    omc, sin = 2 * np.sin(t / 2)[:, :, None] ** 2, np.sin(t)[:, :, None]   # 1 - cos t
    p3, q3, w3 = p[:, None, :], q[:, None, :], mult[:, :, None]
    den = 1.0 - 2.0 * (p3 * q3) * omc               # |q + p e^{it}|^2, (G, nodes, n)
    log_phi = ((0.5 * np.log(den)) @ w3
               + 1j * ((np.arctan2(p3 * sin, 1.0 - p3 * omc) - t[:, :, None] * p3) @ w3))
    re, im = (1.0 - q3 * omc) / den, q3 * sin / den # 1 / (p + q e^{-it}) = (re + i im)

    def loo(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return W.real @ re - W.imag @ im, np.zeros(W.shape[:2])
    return log_phi[:, :, 0], loo, np.zeros(t.shape)


def _circle(var: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Points on the circle per law: ``K`` (G,), kept nodes ``t`` (G, L), 0 where not kept."""
    K = np.minimum(n + 1, np.ceil(_ALIAS_SD * np.sqrt(var) + 40)).astype(np.int64)
    K += 1 - K % 2                                  # odd K: no node at t = pi
    k = np.arange((int(K.max()) - 1) // 2 + 1)
    t = 2 * np.pi * k / K[:, None]
    keep = (k <= (K[:, None] - 1) // 2) & (var[:, None] * (1 - np.cos(t)) <= _DROP)
    L = int(keep.sum(1).max())                      # kept nodes are a prefix of k
    return K, np.where(keep, t, 0.0)[:, :L], keep[:, :L]


def _chebyshev_degree(t: np.ndarray, keep: np.ndarray, var: np.ndarray, n: np.ndarray,
                      count: np.ndarray) -> np.ndarray:
    """Chebyshev terms each law needs (G,); ``inf`` where node-by-node sums are cheaper.

    At node ``t`` the coefficients fall like ``cot(t/4)^-c`` (the Bernstein
    ellipse through the pole) and the error only matters relative to
    ``|phi(t)| <= exp(-v (1 - cos t))``.
    """
    positive = keep & (t > 0)
    log_rho = np.log(1.0 / np.tan(np.where(positive, t, 1.0) / 4))
    need = np.where(positive, (-var[:, None] * (1 - np.cos(t)) + np.log(n)[:, None]
                               + _CHEB_LOG_TOL) / log_rho, 0.0)
    C = np.ceil(np.maximum(need.max(1), 2.0)) + 2
    usable = positive.any(1) & (C <= _CHEB_MAX) & (C <= 3 * keep.sum(1)) & (4 * C <= count)
    return np.where(usable, C, np.inf)


def _chebyshev_sums(p: np.ndarray, mult: np.ndarray, t: np.ndarray, keep: np.ndarray,
                    var: np.ndarray, n: np.ndarray):
    """As :func:`_node_sums` by Chebyshev expansion in ``p``; None when too many terms."""
    C = float(np.max(_chebyshev_degree(t, keep, var, n, (mult > 0).sum(1))))
    if not np.isfinite(C):
        return None
    C = int(C)
    pc = (1.0 + np.cos(np.pi * (np.arange(C) + 0.5) / C)) / 2       # Chebyshev points in p
    omc, sin, t3 = 2 * np.sin(t / 2)[:, :, None] ** 2, np.sin(t)[:, :, None], t[:, :, None]
    den = 1.0 - 2.0 * (pc * (1.0 - pc)) * omc                        # |q + p e^{it}|^2
    to_coef = _cheb_transform(C).T
    a = ((0.5 * np.log(den)) @ to_coef
         + 1j * ((np.arctan2(pc * sin, 1.0 - pc * omc) - t3 * pc) @ to_coef))   # (G, nodes, C)
    T = np.empty((p.shape[0], C, p.shape[1]))
    T[:, 0] = 1.0
    T[:, 1] = 2.0 * p - 1.0
    twice = 2.0 * T[:, 1]
    for c in range(2, C):                                           # T_c = 2x T_c-1 - T_c-2
        np.multiply(twice, T[:, c - 1], out=T[:, c])
        T[:, c] -= T[:, c - 2]
    log_phi = (a @ (T @ mult[:, :, None]))[:, :, 0]                 # (G, nodes)
    tail = n[:, None] * np.abs(a[:, :, -2:]).sum(2)
    kernel_re, kernel_im = (1.0 - (1.0 - pc) * omc) / den, (1.0 - pc) * sin / den  # 1/(p+q e^-it)

    def loo(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        coef = (W.real @ kernel_re - W.imag @ kernel_im) @ to_coef  # (G, m, C)
        return coef @ T, np.abs(coef[:, :, -2:]).sum(2)
    return log_phi, loo, tail
