"""Bradley-Terry by maximum likelihood on aggregated counts, with a certificate.

Model. Each model ``k`` has a log-strength ``theta_k``; for a pair ``(i, j)`` with
``d = theta_i - theta_j``:

* ``ties="half"`` (the Chatbot Arena convention): a tie is half a win each way, so with
  ``a_i = wins_i + ties / 2`` the log-likelihood is
  ``sum a_i log sigma(d) + a_j log sigma(-d)``;
* ``ties="davidson"`` (Davidson 1970): ``P(i) : P(j) : P(tie) = e^{d/2} : e^{-d/2} : nu``,
  with ``eta = log nu`` fitted jointly.

Both negative log-likelihoods are sums over pairs of ``n * LSE(z) - c . z`` for logits
``z`` linear in ``(theta, eta)``, hence convex; they are fitted by Newton's method on the
centred subspace ``sum theta = 0`` with a backtracking line search, from counts
aggregated per pair: O(pairs) per step plus one K x K Cholesky.

Certificate (recomputed by evalcert at the returned point ``x``). The Hessian of
``LSE`` at ``z + u`` dominates ``exp(-4 ||u||_inf)`` times the Hessian at ``z``
(softmax probabilities change by at most ``exp(+-2 ||u||_inf)``); on the ball
``||y - x||_2 <= r`` every logit moves by at most ``r``, so the objective is
``mu(r) = exp(-4 r) lambda_min``-strongly convex there, with ``lambda_min`` the least
eigenvalue of the Hessian at ``x`` on the centred subspace, verified from below by a
Cholesky factorisation. If ``||grad|| < mu(r) r / 2`` the objective on the sphere
exceeds its value at ``x``, so the optimum exists, lies in the ball, and
``||x - x*|| <= ||grad|| / mu(r)``. This proves that the maximum likelihood estimate
exists and bounds the distance to it.

Existence. Without a prior the MLE exists iff the directed graph "i beat j at least
once" (a tie counts both ways under ``half``) is strongly connected (Zermelo 1929;
Ford 1957); under ``davidson`` a tie is an edge both ways too. :func:`check_mle_exists`
refuses a log where it fails, naming the models (never won, never lost, disconnected
comparison graph, or a group that beat everyone outside it). ``prior_sd=s`` adds a
Gaussian prior ``theta ~ N(0, s^2)`` (a ridge ``||theta||^2 / (2 s^2)``): the MAP
always exists.

Example
-------
>>> from evalcert.compare.counts import PairwiseCounts
>>> c = PairwiseCounts.from_battles(["a", "a", "b", "b", "c", "c"], ["b", "c", "c", "a", "a", "b"],
...                                 ["model_a", "model_a", "model_a", "model_a", "tie", "model_b"])
>>> fit = fit_bradley_terry(c)
>>> fit.certificate.proves_optimum, round(float(fit.theta.sum()), 12) == 0
(True, True)
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
from threadpoolctl import threadpool_limits

from evalcert.compare.counts import PairwiseCounts
from evalcert.errors import ConnectivityError, ConvergenceError, InputError
from evalcert.results import ResultMixin

__all__ = ["TIES", "BTCertificate", "BTFit", "check_mle_exists", "fit_bradley_terry"]

TIES = ("half", "davidson")
#: Newton stops when the gradient norm is below this times (1 + battles), or when rounding
#: allows no further progress
GRAD_TOL = 1e-13
MAX_ITER = 100
#: ... and a bootstrap refit at this (its distance to the optimum, ~ tol N / lambda_min, is
#: orders of magnitude below the bootstrap's spread)
BOOT_TOL = 1e-10
_LISTED = 8
#: most models of one fit (Newton holds a dense K x K Hessian)
MAX_MODELS = 5000


def _names(models, idx) -> str:
    idx = list(idx)
    shown = ", ".join(models[k] for k in idx[:_LISTED])
    return shown + (f" and {len(idx) - _LISTED} more" if len(idx) > _LISTED else "")


def check_mle_exists(counts: PairwiseCounts, ties: str = "half") -> None:
    """Refuse, naming the models, when the maximum likelihood estimate does not exist.

    Raises
    ------
    InputError
        Fewer than two models; a model that never won or never lost.
    ConnectivityError
        The comparison graph is disconnected, or one group of models beat every model
        outside it and never lost to one (the graph of wins is not strongly connected).

    Examples
    --------
    >>> c = PairwiseCounts.from_battles(["a", "b"], ["b", "c"], ["model_a", "model_a"])
    >>> check_mle_exists(c)
    Traceback (most recent call last):
    evalcert.errors.InputError: the maximum likelihood estimate does not exist: a never lost...
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    K = counts.n_models
    if K < 2:
        raise InputError(f"only one model ({_names(counts.models, range(K))}); ranking needs "
                         "battles between at least two models")
    per = counts.per_model()
    wins = per["wins"] + per["ties"]
    losses = per["losses"] + per["ties"]
    fix = ("; add battles, drop them, or fit with a prior (prior_sd=, --prior-sd) that "
           "keeps their strengths finite")
    never_lost, never_won = np.flatnonzero(losses == 0), np.flatnonzero(wins == 0)
    if len(never_lost) or len(never_won):
        parts = []
        if len(never_lost):
            parts.append(f"{_names(counts.models, never_lost)} never lost")
        if len(never_won):
            parts.append(f"{_names(counts.models, never_won)} never won")
        raise InputError("the maximum likelihood estimate does not exist: " + "; ".join(parts)
                         + fix)
    undirected = coo_matrix((np.ones(counts.n_pairs), (counts.i, counts.j)), shape=(K, K))
    n_comp, label = connected_components(undirected, directed=False)
    if n_comp > 1:
        sizes = np.bincount(label)
        small = np.flatnonzero(label != np.argmax(sizes))
        raise ConnectivityError(
            f"the comparison graph is disconnected ({n_comp} groups of models that never met "
            f"each other, sizes {sorted(sizes.tolist(), reverse=True)}): "
            f"{_names(counts.models, small)} never played the largest group; their strengths "
            "are not comparable - add battles between the groups or rank each group alone",
            component_sizes=[(int(s), 0) for s in sorted(sizes, reverse=True)])
    beat_i = (counts.wins_i + counts.ties) > 0      # edge i -> j: i beat (or tied) j
    beat_j = (counts.wins_j + counts.ties) > 0
    rows = np.concatenate([counts.i[beat_i], counts.j[beat_j]])
    cols = np.concatenate([counts.j[beat_i], counts.i[beat_j]])
    won = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(K, K))
    n_strong, strong = connected_components(won, directed=True, connection="strong")
    if n_strong > 1:
        # a source component: no edge enters it from outside (nobody outside beat it)
        entered = np.zeros(n_strong, bool)
        entered[strong[cols][strong[rows] != strong[cols]]] = True
        top = np.flatnonzero(strong == np.flatnonzero(~entered)[0])
        raise ConnectivityError(
            f"the maximum likelihood estimate does not exist: {_names(counts.models, top)} "
            "beat every model outside this group they met and never lost to one (the graph "
            "of wins is not strongly connected)" + fix,
            component_sizes=[(int(s), 0) for s in np.bincount(strong)])


@dataclasses.dataclass(frozen=True)
class BTCertificate(ResultMixin):
    """Evidence that a Bradley-Terry fit is the optimum, recomputed at the returned point.

    Attributes
    ----------
    grad_norm : float
        Euclidean norm of the gradient of the negative log-likelihood (centred subspace,
        and ``eta`` under Davidson).
    lambda_min : float
        Cholesky-verified lower bound on the least eigenvalue of the Hessian on that
        subspace.
    radius : float
        Radius ``r`` of the ball on which strong convexity ``mu = exp(-4 r) lambda_min``
        is used.
    distance_bound : float
        ``grad_norm / mu``: bound on the Euclidean distance to the optimum, valid when
        ``proves_optimum``.
    proves_optimum : bool
        ``grad_norm < mu r / 2``: the optimum exists and lies within ``distance_bound``.

    Examples
    --------
    >>> c = PairwiseCounts.from_battles(["a", "b", "c"], ["b", "c", "a"], ["model_a"] * 3)
    >>> cert = fit_bradley_terry(c).certificate
    >>> cert.proves_optimum, cert.distance_bound < 1e-8, cert.lambda_min > 0
    (True, True, True)
    """

    grad_norm: float
    lambda_min: float
    radius: float
    distance_bound: float
    proves_optimum: bool

    def summary(self) -> str:
        verdict = "PROVES" if self.proves_optimum else "does NOT prove"
        return (f"certificate {verdict} the optimum: ||grad|| = {self.grad_norm:.2e}, "
                f"lambda_min >= {self.lambda_min:.4g} (Cholesky-verified), "
                f"||theta - theta*|| <= {self.distance_bound:.2e}")


@dataclasses.dataclass(frozen=True)
class BTFit(ResultMixin):
    """One Bradley-Terry fit: centred log-strengths and its certificate.

    Examples
    --------
    >>> c = PairwiseCounts.from_battles(["a", "b", "c"], ["b", "c", "a"], ["model_a"] * 3)
    >>> fit = fit_bradley_terry(c)
    >>> [round(float(t), 6) + 0.0 for t in fit.theta], fit.eta is None
    ([0.0, 0.0, 0.0], True)
    """

    theta: np.ndarray
    eta: float | None
    loglik: float
    iterations: int
    certificate: BTCertificate
    seconds: float

    def summary(self) -> str:
        return (f"Bradley-Terry fit in {self.iterations} Newton steps, log-likelihood "
                f"{self.loglik:.6g}; " + self.certificate.summary())


def _problem(counts: PairwiseCounts, ties: str):
    table = counts.table().astype(float)
    if ties == "half":
        half = table[:, 2] / 2
        table = np.column_stack([table[:, 0] + half, table[:, 1] + half])
    return counts.i, counts.j, table


def _lse_terms(theta, eta, i, j, C, want_hessian=True):
    """Per-pair objective pieces: value, residuals r = n p - c, and Hessian entries."""
    d = (theta[i] - theta[j]) / 2
    n = C.sum(axis=1)
    if C.shape[1] == 2:
        z = np.column_stack([d, -d])
    else:
        z = np.column_stack([d, -d, np.full_like(d, eta)])
    zmax = z.max(axis=1, keepdims=True)
    e = np.exp(z - zmax)
    s = e.sum(axis=1, keepdims=True)
    lse = np.log(s[:, 0]) + zmax[:, 0]
    value = float(np.dot(n, lse) - np.einsum("pk,pk->", C, z))
    p = e / s
    r = n[:, None] * p - C
    return value, r, p, n


def _objective(x, i, j, C, K, lam, scale=None):
    return _grad_hess(x, i, j, C, K, lam, hessian=False, gradient=False, scale=scale)[0]


def _grad_hess(x, i, j, C, K, lam, hessian=True, gradient=True, scale=None):
    """Objective, gradient and Hessian at ``x`` (theta, then eta under Davidson).

    ``scale`` (half ties only): a multiplier of each row's logit (a judge's reliability);
    rows may then repeat a pair."""
    theta = x[:K]
    davidson = len(x) > K
    d = (theta[i] - theta[j]) / 2
    if scale is not None:
        d = d * scale
    n = C.sum(axis=1)
    ridge = 0.5 * lam * float(theta @ theta)
    if not davidson:
        # z = (d, -d): LSE = |d| + log1p(exp(-2|d|)), p_i - p_j = tanh(d), p_i p_j = (1 - tanh^2) / 4
        ad = np.abs(d)
        value = float(n @ (ad + np.log1p(np.exp(-2 * ad))) - (C[:, 0] - C[:, 1]) @ d) + ridge
        if not gradient:
            return value, None, None
        th = np.tanh(d)
        gd = (n * th - (C[:, 0] - C[:, 1])) / 2
        hdd = n * (1 - th * th) / 4
        if scale is not None:
            gd, hdd = gd * scale, hdd * scale * scale
    else:
        value, r, p, n = _lse_terms(theta, x[K], i, j, C)
        value += ridge
        if not gradient:
            return value, None, None
        gd = (r[:, 0] - r[:, 1]) / 2
        p0, p1 = p[:, 0], p[:, 1]
        hdd = n * (p0 + p1 - (p0 - p1) ** 2) / 4
    g = np.zeros(len(x))
    g[:K] = np.bincount(i, gd, K) - np.bincount(j, gd, K) + lam * theta
    if davidson:
        g[K] = r[:, 2].sum()
    if not hessian:
        return value, g, None
    # Hz = n (diag p - p p^T); u = (1/2, -1/2, 0), e = (0, 0, 1)
    H = np.zeros((len(x), len(x)))
    if scale is None:
        H[i, j] = -hdd                                   # pairs are unique, i < j
    else:
        np.add.at(H, (i, j), -hdd)
    H[:K, :K] += H[:K, :K].T
    H[np.arange(K), np.arange(K)] += np.bincount(i, hdd, K) + np.bincount(j, hdd, K) + lam
    if davidson:
        p2 = p[:, 2]
        hde = n * (-(p0 - p1) * p2) / 2
        col = np.bincount(i, hde, K) - np.bincount(j, hde, K)
        H[:K, K] = col
        H[K, :K] = col
        H[K, K] = float(np.dot(n, p2 * (1 - p2)))
    return value, g, H


def _centred(H, K):
    """``H + c 11^T / K`` on the theta block: invertible, same eigenvalues on sum = 0."""
    c = float(np.abs(H).sum(axis=1).max()) + 1.0
    A = H.copy()
    A[:K, :K] += c / K
    return A


def _lambda_min_verified(H, K) -> float:
    """A lower bound on lambda_min(H) on the centred subspace, verified by Cholesky."""
    A = _centred(H, K)
    lam = float(np.linalg.eigvalsh(A)[0])
    slack = 16 * A.shape[0] * np.finfo(float).eps * float(np.abs(A).sum(axis=1).max())
    m = lam * (1 - 1e-6) - slack
    for _ in range(20):
        if m <= 0:
            return 0.0
        try:
            np.linalg.cholesky(A - m * np.eye(len(A)))
            return m
        except np.linalg.LinAlgError:
            m = m / 2 - slack
    return 0.0


def certify(x, i, j, C, K, lam, scale=None) -> BTCertificate:
    """The certificate of the point ``x`` (see the module docstring); with ``scale``, logits
    move by at most ``max |scale| r`` on the ball of radius ``r``."""
    _, g, H = _grad_hess(x, i, j, C, K, lam, scale=scale)
    g = g.copy()
    g[:K] -= g[:K].mean()
    gn = float(np.linalg.norm(g))
    lmin = _lambda_min_verified(H, K)
    if lmin <= 0:
        return BTCertificate(float(gn), float(lmin), math.inf, math.inf, False)
    smax = 1.0 if scale is None or len(scale) == 0 else max(float(np.abs(scale).max()), 1e-300)
    r = max(4 * gn / lmin, 1e-300)
    mu = math.exp(-4 * smax * r) * lmin
    ok = gn < mu * r / 2 or gn == 0.0
    return BTCertificate(float(gn), float(lmin), float(r), float(gn / mu) if mu > 0 else math.inf,
                         bool(ok))


def _centred_norm(g, K) -> tuple[float, np.ndarray]:
    gc = g.copy()
    gc[:K] -= gc[:K].mean()
    return float(np.linalg.norm(gc)), gc


def _newton(x, i, j, C, K, lam, tol, max_iter=MAX_ITER, scale=None):
    """Damped Newton on the centred subspace; stops on ``||grad|| <= tol`` or when rounding
    allows no further decrease of the objective or of the gradient."""
    value, g, H = _grad_hess(x, i, j, C, K, lam, scale=scale)
    gn, gc = _centred_norm(g, K)
    for it in range(1, max_iter + 1):
        if gn <= tol:
            return x, value, it - 1
        step = np.linalg.solve(_centred(H, K), gc)
        step[:K] -= step[:K].mean()
        slope = float(gc @ step)
        x_new = x - step
        new = _grad_hess(x_new, i, j, C, K, lam, scale=scale)
        new_gn, new_gc = _centred_norm(new[1], K)
        if not (new[0] <= value - 1e-4 * slope or new_gn < 0.5 * gn):
            t = 0.5
            while t >= 1e-12:
                x_new = x - t * step
                if _objective(x_new, i, j, C, K, lam, scale) <= value - 1e-4 * t * slope:
                    break
                t /= 2
            if t < 1e-12:          # no decrease in rounding: we are at the optimum
                return x, value, it
            new = _grad_hess(x_new, i, j, C, K, lam, scale=scale)
            new_gn, new_gc = _centred_norm(new[1], K)
        x, (value, g, H), gn, gc = x_new, new, new_gn, new_gc
    if gn <= tol * 1e3:
        return x, value, max_iter
    raise ConvergenceError(f"Newton's method did not converge in {max_iter} steps "
                           f"(||grad|| = {gn:.2e})")


def fit_bradley_terry(counts: PairwiseCounts, *, ties: str = "half",
                      prior_sd: float | None = None, start: np.ndarray | None = None,
                      check: bool = True) -> BTFit:
    """Fit Bradley-Terry log-strengths (centred at 0) with a certificate.

    Parameters
    ----------
    counts : PairwiseCounts
        Outcome counts per pair.
    ties : {"half", "davidson"}
        A tie is half a win each way (Arena), or Davidson's tie parameter.
    prior_sd : float, optional
        Standard deviation of a Gaussian prior on every log-strength (MAP fit); without
        it, a log where the MLE does not exist is refused.
    start : numpy.ndarray, optional
        Warm start (theta, then eta under Davidson).
    check : bool
        Run :func:`check_mle_exists` first (skipped with a prior).

    Examples
    --------
    >>> c = PairwiseCounts.from_battles(["a", "b", "c", "a"], ["b", "c", "a", "c"],
    ...                                 ["model_a", "model_a", "model_a", "tie"])
    >>> fit = fit_bradley_terry(c)
    >>> fit.certificate.proves_optimum, fit.certificate.distance_bound < 1e-8
    (True, True)
    """
    if ties not in TIES:
        raise InputError(f"ties must be one of {TIES}, got {ties!r}")
    if prior_sd is not None and not (math.isfinite(prior_sd) and prior_sd > 0):
        raise InputError(f"prior_sd must be a finite number > 0, got {prior_sd!r}")
    if check and prior_sd is None:
        check_mle_exists(counts, ties)
    elif counts.n_models < 2:
        check_mle_exists(counts, ties)
    if ties == "davidson" and counts.ties.sum() == 0 and prior_sd is None:
        raise InputError("ties='davidson' needs at least one tie (its tie parameter has no "
                         "finite estimate otherwise); use ties='half'")
    if counts.n_models > MAX_MODELS:
        raise InputError(f"{counts.n_models} models; a Bradley-Terry fit here holds a dense "
                         f"K x K Hessian and takes at most {MAX_MODELS}: rank a subset")
    start_time = time.perf_counter()
    K = counts.n_models
    i, j, C = _problem(counts, ties)
    lam = 0.0 if prior_sd is None else 1.0 / prior_sd ** 2
    if start is None:
        x = np.zeros(K + (ties == "davidson"))
        if ties == "davidson":
            x[K] = math.log(max(C[:, 2].sum(), 0.5) / max(C[:, :2].sum(), 0.5))
    else:
        x = np.array(start, dtype=float)
    tol = GRAD_TOL * (1.0 + float(C.sum()))
    with threadpool_limits(1):      # K x K factorisations: threads only add overhead
        x, value, iterations = _newton(x, i, j, C, K, lam, tol)
        cert = certify(x, i, j, C, K, lam)
    theta = x[:K] - x[:K].mean()
    return BTFit(theta, float(x[K]) if ties == "davidson" else None, -value, iterations, cert,
                 time.perf_counter() - start_time)


def refit_counts(table: np.ndarray, i: np.ndarray, j: np.ndarray, K: int, ties: str,
                 lam: float, start: np.ndarray) -> np.ndarray | None:
    """Warm-started refit on reweighted counts (bootstrap); ``None`` when Newton fails.

    ``table`` holds (wins_i, wins_j, ties) per pair as in :meth:`PairwiseCounts.table`.
    """
    C = table.astype(float)
    if ties == "half":
        half = C[:, 2] / 2
        C = np.column_stack([C[:, 0] + half, C[:, 1] + half])
    try:
        x, _, _ = _newton(np.array(start, dtype=float), i, j, C, K, lam,
                          BOOT_TOL * (1.0 + float(C.sum())), max_iter=50)
    except (ConvergenceError, np.linalg.LinAlgError):
        return None
    x = x.copy()
    x[:K] -= x[:K].mean()
    return x
