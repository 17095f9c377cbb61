"""Hot kernels of the IRT fits timed against a floor measured in the same run.

The floor of an E-step is one ``exp`` and one ``log`` pass over the cells x
nodes it touches (observed cells times quadrature nodes): every E-step must at
least evaluate each cell's probability at each node and take its logarithm.
``ratio`` is the E-step's time over the floor's (best of ``repeat``), so the
distance to the machine's limit is on record, not only the distance to a peer.
Imported by ``bench_irt.py`` and ``bench_irt_models.py``.
"""

from __future__ import annotations

import time

import numpy as np

KERNEL_HEADERS = ["data", "kernel", "cells x nodes", "kernel ms", "floor ms (exp + log)",
                  "kernel / floor"]


def best_of(fun, repeat: int = 5, clock=time.perf_counter) -> float:
    """Best time of ``fun()`` in seconds: wall by default, CPU with
    ``clock=time.process_time``."""
    best = np.inf
    for _ in range(repeat):
        start = clock()
        fun()
        best = min(best, clock() - start)
    return best


def floor_seconds(n_values: int, repeat: int = 5) -> float:
    """One ``exp`` and one ``log`` pass over ``n_values`` doubles, in place (best of ``repeat``)."""
    x = np.random.default_rng(0).uniform(-3, 3, n_values)

    def passes():
        y = np.exp(x)
        np.log(y, out=y)
    return best_of(passes, repeat)


def binary_estep(Y: np.ndarray, rasch: bool = False, repeat: int = 5) -> tuple:
    """``(kernel, cells x nodes, E-step s, floor s)`` of the 2PL/Rasch MML E-step on ``Y``."""
    from evalcert.irt.estimation.mml_em import auto_n_quad
    from evalcert.irt.estimation.mml_estep import _AdaptiveEStep, _CompleteEStep

    observed = np.isfinite(Y)
    n_quad = auto_n_quad(observed)
    if observed.all():
        estep = _CompleteEStep(Y, pool_by_score=rasch, n_quad=n_quad, shared_only=False,
                               n_threads=1)
    else:
        estep = _AdaptiveEStep(np.where(observed, Y, 0.0), observed, n_quad, 1)
    share = (np.nansum(Y, 0) + 0.5) / (observed.sum(0) + 1.0)
    a, d = np.ones(Y.shape[1]), np.log(share / (1 - share))
    mu, sd = estep.start(a, d)
    took = best_of(lambda: estep(a, d, mu, sd), repeat)
    cells = int(observed.sum()) * n_quad
    return estep.describe(), cells, took, floor_seconds(cells, repeat)


def graded_estep(codes: np.ndarray, K: int, n_quad: int = 61, repeat: int = 5,
                 a: np.ndarray | None = None, d: np.ndarray | None = None) -> tuple:
    """The same for the GRM's E-step (:class:`~evalcert.irt.estimation.graded_em.GradedEStep`)
    at ``(a, d)`` (default: unit slopes, evenly spread intercepts). The E-step evaluates only
    a window of nodes (the rest certified negligible), so the floor is taken over the
    cells x nodes of the window it settled on (the label says how many of ``n_quad``)."""
    from evalcert.irt.estimation.graded_em import GradedEStep

    estep = GradedEStep(codes, K, n_quad)
    m = codes.shape[1]
    if a is None or d is None:
        a, d = np.ones(m), np.tile(np.linspace(2, -2, K - 1), (m, 1))
    estep(a, d)                                   # settles the window
    took = best_of(lambda: estep(a, d), repeat)
    lo, hi = estep.window
    cells = estep.n_cells * (hi - lo)
    return (f"GRM E-step, {hi - lo} of {n_quad} grid nodes", cells, took,
            floor_seconds(cells, repeat))


def kernel_row(label: str, measured: tuple) -> tuple:
    kernel, cells, took, floor = measured
    return (label, kernel, cells, 1e3 * took, 1e3 * floor, took / floor)
