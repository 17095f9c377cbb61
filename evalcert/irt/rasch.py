"""The Rasch model ``P(Y_ij = 1) = sigma(theta_i - b_j)`` (Eq. 3.1) by five methods.

=========  ====================================================================
``jml``    joint ML of Eq. 3.3 (Sec. 3.2.5, 3.3.1), Newton or L-BFGS
``cml``    conditional ML, Eq. 3.6, with log-space symmetric functions (3.3.2)
``mml``    marginal ML, EM with Gauss-Hermite quadrature, ``theta ~ N(0, s^2)``
``map``    MAP with ``theta_i, b_j ~ N(0, 1/lam)`` (Eq. 3.9, Sec. 3.6.1), as ``jml``
``mcmc``   Metropolis-within-Gibbs under the MAP priors (Sec. 3.5.4)
=========  ====================================================================

JML and CML exclude all-0/all-1 models and items with an
:class:`~evalcert.irt.data.ExtremeResponseWarning` (their estimates
are infinite); MAP and MCMC keep them; MML keeps such models (the ability
distribution makes them finite) but excludes such items, whose marginal ML
difficulty is still infinite. JML also checks, before solving, that its
optimum is finite at all (:func:`~.data.require_finite_jml`). Identification (Sec. 3.2.4) is a
shift: difficulties sum to zero by default, or ``anchor_item``/``anchor_model``
is set to zero. The likelihood is shift-invariant, so this changes no
prediction.

Example
-------
>>> rng = np.random.default_rng(0)
>>> Y = (rng.random((200, 30)) < 0.5).astype(float)
>>> est = Rasch(method="cml").fit(Y)
>>> abs(float(est.difficulties_.sum())) < 1e-10  # sum-zero identification, up to rounding
True
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit

from evalcert.errors import ConvergenceError, InputError
from evalcert.irt.base import IRTEstimator
from evalcert.irt.data import (ResponseData, extreme_lines, finite_items as _finite_items,
                                       require_finite_jml)
from evalcert.irt.estimation.cml_information import (conditional_information,
                                                 difficulty_covariance, information_flops)
from evalcert.irt.estimation.esf import ObservedSets, conditional_cells
from evalcert.irt.estimation.joint_newton import (ROUNDING, newton_flops, rasch_joint_newton,
                                              schur_newton_step)
from evalcert.irt.estimation.mcmc import ess, rhat, sample_rasch
from evalcert.irt.estimation.mml_em import auto_n_quad, mml_em
from evalcert.irt.estimation.pooling import pool_responses
from evalcert.progress import progress_bar

__all__ = ["Rasch"]

_SCHUR_FLOPS = 2e10   # CML: Schur-complement Newton steps up to this cost, else diagonal
_SE_FLOPS = 4e9       # CML: exact SEs (inverse conditional information) up to this cost
_EXACT_NEWTON_FLOPS = 1e7  # CML: Newton steps on the exact conditional information up to this


class Rasch(IRTEstimator):
    """Rasch (1PL) estimator.

    Parameters
    ----------
    method : {"jml", "cml", "mml", "map", "mcmc"}
    lam : float
        Prior precision ``1/sigma^2`` of abilities and difficulties for
        ``map`` and ``mcmc`` (ignored otherwise).
    anchor_item, anchor_model : int or str, optional
        Identify by setting this item's difficulty (model's ability) to zero
        instead of the default sum-zero difficulties.
    optimizer : {"auto", "newton", "lbfgs"}
        Solver of ``jml`` and ``map``. ``newton`` pools exchangeable models and
        items (:mod:`~.pooling`) and takes Newton steps through a Schur
        complement (:mod:`~.joint_newton`); ``lbfgs`` runs L-BFGS on the whole
        matrix. ``auto`` picks Newton unless one Newton step would cost more
        than ``2e10`` flops (both blocks of the pooled table above ~2,700).
    n_quad : int, optional
        Gauss-Hermite nodes per model for ``mml`` with adaptive quadrature;
        ``None`` (default) chooses them from the fewest responses any model gave
        (:func:`~.mml.auto_n_quad`: 7 from 1,000, 11 from 100, else 15).
    quadrature : {"auto", "adaptive", "grid"}
        E-step of ``mml`` (:mod:`~.mml`): ``grid`` (complete data only) shares
        one fine grid among all models pooled by raw score; ``adaptive`` puts
        ``n_quad`` nodes at each model's posterior; ``auto`` uses ``grid`` when
        every model answered every (kept) item.
    n_chains, n_draws, n_burn, max_rhat : MCMC settings; a fit whose largest
        split R-hat exceeds ``max_rhat`` raises :class:`ConvergenceError`.
    tol, max_iter, seed : convergence tolerance, iteration budget, randomness.
    verbose : bool
        Show a progress bar of iterations (MCMC: sweeps) on stderr.

    Attributes
    ----------
    abilities_, difficulties_, abilities_se_, difficulties_se_, loglik_,
    result_ (:class:`IRTResult`); ``mml``: ``population_sd_``; ``mcmc``:
    ``draws_`` (dict of (chains, draws, n) arrays, always on the sum-zero
    scale), ``rhat_``, ``ess_``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> theta, b = rng.normal(size=60), np.linspace(-1, 1, 12)
    >>> Y = (rng.random((60, 12)) < 1 / (1 + np.exp(b - theta[:, None]))).astype(float)
    >>> est = Rasch(method="mml").fit(Y)
    >>> est.result_.converged, est.abilities_.shape, est.difficulties_se_.shape
    (True, (60,), (12,))
    >>> bool(np.corrcoef(est.difficulties_, b)[0, 1] > 0.9)  # difficulties recovered
    True
    """

    model_name = "rasch"
    methods = ("jml", "cml", "mml", "map", "mcmc")

    def __init__(self, method: str = "jml", *, lam: float = 1.0,
                 anchor_item: int | str | None = None, anchor_model: int | str | None = None,
                 optimizer: str = "auto", n_quad: int | None = None, quadrature: str = "auto",
                 n_chains: int = 4, n_draws: int = 1000, n_burn: int = 1000,
                 max_rhat: float = 1.1, tol: float = 1e-6, max_iter: int = 2000, seed: int = 0,
                 verbose: bool = False, standard_errors: bool = True):
        super().__init__(method, lam=lam, anchor_item=anchor_item, anchor_model=anchor_model,
                         tol=tol, max_iter=max_iter, seed=seed, verbose=verbose,
                         standard_errors=standard_errors)
        self.optimizer = optimizer
        self.n_quad = n_quad
        self.quadrature = quadrature
        self.n_chains, self.n_draws, self.n_burn = n_chains, n_draws, n_burn
        self.max_rhat = max_rhat

    # link: eta_ij = theta_i - b_j
    def _link(self, R: np.ndarray, C: np.ndarray) -> np.ndarray:
        return R[:, :1] - C[:, 0][None, :]

    def _link_grad(self, R, C, G):
        return G.sum(1)[:, None], -G.sum(0)[:, None]

    def _link_sqgrad(self, R, C, W):
        return W.sum(1)[:, None], W.sum(0)[:, None]

    def _publish(self, R: np.ndarray, C: np.ndarray) -> dict[str, np.ndarray]:
        return {"abilities": R[:, 0], "difficulties": C[:, 0]}

    def _identify(self, R, C, data):
        anchor = self._anchor_index(data)
        if anchor is None:
            shift, how = np.nanmean(C[:, 0]), "sum-zero difficulties"
        elif anchor[0] == "item":
            shift, how = C[anchor[1], 0], f"difficulty of {data.item_names[anchor[1]]!r} = 0"
        else:
            shift, how = R[anchor[1], 0], f"ability of {data.model_names[anchor[1]]!r} = 0"
        if not np.isfinite(shift):
            raise ConvergenceError(f"the anchor ({how}) was excluded as all-0/all-1; choose "
                                   "another anchor")
        return R - shift, C - shift, how

    def _stage2_lam(self) -> float:
        if self.method == "mml":
            return 1.0 / self.population_sd_ ** 2
        return self.lam if self.method in ("map", "mcmc") else 1e-3

    # -- methods ------------------------------------------------------------------------
    def _fit(self, data: ResponseData) -> dict[str, Any]:
        if self.optimizer not in ("auto", "newton", "lbfgs"):
            raise InputError(f"optimizer must be 'auto', 'newton' or 'lbfgs', got "
                             f"{self.optimizer!r}")
        if self.method in ("jml", "map"):
            return super()._fit(data)
        return getattr(self, f"_fit_{self.method}")(data)

    def _fit_joint(self, data: ResponseData) -> dict[str, Any]:
        """JML/MAP on the kept models and items: Newton on pooled groups, or L-BFGS."""
        lam = 0.0 if self.method == "jml" else self.lam
        if lam == 0:
            require_finite_jml(data)
        if self.optimizer == "lbfgs":
            return super()._fit_joint(data)
        pooled = pool_responses(data.values, data.observed)
        if self.optimizer == "auto" and newton_flops(pooled.shape) > 2e10:
            return super()._fit_joint(data)
        bar = progress_bar(self.verbose, self.max_iter, f"rasch {self.method}")
        try:
            out = rasch_joint_newton(pooled, lam=lam, tol=self.tol, max_iter=self.max_iter,
                                     what=f"rasch {self.method}", bar=bar)
        finally:
            bar.close()
        theta, b = out["theta"][pooled.row_group], out["b"][pooled.col_group]
        prior = 0.5 * lam * (pooled.row_size @ out["theta"] ** 2
                             + pooled.col_size @ out["b"] ** 2)
        G, H = pooled.shape
        R, C = theta[:, None], b[:, None]
        info_R = out["info_rows"][pooled.row_group][:, None]
        info_C = out["info_cols"][pooled.col_group][:, None]
        return {"R": R, "C": C, "loglik": -(out["objective"] - prior),
                # the gradient is recomputed from the data; the curvature is the pooled one
                "stationarity": self._stationarity(data, R, C, np.zeros(0), lam,
                                                   ("rows", "cols"),
                                                   information=(info_R, info_C)),
                "n_iter": out["n_iter"],
                "se_R": 1 / np.sqrt(info_R + lam), "se_C": 1 / np.sqrt(info_C + lam),
                "loglik_kind": "joint" if lam == 0 else "joint (penalised fit)",
                "solver": f"newton ({G} x {H} pooled groups)",
                "notes": ((f"Newton stopped at the rounding limit of the objective with max "
                           f"|gradient| {out['gradient']:.3g} (tol {self.tol:g})",)
                          if out["rounding_limited"] else ())}

    def _fit_cml(self, data: ResponseData) -> dict[str, Any]:
        """Newton iterations on the conditional likelihood (Eq. 3.6).

        The gradient is ``sum_i (pi_ij - Y_ij)``. The Hessian is the sum over
        models of the conditional covariance of ``Y_i`` given ``S_i``, whose
        diagonal ``pi_ij (1 - pi_ij)`` is exact; its off-diagonal is taken as
        that of independent items conditioned on their sum, ``-d_ij d_ik /
        sum_k d_ik`` with ``d = pi (1 - pi)`` (rows summing to zero, as the exact
        ones do, and within O(1/items) of them). That matrix is diagonal minus
        one rank-one term per model, so a step is the joint Newton system with
        the abilities eliminated (:func:`~.joint_newton.schur_newton_step`); when
        that would cost more than ``_SCHUR_FLOPS`` the diagonal alone is used.
        On few items that approximation is poor (on 2 items it is half the exact
        matrix, so each step overshoots the optimum by as much as it started from
        and Newton oscillates forever), so whenever the exact conditional
        information (:func:`~.cml_information.conditional_information`) costs
        at most ``_EXACT_NEWTON_FLOPS`` per iteration, the step uses it instead.
        Steps are halved whenever the conditional log-likelihood would decrease.
        Models with the same observed items and raw score have the same
        conditional terms, and items with the same observed models and count
        the same difficulty, so both are pooled (:func:`~.pooling.group_rows`):
        each model group is evaluated once and weighted by its size, each item
        group is one column with a multiplicity
        (:func:`~.pooling.pool_responses`). The conditional terms cost
        O(observed cells) per iteration (:func:`~.esf.conditional_cells`).
        """
        keep_r, keep_c = extreme_lines(data, warn=True)
        sub = data.take(keep_r, keep_c)
        pooled = pool_responses(sub.values, sub.observed)
        G, H = pooled.shape
        sets = ObservedSets.from_mask(pooled.cells > 0)
        rows, cols = sets.rows, sets.items
        size, mult = pooled.row_size.astype(float), pooled.col_size.astype(float)
        cell_size = size[rows]
        scores = pooled.row_ones / size                   # raw score of each model group
        ones = pooled.col_ones / mult                     # correct answers per item
        share = ones / np.bincount(cols, cell_size, H)    # models answering each item
        theta0 = np.log(scores / (np.add.reduceat(mult[cols], sets.indptr[:-1]) - scores))
        seen = np.bincount(cols, cell_size * theta0[rows], H) / np.bincount(cols, cell_size, H)
        spread = np.sqrt(1 + np.average((theta0 - size @ theta0 / size.sum()) ** 2,
                                        weights=size) / 2.89)
        b = seen + spread * np.log((1 - share) / share)
        b -= (mult @ b) / mult.sum()
        exact = information_flops(sets, H) <= _EXACT_NEWTON_FLOPS
        schur = not exact and newton_flops(pooled.shape) <= _SCHUR_FLOPS
        best, step, last, rounding_limited, theta = -np.inf, np.zeros_like(b), np.inf, False, None
        bar = progress_bar(self.verbose, self.max_iter, "rasch cml")
        for n_iter in range(1, self.max_iter + 1):
            bar.update(1)
            log_gamma, pi, theta, esf_error = conditional_cells(b, sets, scores, mult, theta)
            loglik = -float((mult * ones) @ b) - float(size @ log_gamma)
            if loglik < best - 1e-10 * abs(best):
                step /= 2
                b = b - step
                continue
            best = loglik
            d = pi * (1 - pi)
            info = np.bincount(cols, cell_size * d, H)
            grad = np.bincount(cols, cell_size * pi, H) - ones
            worst = float(np.max(np.abs(grad)))
            if worst <= self.tol:
                break
            if exact:
                step = _exact_cml_step(b, sets, scores, mult, size, grad)
            elif schur:
                V = np.zeros(pooled.shape)
                V.ravel()[rows * H + cols] = cell_size * mult[cols] * d
                _, step = schur_newton_step(V, V.sum(1), mult * info, np.zeros(G),
                                            -mult * grad, G <= H, gauge=True, what="rasch cml")
            else:
                step = grad / info
            step -= (mult @ step) / mult.sum()
            # the predicted gain is below what rounding lets the loglik show, and the
            # gradient stopped falling: stop and report the gradient reached
            resolvable = (0.5 * (mult * grad) @ step
                          > ROUNDING * np.finfo(float).eps * abs(loglik))
            if not resolvable and worst >= last:
                rounding_limited = True
                break
            last = worst
            b = b + step
            # abilities follow to first order (implicit function theorem): warm start
            md = mult[cols] * d
            theta = theta + (np.add.reduceat(md * step[cols], sets.indptr[:-1])
                             / np.add.reduceat(md, sets.indptr[:-1]))
        else:
            bar.close()
            raise ConvergenceError(f"rasch cml: Newton did not converge in {self.max_iter} "
                                   f"iterations (last step {np.max(np.abs(step)):.3g})",
                                   solver="newton", status="max_iter")
        bar.close()
        p = expit(theta[rows] - b[cols])                  # per pooled cell: O(observed cells)
        info_r = np.bincount(rows, mult[cols] * p * (1 - p), G)
        rg, cg = pooled.row_group, pooled.col_group
        se_C, se_note = self._cml_difficulty_se(b, sets, scores, pooled, info, data, keep_c)
        return {"R": theta[rg, None], "C": b[cg, None], "loglik": loglik, "n_iter": n_iter,
                "se_R": 1 / np.sqrt(info_r[rg])[:, None], "se_C": se_C[:, None],
                "loglik_kind": "conditional",
                "solver": (f"newton (conditional likelihood, "
                           f"{'exact' if exact else 'Schur' if schur else 'diagonal'}"
                           f" Hessian, ESF truncation error <= {esf_error:.1g}, {G} x {H} "
                           "pooled groups)"),
                "notes": ((f"Newton stopped at the rounding limit of the conditional "
                           f"likelihood with max |gradient| {worst:.3g} (tol {self.tol:g})",)
                          if rounding_limited else ()) + ((se_note,) if se_note else ()),
                "stationarity": float(np.max(np.abs(grad) / np.sqrt(info))),
                "keep_rows": keep_r, "keep_cols": keep_c}

    def _cml_difficulty_se(self, b: np.ndarray, sets: ObservedSets, scores: np.ndarray,
                           pooled: Any, info: np.ndarray, data: ResponseData,
                           keep_c: np.ndarray) -> tuple[np.ndarray, str | None]:
        """SEs of the CML difficulties of the kept items under the reported identification.

        ``sqrt(diag(I^+))`` for sum-zero difficulties and ``sqrt(var(b_j - b_a))``
        from the same matrix for an anchor item ``a`` (0 for the anchor), ``I``
        the exact conditional information (:mod:`~.cml_information`); these are
        eRm's ``se.beta`` for ``RM(X)`` and ``RM(X, sum0 = FALSE)`` (anchor on the
        first item). With ``anchor_model`` they stay those of the sum-zero
        difficulties (the anchor's ability is an estimate; a note says so). When
        the inverse would cost more than ``_SE_FLOPS``, the diagonal of ``I`` alone
        is used, ``1/sqrt(I_jj)`` (``sqrt(1/I_jj + 1/I_aa)`` with an anchor item):
        it ignores the covariances of items, too large by about ``1/items``
        relative on many items (1.0098 at 100), 20-25% on 5, and a note says so.
        """
        cg = pooled.col_group
        anchor, item, note = self._anchor_index(data), None, None
        if anchor is not None and anchor[0] == "item" and keep_c[anchor[1]]:
            item = int(keep_c[:anchor[1]].sum())
        if not self.standard_errors:
            return 1 / np.sqrt(info[cg]), None
        flops = information_flops(sets, b.size)
        if flops > _SE_FLOPS:
            var = 1 / info[cg]
            if item is not None:
                var = var + var[item]
                var[item] = 0.0
            return np.sqrt(var), (
                f"difficulty SEs: from the diagonal of the conditional information only, "
                f"ignoring the covariances of items (the full inverse would take "
                f"~{flops:.1g} flops > {_SE_FLOPS:g})")
        if anchor is not None and anchor[0] == "model":
            note = ("difficulty SEs: those of the sum-zero difficulties (the anchor model's "
                    "ability is an estimate)")
        full, pairs = conditional_information(b, sets, scores, pooled.col_size,
                                              pooled.row_size)
        return np.sqrt(difficulty_covariance(full, pairs, pooled.col_size, cg, item)), note

    def _fit_mml(self, data: ResponseData) -> dict[str, Any]:
        keep_c = _finite_items(data)
        sub = data.take(slice(None), keep_c)
        n_quad = auto_n_quad(sub.observed) if self.n_quad is None else self.n_quad
        em = mml_em(sub.values, sub.observed, common_slope=True, n_quad=n_quad,
                    tol=self.tol, max_iter=self.max_iter, what="rasch mml",
                    quadrature=self.quadrature, verbose=self.verbose,
                    standard_errors=self.standard_errors)
        sd = float(em["a"][0])
        se_b, note = (self._identified_se(em, data, keep_c) if self.standard_errors
                      else (em["se_d"], None))
        return {"R": sd * em["eap"][:, None], "C": -em["d"][:, None],
                "keep_rows": np.ones(data.shape[0], bool), "keep_cols": keep_c,
                "se_R": sd * em["psd"][:, None], "se_C": se_b[:, None],
                "loglik": em["loglik"], "n_iter": em["n_iter"], "loglik_kind": "marginal",
                "solver": f"em ({em['quadrature']})", "extra": {"population_sd": sd},
                "notes": (note,) if note else ()}

    def _identified_se(self, em: dict[str, Any], data: ResponseData,
                       keep_c: np.ndarray) -> tuple[np.ndarray, str]:
        """SEs of the reported difficulties under the reported identification.

        The marginal model fixes the ability mean at 0; the reported difficulties
        are shifted to sum zero (or to the anchor item's 0), so their SEs are
        those of ``d_j - mean(d)`` (``d_j - d_k``), from the full covariance.
        """
        cov = em["cov_d"]
        anchor = self._anchor_index(data)
        if cov is None or (anchor is not None and anchor[0] == "model"):
            return em["se_d"], ("difficulty SEs: observed information, item blocks only"
                                if cov is None else "difficulty SEs: intercepts given "
                                "ability mean 0 (the anchor model's ability is an estimate)")
        diag = np.diag(cov)
        if anchor is None:      # Var(d_j - mean d) = V_jj - 2 mean_k V_jk + mean V
            var = diag - 2 * cov.mean(1) + cov.mean()
            how = "sum-zero difficulties"
        else:                   # Var(d_j - d_k) = V_jj - 2 V_jk + V_kk
            k = int(keep_c[:anchor[1]].sum())       # its index among the kept items
            var = diag - 2 * cov[:, k] + cov[k, k]
            how = "the anchor item"
        return np.sqrt(np.maximum(var, 0.0)), f"difficulty SEs: observed information, {how}"

    def _fit_mcmc(self, data: ResponseData) -> dict[str, Any]:
        for name, low in (("n_chains", 1), ("n_draws", 4), ("n_burn", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise InputError(f"{name} must be an int >= {low} (split R-hat needs at least "
                                 f"4 draws per chain), got {value!r}")
        out = sample_rasch(data.values, data.observed, lam=self.lam, n_chains=self.n_chains,
                           n_draws=self.n_draws, n_burn=self.n_burn, seed=self.seed,
                           verbose=self.verbose)
        draws = {"abilities": out["theta"], "difficulties": out["b"]}
        r_hat = {k: rhat(v) for k, v in draws.items()}
        worst = max(float(np.max(v)) for v in r_hat.values())
        if worst > self.max_rhat:
            raise ConvergenceError(f"rasch mcmc: max split R-hat {worst:.3f} > {self.max_rhat}"
                                   "; raise n_burn/n_draws", solver="mcmc", status="rhat")
        theta, b = out["theta"].mean(axis=(0, 1)), out["b"].mean(axis=(0, 1))
        loglik = -self.family.nll(theta[:, None] - b[None, :], data.values,
                                  data.observed.astype(float), np.zeros(0))[0]
        return {"R": theta[:, None], "C": b[:, None],
                "se_R": out["theta"].std(axis=(0, 1))[:, None],
                "se_C": out["b"].std(axis=(0, 1))[:, None], "loglik": loglik,
                "n_iter": self.n_burn + self.n_draws,
                "loglik_kind": "joint at posterior mean", "solver": "metropolis-within-gibbs",
                "notes": (f"acceptance rate {out['acceptance']:.2f}, max R-hat {worst:.3f}",),
                "extra": {"draws": draws, "rhat": r_hat,
                          "ess": {k: ess(v) for k, v in draws.items()}}}


def _exact_cml_step(b: np.ndarray, sets: ObservedSets, scores: np.ndarray, mult: np.ndarray,
                    size: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """The Newton step of the conditional likelihood on its exact information.

    For pooled columns (column ``j`` stands for ``m_j`` items of one difficulty) the
    Hessian in the column difficulties is ``m_j m_k C_jk`` off the diagonal and
    ``m_j I_jj + m_j (m_j - 1) C_jj`` on it (``I``, ``C`` from
    :func:`~.cml_information.conditional_information`); it is singular along a common
    shift of every difficulty (the gauge), so the step (an ascent step: ``grad`` is
    the gradient of the conditional log-likelihood per item) is the minimum-norm
    solution, then centred by the caller.

    Examples
    --------
    Two items, six models answering the first only and four the second only: the
    conditional estimate is ``b = (-1, 1) log(6/4) / 2``, and one step from 0 on the
    exact information moves most of the way there (on half of it, twice as far):

    >>> sets = ObservedSets.from_mask(np.ones((1, 2), bool))
    >>> b, grad = np.zeros(2), 10 * (np.array([0.5, 0.5]) - np.array([0.6, 0.4]))
    >>> step = _exact_cml_step(b, sets, np.array([1.0]), np.ones(2), np.array([10.0]), grad)
    >>> np.round(step - step.mean(), 3), round(float(np.log(6 / 4) / 2), 3)
    (array([-0.2,  0.2]), 0.203)
    """
    info, pairs = conditional_information(b, sets, scores, mult, size)
    hess = np.outer(mult, mult) * pairs
    hess[np.diag_indices_from(hess)] += mult * info - mult * np.diag(pairs)
    return np.linalg.lstsq(hess, mult * grad, rcond=None)[0]
