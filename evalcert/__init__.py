"""evalcert: certified fits, exact judge audits and solver benchmarks for
label-free LLM evaluation.

The public names are imported lazily, so ``import evalcert`` (and the CLI)
start fast and load CVXPY, PuLP or matplotlib only when used.
"""

from __future__ import annotations

import importlib
from typing import Any

# OSQP's extension must be loaded before PuLP: PuLP 3.3 loads highspy's
# extension with RTLD_GLOBAL at import, and an OSQP extension loaded after it
# segfaults in setup (osqp 1.1.3, highspy 1.15.1, PuLP 3.3.2). Every evalcert
# module (and every joblib worker) imports this package first, so the order
# holds whatever the caller imports.
import osqp  # noqa: F401,E402

__version__ = "0.1.0"

_PUBLIC = {
    "ScoreMatrix": "evalcert.data",
    "read_scores": "evalcert.data",
    "ClippedLinear": "evalcert.solvers.clipped_linear",
    "Tolerance": "evalcert.solvers.certificates",
    "available_backends": "evalcert.solvers.backends",
    "alarm": "evalcert.logic",
    "demo_scores": "evalcert.datasets.demo",
}

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'evalcert' has no attribute {name!r}")
