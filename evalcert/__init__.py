"""evalcert: certified fits, exact judge audits and solver benchmarks for
label-free LLM evaluation.

The public names are imported lazily, so ``import evalcert`` (and the CLI)
start fast and load CVXPY, PuLP or matplotlib only when used.
"""

from __future__ import annotations

import importlib
from typing import Any

import importlib.abc
import sys

# OSQP's extension must be loaded before PuLP: PuLP 3.3 loads highspy's
# extension with RTLD_GLOBAL at import, and an OSQP extension loaded after it
# segfaults in setup (osqp 1.1.3, highspy 1.15.1, PuLP 3.3.2). Importing osqp
# costs ~0.4 s (scipy.sparse), so it is not done here: a finder on sys.meta_path
# loads osqp the first time pulp or highspy is imported after evalcert. Every
# evalcert module (and every joblib worker) imports this package first, so the
# order holds whatever the caller imports.


class _OsqpFirst(importlib.abc.MetaPathFinder):
    """Import osqp just before the first import of pulp or highspy."""

    def find_spec(self, name, path=None, target=None):  # noqa: D102
        if name in ("pulp", "highspy") and "osqp" not in sys.modules:
            sys.meta_path.remove(self)
            import osqp  # noqa: F401
        return None  # the normal finders import the module itself


if not any(isinstance(f, _OsqpFirst) for f in sys.meta_path) and "osqp" not in sys.modules:
    sys.meta_path.insert(0, _OsqpFirst())

__version__ = "0.1.0"

#: Public name -> the module that defines it. ``from evalcert import X`` imports
#: only X's module, on first use; the families: data, clipped-linear and Gini fits,
#: IRT estimators, judge audits, diagnostics, the solver benchmark and errors.
_PUBLIC = {
    # data
    "ScoreMatrix": "evalcert.data",
    "read_scores": "evalcert.io.scores",
    "demo_scores": "evalcert.datasets.demo",
    # clipped-linear (Eq. 7) and Gini (Prop. 4.1) fits with certificates
    "ClippedLinear": "evalcert.solvers.clipped_linear",
    "ClippedLinearResult": "evalcert.solvers.clipped_linear",
    "Certificate": "evalcert.solvers.certificates",
    "Tolerance": "evalcert.solvers.certificates",
    "available_backends": "evalcert.solvers.backends",
    "gini_projection": "evalcert.solvers.gini_projection",
    # IRT estimators
    "Rasch": "evalcert.irt.rasch",
    "TwoPL": "evalcert.irt.twopl",
    "LogisticFactor": "evalcert.irt.factor",
    "BetaIRT": "evalcert.irt.beta",
    "JEIRT": "evalcert.irt.je",
    "ThreePL": "evalcert.irt.threepl",
    "GradedResponse": "evalcert.irt.polytomous",
    "IRTResult": "evalcert.irt.base",
    "fit_irt": "evalcert.irt",
    "read_responses": "evalcert.io.responses",
    # judge audits (logic of unsupervised evaluation)
    "alarm": "evalcert.logic",
    "alarm_m2": "evalcert.logic",
    "alarm_full": "evalcert.logic.joint",
    "AlarmResult": "evalcert.logic",
    "run_audit": "evalcert.logic.audit",
    "AuditSpec": "evalcert.logic.audit",
    "AuditReport": "evalcert.logic.audit",
    "read_decisions": "evalcert.io.decisions",
    "label_counts": "evalcert.logic",
    # diagnostics and experiments of paper 000
    "curl_test": "evalcert.diagnostics",
    "enforce_dcore": "evalcert.diagnostics",
    "bootstrap_fidelity": "evalcert.diagnostics",
    "sparse_recovery": "evalcert.diagnostics",
    # which model is better: Bradley-Terry leaderboards (evalcert.compare(...) is callable)
    "rank": "evalcert.compare.leaderboard",
    # solver benchmark
    "bench": "evalcert.benchmarking",
    # errors
    "EvalcertError": "evalcert.errors",
    "InputError": "evalcert.errors",
    "ConnectivityError": "evalcert.errors",
    "InfeasibleError": "evalcert.errors",
    "SolverError": "evalcert.errors",
    "CertificateError": "evalcert.errors",
    "ConvergenceError": "evalcert.errors",
    "BackendUnavailableError": "evalcert.errors",
}

#: Subpackages reachable as attributes (``evalcert.logic``), imported on first use.
_SUBPACKAGES = ("benchmarking", "compare", "data", "datasets", "diagnostics", "errors", "io", "irt",
                "logic", "plots", "solvers")

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    if name in _SUBPACKAGES:
        return importlib.import_module(f"evalcert.{name}")
    raise AttributeError(f"module 'evalcert' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*__all__, *_SUBPACKAGES})
