"""Marginal and empirical reliability of IRT ability estimates (as mirt defines them).

Marginal reliability (Green, Bock, Humphreys, Linn & Reckase 1984; mirt's
``marginal_rxx``) averages the local reliability over the ability distribution
``g`` (the fit's ``N(mean, sd^2)``, on ``n_points`` equally spaced nodes of
``[-6, 6]`` as mirt does):

    rxx_marginal = sum_q w_q I(theta_q) / (I(theta_q) + 1 / Var_g(theta)),

where ``I`` is the test information (:mod:`~.information`; for the graded
model ``sum_jk P_jk'^2 / P_jk``). Empirical reliability (mirt's
``empirical_rxx``) compares the spread of the estimates with their error:

    rxx_empirical = Var(theta_hat) / (Var(theta_hat) + mean(SE^2)),

with ``Var`` over the models (``ddof = 1``) and ``SE`` either the fit's own
ability SEs (``method="posterior"``: posterior sds of EAPs, mirt's
``"posterior_variance"``) or ``1 / sqrt(I(theta_hat))`` (``"information"``,
mirt's default). For EAPs both estimate the squared correlation of the
estimates with the true abilities.

Example
-------
>>> import numpy as np
>>> from evalcert.irt import TwoPL
>>> rng = np.random.default_rng(0)
>>> theta = rng.normal(size=500)
>>> Y = (rng.random((500, 20)) < 1 / (1 + np.exp(-(theta[:, None] - np.linspace(-1, 1, 20)))))
>>> est = TwoPL(method="mml").fit(Y.astype(float))
>>> r = marginal_rxx(est)
>>> 0.7 < r < 0.9, abs(empirical_rxx(est, method="posterior") - r) < 0.05
(True, True)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit

from evalcert.errors import InputError
from evalcert.irt.information import ability_prior, item_parameters, test_information

__all__ = ["marginal_rxx", "empirical_rxx", "information_at"]


def information_at(estimator: Any, theta: np.ndarray) -> np.ndarray:
    """Test information of a fitted Rasch, 2PL, 3PL (4PL) or graded model at ``theta``.

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((60, 10)) < 0.5).astype(float)
    >>> information_at(Rasch(method="cml").fit(Y), np.zeros(1)).shape
    (1,)
    """
    theta = np.asarray(theta, dtype=float)
    if getattr(estimator, "model_name", "") == "graded":
        a = np.asarray(estimator.discriminations_, float)
        b = np.asarray(estimator.thresholds_, float)
        S = expit(a[None, :, None] * (theta[:, None, None] - b[None, :, :]))
        n, m = S.shape[:2]
        full = np.concatenate([np.ones((n, m, 1)), S, np.zeros((n, m, 1))], axis=2)
        W = full * (1 - full)
        P = np.maximum(full[:, :, :-1] - full[:, :, 1:], 1e-300)
        dP = a[None, :, None] * (W[:, :, :-1] - W[:, :, 1:])
        return np.nansum(dP ** 2 / P, axis=(1, 2))
    return test_information(theta, item_parameters(estimator))


def marginal_rxx(estimator: Any, *, n_points: int = 61,
                 theta_range: tuple[float, float] = (-6.0, 6.0)) -> float:
    """Marginal reliability of a fitted unidimensional model (mirt's ``marginal_rxx``).

    ``sum_q w_q I(theta_q) / (I(theta_q) + 1 / Var(theta))`` with ``w`` the
    fit's ability density (:func:`~.information.ability_prior`) on
    ``n_points`` nodes of ``theta_range``.

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((200, 30)) < 0.5).astype(float)
    >>> 0 < marginal_rxx(Rasch(method="mml").fit(Y)) < 1
    True
    """
    if not (isinstance(n_points, (int, np.integer)) and n_points >= 2):
        raise InputError(f"n_points must be an integer >= 2, got {n_points!r}")
    lo, hi = (float(v) for v in theta_range)
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise InputError(f"theta_range must be finite with lower < upper, got {theta_range!r}")
    if not hasattr(estimator, "result_"):
        raise InputError(f"this {type(estimator).__name__} is not fitted yet; call fit(Y) first")
    theta = np.linspace(lo, hi, int(n_points))
    mean, sd = ability_prior(estimator)
    w = np.exp(-0.5 * ((theta - mean) / sd) ** 2)
    w = w / w.sum()
    var = float(w @ (theta - w @ theta) ** 2)
    info = information_at(estimator, theta)
    return float(np.clip(w @ (info / (info + 1.0 / var)), 0.0, 1.0))


def empirical_rxx(estimator: Any, *, method: str = "information") -> float:
    """Empirical reliability ``Var(theta_hat) / (Var(theta_hat) + mean(SE^2))`` (mirt's).

    ``method="information"`` (mirt's default): ``SE = 1 / sqrt(I(theta_hat))``;
    ``"posterior"``: the fit's own ability SEs (posterior sds of EAPs).

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert.irt import TwoPL
    >>> Y = (np.random.default_rng(0).random((200, 30)) < 0.5).astype(float)
    >>> 0 <= empirical_rxx(TwoPL(method="mml").fit(Y), method="posterior") < 1
    True
    """
    if method not in ("information", "posterior"):
        raise InputError(f"method must be 'information' or 'posterior', got {method!r}")
    if not hasattr(estimator, "result_"):
        raise InputError(f"this {type(estimator).__name__} is not fitted yet; call fit(Y) first")
    theta = np.asarray(estimator.abilities_, dtype=float)
    ok = np.isfinite(theta)
    theta = theta[ok]
    if theta.size < 2:
        raise InputError("empirical reliability needs at least two models with finite "
                         "abilities")
    if method == "posterior":
        se = np.asarray(estimator.abilities_se_, dtype=float)[ok]
        if not np.all(np.isfinite(se)):
            raise InputError("some ability SEs are not finite; use method='information'")
    else:
        info = information_at(estimator, theta)
        if np.any(info <= 0):
            return 0.0
        se = 1.0 / np.sqrt(info)
    var = float(np.var(theta, ddof=1))
    total = var + float(np.mean(se ** 2))
    return float(np.clip(var / total, 0.0, 1.0)) if total > 0 else 0.0
