"""Model comparison: parameter counts, AIC/BIC and the likelihood-ratio test.

Each method maximises its own kind of likelihood (``result_.loglik_kind``):
marginal for ``mml`` (abilities integrated out), conditional for ``cml``
(abilities conditioned away), joint for ``jml``. Values of different kinds are
on different scales and are never compared. For a fit with ``k`` free
parameters on ``n`` models,

    AIC = -2 l + 2 k,        BIC = -2 l + k log n

(``n`` = number of models, the persons of IRT, as in mirt and eRm). For nested
models fitted by the same method (Rasch inside 2PL inside 3PL) the
likelihood-ratio statistic ``G^2 = 2 (l_general - l_restricted)`` is compared
with ``chi^2`` on ``k_general - k_restricted`` degrees of freedom (Wilks 1938).
Joint likelihoods are refused for the test: with one ability per model their
number of parameters grows with the data and ``G^2`` has no chi-square limit
(Andersen 1973).

Example
-------
>>> import numpy as np
>>> from evalcert.irt import Rasch, TwoPL
>>> rng = np.random.default_rng(0)
>>> theta, b = rng.normal(size=300), rng.normal(size=10)
>>> Y = (rng.random((300, 10)) < 1 / (1 + np.exp(b - theta[:, None]))).astype(float)
>>> res = likelihood_ratio_test(Rasch(method="mml").fit(Y), TwoPL(method="mml").fit(Y))
>>> res.df
9
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from evalcert.errors import InputError
from evalcert.results import ResultMixin, format_table

__all__ = ["FitStatistics", "LRTestResult", "n_parameters", "information_criteria",
           "likelihood_ratio_test"]

#: nesting order of the binary models: each is a special case of the next
_NESTING = {"rasch": 0, "2pl": 1, "3pl": 2}
_TESTABLE = ("marginal", "conditional")


def _kept(values: Any) -> int:
    v = np.asarray(values, dtype=float)
    return int(np.isfinite(v).all(axis=tuple(range(1, v.ndim))).sum()) if v.ndim > 1 else \
        int(np.isfinite(v).sum())


def n_parameters(estimator: Any) -> int:
    """Free parameters of the likelihood the fit maximised.

    Rasch: ``mml`` items + population sd, ``cml`` items - 1 (sum-zero),
    ``jml`` models + items - 1. 2PL: ``mml`` 2 x items, ``jml`` models +
    2 x items - 2 (location and scale). Estimators that count their own
    parameters (3PL, graded) expose ``n_parameters_``. Excluded (all-0/all-1)
    models and items are not counted.

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((40, 12)) < 0.6).astype(float)
    >>> est = Rasch(method="cml").fit(Y)
    >>> n_parameters(est)  # 12 difficulties, one fixed by sum-zero identification
    11
    """
    if not hasattr(estimator, "result_"):
        raise InputError(f"this {type(estimator).__name__} is not fitted yet; call fit(Y) first")
    if hasattr(estimator, "n_parameters_"):
        return int(estimator.n_parameters_)
    model, method = estimator.model_name, estimator.method
    items, models = _kept(estimator.difficulties_), _kept(estimator.abilities_)
    counts = {("rasch", "mml"): items + 1, ("rasch", "cml"): items - 1,
              ("rasch", "jml"): models + items - 1, ("2pl", "mml"): 2 * items,
              ("2pl", "jml"): models + 2 * items - 2}
    if (model, method) not in counts:
        raise InputError(f"{model} {method} maximises no plain likelihood to count parameters "
                         "for (penalised, sampled or adapter fits); compare mml, cml or jml fits")
    return counts[(model, method)]


@dataclasses.dataclass(frozen=True)
class FitStatistics(ResultMixin):
    """Log-likelihood, parameter count and information criteria of one fit.

    Examples
    --------
    >>> from evalcert.irt import Rasch, TwoPL
    >>> rng = np.random.default_rng(0)
    >>> theta, b = rng.normal(size=300), rng.normal(size=10)
    >>> Y = (rng.random((300, 10)) < 1 / (1 + np.exp(b - theta[:, None]))).astype(float)
    >>> res = likelihood_ratio_test(Rasch(method="mml").fit(Y), TwoPL(method="mml").fit(Y))
    >>> fit = res.restricted
    >>> fit.model, fit.loglik_kind, fit.n_parameters, fit.n_models  # 10 items + the sd
    ('rasch', 'marginal', 11, 300)
    >>> bool(abs(fit.aic - (2 * fit.n_parameters - 2 * fit.loglik)) < 1e-9)
    True
    """

    model: str
    method: str
    loglik: float
    loglik_kind: str
    n_parameters: int
    n_models: int
    aic: float
    bic: float

    def summary(self) -> str:
        return format_table([(self.model, self.method, self.loglik_kind, self.loglik,
                              self.n_parameters, self.aic, self.bic)],
                            ["model", "method", "loglik kind", "loglik", "k", "AIC", "BIC"])


def information_criteria(estimator: Any) -> FitStatistics:
    """AIC and BIC of a fitted estimator (see the module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((40, 12)) < 0.6).astype(float)
    >>> est = Rasch(method="cml").fit(Y)
    >>> stats = information_criteria(est)
    >>> stats.loglik_kind, stats.n_parameters, bool(stats.bic > stats.aic)
    ('conditional', 11, True)
    """
    k = n_parameters(estimator)
    res = estimator.result_
    n = _kept(estimator.abilities_) if res.loglik_kind == "joint" else res.n_models
    ll = float(res.loglik)
    return FitStatistics(model=res.model, method=res.method, loglik=ll,
                         loglik_kind=res.loglik_kind, n_parameters=k, n_models=n,
                         aic=-2 * ll + 2 * k, bic=-2 * ll + k * np.log(n))


@dataclasses.dataclass(frozen=True)
class LRTestResult(ResultMixin):
    """Likelihood-ratio test of a restricted model against a more general one.

    Examples
    --------
    >>> from evalcert.irt import Rasch, TwoPL
    >>> rng = np.random.default_rng(0)
    >>> theta, b = rng.normal(size=300), rng.normal(size=10)
    >>> Y = (rng.random((300, 10)) < 1 / (1 + np.exp(b - theta[:, None]))).astype(float)
    >>> res = likelihood_ratio_test(Rasch(method="mml").fit(Y), TwoPL(method="mml").fit(Y))
    >>> res.df, res.general.n_parameters - res.restricted.n_parameters, bool(res.p_value > 0.05)
    (9, 9, True)
    """

    restricted: FitStatistics
    general: FitStatistics
    statistic: float
    df: int
    p_value: float
    notes: tuple[str, ...] = ()

    def summary(self) -> str:
        rows = [(s.model, s.method, s.loglik_kind, s.loglik, s.n_parameters, s.aic, s.bic)
                for s in (self.restricted, self.general)]
        text = format_table(rows, ["model", "method", "loglik kind", "loglik", "k", "AIC",
                                   "BIC"])
        best = lambda f: min((self.restricted, self.general), key=lambda s: getattr(s, f)).model
        text += (f"\n\nLR test {self.restricted.model} vs {self.general.model}: "
                 f"G^2 = {self.statistic:.4g} on {self.df} df, p = {self.p_value:.3g}; "
                 f"lower AIC: {best('aic')}, lower BIC: {best('bic')}")
        return text + "".join(f"\nnote: {n}" for n in self.notes)


def likelihood_ratio_test(restricted: Any, general: Any) -> LRTestResult:
    """Test ``restricted`` (e.g. Rasch) against ``general`` (e.g. 2PL), both fitted.

    Raises
    ------
    InputError
        The fits are of different likelihood kinds or data (models, items, or
        excluded items differ), not nested in that order, or joint fits.

    Examples
    --------
    Rasch data: the 2PL's nine extra slopes do not improve the fit significantly.

    >>> from evalcert.irt import Rasch, TwoPL
    >>> rng = np.random.default_rng(0)
    >>> theta, b = rng.normal(size=300), rng.normal(size=10)
    >>> Y = (rng.random((300, 10)) < 1 / (1 + np.exp(b - theta[:, None]))).astype(float)
    >>> res = likelihood_ratio_test(Rasch(method="mml").fit(Y), TwoPL(method="mml").fit(Y))
    >>> res.df, bool(res.statistic >= 0), bool(res.p_value > 0.05)
    (9, True, True)
    """
    a, b = information_criteria(restricted), information_criteria(general)
    if a.loglik_kind != b.loglik_kind:
        raise InputError(f"cannot compare a {a.loglik_kind} log-likelihood ({a.model} "
                         f"{a.method}) with a {b.loglik_kind} one ({b.model} {b.method}); fit "
                         "both with the same method (e.g. both mml)")
    if a.loglik_kind not in _TESTABLE:
        raise InputError(f"the likelihood-ratio test needs marginal or conditional "
                         f"likelihoods, got {a.loglik_kind}: joint ML has one parameter per "
                         "model and no chi-square limit; fit both with method='mml'")
    if _NESTING.get(a.model, -1) >= _NESTING.get(b.model, -1) or a.model not in _NESTING:
        raise InputError(f"{a.model} is not nested in {b.model}; pass the restricted model "
                         f"first (order: {' < '.join(_NESTING)})")
    if getattr(general, "guessing", None):
        raise InputError(f"not nested: a 3pl with its floor fixed at {general.guessing} lacks "
                         f"the {a.model} (floor 0); estimate the floor (guessing=None) to test")
    ra, rb = restricted.result_, general.result_
    if (ra.model_names, ra.item_names) != (rb.model_names, rb.item_names):
        raise InputError("the two fits are on different data (model or item names differ); "
                         "fit both on the same matrix")
    if set(ra.excluded_items) != set(rb.excluded_items) or ra.n_observed != rb.n_observed:
        raise InputError(f"the two fits used different cells ({len(ra.excluded_items)} vs "
                         f"{len(rb.excluded_items)} excluded items); their likelihoods are "
                         "not on the same data")
    df = b.n_parameters - a.n_parameters
    if df <= 0:
        raise InputError(f"{b.model} has no more parameters than {a.model} ({b.n_parameters} "
                         f"vs {a.n_parameters}); nothing to test")
    from scipy.stats import chi2  # scipy.stats is slow to import; only this test needs it

    stat = max(2.0 * (b.loglik - a.loglik), 0.0)
    notes = []
    if b.loglik < a.loglik - 1e-6 * abs(a.loglik):
        notes.append(f"the general model's log-likelihood is below the restricted one's by "
                     f"{a.loglik - b.loglik:.3g}: it stopped short of its maximum (or a "
                     "prior held it back); G^2 set to 0")
    if any(getattr(general, k, 0) for k in ("slope_prior", "guessing_prior",
                                             "intercept_prior")):
        notes.append(f"{b.model} was fitted with a prior on its extra parameters: its "
                     "likelihood is below the ML maximum, so the test is conservative "
                     "(slope_prior=0, and for a 3pl guessing_prior=None and "
                     "intercept_prior=0, gives the exact ML test)")
    return LRTestResult(restricted=a, general=b, statistic=stat, df=df,
                        p_value=float(chi2.sf(stat, df)), notes=tuple(notes))
