"""The 3PL model with a guessing floor, by marginal ML: for multiple-choice benchmarks.

    P(Y_ij = 1 | theta_i) = c_j + (1 - c_j) sigma(a_j theta_i + d_j),  b_j = -d_j / a_j

(Birnbaum 1968). A model that guesses among ``n`` choices still scores about
``1/n`` on items far beyond it, which the 2PL can only fit by flattening the
slopes. The floor ``c_j`` is either fixed for every item (``guessing=1/n``)
or estimated per item under a ``Beta(alpha, beta)`` prior
(``guessing_prior``, default ``(6, 16)``: mean 0.27, BILOG-MG's default for
four choices). Slopes get the 2PL's log-normal prior
``log a_j ~ N(0, 1/slope_prior)`` (default 4: sd 0.5, BILOG-MG's default;
:func:`~.marginal.slope_prior_terms`), which keeps them positive; ``slope_prior=0``
is pure ML in the slopes (either sign). The maximised criterion is

    l(a, d, c) - slope_prior/2 sum_j (log a_j)^2 - intercept_prior/2 sum_j d_j^2
    + sum_j [(alpha-1) log c_j + (beta-1) log(1-c_j)]

over ``(log a, d, logit c)``. The weak intercept prior (default sd 10) matters
for items that weaker models solve as often as stronger ones, or less often than
the floor: their likelihood keeps rising as ``d -> -inf`` (``P -> c`` for every
model), so without it L-BFGS crawls after them or parks them at ``b ~ 100``
(on ChemBench, 22 models x 2,720 items at ``c = 1/4``: 594 such items, and the
old fit stopped unconverged after 2,000 steps). They are listed in
``floor_items_`` and a note. Abilities are integrated out under
``theta ~ N(0, 1)`` and the marginal log-likelihood (plus log-priors) is
maximised directly by L-BFGS with its exact gradient (:mod:`~.marginal`);
``abilities_`` are EAPs with posterior sds as SEs; item SEs come from the
observed information (numerical Hessian of the exact gradient).

Without priors the 3PL marginal likelihood is often flat or unbounded in
``c`` (Baker & Kim 2004, Ch. 7): keep the prior unless there are many models.
``loglik_`` is the marginal log-likelihood without the priors.

Example
-------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> theta, b = rng.normal(size=400), rng.normal(size=10)
>>> p = 0.25 + 0.75 / (1 + np.exp(b - theta[:, None]))
>>> Y = (rng.random(p.shape) < p).astype(float)
>>> est = ThreePL(guessing=0.25).fit(Y)
>>> bool(np.all(est.guessing_ == 0.25))
True
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit, xlog1py, xlogy

from evalcert.errors import ConvergenceError, InputError
from evalcert.irt.base import IRTEstimator
from evalcert.irt.data import ResponseData, finite_items
from evalcert.irt.density import (DENSITIES, Histogram, LatentDensity, Normal, fit_auto,
                                  make_density)
from evalcert.irt.estimation.mml_direct import (SLOPE_PRIOR, MarginalData, check_slopes,
                                                maximise, scaled_bounds, slope_prior_terms)

__all__ = ["ThreePL"]


def _log_sigmoids(eta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``log sigma(eta)`` and ``log sigma(-eta)`` from one ``exp`` and one ``log1p`` pass.

    ``min(+-eta, 0) - log1p(exp(-|eta|))``: numpy's ``-logaddexp(0, -+eta)`` term by
    term (finite for any finite ``eta``, exact where ``sigma`` underflows), at a
    tenth of its cost (``logaddexp`` has no vectorised loop).

    Examples
    --------
    >>> [v.tolist() for v in _log_sigmoids(np.array([-800.0, 0.0, 40.0]))]
    [[-800.0, -0.6931471805599453, -4.248354255291589e-18], [0.0, -0.6931471805599453, -40.0]]
    """
    tail = np.log1p(np.exp(-np.abs(eta)))
    return np.minimum(eta, 0.0) - tail, np.minimum(-eta, 0.0) - tail


def _zero_where_none(term: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``term`` (a count ``n`` times a ratio) with 0 where ``n = 0`` and the ratio is not
    finite (``0 x inf``: no such answers); ``term`` itself when all is finite."""
    if not np.isfinite(term).all():
        term[n == 0] = 0.0
    return term


def _weighted_sum(n: np.ndarray, log_p: np.ndarray) -> float:
    """``sum n log p`` over the cells with ``n > 0`` (``log p = -inf`` where ``n = 0`` adds 0)."""
    if np.isfinite(log_p).all():
        return float(np.vdot(n, log_p))
    with np.errstate(invalid="ignore"):
        return float(np.sum(np.where(n > 0, n * log_p, 0.0)))


def _log_sum(floor: np.ndarray, span: np.ndarray, log_span: np.ndarray,
             log_s: np.ndarray) -> np.ndarray:
    """``log(floor + span * s)`` per item (rows) from ``log s``: a plain log where the
    floor is positive (the sum is at least the floor: no underflow), the sum of logs
    where it is 0 (exact where ``s`` underflows); for ``span > 0``.

    Examples
    --------
    >>> out = _log_sum(np.array([0.25, 0.0]), np.array([[0.75], [1.0]]), np.log([[0.75], [1.0]]),
    ...                np.array([[np.log(0.5)], [-800.0]]))
    >>> np.allclose(out, [[np.log(0.625)], [-800.0]], rtol=1e-15, atol=0)
    True
    """
    zero = floor <= 0
    if zero.all():
        return log_span + log_s
    with np.errstate(divide="ignore"):      # rows with span <= 0: the caller's plain sums
        out = np.log(floor[:, None] + span * np.exp(log_s))
    if zero.any():
        out[zero] = (log_span + log_s)[zero]
    return out



class ThreePL(IRTEstimator):
    """3PL estimator (marginal ML / MAP with a guessing floor).

    Parameters
    ----------
    method : {"mml"}
    guessing : float in [0, 1), optional
        Fix every item's floor at this value (e.g. ``1 / n_choices``); ``None``
        estimates one floor per item.
    guessing_prior : (alpha, beta) or None
        Beta prior of estimated floors; ``None`` = none (pure ML).
    slope_prior : float
        Precision ``p`` of the ``log a ~ N(0, 1/p)`` slope prior (default 4, sd 0.5);
        0 = none (pure ML, slopes of either sign; a slope that runs beyond what the
        grid resolves raises :class:`~evalcert.errors.ConvergenceError` naming the item).
    intercept_prior : float
        Precision of the ``N(0, 1/intercept_prior)`` prior on intercepts ``d_j``
        (default 0.01, sd 10); 0 = none. It keeps items that the data push to their
        floor finite (see ``floor_items_``).
    n_quad : int
        Nodes of the quadrature grid on [-6, 6] (see :mod:`~.marginal`).
    max_se_params : int
        Skip the numerical Hessian (and SEs) above this many item parameters.
    tol, max_iter, verbose, seed : gradient tolerance, L-BFGS budget, progress bar, unused seed.
    multistart : bool or None
        With estimated floors (or upper asymptotes), climb from several fixed
        starts and keep the highest optimum (:meth:`_race`; deterministic, never
        below the single start); ``False`` = the default start only; ``None``
        (default) = on when an estimated asymptote has no prior (pure ML, where
        the likelihood is multimodal in them), off under the Beta priors (on
        ChemBench the 3PL's three starts cost 2.1x one start and found the same
        optimum).
    slope_bounds : (low, high) or None
        Box the slopes (e.g. ``(0.1, 5)``, mirt's EM bounds); ``None`` = free.

    Attributes
    ----------
    abilities_ (EAP), abilities_se_ (posterior sd), discriminations_, difficulties_,
    guessing_ and their ``*_se_``, loglik_ (marginal), n_parameters_, result_,
    floor_items_ (names of the items with no finite ML intercept: the data put them
    at their floor for every model, so their difficulty is the intercept prior's).

    Examples
    --------
    Four-option multiple choice (guessing fixed at 1/4):

    >>> rng = np.random.default_rng(0)
    >>> theta, b = rng.normal(size=400), rng.normal(size=10)
    >>> p = 0.25 + 0.75 / (1 + np.exp(b - theta[:, None]))
    >>> Y = (rng.random(p.shape) < p).astype(float)
    >>> est = ThreePL(guessing=0.25).fit(Y)
    >>> est.result_.converged, est.discriminations_.shape
    (True, (10,))
    >>> bool(np.corrcoef(est.difficulties_, b)[0, 1] > 0.9)
    True
    """

    model_name = "3pl"
    methods = ("mml",)
    _n_columns = 3          # a, b, c (FourPL: and u)

    def __init__(self, method: str = "mml", *, guessing: float | None = None,
                 guessing_prior: tuple[float, float] | None = (6.0, 16.0),
                 slope_prior: float = SLOPE_PRIOR, intercept_prior: float = 0.01,
                 n_quad: int = 61, max_se_params: int = 400, tol: float = 1e-5,
                 max_iter: int = 2000, verbose: bool = False, standard_errors: bool = True,
                 seed: int = 0, density: str = "normal", multistart: bool | None = None,
                 slope_bounds: tuple[float, float] | None = None):
        super().__init__(method, lam=0.0, anchor_item=None, anchor_model=None, tol=tol,
                         max_iter=max_iter, seed=seed, verbose=verbose,
                         standard_errors=standard_errors)
        self.guessing = guessing
        self.guessing_prior = guessing_prior
        self.slope_prior = slope_prior
        self.intercept_prior = intercept_prior
        self.n_quad = n_quad
        self.max_se_params = max_se_params
        self.density = density
        self.multistart = multistart
        self.slope_bounds = slope_bounds
        # the upper asymptote: fixed at 1 here; FourPL frees it (one objective serves both)
        self.upper: float | None = 1.0
        self.upper_prior: tuple[float, float] | None = None
        self._density: LatentDensity = Normal()
        self._race_notes: list[str] = []

    def _check(self) -> None:
        if self.guessing is not None and not 0 <= self.guessing < 1:
            raise InputError(f"guessing must be in [0, 1) (e.g. 1/n_choices) or None, got "
                             f"{self.guessing!r}")
        for name, prior in (("guessing_prior", self.guessing_prior),
                            ("upper_prior", self.upper_prior)):
            if prior is not None and (len(prior) != 2 or min(prior) < 1):
                raise InputError(f"{name} must be (alpha, beta) with both >= 1, or None; "
                                 f"got {prior!r}")
        if not (self.slope_prior >= 0 and self.intercept_prior >= 0):
            raise InputError(f"slope_prior and intercept_prior must be >= 0, got "
                             f"{self.slope_prior!r} and {self.intercept_prior!r}")
        if self.density not in DENSITIES:
            raise InputError(f"density must be one of {DENSITIES}, got {self.density!r}")
        if self.slope_bounds is not None and not (
                len(self.slope_bounds) == 2 and self.slope_bounds[0] < self.slope_bounds[1]
                and (self.slope_bounds[0] > 0 or not self.slope_prior)):
            raise InputError(f"slope_bounds must be (low, high) with low < high (low > 0 "
                             f"with a slope prior), got {self.slope_bounds!r}")

    def fit(self, Y: Any, mask: np.ndarray | None = None) -> "ThreePL":
        """Fit to ``Y`` (models x items, 0/1, NaN = missing); ``mask`` True = held out.

        ``density="auto"`` fits every density of :data:`~.density.DENSITIES` and
        keeps the lowest BIC (table in ``density_choice_``).
        """
        self._check()
        if self.density == "auto":
            return fit_auto(self, Y, mask)
        super().fit(Y, mask)
        n_items = int(np.isfinite(self.difficulties_).sum())
        self.n_parameters_ = (n_items * (2 + (self.guessing is None) + (self.upper is None))
                              + self.latent_density_.n_parameters)
        return self

    @staticmethod
    def _boxed(prior: tuple[float, float] | None) -> bool:
        """An asymptote is its own parameter, boxed in [0, 1], unless a Beta prior with both
        exponents above 1 keeps it inside (then its logit: better scaled for L-BFGS)."""
        return prior is None or min(prior) <= 1

    def _asymptotes(self, x: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray, int]:
        """Floors ``c``, upper asymptotes ``u`` (fixed or from ``x``) and where ``x`` goes on."""
        k = 2 * m
        c, u = [], []
        for fixed, prior, out in ((self.guessing, self.guessing_prior, c),
                                  (self.upper, self.upper_prior, u)):
            if fixed is None:
                v = x[k:k + m]
                out.append(np.clip(v, 0.0, 1.0) if self._boxed(prior) else expit(v))
                k += m
            else:
                out.append(np.full(m, float(fixed)))
        return c[0], u[0], k

    def _curves(self, x: np.ndarray, m: int, z: np.ndarray):
        """Slopes, intercepts, asymptotes and the log-probabilities at the nodes (M x Q).

        Returns ``a, da, d, c, u, k, log_s, log_1s, log_p0, log_p1`` (``k``: where the
        density's parameters start in ``x``).
        """
        a, da, _, _ = slope_prior_terms(x[:m], self.slope_prior)
        d = x[m:2 * m]
        c, u, k = self._asymptotes(x, m)
        eta = a[:, None] * z[None, :] + d[:, None]                  # M x Q
        span = (u - c)[:, None]
        log_s, log_1s = _log_sigmoids(eta)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            log_span = np.log(np.maximum(span, 0.0))
            log_p1 = _log_sum(c, span, log_span, log_s)
            log_p0 = _log_sum(1.0 - u, span, log_span, log_1s)
        if np.any(span <= 0):                   # a falling curve (u < c): plain sums
            p1 = np.clip(c[:, None] + span * np.exp(log_s), 1e-300, 1.0)
            down = (span <= 0)[:, 0]
            log_p1[down], log_p0[down] = np.log(p1[down]), np.log1p(-np.minimum(
                p1[down], 1 - 1e-16))
        return a, da, d, c, u, k, log_s, log_1s, log_p0, log_p1

    def _objective(self, x: np.ndarray, md: MarginalData, n_items: int,
                   counts: np.ndarray | None = None):
        """Negated penalised marginal log-likelihood and its gradient.

        ``x = (slopes (log a with a slope prior), d, [c], [u], [density])``;
        ``P = c + (u - c) s``, ``s = sigma(a z + d)``, with ``n0, n1`` the
        expected counts at each node: ``dl/d eta = (u - c) s (1 - s) (n1 / P - n0
        / (1 - P))``, ``dl/dc = (1 - s) (n1 / P - n0 / (1 - P))``, ``dl/du = s
        (n1 / P - n0 / (1 - P))``. Log-probabilities are sums in log space, so
        ``s / P`` stays exact where ``s`` underflows at a zero floor.

        With ``counts`` (M x Q x 2) given, the E-step is skipped: the value is EM's
        surrogate, the expected complete-data log-likelihood ``sum n log P`` (plus the
        log-priors) at those counts, separable over items (the density held fixed).
        """
        m, z = n_items, md.z
        density = self._density
        k = 2 * m + m * ((self.guessing is None) + (self.upper is None))
        if density.n_free and counts is None:
            md.logw = density.log_weights(z, x[k:])
        _, da, d, c, u, k, log_s, log_1s, log_p0, log_p1 = self._curves(x, m, z)
        _, _, log_prior, g_prior = slope_prior_terms(x[:m], self.slope_prior)
        span = (u - c)[:, None]
        post = None
        if counts is None:
            logp = np.stack([log_p0, log_p1], axis=2)
            loglik, post, counts = md.evaluate(logp)
        n0, n1 = counts[:, :, 0], counts[:, :, 1]
        if post is None:
            loglik = _weighted_sum(n0, log_p0) + _weighted_sum(n1, log_p1)
        with np.errstate(over="ignore", invalid="ignore"):
            # s (1 - s) / P and s (1 - s) / (1 - P): at most 1 / (u - c), finite
            both = log_s + log_1s
            g_eta = span * _zero_where_none(n1 * np.exp(both - log_p1), n1)
            g_eta -= span * _zero_where_none(n0 * np.exp(both - log_p0), n0)
        grad = [(g_eta @ z) * da + g_prior, g_eta.sum(1) - self.intercept_prior * d]
        value = loglik + log_prior - 0.5 * self.intercept_prior * np.sum(d ** 2)
        for fixed, v, log_t, prior in ((self.guessing, c, log_1s, self.guessing_prior),
                                       (self.upper, u, log_s, self.upper_prior)):
            if fixed is not None:
                continue
            with np.errstate(over="ignore", invalid="ignore"):     # 0 x inf: no such answers
                g = (_zero_where_none(n1 * np.exp(log_t - log_p1), n1)
                     - _zero_where_none(n0 * np.exp(log_t - log_p0), n0)).sum(1)
            if prior is not None:
                al, be = prior
                value += np.sum(xlogy(al - 1, v) + xlog1py(be - 1, -v))
                with np.errstate(divide="ignore", invalid="ignore"):
                    g = (g + (np.where(v > 0, (al - 1) / v, 0.0) if al > 1 else 0.0)
                         - (np.where(v < 1, (be - 1) / (1 - v), 0.0) if be > 1 else 0.0))
            grad.append(g if self._boxed(prior) else g * v * (1 - v))
        if density.n_free:
            grad.append(self._density_score(x[k:], z, post.sum(0)) if post is not None
                        else np.zeros(density.n_free))
        if post is not None:
            self._last = (loglik, post, logp, counts)
        return -value, -np.concatenate(grad)

    def _surrogate_scale(self, v: np.ndarray, md: MarginalData, m: int,
                         counts: np.ndarray, g0: np.ndarray) -> np.ndarray:
        """``1 / sqrt`` of the diagonal of EM's surrogate Hessian at the item parameters ``v``.

        Forward differences of the surrogate's gradient (counts fixed: no E-step);
        one block (all slopes, all intercepts, ...) at a time, since the
        surrogate is separable over items. The density is held fixed. ``g0``
        is the gradient at ``v`` of the marginal objective whose E-step gave
        ``counts``: the surrogate's there (the same sums of the same counts).
        """
        density, self._density = self._density, Normal()
        try:
            h = np.empty(v.size)
            for block in range(v.size // m):
                step = np.zeros(v.size)
                span = slice(block * m, (block + 1) * m)
                step[span] = 1e-6 * np.maximum(1.0, np.abs(v[span]))
                h[span] = ((self._objective(v + step, md, m, counts)[1] - g0)[span]
                           / step[span])
        finally:
            self._density = density
        ok = np.isfinite(h) & (h > 0)
        top = np.max(h[ok]) if ok.any() else 1.0
        return 1 / np.sqrt(np.where(ok, np.maximum(h, 1e-6 * top), top))

    def _scale(self, x: np.ndarray, md: MarginalData, m: int, counts: np.ndarray,
               grad: np.ndarray) -> np.ndarray:
        """L-BFGS's scale at ``x`` (E-step ``counts`` and objective gradient ``grad`` there):
        the surrogate's, and 1 for the density's parameters."""
        n_item = x.size - self._density.n_free
        scale = np.ones(x.size)
        scale[:n_item] = self._surrogate_scale(x[:n_item], md, m, counts, grad[:n_item])
        return scale

    def _other_starts(self, sub: ResponseData, m: int) -> list[np.ndarray]:
        """The multi-start's other starting points: free floors at ``{0, .25}`` x free upper
        asymptotes at ``{.85, 1}`` (a fixed design: deterministic), slopes 1."""
        floors = [None] if self.guessing is not None else [0.0, 0.25]
        tops = [None] if self.upper is not None else [0.85, 1.0]
        lo, hi = self.slope_bounds if self.slope_bounds is not None else (-np.inf, np.inf)
        slope = float(np.clip(1.0, max(lo, 1e-3), hi))
        return [self._start(sub, m, c, u, slope)[0] for c in floors for u in tops]

    def _race(self, fun, starts: list[np.ndarray], md: MarginalData, m: int,
              bounds: tuple[np.ndarray, np.ndarray], check) -> tuple[np.ndarray, int]:
        """The multi-start: climb from every start for a short budget, then on to convergence
        from the first start (the single start's path) and from the highest other;
        return the highest point reached and the iterations spent.

        The first start always runs to the end, so the multi-start never ends below
        the single start. Each climb is L-BFGS-B on parameters scaled by the
        complete-data information's diagonal at its start. A start whose slope runs
        away (``check`` raises) is dropped unless it was above every finite optimum
        when it did (then the error stands: the likelihood's supremum is there).
        ``fun`` is :meth:`_fit`'s objective, which leaves its E-step in ``self._last``
        and reuses its last point (so the scale costs no E-step of its own).
        """
        from scipy.optimize import minimize

        def climb(x0: np.ndarray, budget: int) -> tuple[np.ndarray, float, int, Exception | None]:
            g0 = fun(x0)[1]
            sc = self._scale(x0, md, m, self._last[3], g0)
            y0, last = x0 / sc, [x0]

            def each(y: np.ndarray) -> None:
                last[0] = y * sc
                if check is not None:
                    check(y * sc)

            def scaled(y: np.ndarray) -> tuple[float, np.ndarray]:
                value, grad = fun(x0 if np.array_equal(y, y0) else y * sc)
                return value, grad * sc

            try:
                res = minimize(scaled, y0, jac=True, method="L-BFGS-B", callback=each,
                               bounds=scaled_bounds(bounds, sc),
                               options={"maxiter": budget, "maxfun": 4 * budget,
                                        "gtol": self.tol, "ftol": 1e-15, "maxcor": 30})
            except ConvergenceError as exc:
                return last[0], -fun(last[0])[0], budget, exc
            x = np.clip(res.x * sc, bounds[0], bounds[1])
            return x, -fun(x)[0], int(res.nit), None

        def stationary(x: np.ndarray) -> bool:
            g = fun(x)[1]
            out = ((x <= bounds[0]) & (g > 0)) | ((x >= bounds[1]) & (g < 0))
            return bool(np.max(np.abs(np.where(out, 0.0, g))) <= 1e2 * self.tol)

        def finish(x: np.ndarray, value: float, best: float | None):
            """Climb in chunks of 200 (each rescaled) until stationary; give up on a start
            whose last chunk's gain, three times over, would not lift it above ``best``."""
            spent = 0
            while spent < self.max_iter:
                x1, v1, nit, err = climb(x, min(200, self.max_iter - spent))
                spent += nit
                if err is not None:
                    return x1, v1, spent, err
                gain, x, value = v1 - value, x1, max(v1, value)
                if (nit < 200 and stationary(x)) or gain <= 0:
                    break
                if best is not None and value + 3 * gain < best + 1e-6 * md.codes.shape[0]:
                    break
            return x, value, spent, None

        spent, runs = 0, []
        for k, x0 in enumerate(starts):
            x, value, nit, err = climb(x0, 40)
            spent += nit
            runs.append((value, k, x, err))
        failed = [r for r in runs if r[3] is not None]
        live = [r for r in runs if r[3] is None]
        finalists = [r for r in live if r[1] == 0] + sorted(
            (r for r in live if r[1] != 0), key=lambda r: -r[0])[:1]
        best = None
        for value, k, x, _ in finalists:
            x, value, nit, err = finish(x, value, None if best is None else best[0])
            spent += nit
            if err is not None:
                failed.append((value, k, x, err))
            elif best is None or value > best[0]:
                best = (value, x)
        top_failed = max(failed, key=lambda r: r[0], default=None)
        if top_failed is not None and (best is None or top_failed[0] > best[0]):
            raise top_failed[3]
        if failed:
            self._race_notes.append(
                f"{len(failed)} of {len(starts)} starts were dropped, their slopes running "
                f"away below the optimum kept (e.g. {str(failed[0][3]).split(': ', 1)[-1][:120]})")
        return best[1], spent

    def _density_score(self, params: np.ndarray, z: np.ndarray, counts: np.ndarray):
        saved = self._density.params
        self._density.params = params
        try:
            return self._density.weight_gradient(z, counts)
        finally:
            self._density.params = saved

    def _start(self, sub: ResponseData, m: int, floor: float | None = None,
               top: float | None = None, slope: float = 1.0
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Starting point and box bounds: asymptotes at their prior modes (else 0.2 / 0.95),
        or at ``floor`` / ``top`` where free; slopes ``slope``; intercepts from each
        item's share of right answers."""
        def mode(fixed, prior, default, given):
            if fixed is not None:
                return float(fixed)
            if given is not None:
                return given if self._boxed(prior) else float(np.clip(given, 0.02, 0.98))
            return (prior[0] - 1) / max(sum(prior) - 2, 1) if prior is not None else default
        c0 = mode(self.guessing, self.guessing_prior, 0.2, floor)
        u0 = mode(self.upper, self.upper_prior, 0.95, top)
        share = ((sub.values * sub.observed).sum(0) + 0.5) / (sub.observed.sum(0) + 1.0)
        inside = np.clip((share - c0) / (u0 - c0), 0.02, 0.98)
        x0 = [np.full(m, np.log(slope) if self.slope_prior else slope),
              np.log(inside / (1 - inside))]
        lower, upper = [np.full(2 * m, -np.inf)], [np.full(2 * m, np.inf)]
        if self.slope_bounds is not None:       # a box on the slopes (as mirt's [0.1, 5])
            lo, hi = (np.log(v) if self.slope_prior else v for v in self.slope_bounds)
            lower[0][:m], upper[0][:m] = lo, hi
            x0[0] = np.clip(x0[0], lo, hi)
        for fixed, v0, prior in ((self.guessing, c0, self.guessing_prior),
                                 (self.upper, u0, self.upper_prior)):
            if fixed is None:
                boxed = self._boxed(prior)
                x0.append(np.full(m, v0 if boxed else np.log(v0 / (1 - v0))))
                lower.append(np.full(m, 0.0 if boxed else -np.inf))
                upper.append(np.full(m, 1.0 if boxed else np.inf))
        n = self._density.n_free
        x0.append(self._density.params[:n].copy())
        lower.append(np.full(n, -np.inf))
        upper.append(np.full(n, np.inf))
        return np.concatenate(x0), np.concatenate(lower), np.concatenate(upper)

    def _fit(self, data: ResponseData) -> dict[str, Any]:
        keep_c = finite_items(data)
        sub = data.take(slice(None), keep_c)
        codes = np.where(sub.observed, sub.values, -1).astype(int)
        md = MarginalData(codes, 2, self.n_quad)
        m = sub.shape[1]
        self._density = make_density(self.density, md.z)
        md.logw = self._density.log_weights(md.z)
        what = f"{self.model_name} mml"
        x, lower, upper = self._start(sub, m)
        limit = 2 / (md.z[1] - md.z[0])
        boxed = self.slope_bounds is not None and max(map(abs, self.slope_bounds)) <= limit
        check = None if self.slope_prior or boxed else lambda x: check_slopes(
            x[:m], x[m:2 * m], what=what, item_names=tuple(sub.item_names),
            limit=limit, solver="L-BFGS-B")
        memo: list[tuple] = []

        def fun(v: np.ndarray) -> tuple[float, np.ndarray]:
            """The objective; the last point's (value, gradient, E-step) is reused: the race's
            start serves its scale and L-BFGS's first value, its end ``maximise``'s start."""
            if not (memo and np.array_equal(memo[0][0], v) and np.array_equal(memo[0][1],
                                                                               md.logw)):
                out = self._objective(v, md, m)          # (a Davidian density sets md.logw)
                memo[:] = [(v.copy(), md.logw.copy(), out, self._last)]
            self._last = memo[0][3]
            return memo[0][2]
        n_iter, em_steps, notes = 0, 0, []
        if self._density.n_free:
            # Davidian: the likelihood is flat at P = 1 (a stationary point by symmetry) and
            # multimodal in the coefficients; start the items at the normal fit and the
            # coefficients at the best of several starts of the density's own M-step
            density, self._density = self._density, Normal()
            md.logw = self._density.log_weights(md.z)
            k = x.size - density.n_free
            out = maximise(lambda v: self._objective(v, md, m), x[:k], tol=self.tol,
                           max_iter=self.max_iter, what=what, max_se_params=-1, check=check,
                           bounds=(lower[:k], upper[:k]))
            x[:k], n_iter = out["x"], out["n_iter"]
            self._density = density
            density.fit_counts(md.z, self._last[1].sum(0))
            x[k:] = density.params
        if isinstance(self._density, Histogram):
            # the histogram (Bock & Aitkin 1981) as an ECM: ten L-BFGS-B steps on the items
            # for the current masses, then the masses maximised exactly with the items held
            # (Histogram.maximise; one EM step on the masses per cycle needed 332 cycles on a
            # 2000 x 20 bimodal 2PL and stopped ~1 log-lik short: bench_histogram.py); each
            # half raises the likelihood. Settled when a cycle gains < 1e-6 per model
            from scipy.optimize import minimize

            last, settle = -np.inf, 1e-6 * sub.shape[0]
            for em_steps in range(1, self.max_iter + 1):
                res = minimize(fun, x, jac=True, method="L-BFGS-B", callback=check,
                               bounds=list(zip(lower, upper)),
                               options={"maxiter": 10, "gtol": self.tol, "ftol": 1e-15})
                x, n_iter = res.x, n_iter + int(res.nit)
                loglik = -fun(x)[0]
                if loglik - last < settle:
                    break
                last = loglik
                self._density.maximise(md.z, self._last[1])
                md.logw = self._density.log_weights(md.z)
            else:
                raise ConvergenceError(f"{what}: the histogram's EM did not settle in "
                                       f"{self.max_iter} steps; raise max_iter",
                                       solver="em", status="max_iter")
        se_params = self.max_se_params if self.standard_errors else -1
        if not (self._density.n_free or isinstance(self._density, Histogram)):
            multistart = self.multistart if self.multistart is not None else any(
                fixed is None and prior is None for fixed, prior in (
                    (self.guessing, self.guessing_prior), (self.upper, self.upper_prior)))
            starts = [x] + (self._other_starts(sub, m) if multistart else [])
            self._race_notes = notes
            x, n_race = self._race(fun, starts, md, m, (lower, upper), check)
            n_iter += n_race
        out = maximise(fun, x, tol=self.tol, max_iter=self.max_iter, what=what,
                       verbose=self.verbose, max_se_params=se_params, check=check,
                       bounds=(lower, upper))
        x = out["x"]
        fun(x)
        loglik, post, logp, _ = self._last
        if self._density.n_free:
            self._density.params = x[x.size - self._density.n_free:].copy()
        eap, psd = md.posterior_moments(post)
        a, da, _, _ = slope_prior_terms(x[:m], self.slope_prior)
        d = x[m:2 * m]
        c, u, _ = self._asymptotes(x, m)
        b = -d / a
        se = np.full((m, 4), np.nan)
        if out["cov"] is not None:
            scale = np.concatenate([da, np.ones(x.size - m)])     # covariance of (a, d, ...)
            V = out["cov"] * scale[:, None] * scale[None, :]
            var_a, var_d = np.diag(V)[:m], np.diag(V)[m:2 * m]
            cov_ad = V[np.arange(m), m + np.arange(m)]
            var_b = (var_d + b ** 2 * var_a + 2 * b * cov_ad) / a ** 2
            se[:, 0], se[:, 1] = np.sqrt(np.maximum(var_a, 0)), np.sqrt(np.maximum(var_b, 0))
            k = 2 * m
            for col, fixed, v, prior in ((2, self.guessing, c, self.guessing_prior),
                                         (3, self.upper, u, self.upper_prior)):
                if fixed is None:               # NaN at a bound (held fixed), as mirt's
                    dv = 1.0 if self._boxed(prior) else v * (1 - v)
                    se[:, col] = dv * np.sqrt(np.maximum(np.diag(V)[k:k + m], 0))
                    k += m
                else:
                    se[:, col] = 0.0
        elif self.standard_errors:
            notes.append(f"item SEs skipped: {x.size} parameters > max_se_params "
                         f"{self.max_se_params}")
        if np.any(a < 0):
            notes.append(f"{int((a < 0).sum())} items have negative slopes (weaker models do "
                         "better on them)")
        if np.any(u <= c):
            notes.append(f"{int((u <= c).sum())} items have an upper asymptote at or below "
                         "their floor (the curve falls with ability); add the priors")
        floor = (self._at_floor(a, c, md, post, logp) if self.upper == 1.0
                 else np.zeros(0, np.int64))
        notes += self._misfit_notes(sub, b, c, floor)
        if self._density.n_free or isinstance(self._density, Histogram):
            mean, sd = self._density.moments(md.z)
            notes.append(f"latent density {self._density.name} ({self._density.n_parameters} "
                         f"parameters; mean {mean:.3g}, sd {sd:.3g} on the grid)"
                         + (f", {em_steps} EM steps on the histogram" if em_steps else ""))
        keep = self._n_columns
        return {"R": eap[:, None], "C": np.column_stack([a, b, c, u])[:, :keep],
                "se_R": psd[:, None], "se_C": se[:, :keep], "loglik": loglik,
                "n_iter": n_iter + out["n_iter"], "loglik_kind": "marginal",
                "keep_rows": np.ones(data.shape[0], bool), "keep_cols": keep_c,
                "stationarity": out["stationarity"],
                "solver": f"L-BFGS-B on the marginal likelihood ({self.n_quad}-node grid)",
                "notes": tuple(notes),
                "extra": {"floor_items": tuple(sub.item_names[j] for j in floor),
                          "latent_density": self._density}}

    @staticmethod
    def _misfit_notes(sub: ResponseData, b: np.ndarray, c: np.ndarray,
                      floor: np.ndarray) -> list[str]:
        """Notes on models below the lowest floor and on items at their floor."""
        notes = []
        accuracy = (sub.values * sub.observed).sum(1) / np.maximum(sub.observed.sum(1), 1)
        below = np.flatnonzero((accuracy < c.min()) & sub.observed.any(1))
        if below.size:
            notes.append(
                f"{below.size} models answer fewer items right than the lowest guessing floor "
                f"({c.min():.3g}), e.g. " + ", ".join(
                    f"{sub.model_names[i]} ({accuracy[i]:.3g})" for i in below[:5])
                + ": the floor does not describe them; their ML abilities tend to -inf and "
                "only the N(0, 1) ability prior holds their EAPs")
        if floor.size:
            notes.append(
                f"{floor.size} items have no finite ML intercept: the data push them to their "
                "guessing floor for every model (weaker models solve them as often as "
                "stronger ones, or less often than the floor), e.g. "
                + ", ".join(f"{sub.item_names[j]} (b = {b[j]:.3g})" for j in floor[:5])
                + "; their difficulties come from intercept_prior, not from the data: drop "
                "them, or fit the 2PL (no floor)")
        return notes

    @staticmethod
    def _at_floor(a: np.ndarray, c: np.ndarray, md: MarginalData, post: np.ndarray,
                  logp: np.ndarray) -> np.ndarray:
        """Items whose likelihood keeps rising as ``d -> -inf`` (``P -> c`` for every model).

        With ``s = sigma(a z + d) -> 0`` the intercept's score tends to
        ``e^d sum_q e^(a z_q) (n1_q (1 - c) / c - n0_q)``, where ``n0, n1`` are
        the expected counts at node ``q`` once the item sits at its floor (the
        posterior of each model without that item: ``post / P_j(y_ij | z)``,
        renormalised). When the sum is negative the ML intercept is ``-inf``
        and only ``intercept_prior`` keeps it finite. Never with ``c = 0``.
        """
        n_lim = []
        for k, I in enumerate(md.ind):                  # counts with item j at its floor
            inv = np.exp(-logp[:, :, k])                               # M x Q: 1 / P_jk
            with np.errstate(divide="ignore", invalid="ignore"):
                share = np.where(I > 0, I / (post @ inv.T), 0.0)       # N x M
            n_lim.append((share.T @ post) * inv)
        az = a[:, None] * md.z[None, :]
        w = np.exp(az - az.max(axis=1, keepdims=True))           # only the sign matters
        ratio = np.where(c > 0, (1 - c) / np.maximum(c, 1e-300), np.inf)
        right, wrong = (n_lim[1] * w).sum(1), (n_lim[0] * w).sum(1)
        with np.errstate(invalid="ignore"):
            return np.flatnonzero(right * ratio - wrong < 0)

    def _identify(self, R, C, data):
        return R, C, "theta ~ N(0, 1)"

    def _publish(self, R: np.ndarray, C: np.ndarray) -> dict[str, np.ndarray]:
        return {"abilities": R[:, 0], "discriminations": C[:, 0], "difficulties": C[:, 1],
                "guessing": C[:, 2]}

    def predict_proba(self) -> np.ndarray:
        """``c_j + (1 - c_j) sigma(a_j (theta_i - b_j))``; excluded items get their ML limit."""
        self._check_fitted()
        a, b, c = self.col_params_.T
        P = c[None, :] + (1 - c[None, :]) * expit(a[None, :] * (
            self.row_params_[:, :1] - b[None, :]))
        return np.where(np.isnan(self._col_limit)[None, :], P, self._col_limit[None, :])

    def _fit_block(self, Y_new: Any, mask: np.ndarray | None, free: str) -> "ThreePL":
        raise InputError("ThreePL places new models with est.score(Y_new, method) (= "
                         "evalcert.irt.score_models; ml, wle, map or eap); two-stage "
                         "item calibration is not available")
