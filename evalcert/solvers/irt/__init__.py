"""IRT estimators for LLM benchmarks (models x items response matrices).

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

from typing import Any

import numpy as np

from evalcert.errors import InputError
from evalcert.solvers.irt.base import STATIONARITY_LIMIT, IRTEstimator, IRTResult
from evalcert.solvers.irt.beta import BetaIRT
from evalcert.solvers.irt.data import (ExtremeResponseWarning, require_finite_jml,
                                       validate_responses)
from evalcert.solvers.irt.esf import conditional_terms, log_esf
from evalcert.solvers.irt.factor import LogisticFactor
from evalcert.solvers.irt.holdout import (CVResult, HoldoutResult, cross_validate,
                                          heldout_auc, holdout_evaluate, holdout_predict)
from evalcert.solvers.irt.je import JEIRT
from evalcert.solvers.irt.mcmc import ess, rhat
from evalcert.solvers.irt.pooling import PooledResponses, pool_responses
from evalcert.solvers.irt.rasch import Rasch
from evalcert.solvers.irt.twopl import TwoPL
from evalcert.solvers.irt.compare import (FitStatistics, LRTestResult, information_criteria,
                                          likelihood_ratio_test, n_parameters)
from evalcert.solvers.irt.information import (ItemParameters, icc, item_information,
                                              item_parameters, test_information)
from evalcert.solvers.irt.itemfit import FitResult, item_fit
from evalcert.solvers.irt.polytomous import GradedResponse
from evalcert.solvers.irt.threepl import ThreePL
from evalcert.solvers.irt.anchors import AnchorResult, evaluate_anchors, select_anchors
from evalcert.solvers.irt.export import estimate_tables, read_item_table
from evalcert.solvers.irt.responses import ResponseTable, read_responses, responses_from_long
from evalcert.solvers.irt.scoring import ScoreResult, score_models

__all__ = ["IRTEstimator", "IRTResult", "Rasch", "TwoPL", "LogisticFactor", "BetaIRT",
           "JEIRT", "ExtremeResponseWarning", "validate_responses", "require_finite_jml",
           "pool_responses", "PooledResponses", "STATIONARITY_LIMIT", "log_esf",
           "conditional_terms", "rhat", "ess", "holdout_predict", "holdout_evaluate",
           "cross_validate", "heldout_auc", "HoldoutResult", "CVResult", "make_estimator",
           "fit_irt", "MODELS"]
__all__ += ["score_models", "ScoreResult", "item_fit", "FitResult", "ItemParameters",
            "item_parameters", "icc", "item_information", "test_information",
            "information_criteria", "likelihood_ratio_test", "n_parameters", "FitStatistics",
            "LRTestResult", "evaluate_anchors", "select_anchors", "AnchorResult",
            "estimate_tables", "read_item_table", "read_responses", "responses_from_long",
            "ResponseTable", "ThreePL", "GradedResponse"]

MODELS = {"rasch": Rasch, "2pl": TwoPL, "factor": LogisticFactor, "beta": BetaIRT,
          "je": JEIRT, "3pl": ThreePL, "graded": GradedResponse}


def make_estimator(model: str, method: str | None = None, *, dims: int | None = None,
                   item_embeddings: np.ndarray | None = None, **options: Any) -> IRTEstimator:
    """Build an estimator by name: ``model`` in :data:`MODELS`, ``method`` as it accepts.

    ``dims`` applies to ``factor`` and ``je``; ``item_embeddings`` is required by ``je``.

    Examples
    --------
    >>> est = make_estimator("rasch", "cml")
    >>> type(est).__name__, est.method
    ('Rasch', 'cml')
    """
    if model not in MODELS:
        raise InputError(f"model must be one of {sorted(MODELS)}, got {model!r}")
    cls = MODELS[model]
    if method is not None and method not in cls.methods:
        raise InputError(f"model {model!r} supports methods {cls.methods}, got {method!r}")
    if dims is not None and model in ("factor", "je"):
        options["dims"] = dims
    if model == "je":
        if item_embeddings is None:
            raise InputError("model 'je' needs item_embeddings (n_items x D array)")
        return cls(item_embeddings, **options)
    if method is not None:
        options["method"] = method
    return cls(**options)


def fit_irt(Y: Any, model: str = "rasch", method: str | None = None, *,
            mask: np.ndarray | None = None, **options: Any) -> IRTEstimator:
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
