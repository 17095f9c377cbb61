"""Latent ability densities for marginal ML: normal, empirical histogram, Davidian curves.

A marginal fit integrates the abilities out under a density ``g(theta)``. On
the fixed quadrature grid of :mod:`~.estimation.mml_direct` (nodes ``z_q``,
spacing ``h``) the density enters only through the log weights
``log w_q = log g(z_q) + log h`` (normalised to sum to 1), so a non-normal
density is a different set of weights, fitted with the items:

* ``normal``: ``N(0, 1)``, no parameters.
* ``histogram`` (Bock & Aitkin 1981, the empirical histogram, EH): one mass per
  node. Its EM step maximises ``sum_q N_q log w_q`` (``N_q`` the expected
  number of models at node ``q``) subject to ``sum w = 1``, mean 0 and variance
  1 (identification): by Lagrange, ``w_q = N_q / (N + l1 z_q + l2 (z_q^2 - 1))``
  with the two multipliers from a convex dual solved by Newton
  (:meth:`Histogram.update`). ``Q - 3`` free parameters.
* ``davidian-h`` (Woods & Lin 2009; Zhang & Davidian 2001), ``h = 1..4``:
  ``f(z) = P(z)^2 phi(z) / E[P(Z)^2]`` with ``P(z) = 1 + m_1 z + ... + m_h z^h``
  (``h`` free coefficients; ``m_0 = 1`` fixes the scale of ``P``), standardised
  to mean 0 and variance 1: ``g(theta) = s f(mu + s theta)`` with ``mu, s^2``
  the mean and variance of ``f`` (normal moments, exact). The coefficients are
  fitted jointly with the items (their score is ``sum_q N_q d log w_q / dm``,
  Fisher's identity).

The information criteria count ``n_parameters`` of the density on top of the
items'; :func:`choose_density` fits each candidate and keeps the lowest BIC.

Example
-------
>>> z = np.linspace(-6, 6, 61)
>>> w = np.exp(make_density("davidian-2").log_weights(z, np.array([0.5, 0.3])))
>>> round(float(w.sum()), 12), round(float(w @ z), 6) + 0.0, round(float(w @ z ** 2), 6)
(1.0, 0.0, 1.0)
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import numpy as np
from scipy.special import logsumexp

from evalcert.errors import ConvergenceError, InputError
from evalcert.results import ResultMixin, format_table

__all__ = ["LatentDensity", "Normal", "Histogram", "Davidian", "make_density", "DENSITIES",
           "DensityChoice", "choose_density", "fit_auto"]

#: names accepted by ``density=`` (``auto`` picks among the others by BIC)
DENSITIES = ("normal", "histogram", "davidian-1", "davidian-2", "davidian-3", "davidian-4",
             "auto")
_LOG_TINY = -700.0


class LatentDensity:
    """A latent density on a quadrature grid; ``params`` are its free parameters.

    Examples
    --------
    >>> z = np.linspace(-6, 6, 61)
    >>> round(float(np.exp(LatentDensity().log_weights(z)).sum()), 12)
    1.0
    """

    name = "normal"
    n_free = 0

    def __init__(self, params: np.ndarray | None = None):
        self.params = np.zeros(self.n_free) if params is None else np.asarray(params, float)

    @property
    def n_parameters(self) -> int:
        """Free parameters counted by AIC/BIC."""
        return int(self.params.size)

    def log_pdf(self, theta: np.ndarray, params: np.ndarray | None = None) -> np.ndarray:
        """Log density at any abilities (what EAP scoring of new models integrates)."""
        return -0.5 * np.asarray(theta, float) ** 2 - 0.5 * np.log(2 * np.pi)

    def log_weights(self, z: np.ndarray, params: np.ndarray | None = None) -> np.ndarray:
        """Normalised log weights on the grid ``z`` (``params`` default: the fitted ones)."""
        lw = self.log_pdf(z, params)
        return lw - logsumexp(lw)

    def weight_gradient(self, z: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """``sum_q N_q d log w_q / d params`` (central differences; ``params`` are few)."""
        grad = np.empty(self.params.size)
        for k in range(self.params.size):
            step = np.zeros(self.params.size)
            step[k] = h = 1e-6 * max(1.0, abs(self.params[k]))
            grad[k] = counts @ (self.log_weights(z, self.params + step)
                                - self.log_weights(z, self.params - step)) / (2 * h)
        return grad

    def update(self, z: np.ndarray, counts: np.ndarray) -> bool:
        """An EM step for densities not fitted jointly (the histogram); False: none."""
        return False

    def moments(self, z: np.ndarray) -> tuple[float, float]:
        """Mean and sd of the grid weights."""
        w = np.exp(self.log_weights(z))
        m = float(w @ z)
        return m, float(np.sqrt(max(w @ (z - m) ** 2, 0.0)))

    def to_dict(self) -> dict[str, Any]:
        return {"density": self.name, "n_parameters": self.n_parameters,
                "parameters": self.params.tolist()}


class Normal(LatentDensity):
    """``theta ~ N(0, 1)``.

    Examples
    --------
    >>> Normal().n_parameters
    0
    """


def _normal_moments(n: int) -> np.ndarray:
    """``E Z^k`` of ``Z ~ N(0, 1)`` for ``k = 0..n``: ``(k - 1)!!`` for even ``k``, else 0."""
    out = np.zeros(n + 1)
    out[0] = 1.0
    for k in range(2, n + 1, 2):
        out[k] = out[k - 2] * (k - 1)
    return out


class Davidian(LatentDensity):
    """Davidian curve of degree ``h``, standardised (Woods & Lin 2009).

    Examples
    --------
    >>> dc = Davidian(2, np.array([0.0, 0.0]))       # P = 1: the normal density
    >>> bool(np.allclose(dc.log_pdf(np.array([0.0, 1.5])), Normal().log_pdf(np.array([0.0, 1.5]))))
    True
    """

    def __init__(self, degree: int, params: np.ndarray | None = None):
        self.degree = self.n_free = int(degree)
        self.name = f"davidian-{self.degree}"
        self._mom = _normal_moments(2 * self.degree + 2)
        super().__init__(params)

    def _standardise(self, params: np.ndarray) -> tuple[np.ndarray, float, float, float]:
        m = np.concatenate([[1.0], params])
        k = np.arange(m.size)
        E = lambda shift: float(m @ self._mom[k[:, None] + k[None, :] + shift] @ m)  # noqa: E731
        norm = E(0)
        mu = E(1) / norm
        var = E(2) / norm - mu ** 2
        return m, norm, mu, float(np.sqrt(max(var, 1e-300)))

    def fit_counts(self, z: np.ndarray, counts: np.ndarray, n_starts: int = 24,
                   seed: int = 0) -> None:
        """Maximise ``sum_q N_q log w_q`` over the coefficients (the density's M-step).

        The criterion is flat at ``P = 1`` and multimodal, so the best of
        ``n_starts`` BFGS runs from a fixed set of starts (``seed``) is kept.
        """
        from scipy.optimize import minimize

        crit = lambda p: -float(counts @ self.log_weights(z, p))  # noqa: E731
        starts = np.random.default_rng(seed).normal(0.0, 0.5, (n_starts, self.degree))
        best = (crit(self.params), self.params)
        for p0 in np.vstack([self.params, starts]):
            res = minimize(crit, p0, method="BFGS", options={"gtol": 1e-6})
            if np.all(np.isfinite(res.x)) and res.fun < best[0]:
                best = (res.fun, res.x)
        self.params = np.asarray(best[1], float)

    def log_pdf(self, theta: np.ndarray, params: np.ndarray | None = None) -> np.ndarray:
        m, norm, mu, s = self._standardise(self.params if params is None else params)
        t = mu + s * np.asarray(theta, float)
        P = np.polyval(m[::-1], t)
        with np.errstate(divide="ignore"):
            logP2 = np.maximum(np.log(P * P), _LOG_TINY)
        return np.log(s) + logP2 - 0.5 * t * t - 0.5 * np.log(2 * np.pi) - np.log(norm)


class Histogram(LatentDensity):
    """Empirical histogram: one mass per grid node, mean 0 and variance 1 (``standardise``).

    ``standardise=False`` is the unconstrained histogram (masses ``N_q / N``):
    the model mirt (PyPI) fits with ``latent_density="empirical"``.

    Examples
    --------
    >>> z = np.linspace(-6, 6, 61)
    >>> h = Histogram(z)
    >>> counts = np.exp(-0.5 * (z - 1) ** 2 / 0.25) + np.exp(-0.5 * (z + 1) ** 2 / 0.25)
    >>> h.update(z, counts * 100)
    True
    >>> mean, sd = h.moments(z)
    >>> round(mean, 9) + 0.0, round(sd, 9)
    (0.0, 1.0)
    """

    name = "histogram"

    def __init__(self, z: np.ndarray, standardise: bool = True):
        self.standardise = standardise
        self._z = np.asarray(z, float)
        lw = -0.5 * np.asarray(z, float) ** 2
        super().__init__(lw - logsumexp(lw))

    @property
    def n_parameters(self) -> int:
        return int(self.params.size) - (3 if self.standardise else 1)

    def log_weights(self, z: np.ndarray, params: np.ndarray | None = None) -> np.ndarray:
        if z.size != self.params.size:
            raise InputError(f"the histogram has {self.params.size} masses, the grid "
                             f"{z.size} nodes")
        return self.params

    def log_pdf(self, theta: np.ndarray, params: np.ndarray | None = None) -> np.ndarray:
        """Log masses per unit interpolated between nodes (log-linear), Gaussian tails beyond.

        The grid ``[-6, 6]`` holds all but ``2e-9`` of a standardised density;
        beyond it the log density falls as ``-x^2/2`` from the end value.
        """
        z = self._z
        h = z[1] - z[0]
        lp = self.params - np.log(h)
        theta = np.asarray(theta, float)
        out = np.interp(theta, z, lp)
        below, above = theta < z[0], theta > z[-1]
        out = np.where(below, lp[0] - 0.5 * (theta ** 2 - z[0] ** 2), out)
        return np.where(above, lp[-1] - 0.5 * (theta ** 2 - z[-1] ** 2), out)

    def update(self, z: np.ndarray, counts: np.ndarray) -> bool:
        """EM step: maximise ``sum N_q log w_q`` (mean 0, variance 1 with ``standardise``)."""
        self._z = np.asarray(z, float)
        N = np.maximum(np.asarray(counts, float), 0.0)
        total = float(N.sum())
        if not self.standardise:
            with np.errstate(divide="ignore"):
                self.params = np.maximum(np.log(N / total), _LOG_TINY)
            return True
        # dual of max sum N log w s.t. A w = (1, 0, 1), A = rows (1, z, z^2): minimise
        # D(l) = -sum N log(a_q . l) + l . b over l with a_q . l > 0 (convex); w = N / (a . l)
        A = np.vstack([np.ones_like(z), z, z * z])
        b = np.array([1.0, 0.0, 1.0])
        lam = np.array([total, 0.0, 0.0])
        used = N > 0
        Au, Nu = A[:, used], N[used]

        def dual(l):
            den = l @ Au
            return np.inf if np.any(den <= 0) else float(-Nu @ np.log(den) + l @ b)

        value = dual(lam)
        for _ in range(200):
            den = lam @ Au
            w = Nu / den
            grad = b - Au @ w
            H = (Au * (w / den)) @ Au.T
            step = np.linalg.solve(H, -grad)
            t = 1.0
            while dual(lam + t * step) > value + 1e-4 * t * (grad @ step) and t > 1e-12:
                t *= 0.5
            lam = lam + t * step
            new = dual(lam)
            if abs(value - new) <= 1e-15 * max(1.0, abs(new)) or np.max(np.abs(grad)) < 1e-13:
                value = new
                break
            value = new
        with np.errstate(divide="ignore"):
            self.params = np.maximum(np.log(N / (lam @ A)), _LOG_TINY)
        self.params -= logsumexp(self.params)
        return True

    def maximise(self, z: np.ndarray, post: np.ndarray, tol: float = 1e-10) -> bool:
        """The masses that maximise the marginal log-likelihood, the items held fixed.

        ``post`` (models x nodes) are the posteriors under the current masses
        ``w``, so ``post_iq / w_q`` is each model's likelihood at node ``q`` up to
        a factor per model, and ``sum_i log(sum_q post_iq / w_q v_q)`` is the
        marginal log-likelihood in new masses ``v`` up to a constant: concave in
        ``v``, maximised subject to ``sum v = 1`` (and mean 0, variance 1 with
        ``standardise``), ``v >= 0`` by a log-barrier Newton method (an
        infeasible start, the barrier weight ``mu`` divided by 20 per stage) until
        ``mu`` times the number of nodes, the bound on what is left to gain
        (Boyd & Vandenberghe 2004, Sec. 11.2), is below ``tol`` per model. One
        call replaces the many EM steps (:meth:`update`) the masses need between
        item updates: on a 2000 x 20 bimodal 2PL, 6 item/mass cycles instead of
        332. A node whose mass underflowed (below ``e^-650``) keeps none, as under EM.

        Examples
        --------
        >>> z = np.linspace(-6, 6, 61)
        >>> h = Histogram(z)
        >>> rng = np.random.default_rng(0)
        >>> theta = np.concatenate([rng.normal(-1, 0.4, 300), rng.normal(1, 0.4, 300)])
        >>> L = np.exp(-0.5 * (theta[:, None] - z[None, :]) ** 2 / 0.3)   # likelihoods
        >>> post = L * np.exp(h.params)
        >>> h.maximise(z, post / post.sum(1, keepdims=True))
        True
        >>> w = np.exp(h.params)
        >>> round(float(w @ z), 9) + 0.0, round(float(w @ z ** 2), 9)
        (0.0, 1.0)
        """
        self._z = z = np.asarray(z, float)
        w_all = np.exp(self.params)
        keep = self.params > -650.0
        w = w_all[keep]
        A = np.asarray(post, float)[:, keep] / w
        A /= np.maximum(A.max(axis=1, keepdims=True), 1e-300)
        A = A[A.max(axis=1) > 0]
        n, q = A.shape
        zk = z[keep]
        C = np.vstack([np.ones_like(zk), zk, zk * zk]) if self.standardise else np.ones((1, q))
        b = np.array([1.0, 0.0, 1.0])[:C.shape[0]]
        w = np.maximum(w, 1e-12 * w.max())
        w /= w.sum()
        zeros = np.zeros((C.shape[0], C.shape[0]))

        def barrier(v: np.ndarray, mu: float) -> float:
            s = A @ v
            return float(np.log(s).sum() + mu * np.log(v).sum()) if np.all(s > 0) else -np.inf

        mu = 1e-3 * n / q
        for _ in range(400):                              # Newton steps, all stages
            s = A @ w
            As = A / s[:, None]
            g = As.sum(0) + mu / w
            H = -(As.T @ As)
            H[np.diag_indices(q)] -= mu / w ** 2
            residual = C @ w - b
            K = np.block([[H, C.T], [C, zeros]])
            try:
                dw = np.linalg.solve(K, np.concatenate([-g, -residual]))[:q]
            except np.linalg.LinAlgError:
                break
            falling = dw < 0
            t = min(1.0, 0.99 * float(np.min(-w[falling] / dw[falling]))) if falling.any() \
                else 1.0
            gain = float(g @ dw)                          # the Newton decrement when feasible
            if np.max(np.abs(residual)) < 1e-12:          # feasible: backtrack on the barrier
                start = barrier(w, mu)
                while t > 1e-12 and barrier(w + t * dw, mu) < start + 1e-4 * t * gain:
                    t *= 0.5
            w = w + t * dw
            if gain < 1e-12 * n and np.max(np.abs(C @ w - b)) < 1e-12:   # centred
                if mu * q < tol * n:
                    break
                mu /= 20.0
        out = np.full(z.size, _LOG_TINY)
        with np.errstate(divide="ignore"):
            out[keep] = np.maximum(np.log(np.maximum(w, 0.0)), _LOG_TINY)
        self.params = out - logsumexp(out)
        return True


def make_density(name: str, z: np.ndarray | None = None) -> LatentDensity:
    """The density named ``normal``, ``histogram`` (needs the grid ``z``) or ``davidian-h``.

    Examples
    --------
    >>> make_density("davidian-3").n_parameters, make_density("normal").name
    (3, 'normal')
    """
    if name == "normal":
        return Normal()
    if name == "histogram":
        if z is None:
            raise InputError("the histogram density needs the quadrature grid")
        return Histogram(z)
    if name.startswith("davidian-") and name[9:] in ("1", "2", "3", "4"):
        return Davidian(int(name[9:]))
    raise InputError(f"density must be one of {DENSITIES}, got {name!r}")


@dataclasses.dataclass(frozen=True)
class DensityChoice(ResultMixin):
    """Log-likelihood, AIC and BIC of each latent density tried; the lowest BIC is chosen.

    Examples
    --------
    >>> res = DensityChoice(("normal", "davidian-1"), (-10.0, -9.0), (4, 5), 20, "davidian-1")
    >>> [round(b, 3) for b in res.bic]
    [31.983, 32.979]
    """

    densities: tuple[str, ...]
    loglik: tuple[float, ...]
    n_parameters: tuple[int, ...]
    n_models: int
    chosen: str

    @property
    def aic(self) -> tuple[float, ...]:
        return tuple(float(2 * k - 2 * ll) for ll, k in zip(self.loglik, self.n_parameters))

    @property
    def bic(self) -> tuple[float, ...]:
        return tuple(float(k * np.log(self.n_models) - 2 * ll)  # plain floats for JSON
                     for ll, k in zip(self.loglik, self.n_parameters))

    def rows(self) -> list[tuple]:
        return [(d, ll, k, a, b, "chosen" if d == self.chosen else "")
                for d, ll, k, a, b in zip(self.densities, self.loglik, self.n_parameters,
                                          self.aic, self.bic)]

    def summary(self) -> str:
        return (f"latent density by BIC ({self.n_models} models): {self.chosen}\n"
                + format_table(self.rows(), ["density", "loglik", "parameters", "AIC", "BIC",
                                             ""]))

    def to_dict(self) -> dict[str, Any]:
        return {"chosen": self.chosen, "n_models": self.n_models,
                "densities": [{"density": d, "loglik": ll, "n_parameters": k, "aic": a,
                               "bic": b} for d, ll, k, a, b, _ in self.rows()]}


def choose_density(fit: Callable[[str], Any], n_models: int,
                   candidates: Sequence[str] = DENSITIES[:-1]) -> tuple[Any, DensityChoice]:
    """Fit ``fit(name)`` for each candidate density; return the lowest-BIC fit and the table.

    ``fit(name)`` returns a fitted estimator with ``loglik_`` and
    ``n_parameters_`` (items plus density). A candidate whose fit fails to
    converge is left out of the table (a note says so in the chosen fit).

    Examples
    --------
    >>> class Fit:
    ...     def __init__(self, ll, k): self.loglik_, self.n_parameters_ = ll, k
    >>> best, table = choose_density(lambda d: Fit(-100.0 + len(d), 10 + len(d)), 50,
    ...                              ["normal", "davidian-1"])
    >>> table.chosen, table.densities
    ('normal', ('normal', 'davidian-1'))
    """
    fits, failed = {}, []
    for name in candidates:
        try:
            fits[name] = fit(name)
        except ConvergenceError as exc:
            failed.append(f"{name}: {exc}")
    if not fits:
        raise ConvergenceError("no latent density could be fitted: " + "; ".join(failed),
                               solver="density", status="failed")
    names = tuple(fits)
    table = DensityChoice(names, tuple(float(f.loglik_) for f in fits.values()),
                          tuple(int(f.n_parameters_) for f in fits.values()), int(n_models),
                          chosen="")
    chosen = names[int(np.argmin(table.bic))]
    table = dataclasses.replace(table, chosen=chosen)
    best = fits[chosen]
    best.density_choice_ = table
    if failed:
        best.result_ = dataclasses.replace(best.result_, notes=best.result_.notes + tuple(
            f"density {f.split(':')[0]} not fitted: did not converge" for f in failed))
    return best, table


def fit_auto(estimator: Any, Y: Any, mask: Any = None) -> Any:
    """``estimator.fit(Y, mask)`` with each density, on the same grid; keep the lowest BIC.

    Fills ``estimator`` with the chosen fit's attributes (``density_choice_``
    holds the table) and returns it. Every candidate, the normal one included,
    is fitted on the fixed grid (:mod:`~.estimation.mml_direct`), so the
    log-likelihoods compare like with like.

    Examples
    --------
    >>> from evalcert.irt import TwoPL
    >>> rng = np.random.default_rng(0)
    >>> theta, b = rng.normal(size=300), rng.normal(size=6)
    >>> Y = (rng.random((300, 6)) < 1 / (1 + np.exp(b - theta[:, None]))).astype(float)
    >>> est = fit_auto(TwoPL(standard_errors=False), Y)   # TwoPL(density="auto").fit(Y)
    >>> est.density_choice_.densities[:2], est.latent_density_.name == est.density_choice_.chosen
    (('normal', 'histogram'), True)
    """
    from evalcert.irt.data import validate_responses

    def one(name: str) -> Any:
        est = estimator.clone()
        est.density = name
        est._on_grid = True
        return est.fit(Y, mask)
    best, table = choose_density(one, validate_responses(Y, mask, kind="binary").shape[0])
    best.result_ = dataclasses.replace(best.result_, notes=best.result_.notes + (
        f"latent density by BIC ({table.n_models} models): " + "; ".join(
            f"{d} loglik {ll:.2f}, {k} parameters, AIC {a:.2f}, BIC {b:.2f}{' (chosen)' * bool(c)}"
            for d, ll, k, a, b, c in table.rows()),))
    vars(estimator).update({k: v for k, v in vars(best).items() if k.endswith("_")})
    return estimator
