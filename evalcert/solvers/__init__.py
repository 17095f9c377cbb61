"""Constrained fits with certificates: the clipped-linear model (Eq. 7), the
Gini projection (Prop. 4.1) and the IRT estimators."""

from evalcert.solvers.backends import available_backends
from evalcert.solvers.certificates import QP, Certificate, Tolerance, qp_certificate
from evalcert.solvers.clipped_linear import (ClippedLinear, ClippedLinearCertificate,
                                             ClippedLinearResult)
from evalcert.solvers.gini_dual import GiniCertificate, huber_certificate
from evalcert.solvers.gini_projection import GiniProjectionResult, gini_projection

__all__ = ["ClippedLinear", "ClippedLinearResult", "ClippedLinearCertificate", "Certificate",
           "Tolerance", "QP", "qp_certificate", "available_backends", "gini_projection",
           "GiniProjectionResult", "GiniCertificate", "huber_certificate"]
