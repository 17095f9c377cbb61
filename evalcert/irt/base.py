"""Common estimator contract and result object of the IRT estimators.

Every estimator follows one contract (scikit-learn style): hyper-parameters in
``__init__``, data in ``fit(Y, mask=None)``; learned state ends in ``_``.
A model is described by a *link* ``eta = link(R, C)`` from model (row)
parameters ``R`` (n_models x p) and item (column) parameters ``C``
(n_items x q) to logits, and a response *family* (Bernoulli, or Beta for
Beta-IRT). Joint ML (Eq. 3.3) and MAP (Eq. 3.9, ridge ``lam = 1/sigma^2``,
Sec. 3.6.1) then share one L-BFGS solve over the whole vectorised likelihood,
and the two-stage holdout (Sec. 3.7.3) reuses it with one block frozen.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, ClassVar, Sequence

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from evalcert.errors import ConvergenceError, InputError, require_positive
from evalcert.progress import progress_bar
from evalcert.results import ResultMixin, format_table
from evalcert.irt.data import ResponseData, extreme_lines, validate_responses

__all__ = ["IRTResult", "IRTEstimator", "Bernoulli", "lbfgs", "softplus_sigmoid",
           "STATIONARITY_LIMIT", "resolve_threads", "map_blocks",
           "THREAD_MIN_WORK", "SE_SKIPPED"]

#: a joint ML fit that fails with an observed cell's logit beyond this (fitted probability
#: within ~1e-13 of 0 or 1) is reported as running off to infinity (no finite MLE)
RUN_OFF_LOGIT = 30.0
#: largest accepted distance from stationarity of a joint or conditional fit, in
#: standard errors of the estimates (see :attr:`IRTResult.stationarity`)
STATIONARITY_LIMIT = 1e-3
#: the note of a fit with ``standard_errors=False``
SE_SKIPPED = "standard errors not computed (standard_errors=False)"


#: array elements (cells x nodes) per call below which block maps stay on one thread.
#: Measured on 2 cores (2PL MML, no SEs, best of 3-5): ChemBench 22 x 2720 x 7 nodes
#: (4.2e5) 0.084-0.089 s on one thread vs 0.12-0.14 s on two (a pool per call, twice
#: per iteration, costs more than the work); 100 x 5000 half missing (1.75e6) 0.44-0.47 s
#: on two vs 0.56-0.62 s on one
THREAD_MIN_WORK = 1_000_000


def resolve_threads(n_threads: int | None, n_blocks: int, work: float) -> int:
    """Threads for a map over ``n_blocks`` independent blocks of ``work`` array elements.

    ``None`` means every CPU this process may use, capped at the blocks; work
    below :data:`THREAD_MIN_WORK` runs on one thread (starting threads would
    cost more than they save). A bad value raises :class:`InputError`.

    Examples
    --------
    >>> resolve_threads(4, n_blocks=2, work=1e9), resolve_threads(None, n_blocks=8, work=10)
    (2, 1)
    """
    if n_threads is not None and (isinstance(n_threads, bool) or not isinstance(n_threads, int)
                                  or n_threads < 1):
        raise InputError(f"n_threads must be a positive integer or None (all CPUs), "
                         f"got {n_threads!r}")
    if work < THREAD_MIN_WORK or n_blocks <= 1:
        return 1
    if n_threads is None:
        n_threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else os.cpu_count() or 1
    return max(1, min(n_threads, n_blocks))


def map_blocks(fn: Callable[[Any], Any], blocks: Sequence[Any], n_threads: int) -> list[Any]:
    """``[fn(block) for block in blocks]``, on ``n_threads`` threads, results in block order.

    NumPy releases the GIL inside large ufuncs and matrix products, so blocks of
    array work overlap on several cores. Each block's result is computed
    exactly as on one thread and callers reduce the returned list in block
    order, so the outcome is bit-identical for any ``n_threads``. Each thread
    takes the next block from a shared counter rather than one task (a future,
    a queue entry and a wake-up) per block: thread switches per 2PL E-step on
    300 x 20,000 with half the cells missing went 2,800 -> 1,500. The first
    error raised by ``fn`` is re-raised once the running blocks finish (no
    further block is started).

    Examples
    --------
    >>> map_blocks(lambda b: b * b, [1, 2, 3], n_threads=2)
    [1, 4, 9]
    """
    if n_threads <= 1 or len(blocks) <= 1:
        return [fn(block) for block in blocks]
    results: list[Any] = [None] * len(blocks)
    lock, state = threading.Lock(), {"next": 0, "failed": False}

    def worker() -> None:
        while True:
            with lock:
                i = state["next"]
                if i >= len(blocks) or state["failed"]:
                    return
                state["next"] = i + 1
            try:
                results[i] = fn(blocks[i])
            except BaseException:
                state["failed"] = True
                raise

    with ThreadPoolExecutor(max_workers=n_threads) as pool:
        futures = [pool.submit(worker) for _ in range(min(n_threads, len(blocks)))]
    for future in futures:
        future.result()                     # re-raises the first error
    return results


def softplus_sigmoid(eta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(log(1 + e^eta), sigma(eta))`` from one exponential, accurate for every ``eta``.

    With ``e = exp(-|eta|)`` (no overflow): ``softplus = max(eta, 0) + log1p(e)``
    and ``sigma = exp(min(eta, 0)) / (1 + e)`` (``1/(1 + e)`` for ``eta >= 0``,
    ``e/(1 + e)`` below), both to a few ulps relative on all of ``[-800, 800]``
    (tested against 50-digit ``mpmath``), including the tails where ``1 -
    sigma(-eta)`` would lose every digit; about 1.5x faster than scipy's
    ``expit`` route (SIMD ``exp``).

    Examples
    --------
    >>> softplus, p = softplus_sigmoid(np.array([0.0, 1000.0, -40.0]))
    >>> np.round(softplus[:2], 4).tolist(), p[:2].tolist()  # log 2 and 1/2 at 0; no overflow
    ([0.6931, 1000.0], [0.5, 1.0])
    >>> bool(abs(p[2] / np.exp(-40.0) - 1) < 1e-15)          # sigma(-40) to full precision
    True
    """
    eta = np.asarray(eta, dtype=float)
    e = np.abs(eta)
    np.exp(np.negative(e, out=e), out=e)            # e = exp(-|eta|) in (0, 1]
    softplus = np.log1p(e)
    p = np.maximum(eta, 0.0)
    softplus += p
    np.exp(np.minimum(eta, 0.0, out=p), out=p)      # 1 where eta >= 0, else e
    e += 1.0
    p /= e
    return softplus, p


@dataclasses.dataclass(frozen=True)
class IRTResult(ResultMixin):
    """Outcome of one IRT fit: convergence, likelihood and every estimate.

    ``loglik_kind`` says which likelihood ``loglik`` is (joint, conditional,
    marginal, log-posterior): they are not comparable across methods.
    ``solver`` names the algorithm that ran. ``stationarity`` certifies a joint
    or conditional fit: recomputed from the data at the returned estimates
    (before identification), it is the largest ``|gradient| / sqrt(curvature)``
    of the optimised objective over the parameters, i.e. how far (in standard
    errors) a Newton step would still move an estimate. A fit is refused above
    :data:`STATIONARITY_LIMIT` (1e-3 standard errors). It is NaN where no such
    check applies: EM (``mml``, whose criterion is the parameter change), MCMC
    and the JE-IRT adapter fit.

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((30, 10)) < 0.6).astype(float)
    >>> r = Rasch(method="cml").fit(Y).result_
    >>> r.model, r.method, r.converged, r.loglik_kind, bool(r.stationarity < 1e-3)
    ('rasch', 'cml', True, 'conditional', True)
    """

    model: str
    method: str
    converged: bool
    n_iter: int
    loglik: float
    loglik_kind: str
    n_models: int
    n_items: int
    n_observed: int
    identification: str
    seconds: float
    model_names: tuple[str, ...]
    item_names: tuple[str, ...]
    excluded_models: tuple[str, ...] = ()
    excluded_items: tuple[str, ...] = ()
    parameters: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    standard_errors: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    notes: tuple[str, ...] = ()
    solver: str = ""
    stationarity: float = float("nan")

    def summary(self) -> str:
        head = [("model", self.model), ("method", self.method), ("solver", self.solver),
                ("converged", self.converged), ("iterations", self.n_iter),
                (f"loglik ({self.loglik_kind})", float(self.loglik)),
                ("models x items", f"{self.n_models} x {self.n_items}"),
                ("observed cells", self.n_observed),
                ("excluded models/items",
                 f"{len(self.excluded_models)}/{len(self.excluded_items)}"),
                ("identification", self.identification), ("seconds", float(self.seconds)),
                ("stationarity (SEs)", float(self.stationarity))]
        rows = []
        for name, value in self.parameters.items():
            v = np.asarray(value, dtype=float).ravel()
            v = v[np.isfinite(v)]
            if v.size:
                rows.append((name, v.size, v.mean(), v.std(), v.min(), v.max()))
        text = format_table(head, ["field", "value"]) + "\n\n" + format_table(
            rows, ["parameter", "n", "mean", "sd", "min", "max"])
        return text + "".join(f"\nnote: {n}" for n in self.notes)


def lbfgs(fun: Any, x0: np.ndarray, *, tol: float, max_iter: int, what: str,
          ftol: float = 1e-14, restarts: int = 5, verbose: bool = False
          ) -> tuple[np.ndarray, int]:
    """Minimise ``fun(x) -> (value, gradient)`` by L-BFGS (Sec. 3.2.5).

    Stops when ``max |gradient| <= tol`` or the relative decrease of the
    objective falls below ``ftol``. In the second case, or when the line search
    gives up, L-BFGS is restarted from where it stopped with its curvature
    memory cleared (at most ``restarts`` times, while the gradient shrinks):
    on ill-conditioned fits a stale memory often stalls far above ``tol``.
    Raises :class:`ConvergenceError` when the iteration budget runs out or the
    line search fails away from a stationary point; the fit's own certificate
    (:meth:`IRTEstimator._stationarity`) judges the rest. ``verbose`` shows a
    progress bar of iterations on stderr.

    Examples
    --------
    >>> def fun(x):  # (x - 3)^2 summed, with its gradient
    ...     return float(np.sum((x - 3.0) ** 2)), 2.0 * (x - 3.0)
    >>> x, n_iter = lbfgs(fun, np.zeros(2), tol=1e-8, max_iter=100, what="quadratic")
    >>> np.round(x, 6).tolist(), bool(n_iter <= 100)
    ([3.0, 3.0], True)
    """
    bar = progress_bar(verbose, max_iter, what)
    try:
        return _lbfgs_restarts(fun, x0, tol=tol, max_iter=max_iter, what=what, ftol=ftol,
                               restarts=restarts, bar=bar)
    finally:
        bar.close()


def _lbfgs_restarts(fun: Any, x0: np.ndarray, *, tol: float, max_iter: int, what: str,
                    ftol: float, restarts: int, bar: Any) -> tuple[np.ndarray, int]:
    """The restart loop of :func:`lbfgs`."""
    x, total, grad, success, message = x0, 0, np.inf, False, ""
    for _ in range(restarts + 1):
        res = minimize(fun, x, jac=True, method="L-BFGS-B", callback=lambda *_: bar.update(1),
                       options={"maxiter": max_iter - total, "maxfun": 4 * max_iter,
                                "gtol": tol, "ftol": ftol, "maxcor": 20})
        total += int(res.nit)
        new_grad = np.max(np.abs(res.jac)) if res.jac.size else 0.0
        if res.status == 1 or total >= max_iter:
            raise ConvergenceError(
                f"{what}: L-BFGS stopped after {total} iterations ({res.message}), "
                f"max |gradient| {new_grad:.3g} > tol {tol:g}; raise max_iter, loosen tol, "
                "or add a prior (larger lam)", solver="L-BFGS-B", status=str(res.message))
        if new_grad >= grad:                # the restart did not help: keep the best point
            break
        x, grad, success, message = res.x, new_grad, res.success, res.message
        if grad <= tol:
            break
    if not success and grad > 1e3 * tol:
        raise ConvergenceError(
            f"{what}: L-BFGS stopped after {total} iterations ({message}), "
            f"max |gradient| {grad:.3g} > tol {tol:g}; raise max_iter, loosen tol, or "
            "add a prior (larger lam)", solver="L-BFGS-B", status=str(message))
    return x, total


class Bernoulli:
    """Binary responses: ``-loglik = sum obs * (softplus(eta) - y * eta)`` (Eq. 3.3).

    Examples
    --------
    >>> eta, y, obs = np.zeros((1, 2)), np.array([[1.0, 0.0]]), np.ones((1, 2))
    >>> nll, grad, _ = Bernoulli().nll(eta, y, obs, np.zeros(0))
    >>> round(float(nll / np.log(2)), 6), grad.tolist()  # 2 cells at p = 1/2
    (2.0, [[-0.5, 0.5]])
    >>> Bernoulli().curvature(eta, obs, np.zeros(0)).tolist()
    [[0.25, 0.25]]
    """

    n_glob = 0

    def nll(self, eta: np.ndarray, y: np.ndarray, obs: np.ndarray,
            g: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        # expit, not softplus_sigmoid: JE-IRT's over-parameterised L-BFGS fit (je.py's
        # example) reaches its gradient tolerance on these bits and not on the other
        # route's (1-ulp differences; |eta| < 9 there); the MML E-steps use the faster one.
        # Above the clip -log(q) stays at 700 while y * eta grows: the excess is added
        # back, or the value would fall without bound as eta -> inf (positive log-likelihoods)
        q = expit(-np.clip(eta, -700.0, 700.0))
        cell = -np.log(q) - y * eta + np.maximum(eta - 700.0, 0.0)
        return float(np.sum(obs * cell)), obs * (1.0 - q - y), np.zeros(0)

    def curvature(self, eta: np.ndarray, obs: np.ndarray, g: np.ndarray) -> np.ndarray:
        p = expit(eta)
        return obs * p * (1 - p)

    def mean(self, eta: np.ndarray, g: np.ndarray) -> np.ndarray:
        return expit(eta)


class IRTEstimator:
    """Base class: validation, identification, result and the shared joint solve.

    Subclasses set ``model_name``, ``methods``, ``row_shape``/``col_shape``
    (parameters per model/item) and implement ``_link``, ``_link_grad``,
    ``_link_sqgrad``, ``_publish`` and ``_identify``; they may override
    ``_fit`` for methods that are not a joint solve.

    Every estimator takes ``standard_errors`` (default True). With False the
    ``*_se_`` attributes and ``result_.standard_errors`` are NaN and
    ``result_.notes`` says "standard errors not computed
    (standard_errors=False)"; the point estimates are the same to the bit.
    Where SEs cost real work it is skipped: the observed (Louis) information
    of ``mml`` (Rasch, 2PL) and the numerical Hessian of the 3PL and graded
    fits (their ``stationarity``, computed from it, is then NaN, as above
    ``max_se_params``). Where they are nearly free (the diagonal information of JML/MAP and
    CML, MCMC posterior sds, MML posterior sds of abilities) they are dropped
    for consistency.

    Examples
    --------
    Every estimator (:class:`~evalcert.irt.Rasch`, ``TwoPL``, ...) is one:

    >>> from evalcert.irt import Rasch
    >>> est = Rasch(method="map")
    >>> isinstance(est, IRTEstimator), est.model_name, "map" in est.methods
    (True, 'rasch', True)
    >>> Y = (np.random.default_rng(0).random((20, 8)) < 0.5).astype(float)
    >>> fitted = est.clone().fit(Y)
    >>> fitted.predict_proba().shape, fitted.result_.converged
    ((20, 8), True)
    """

    model_name: ClassVar[str] = ""
    methods: ClassVar[tuple[str, ...]] = ("jml", "map")
    kind: ClassVar[str] = "binary"
    family: ClassVar[Any] = Bernoulli()
    col_prior_center: ClassVar[tuple[float, ...]] = (0.0,)

    def __init__(self, method: str, *, lam: float, anchor_item: int | str | None,
                 anchor_model: int | str | None, tol: float, max_iter: int, seed: int,
                 verbose: bool = False, standard_errors: bool = True):
        self.method = method
        self.lam = lam
        self.anchor_item = anchor_item
        self.anchor_model = anchor_model
        self.tol = tol
        self.max_iter = max_iter
        self.seed = seed
        self.verbose = verbose
        self.standard_errors = standard_errors

    # -- hooks --------------------------------------------------------------------------
    def _row_dim(self) -> int:
        return 1

    def _link(self, R: np.ndarray, C: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _link_grad(self, R: np.ndarray, C: np.ndarray,
                   G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def _link_sqgrad(self, R: np.ndarray, C: np.ndarray,
                     W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def _publish(self, R: np.ndarray, C: np.ndarray) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _identify(self, R: np.ndarray, C: np.ndarray, data: ResponseData
                  ) -> tuple[np.ndarray, np.ndarray, str]:
        return R, C, "none"

    def _prepare(self, data: ResponseData) -> ResponseData:
        """Transform validated data before any fit (Beta-IRT clips here)."""
        return data

    def _stage2_lam(self) -> float:
        """Prior precision of the free block in a two-stage fit."""
        return self.lam if self.method == "map" else 1e-3

    # -- public API ---------------------------------------------------------------------
    def fit(self, Y: Any, mask: np.ndarray | None = None) -> "IRTEstimator":
        """Fit to ``Y`` (models x items; NaN = missing); ``mask`` True = held out."""
        if self.method not in self.methods:
            raise InputError(f"{type(self).__name__} supports method in {self.methods}, "
                             f"got {self.method!r}")
        require_positive("lam", self.lam, allow_zero=True)
        require_positive("tol", self.tol, allow_zero=True)   # 0: to the rounding limit
        require_positive("max_iter", self.max_iter, integer=True)
        odd = [name for name, value in vars(self).items()   # every other numeric setting
               if not name.endswith("_") and not name.startswith("_")
               and isinstance(value, (float, np.floating)) and not np.isfinite(value)]
        if odd:
            raise InputError(f"{type(self).__name__}: {odd[0]} = {getattr(self, odd[0])!r} "
                             "is not a finite number; give a finite value")
        if not isinstance(self.standard_errors, (bool, np.bool_)):
            raise InputError(f"standard_errors must be True or False, got "
                             f"{self.standard_errors!r}")
        data = self._prepare(validate_responses(Y, mask, kind=self.kind))
        start = time.perf_counter()
        out = self._fit(data)
        R, C, ident = self._identify(out["R"], out["C"], data)
        out.update(R=R, C=C, identification=ident)
        self._finish(data, out, time.perf_counter() - start)
        return self

    def predict_proba(self) -> np.ndarray:
        """Predicted probability (Beta-IRT: mean) of every cell, models x items.

        Cells of excluded (all-0/all-1) models or items get their ML limit 0 or 1.
        """
        self._check_fitted()
        P = self.family.mean(self._link(self.row_params_, self.col_params_), self.glob_params_)
        for axis, limit in ((0, self._col_limit), (1, self._row_limit)):
            lim = np.expand_dims(limit, axis)
            P = np.where(np.isnan(lim), P, lim)
        return P

    def fit_models(self, Y_new: Any, mask: np.ndarray | None = None) -> "IRTEstimator":
        """Place new models on the frozen item scale (stage 2 of Sec. 3.7.3.1).

        Returns a copy whose models are the rows of ``Y_new``; item parameters
        are those of this fit. Abilities are penalised by the fit's prior (1e-3 if
        the method has no prior) so a new model with all-correct exposed cells
        stays finite.
        """
        return self._fit_block(Y_new, mask, free="rows")

    def score(self, Y_new: Any, method: str = "wle", *,
              prior: tuple[float, float] | None = None, n_quad: int = 121) -> Any:
        """Abilities and SEs of new models on this fit's frozen items (ML, WLE, MAP or EAP).

        The same as :func:`~.scoring.score_models` ``(self, Y_new, method)``; see
        it for the estimators (Rasch, 2PL, 3PL) and the formulas. Models without
        unidimensional binary item curves (factor, Beta-IRT, JE-IRT, graded)
        raise :class:`~evalcert.errors.InputError`.

        Returns
        -------
        :class:`~.scoring.ScoreResult`

        Examples
        --------
        >>> from evalcert.irt import Rasch
        >>> Y = (np.random.default_rng(0).random((60, 12)) < 0.5).astype(float)
        >>> res = Rasch(method="mml").fit(Y).score(Y[:3], method="eap")
        >>> res.method, res.abilities.shape, bool(np.all(res.standard_errors > 0))
        ('eap', (3,), True)
        """
        from evalcert.irt.scoring import score_models

        return score_models(self, Y_new, method, prior=prior, n_quad=n_quad)

    def fit_items(self, Y_new: Any, mask: np.ndarray | None = None) -> "IRTEstimator":
        """Calibrate new items against the frozen models (stage 2 of Sec. 3.7.3.2)."""
        return self._fit_block(Y_new, mask, free="cols")

    def clone(self) -> "IRTEstimator":
        """An unfitted copy with the same hyper-parameters."""
        new = copy.copy(self)
        for key in [k for k in vars(new) if k.endswith("_")]:
            delattr(new, key)
        return new

    # -- machinery ----------------------------------------------------------------------
    def _check_fitted(self) -> None:
        if not hasattr(self, "result_"):
            raise InputError(f"this {type(self).__name__} is not fitted yet; call fit(Y) first")

    def _fit(self, data: ResponseData) -> dict[str, Any]:
        """Joint ML (``jml``: all-0/all-1 lines excluded, Sec. 3.3.1) or MAP (``map``)."""
        keep_r, keep_c = (extreme_lines(data, warn=True) if self.method == "jml"
                          and self.kind == "binary" else
                          (np.ones(data.shape[0], bool), np.ones(data.shape[1], bool)))
        out = self._fit_joint(data.take(keep_r, keep_c))
        return {**out, "keep_rows": keep_r, "keep_cols": keep_c}

    def _fit_joint(self, data: ResponseData) -> dict[str, Any]:
        """The joint solve on the kept models and items (subclasses may specialise)."""
        R0, C0, g0 = self._init_params(data, np.random.default_rng(self.seed))
        return self._solve(data, R0, C0, g0, free=("rows", "cols", "glob"),
                           lam=0.0 if self.method == "jml" else self.lam)

    def _init_params(self, data: ResponseData, rng: np.random.Generator
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Starting values: zero abilities, items at the prior centre."""
        C0 = np.tile(np.asarray(self.col_prior_center, float), (data.shape[1], 1))
        return np.zeros((data.shape[0], self._row_dim())), C0, np.zeros(self.family.n_glob)

    def _joint_objective(self, Y: np.ndarray, obs: np.ndarray, blocks: dict[str, np.ndarray],
                         lam: float, free: tuple[str, ...]) -> tuple[float, dict[str, np.ndarray]]:
        """Value and gradient blocks of the joint objective (Eq. 3.3; with ``lam``, Eq. 3.9).

        ``obs`` is the float observed mask; the prior covers the ``free`` blocks.
        """
        center = np.asarray(self.col_prior_center, float)
        eta = self._link(blocks["rows"], blocks["cols"])
        val, G, dg = self.family.nll(eta, Y, obs, blocks["glob"])
        dR, dC = self._link_grad(blocks["rows"], blocks["cols"], G)
        dev = blocks["cols"] - center
        val += 0.5 * lam * (np.sum(blocks["rows"] ** 2) * ("rows" in free)
                            + np.sum(dev ** 2) * ("cols" in free))
        return val, {"rows": dR + lam * blocks["rows"], "cols": dC + lam * dev, "glob": dg}

    def _stationarity(self, data: ResponseData, R: np.ndarray, C: np.ndarray, g: np.ndarray,
                      lam: float, free: tuple[str, ...] = ("rows", "cols", "glob"),
                      information: tuple[np.ndarray, np.ndarray] | None = None) -> float:
        """Distance of ``(R, C, g)`` from stationarity, in standard errors.

        For every free parameter ``|gradient| / sqrt(curvature)``: the length
        of a diagonal Newton step measured in that parameter's standard error
        (curvature = the diagonal Fisher information plus the prior; for global
        parameters a finite difference of the gradient). Recomputed from the
        data alone, except that a caller holding the diagonal information
        ``(hR, hC)`` at ``(R, C, g)`` may pass it; the largest value is returned.
        """
        Y, obs = data.values, data.observed.astype(float)
        blocks = {"rows": R, "cols": C, "glob": g}
        _, grads = self._joint_objective(Y, obs, blocks, lam, free)
        hR, hC = information if information is not None else self._information(data, R, C, g)
        curv = {"rows": hR + lam, "cols": hC + lam, "glob": np.zeros(g.shape)}
        for k in range(g.size if "glob" in free else 0):
            step = 1e-5 * max(1.0, abs(float(g[k])))
            moved = {**blocks, "glob": g + step * (np.arange(g.size) == k)}
            curv["glob"][k] = (self._joint_objective(Y, obs, moved, lam, free)[1]["glob"][k]
                               - grads["glob"][k]) / step
        return max((float(np.max(np.abs(grads[k]) / np.sqrt(np.maximum(curv[k], 1e-300))))
                    for k in free if grads[k].size), default=0.0)

    def _information(self, data: ResponseData, R: np.ndarray, C: np.ndarray,
                     g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Diagonal Fisher information of the model and item parameters at ``(R, C, g)``."""
        W = self.family.curvature(self._link(R, C), data.observed.astype(float), g)
        return self._link_sqgrad(R, C, W)

    def _solve(self, data: ResponseData, R: np.ndarray, C: np.ndarray, g: np.ndarray, *,
               free: tuple[str, ...], lam: float) -> dict[str, Any]:
        """Joint ML / MAP over the ``free`` blocks by one L-BFGS solve (Eq. 3.3, 3.9)."""
        Y, obs = data.values, data.observed.astype(float)
        blocks = {"rows": R, "cols": C, "glob": g}
        sizes = [(k, blocks[k].shape) for k in ("rows", "cols", "glob") if k in free]

        def unpack(x: np.ndarray) -> dict[str, np.ndarray]:
            out, pos = dict(blocks), 0
            for k, shp in sizes:
                n = int(np.prod(shp))
                out[k] = x[pos:pos + n].reshape(shp)
                pos += n
            return out

        def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
            val, grads = self._joint_objective(Y, obs, unpack(x), lam, free)
            return val, np.concatenate([grads[k].ravel() for k, _ in sizes])

        x0 = np.concatenate([blocks[k].ravel() for k, _ in sizes])
        last = [x0]

        def tracked(x: np.ndarray) -> tuple[float, np.ndarray]:
            last[0] = x
            return fun(x)

        try:
            x, n_iter = lbfgs(tracked, x0, tol=self.tol, max_iter=self.max_iter,
                              what=f"{self.model_name} {self.method}", verbose=self.verbose)
        except ConvergenceError as exc:
            self._raise_if_running_off(data, unpack(last[0]), lam, exc)
            raise
        b = unpack(x)
        loglik = -self.family.nll(self._link(b["rows"], b["cols"]), Y, obs, b["glob"])[0]
        hR, hC = self._information(data, b["rows"], b["cols"], b["glob"])
        gap = self._stationarity(data, b["rows"], b["cols"], b["glob"], lam, free,
                                 information=(hR, hC))
        if gap > STATIONARITY_LIMIT:
            self._raise_if_running_off(data, b, lam, None)
        return {"R": b["rows"], "C": b["cols"], "g": b["glob"], "loglik": loglik,
                "n_iter": n_iter, "se_R": 1 / np.sqrt(hR + lam), "se_C": 1 / np.sqrt(hC + lam),
                "loglik_kind": "joint" if lam == 0 else "joint (penalised fit)",
                "solver": "L-BFGS-B", "stationarity": gap}

    def _raise_if_running_off(self, data: ResponseData, b: dict[str, np.ndarray], lam: float,
                              cause: Exception | None) -> None:
        """Explain a failed joint ML fit whose fitted logits run off to infinity.

        When the solve stops short (budget, line search or stationarity) with
        some observed cell's logit beyond :data:`RUN_OFF_LOGIT` (fitted
        probability within ~1e-13 of 0 or 1), the joint likelihood is still
        rising towards infinite estimates: the ML estimate does not exist on
        these data (separation), and more iterations cannot help. Raise a
        :class:`ConvergenceError` saying so; otherwise return and let the
        caller report the original failure.
        """
        if lam > 0 or self.kind != "binary":
            return
        eta = np.where(data.observed, self._link(b["rows"], b["cols"]), 0.0)
        worst = float(np.max(np.abs(eta))) if eta.size else 0.0
        if not worst > RUN_OFF_LOGIT:
            return
        i, j = np.unravel_index(int(np.argmax(np.abs(eta))), eta.shape)
        raise ConvergenceError(
            f"{self.model_name} {self.method}: the joint ML estimates run off to infinity "
            f"(fitted logit {eta[i, j]:+.3g} on model {data.model_names[i]!r}, item "
            f"{data.item_names[j]!r}; {int((np.abs(eta) > RUN_OFF_LOGIT).sum())} observed "
            f"cells beyond +-{RUN_OFF_LOGIT:g}): the joint likelihood has no finite maximum on "
            "these data (separation, common for joint 2PL fits with few items per model); "
            "more iterations cannot help: use method='map' (a prior) or 'mml'",
            solver="L-BFGS-B", status="diverged") from cause

    def _fit_block(self, Y_new: Any, mask: np.ndarray | None, free: str) -> "IRTEstimator":
        self._check_fitted()
        data = self._prepare(validate_responses(Y_new, mask, kind=self.kind, allow_empty=True))
        axis = 1 if free == "rows" else 0
        fixed = self.col_params_ if free == "rows" else self.row_params_
        if data.shape[axis] != fixed.shape[0]:
            what = "items" if free == "rows" else "models"
            raise InputError(f"new data has {data.shape[axis]} {what}, the fit has "
                             f"{fixed.shape[0]}; columns/rows must match the fitted ones")
        usable = ~np.isnan(fixed).any(axis=1)
        data = dataclasses.replace(data, observed=data.observed & np.expand_dims(usable, 1 - axis))
        start = time.perf_counter()
        n_new = data.shape[1 - axis]
        if free == "rows":
            R = np.zeros((n_new, self.row_params_.shape[1]))
            C = self.col_params_
        else:
            R = self.row_params_
            C = np.tile(np.asarray(self.col_prior_center, float), (n_new, 1))
        out = self._solve(data, np.nan_to_num(R), np.nan_to_num(C), self.glob_params_,
                          free=(free,), lam=self._stage2_lam())
        out.update(identification=f"{self.result_.identification} (frozen "
                                  f"{'items' if free == 'rows' else 'models'})")
        # frozen lines the fit excluded (all-0/all-1 items under jml, cml, mml) keep their
        # NaN parameters and ML limits; only the new lines must come out finite
        if free == "rows":
            out.update(C=self.col_params_, se_C=self._se_C, keep_cols=usable)
        else:
            out.update(R=self.row_params_, se_R=self._se_R, keep_rows=usable)
        new = copy.copy(self)
        new._finish(data, out, time.perf_counter() - start,
                    frozen="cols" if free == "rows" else "rows")
        return new

    def _finish(self, data: ResponseData, out: dict[str, Any], seconds: float,
                frozen: str | None = None) -> None:
        gap = float(out.get("stationarity", np.nan))
        if gap > STATIONARITY_LIMIT:
            raise ConvergenceError(
                f"{self.model_name} {self.method}: the returned estimates are not stationary: "
                f"a Newton step would still move one by {gap:.3g} standard errors "
                f"(limit {STATIONARITY_LIMIT:g}), recomputed from the data; raise max_iter, "
                "tighten tol or add a prior", solver=out.get("solver", ""),
                status="not_stationary")
        n, m = data.shape
        keep_r = out.get("keep_rows", np.ones(n, bool))
        keep_c = out.get("keep_cols", np.ones(m, bool))
        R = _scatter(out["R"], keep_r, n)
        C = _scatter(out["C"], keep_c, m)
        if not (np.isfinite(R[keep_r]).all() and np.isfinite(C[keep_c]).all()):
            raise ConvergenceError(
                f"{self.model_name} {self.method}: the fit produced non-finite estimates for "
                f"{int((~np.isfinite(R[keep_r])).any(1).sum())} models and "
                f"{int((~np.isfinite(C[keep_c])).any(1).sum())} items; the data do not "
                "identify this model (use a prior: method='map' or 'mml')",
                solver=out.get("solver", ""), status="non_finite")
        se_R = _scatter(out.get("se_R"), keep_r, n)
        se_C = _scatter(out.get("se_C"), keep_c, m)
        notes = tuple(out.get("notes", ()))
        if not self.standard_errors:
            se_R, se_C = _not_computed(se_R, R), _not_computed(se_C, C)
            notes += (SE_SKIPPED,)
        if frozen != "rows":
            self._row_limit = _limits(data, keep_r, keep_c, axis=0)
        if frozen != "cols":
            self._col_limit = _limits(data, keep_c, keep_r, axis=1)
        self.row_params_, self.col_params_ = R, C
        self.glob_params_ = np.asarray(out.get("g", np.zeros(0)))
        self._se_R, self._se_C = se_R, se_C
        params = self._publish(R, C)
        ses = (self._publish(se_R, se_C) if se_R is not None and se_C is not None else {})
        extra = out.get("extra", {})
        for name, value in {**params, **extra}.items():
            setattr(self, f"{name}_", value)
        for name, value in ses.items():
            setattr(self, f"{name}_se_", value)
        self.model_names_, self.item_names_ = data.model_names, data.item_names
        self.loglik_ = float(out["loglik"])
        self.n_iter_ = int(out["n_iter"])
        self.result_ = IRTResult(
            model=self.model_name, method=self.method, converged=True, n_iter=self.n_iter_,
            loglik=self.loglik_, loglik_kind=out["loglik_kind"], n_models=n, n_items=m,
            n_observed=int(np.count_nonzero(data.observed)), identification=out["identification"],
            seconds=seconds, model_names=data.model_names, item_names=data.item_names,
            excluded_models=tuple(np.asarray(data.model_names, object)[~keep_r]),
            excluded_items=tuple(np.asarray(data.item_names, object)[~keep_c]),
            parameters={**params, **{k: v for k, v in extra.items()
                                     if isinstance(v, (float, np.ndarray))}},
            standard_errors=ses, notes=notes,
            solver=out.get("solver", ""), stationarity=gap)

    def _anchor_index(self, data: ResponseData) -> tuple[str, int] | None:
        """Resolve ``anchor_item``/``anchor_model`` (name or index) to ``(axis, index)``."""
        if self.anchor_item is not None and self.anchor_model is not None:
            raise InputError("give anchor_item or anchor_model, not both")
        for axis, value, names in (("item", self.anchor_item, data.item_names),
                                   ("model", self.anchor_model, data.model_names)):
            if value is None:
                continue
            if isinstance(value, (bool, np.bool_)):
                raise InputError(f"anchor_{axis} must be the name or index of a {axis}, got "
                                 f"{value!r}")
            if isinstance(value, (int, np.integer)) and 0 <= value < len(names):
                return axis, int(value)
            if isinstance(value, str) and value in names:
                return axis, names.index(value)
            raise InputError(f"anchor_{axis} {value!r} is neither a {axis} name nor an index "
                             f"in 0..{len(names) - 1}")
        return None


def _limits(data: ResponseData, keep: np.ndarray, other: np.ndarray, axis: int) -> np.ndarray:
    """ML limit of each excluded line: its mean observed response on the kept other lines.

    NaN for kept lines; ``axis`` 0 for models (rows), 1 for items. Costs
    O(excluded lines x the other axis), nothing when no line was excluded.
    """
    out = np.full(keep.size, np.nan)
    gone = np.flatnonzero(~keep)
    if gone.size:
        values = np.take(data.values, gone, axis=axis)          # 0 where unobserved
        seen = np.take(data.observed, gone, axis=axis).astype(float)
        w = other.astype(float)
        hits, count = (values @ w, seen @ w) if axis == 0 else (w @ values, w @ seen)
        out[gone] = hits / np.maximum(count, 1)
    return out


def _not_computed(se: np.ndarray | None, like: np.ndarray) -> np.ndarray | None:
    """NaN standard errors of the shape of ``like`` (None stays None: no SEs at all)."""
    return None if se is None else np.full(np.shape(like), np.nan)


def _scatter(values: np.ndarray | None, keep: np.ndarray, n: int) -> np.ndarray | None:
    """Put the rows of ``values`` (fitted on ``keep``) back into ``n`` rows, NaN elsewhere."""
    if values is None:
        return None
    values = np.asarray(values, dtype=float)
    if values.shape[0] == n:
        return values
    full = np.full((n,) + values.shape[1:], np.nan)
    full[keep] = values
    return full
