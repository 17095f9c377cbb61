"""Constrained fits with certificates: the clipped-linear model (Eq. 7) and the
Gini projection (Prop. 4.1) as QPs with recovered duals (the IRT estimators are in
:mod:`evalcert.irt`; ``evalcert.solvers.irt`` is a deprecated alias for one release)."""

import importlib
import sys
import types
from typing import Any

# Imported on first use (PEP 562), so that importing a submodule such as
# evalcert.irt or evalcert.solvers.backends does not load CVXPY.
_PUBLIC = {"available_backends": "evalcert.solvers.backends",
           "QP": "evalcert.solvers.certificates", "Certificate": "evalcert.solvers.certificates",
           "Tolerance": "evalcert.solvers.certificates",
           "qp_certificate": "evalcert.solvers.certificates",
           "ClippedLinear": "evalcert.solvers.clipped_linear",
           "ClippedLinearCertificate": "evalcert.solvers.clipped_linear",
           "ClippedLinearResult": "evalcert.solvers.clipped_linear",
           "GiniCertificate": "evalcert.solvers.gini_dual",
           "huber_certificate": "evalcert.solvers.gini_dual",
           "GiniProjectionResult": "evalcert.solvers.gini_projection",
           "gini_projection": "evalcert.solvers.gini_projection"}

__all__ = list(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'evalcert.solvers' has no attribute {name!r}")


class _Package(types.ModuleType):
    """Keep ``evalcert.solvers.gini_projection`` the function, as the eager package had it.

    Importing a submodule binds it to the package attribute of the same name; for
    a public name defined in that submodule (``gini_projection``) the function is
    bound instead, whichever is imported first.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if (name in _PUBLIC and isinstance(value, types.ModuleType)
                and value.__name__ == f"{__name__}.{name}" and hasattr(value, name)):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
