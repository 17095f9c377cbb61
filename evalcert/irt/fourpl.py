"""The 4PL and the 3PLu: an upper asymptote per item (models that slip), by marginal ML.

    P(Y_ij = 1 | theta_i) = c_j + (u_j - c_j) sigma(a_j theta_i + d_j),  b_j = -d_j / a_j

(Barton & Lord 1981). The upper asymptote ``u_j < 1`` is the share of the
strongest models that still fail item ``j``: a wrong or ambiguous answer key,
or an item no model can solve as posed (PSN-IRT and metabench fit it for
that reason). The 4PL estimates both the floor ``c_j`` and ``u_j``; the 3PLu
fixes ``c = 0`` (``guessing=0``). Either asymptote may be fixed
(``guessing=1/4``, ``upper=1`` gives the 3PL of :mod:`~.threepl`) or
estimated per item under a Beta prior (``guessing_prior`` default ``(6, 16)``
as the 3PL's; ``upper_prior`` default ``(16, 6)``, its mirror image: mean 0.73,
mode 0.75; ``None`` = pure ML, where the likelihood is often flat in the
asymptotes). Slopes and intercepts have the 3PL's priors. The criterion

    l(a, d, c, u) + log-priors

is maximised by L-BFGS-B with its exact gradient (:mod:`~.estimation.mml_direct`:
``theta ~ N(0, 1)``, or another latent density, on a fixed grid); with
``n1, n0`` the expected counts of right and wrong answers at each node,
``r = n1 / P - n0 / (1 - P)`` and ``s = sigma(a z + d)``,

    dl/d eta = r (u - c) s (1 - s),   dl/dc = r (1 - s),   dl/du = r s.

The objective is :class:`~.threepl.ThreePL`'s (the 3PL is this model with
``u = 1``). An asymptote under a Beta prior with both exponents above 1 is
optimised as its logit (the prior keeps it inside); without one it is its own
parameter boxed in ``[0, 1]``, so pure ML can reach ``c = 0`` or ``u = 1``
exactly (as mirt's bounded optimiser does) instead of crawling along a
flat logit; such estimates have NaN standard errors (held at the bound).
Pure ML is often multimodal in the asymptotes (an item fits about as well with
a low ceiling and a steep slope as with ``u = 1`` and a shallow one), so the fit
is a deterministic multi-start (by default when an asymptote has no prior; see
:meth:`~.threepl.ThreePL._race`): the default start and floors ``{0, .25}`` x
ceilings ``{.85, 1}`` race 40 L-BFGS-B steps, the default and the best other
climb on, the higher optimum wins (never below the single start). On a
simulated 4000 x 10 bank the default start alone stops 0.97 log-likelihood
units below mirt 1.2.0's optimum; the multi-start ends 0.0023 above it.
mirt's EM boxes slopes in ``[0.1, 5]``; ``slope_bounds=(0.1, 5)`` fits that
same model (without a box a pure-ML slope that runs past what the grid
resolves is reported as an MLE that does not exist).

Pure-ML slopes are watched on every iterate (:func:`~.estimation.mml_direct.check_slopes`).

Example
-------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> theta, b = rng.normal(size=1000), rng.normal(size=8)
>>> p = 0.9 / (1 + np.exp(b - theta[:, None]))            # 3PLu: u = 0.9, c = 0
>>> Y = (rng.random(p.shape) < p).astype(float)
>>> est = FourPL(guessing=0.0).fit(Y)
>>> est.model_name, bool(np.all(est.guessing_ == 0)), est.upper_.shape
('3plu', True, (8,))
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from evalcert.errors import InputError
from evalcert.irt.estimation.mml_direct import SLOPE_PRIOR
from evalcert.irt.threepl import ThreePL

__all__ = ["FourPL", "ThreePLu"]

class FourPL(ThreePL):
    """4PL / 3PLu estimator (marginal ML / MAP with a floor and an upper asymptote).

    Parameters
    ----------
    guessing : float in [0, 1), optional
        Fix every floor (``0`` = the 3PLu); ``None`` (default) estimates them.
    upper : float in (0, 1], optional
        Fix every upper asymptote; ``None`` (default) estimates them.
    guessing_prior, upper_prior : (alpha, beta) or None
        Beta priors of the estimated asymptotes (defaults ``(6, 16)`` and
        ``(16, 6)``); ``None`` = pure ML.
    slope_prior, intercept_prior, n_quad, max_se_params, tol, max_iter, verbose,
    standard_errors, seed, density, multistart, slope_bounds : as :class:`~.threepl.ThreePL`.

    Attributes
    ----------
    As :class:`~.threepl.ThreePL`, plus ``upper_`` and ``upper_se_``; ``model_name``
    is ``"3plu"`` when ``guessing=0``, else ``"4pl"``.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> theta, b = rng.normal(size=800), rng.normal(size=6)
    >>> p = 0.2 + 0.7 / (1 + np.exp(b - theta[:, None]))
    >>> est = FourPL().fit((rng.random(p.shape) < p).astype(float))
    >>> est.model_name, est.upper_.shape, est.result_.converged
    ('4pl', (6,), True)
    """

    model_name = "4pl"
    _n_columns = 4

    def __init__(self, method: str = "mml", *, guessing: float | None = None,
                 upper: float | None = None,
                 guessing_prior: tuple[float, float] | None = (6.0, 16.0),
                 upper_prior: tuple[float, float] | None = (16.0, 6.0),
                 slope_prior: float = SLOPE_PRIOR, intercept_prior: float = 0.01,
                 n_quad: int = 61, max_se_params: int = 400, tol: float = 1e-5,
                 max_iter: int = 2000, verbose: bool = False, standard_errors: bool = True,
                 seed: int = 0, density: str = "normal", multistart: bool | None = None,
                 slope_bounds: tuple[float, float] | None = None):
        super().__init__(method, guessing=guessing, guessing_prior=guessing_prior,
                         slope_prior=slope_prior, intercept_prior=intercept_prior,
                         n_quad=n_quad, max_se_params=max_se_params, tol=tol,
                         max_iter=max_iter, verbose=verbose, standard_errors=standard_errors,
                         seed=seed, density=density, multistart=multistart,
                         slope_bounds=slope_bounds)
        self.upper = upper
        self.upper_prior = upper_prior
        if guessing is not None and guessing == 0:
            self.model_name = "3plu"

    def _check(self) -> None:
        super()._check()
        if self.upper is not None and not 0 < self.upper <= 1:
            raise InputError(f"upper must be in (0, 1] or None, got {self.upper!r}")
        if self.upper is not None and self.guessing is not None and self.upper <= self.guessing:
            raise InputError(f"upper ({self.upper}) must exceed guessing ({self.guessing})")
        if self.upper_prior is not None and (
                len(self.upper_prior) != 2 or min(self.upper_prior) < 1):
            raise InputError(f"upper_prior must be (alpha, beta) with both >= 1, or None; "
                             f"got {self.upper_prior!r}")

    def _publish(self, R: np.ndarray, C: np.ndarray) -> dict[str, np.ndarray]:
        return {"abilities": R[:, 0], "discriminations": C[:, 0], "difficulties": C[:, 1],
                "guessing": C[:, 2], "upper": C[:, 3]}

    def predict_proba(self) -> np.ndarray:
        """``c_j + (u_j - c_j) sigma(a_j (theta_i - b_j))``; excluded items get their ML limit."""
        self._check_fitted()
        a, b, c, u = self.col_params_.T
        P = c[None, :] + (u - c)[None, :] * expit(a[None, :] * (
            self.row_params_[:, :1] - b[None, :]))
        return np.where(np.isnan(self._col_limit)[None, :], P, self._col_limit[None, :])


class ThreePLu(FourPL):
    """The 3PLu: :class:`FourPL` with every floor fixed at 0 (``P = u sigma(a theta + d)``).

    Examples
    --------
    >>> ThreePLu().guessing, ThreePLu().model_name
    (0.0, '3plu')
    """

    model_name = "3plu"

    def __init__(self, method: str = "mml", *, upper: float | None = None,
                 upper_prior: tuple[float, float] | None = (16.0, 6.0),
                 slope_prior: float = SLOPE_PRIOR, intercept_prior: float = 0.01,
                 n_quad: int = 61, max_se_params: int = 400, tol: float = 1e-5,
                 max_iter: int = 2000, verbose: bool = False, standard_errors: bool = True,
                 seed: int = 0, density: str = "normal", multistart: bool | None = None,
                 slope_bounds: tuple[float, float] | None = None):
        super().__init__(method, guessing=0.0, upper=upper, upper_prior=upper_prior,
                         slope_prior=slope_prior, intercept_prior=intercept_prior,
                         n_quad=n_quad, max_se_params=max_se_params, tol=tol,
                         max_iter=max_iter, verbose=verbose, standard_errors=standard_errors,
                         seed=seed, density=density, multistart=multistart,
                         slope_bounds=slope_bounds)
