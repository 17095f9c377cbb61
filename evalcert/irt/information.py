"""Item characteristic curves and Fisher information of binary IRT models.

Every binary unidimensional model here is a special case of the 3PL

    P_j(theta) = c_j + (1 - c_j) sigma(a_j (theta - b_j))

(Rasch: ``a = 1, c = 0``; 2PL: ``c = 0``). The item information is
(Birnbaum 1968; Baker & Kim 2004, Eq. 5.14)

    I_j(theta) = a_j^2 (P_j - c_j)^2 (1 - P_j) / ((1 - c_j)^2 P_j),

which is ``a_j^2 P_j (1 - P_j)`` when ``c_j = 0``; the test information is
``I(theta) = sum_j I_j(theta)`` and ``1 / sqrt(I(theta))`` is the ML standard
error of an ability at ``theta``.

Example
-------
>>> import numpy as np
>>> p = ItemParameters(a=np.ones(2), b=np.array([0.0, 1.0]), c=np.zeros(2),
...                    item_names=("q1", "q2"), model="rasch")
>>> float(item_information(np.array([0.0]), p)[0, 0])
0.25
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from scipy.special import expit

from evalcert.errors import InputError

__all__ = ["ItemParameters", "item_parameters", "ability_prior", "icc", "icc_derivatives",
           "item_information", "test_information"]


@dataclasses.dataclass(frozen=True)
class ItemParameters:
    """Frozen 3PL item parameters ``a`` (slope), ``b`` (difficulty), ``c`` (guessing).

    Items an estimator excluded (all-0/all-1) have NaN parameters; ``usable``
    marks the others.

    Examples
    --------
    >>> p = ItemParameters(a=np.ones(2), b=np.array([0.0, 1.0]), c=np.zeros(2),
    ...                    item_names=("q1", "q2"), model="rasch")
    >>> p.usable.tolist(), p.take([1]).item_names, p.take([1]).b.tolist()
    ([True, True], ('q2',), [1.0])
    """

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    item_names: tuple[str, ...]
    model: str

    @property
    def usable(self) -> np.ndarray:
        return np.isfinite(self.a) & np.isfinite(self.b) & np.isfinite(self.c)

    def take(self, idx: Any) -> "ItemParameters":
        """The parameters of the items ``idx`` (boolean or integer index)."""
        return ItemParameters(self.a[idx], self.b[idx], self.c[idx],
                              tuple(np.asarray(self.item_names, object)[idx]), self.model)


def item_parameters(estimator: Any) -> ItemParameters:
    """The fitted item parameters of a Rasch, 2PL or 3PL estimator as :class:`ItemParameters`.

    Raises
    ------
    InputError
        The estimator is not fitted, or is not a unidimensional binary model
        (factor, Beta-IRT and JE-IRT have no single ability scale).

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((40, 12)) < 0.6).astype(float)
    >>> est = Rasch(method="cml").fit(Y)
    >>> params = item_parameters(est)  # slopes a, difficulties b, guessing c
    >>> params.model, params.b.shape, bool(np.all(params.a == 1)), bool(np.all(params.c == 0))
    ('rasch', (12,), True, True)
    """
    if not hasattr(estimator, "result_"):
        raise InputError(f"this {type(estimator).__name__} is not fitted yet; call fit(Y) first")
    name = getattr(estimator, "model_name", "")
    if name not in ("rasch", "2pl", "3pl"):
        raise InputError(f"model {name!r} has no unidimensional binary item curves; use "
                         "rasch, 2pl or 3pl")
    b = np.asarray(estimator.difficulties_, dtype=float)
    a = (np.asarray(estimator.discriminations_, dtype=float) if name != "rasch"
         else np.where(np.isfinite(b), 1.0, np.nan))
    c = (np.asarray(estimator.guessing_, dtype=float) if name == "3pl"
         else np.where(np.isfinite(b), 0.0, np.nan))
    return ItemParameters(a, b, c, tuple(estimator.item_names_), name)


def ability_prior(estimator: Any) -> tuple[float, float]:
    """Mean and sd of the ability distribution implied by a fit (for EAP/MAP scoring).

    Marginal fits (``mml``) estimate it (``population_sd_``) or fix it at
    ``N(0, 1)`` (2PL, 3PL); for joint, conditional and Bayesian fits the mean
    and sd of the fitted finite abilities are used.

    Examples
    --------
    >>> from evalcert.irt import Rasch, TwoPL
    >>> Y = (np.random.default_rng(0).random((60, 12)) < 0.5).astype(float)
    >>> ability_prior(TwoPL(method="mml").fit(Y))  # fixed at N(0, 1)
    (0.0, 1.0)
    >>> mean, sd = ability_prior(Rasch(method="map").fit(Y))  # from the fitted abilities
    >>> bool(sd > 0)
    True
    """
    if getattr(estimator, "method", "") == "mml":
        return 0.0, float(getattr(estimator, "population_sd_", 1.0))
    theta = np.asarray(estimator.abilities_, dtype=float)
    theta = theta[np.isfinite(theta)]
    if theta.size < 2:
        return 0.0, 1.0
    return float(theta.mean()), max(float(theta.std()), 0.1)


def icc(theta: np.ndarray, params: ItemParameters) -> np.ndarray:
    """``P_j(theta)`` for every ability (rows) and item (columns).

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((40, 12)) < 0.6).astype(float)
    >>> est = Rasch(method="cml").fit(Y)
    >>> p = icc(np.array([-1.0, 0.0, 1.0]), item_parameters(est))  # P(correct), ability x item
    >>> p.shape, bool(np.all(np.diff(p, axis=0) > 0))  # rises with ability
    ((3, 12), True)
    """
    theta = np.asarray(theta, dtype=float)
    s = expit(params.a[None, :] * (theta[:, None] - params.b[None, :]))
    return params.c[None, :] + (1 - params.c[None, :]) * s


def icc_derivatives(theta: np.ndarray, params: ItemParameters
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``P``, ``dP/dtheta`` and ``d^2P/dtheta^2`` (rows = abilities, columns = items).

    Examples
    --------
    >>> p = ItemParameters(a=np.ones(2), b=np.array([0.0, 1.0]), c=np.zeros(2),
    ...                    item_names=("q1", "q2"), model="rasch")
    >>> P, dP, d2P = icc_derivatives(np.array([0.0, 1.0]), p)
    >>> P.round(4).tolist(), dP.round(4).tolist()  # P = 1/2, P' = 1/4 where theta = b
    ([[0.5, 0.2689], [0.7311, 0.5]], [[0.25, 0.1966], [0.1966, 0.25]])
    """
    theta = np.asarray(theta, dtype=float)
    a, c = params.a[None, :], params.c[None, :]
    s = expit(a * (theta[:, None] - params.b[None, :]))
    d1 = (1 - c) * a * s * (1 - s)
    return c + (1 - c) * s, d1, d1 * a * (1 - 2 * s)


def item_information(theta: np.ndarray, params: ItemParameters) -> np.ndarray:
    """Item information ``I_j(theta) = P_j'^2 / (P_j (1 - P_j))`` (rows = abilities).

    Examples
    --------
    >>> p = ItemParameters(a=np.ones(2), b=np.array([0.0, 1.0]), c=np.zeros(2),
    ...                    item_names=("q1", "q2"), model="rasch")
    >>> item_information(np.array([0.0, 1.0]), p).round(4).tolist()  # Rasch: P (1 - P)
    [[0.25, 0.1966], [0.1966, 0.25]]
    """
    P, d1, _ = icc_derivatives(theta, params)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(d1 == 0, 0.0, d1 ** 2 / (P * (1 - P)))


def test_information(theta: np.ndarray, params: ItemParameters) -> np.ndarray:
    """Test information ``sum_j I_j(theta)`` over the usable items.

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((40, 12)) < 0.6).astype(float)
    >>> est = Rasch(method="cml").fit(Y)
    >>> info = test_information(np.array([-1.0, 0.0, 1.0]), item_parameters(est))
    >>> info.shape, bool(np.all(info > 0))
    ((3,), True)
    """
    return item_information(theta, params.take(params.usable)).sum(axis=1)


test_information.__test__ = False  # type: ignore[attr-defined]  # not a pytest test
