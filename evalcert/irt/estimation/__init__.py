"""The IRT estimation engines, one module per method.

``joint_newton`` (pooled Rasch JML/MAP), ``pooling`` (exchangeable groups), ``esf`` and
``cml_information`` (conditional ML: symmetric functions, exact information), ``mml_em``
(marginal ML by EM, adaptive quadrature) with ``mml_estep`` (its E-steps), ``louis`` (MML
standard errors), ``anderson`` (acceleration), ``mml_direct`` (direct maximisation of the
marginal likelihood on a fixed grid: 3PL, graded) and ``mcmc`` (Bayesian Rasch).
"""
