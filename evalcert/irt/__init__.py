"""IRT estimators for LLM benchmarks (models x items response matrices).

Models and after-fit tools live here (``rasch``, ``twopl``, ``threepl``, ``fourpl``
(4PL, 3PLu), ``polytomous``, ``reliability`` (``marginal_rxx``, ``empirical_rxx``),
``factor``, ``multidim`` (the multidimensional 2PL), ``beta``, ``je``; ``scoring``, ``itemfit``, ``information``, ``compare``,
``anchors``, ``holdout``, ``cat``); the estimation engines, named by method, in
:mod:`evalcert.irt.estimation` (``mml_em``: marginal ML by EM; ``mml_direct``: direct
maximisation on a fixed grid; ``esf``/``cml_information``: conditional ML; ``joint_newton``,
``pooling``, ``louis``, ``anderson``, ``mcmc``). Response and item tables are read and
written by :mod:`evalcert.io.responses` and :mod:`evalcert.io.irt_tables`. Names are
imported on first use, so ``import evalcert.irt`` is cheap.

One contract: ``Estimator(...).fit(Y, mask=None)`` -> ``abilities_``,
``difficulties_`` (and ``discriminations_``/``loadings_``), ``predict_proba()``,
``loglik_``, ``*_se_`` (NaN with ``standard_errors=False``, which skips their
cost) and ``result_`` (:class:`IRTResult`).

>>> import numpy as np
>>> Y = (np.random.default_rng(0).random((50, 20)) < 0.5).astype(float)
>>> fit_irt(Y, model="rasch", method="cml").result_.converged
True
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import numpy as np

from evalcert.errors import InputError

if TYPE_CHECKING:
    from evalcert.irt.base import IRTEstimator

#: public name -> the module that defines it (imported on first use)
_PUBLIC = {
    "IRTEstimator": "base", "IRTResult": "base", "STATIONARITY_LIMIT": "base",
    "BetaIRT": "beta", "ExtremeResponseWarning": "data", "require_finite_jml": "data",
    "validate_responses": "data", "conditional_terms": "estimation.esf",
    "log_esf": "estimation.esf", "LogisticFactor": "factor", "CVResult": "holdout",
    "HoldoutResult": "holdout", "cross_validate": "holdout", "heldout_auc": "holdout",
    "holdout_evaluate": "holdout", "holdout_predict": "holdout", "JEIRT": "je",
    "ess": "estimation.mcmc", "rhat": "estimation.mcmc",
    "PooledResponses": "estimation.pooling", "pool_responses": "estimation.pooling",
    "Rasch": "rasch", "TwoPL": "twopl", "FitStatistics": "compare",
    "LRTestResult": "compare", "information_criteria": "compare",
    "likelihood_ratio_test": "compare", "n_parameters": "compare",
    "ItemParameters": "information", "icc": "information", "item_information": "information",
    "item_parameters": "information", "test_information": "information",
    "FitResult": "itemfit", "item_fit": "itemfit", "GradedResponse": "polytomous",
    "ThreePL": "threepl", "AnchorResult": "anchors", "evaluate_anchors": "anchors",
    "select_anchors": "anchors", "ScoreResult": "scoring", "score_models": "scoring",
    "CATSession": "cat", "CATResult": "cat", "run_cat": "cat", "simulate_cat": "cat",
    "FourPL": "fourpl", "ThreePLu": "fourpl", "marginal_rxx": "reliability",
    "empirical_rxx": "reliability", "MultidimensionalTwoPL": "multidim",
    "MultidimScoreResult": "multidim", "DimsSelection": "multidim", "select_dims": "multidim",
}

__all__ = [*_PUBLIC, "make_estimator", "fit_irt", "MODELS"]

#: model name -> class name (the class is imported when a model is built)
_MODEL_CLASSES = {"rasch": "Rasch", "2pl": "TwoPL", "factor": "LogisticFactor",
                  "beta": "BetaIRT", "je": "JEIRT", "3pl": "ThreePL", "graded": "GradedResponse",
                  "4pl": "FourPL", "3plu": "ThreePLu", "m2pl": "MultidimensionalTwoPL"}


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(importlib.import_module(f"{__name__}.{_PUBLIC[name]}"), name)
    if name == "MODELS":
        return {model: __getattr__(cls) for model, cls in _MODEL_CLASSES.items()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)


def make_estimator(model: str, method: str | None = None, *, dims: int | None = None,
                   item_embeddings: np.ndarray | None = None, **options: Any) -> "IRTEstimator":
    """Build an estimator by name: ``model`` in :data:`MODELS`, ``method`` as it accepts.

    ``dims`` applies to ``factor``, ``je`` and ``m2pl``; ``item_embeddings`` is required by
    ``je``.

    Examples
    --------
    >>> est = make_estimator("rasch", "cml")
    >>> type(est).__name__, est.method
    ('Rasch', 'cml')
    """
    if model not in _MODEL_CLASSES:
        raise InputError(f"model must be one of {sorted(_MODEL_CLASSES)}, got {model!r}")
    cls = __getattr__(_MODEL_CLASSES[model])
    if method is not None and method not in cls.methods:
        raise InputError(f"model {model!r} supports methods {cls.methods}, got {method!r}")
    if dims is not None and model in ("factor", "je", "m2pl"):
        options["dims"] = dims
    if model == "je":
        if item_embeddings is None:
            raise InputError("model 'je' needs item_embeddings (n_items x D array)")
        return cls(item_embeddings, **options)
    if method is not None:
        options["method"] = method
    return cls(**options)


def fit_irt(Y: Any, model: str = "rasch", method: str | None = None, *,
            mask: np.ndarray | None = None, **options: Any) -> "IRTEstimator":
    """Fit an IRT model by name; returns the fitted estimator (see ``result_``).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> theta, b = rng.normal(size=60), np.linspace(-1, 1, 12)
    >>> Y = (rng.random((60, 12)) < 1 / (1 + np.exp(b - theta[:, None]))).astype(float)
    >>> est = fit_irt(Y, model="2pl", method="mml")
    >>> type(est).__name__, est.result_.converged, est.discriminations_.shape
    ('TwoPL', True, (12,))
    """
    return make_estimator(model, method, **options).fit(Y, mask=mask)
