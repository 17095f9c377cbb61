"""Hot kernels of the IRT fits timed against a floor measured in the same run.

The floor of an E-step is one ``exp`` and one ``log`` pass over the cells x
nodes it touches (observed cells times quadrature nodes): every E-step must at
least evaluate each cell's probability at each node and take its logarithm.
``ratio`` is the E-step's time over the floor's (best of ``repeat``), so the
distance to the machine's limit is on record, not only the distance to a peer.

Kernels built on matrix products get a second floor, :func:`grid_floor_seconds`:
the BLAS products of ``(models x items) @ (items x nodes)`` shape the kernel cannot
avoid, plus one ``exp`` and one ``log`` pass over the item table (items x nodes)
and over the models x nodes result. It is the one that applies to scoring (a
grid of nodes per model, :func:`scoring_kernel`) and to the multidimensional
2PL's E-step (:func:`m2pl_estep`, printed beside the ``exp + log`` floor). The
``floor`` column of :data:`KERNEL_HEADERS` says which floor a row uses (``exp + log``,
or ``grid, P products``: :func:`grid_floor_seconds` with ``P`` products); a ratio
below 1 means the kernel does less than that floor (e.g. Chebyshev sums instead
of one transcendental function per cell and node). Imported by ``bench_irt.py``,
``bench_irt_models.py``, ``bench_grm.py``, ``bench_histogram.py``, ``bench_scoring.py``,
``bench_m2pl.py``, ``bench_rasch_missing.py`` and ``bench_irt_practitioner.py``
(``bench_cat.py`` uses :func:`best_of`).
"""

from __future__ import annotations

import time

import numpy as np

KERNEL_HEADERS = ["data", "kernel", "cells x nodes", "kernel ms", "floor", "floor ms",
                  "kernel / floor"]
#: the floor of :func:`floor_seconds`
EXP_LOG = "exp + log"


def best_of(fun, repeat: int = 5, clock=time.perf_counter) -> float:
    """Best time of ``fun()`` in seconds: wall by default, CPU with
    ``clock=time.process_time``."""
    best = np.inf
    for _ in range(repeat):
        start = clock()
        fun()
        best = min(best, clock() - start)
    return best


def floor_seconds(n_values: int, repeat: int = 5, clock=time.perf_counter) -> float:
    """One ``exp`` and one ``log`` pass over ``n_values`` doubles (best of ``repeat``)."""
    x = np.random.default_rng(0).uniform(-3, 3, n_values)

    def passes():
        y = np.exp(x)
        np.log(y, out=y)
    return best_of(passes, repeat, clock)


def grid_floor_seconds(n_models: int, n_items: int, n_nodes: int, products: int = 1,
                       repeat: int = 5) -> float:
    """The least work of log-likelihoods of ``n_models`` at ``n_nodes`` nodes each (best of
    ``repeat``, one thread as the caller sets it): one ``exp`` and one ``log`` pass over the
    items x nodes table, the sufficient sums ``(models x items) @ (items x 2)``, ``products``
    BLAS products ``(models x items) @ (items x nodes)`` (0 for complete logistic data, whose
    sums over items are column sums; 1 for a mask of observed cells; more for an E-step that
    also needs its counts back), and one ``exp`` and one ``log`` pass over models x nodes
    (the posterior weights and their normaliser)."""
    rng = np.random.default_rng(0)
    n_nodes = max(int(np.ceil(n_nodes)), 1)
    X = (rng.random((n_models, n_items)) < 0.5).astype(float)
    table = rng.uniform(-3, 3, (n_items, n_nodes))
    stats = rng.normal(size=(n_items, 2))

    def passes():
        T = np.exp(table)
        np.log(T, out=T)
        X @ stats
        for _ in range(products):
            X @ T
        L = np.multiply.outer(X[:, 0], T[0])
        np.exp(L, out=L)
        np.log(L, out=L)
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


def objective_kernel(objective, observed: np.ndarray, n_quad: int, kernel: str,
                     repeat: int = 5) -> tuple:
    """``(kernel, cells x nodes, s, floor s)`` of a marginal fit's objective (one
    log-likelihood and its exact gradient, E-step included) called as ``objective()``, on
    ``n_quad`` nodes over the ``observed`` cells."""
    took = best_of(objective, repeat)
    cells = int(np.count_nonzero(observed)) * n_quad
    return kernel, cells, took, floor_seconds(cells, repeat)


def scoring_kernel(params, Y: np.ndarray, method: str = "eap", repeat: int = 5) -> tuple:
    """``(kernel, cells x nodes, s, floor s, floor)`` of scoring the rows of ``Y`` (NaN where
    missing) on frozen logistic items ``params`` by ``method``
    (:func:`~evalcert.irt.scoring.score_abilities`, prior N(0, 1)). The model x node pairs
    the call evaluates on its grids (EAP: the posterior grids, refinements included;
    MAP/WLE/ML: the grid the roots are bracketed on) are counted in one untimed call; the
    floor is :func:`grid_floor_seconds` at that many nodes per model, with one mask product
    when cells are missing. Cells x nodes: observed cells times nodes per model."""
    from unittest import mock

    from evalcert.irt import scoring

    observed = ~np.isnan(Y)
    pairs = []
    grid_call, loglik_call = scoring._logistic_grid, scoring._LogLikGrid.__call__

    def on_grid(cells, params, grid, need):
        pairs.append(cells.n * grid.size)
        return grid_call(cells, params, grid, need)

    def on_loglik(self, idx, nodes, mats):
        pairs.append(idx.size * nodes.size)
        return loglik_call(self, idx, nodes, mats)

    def run():
        return scoring.score_abilities(params, Y, observed, method=method, prior=(0.0, 1.0))
    with mock.patch.object(scoring, "_logistic_grid", on_grid), \
            mock.patch.object(scoring._LogLikGrid, "__call__", on_loglik):
        run()
    took = best_of(run, repeat)
    n, m = Y.shape
    nodes = sum(pairs) / n
    products = 0 if observed.all() else 1
    floor = grid_floor_seconds(n, m, nodes, products, repeat)
    return (f"{method.upper()}, {nodes:.0f} nodes/model",
            int(round(observed.sum() * nodes)), took, floor, grid_label(products))


def m2pl_estep(Y: np.ndarray, dims: int, n_points: int, repeat: int = 5) -> list[tuple]:
    """Two measurements of the multidimensional 2PL's E-step (log-likelihood and expected
    counts on the ``n_points^dims`` product grid, at the starting values): against the
    ``exp + log`` floor over observed cells x nodes, and against :func:`grid_floor_seconds`
    with the products it makes (responses and mask forward, the counts back: four with
    missing cells, two without). One BLAS thread, as the fit runs."""
    from threadpoolctl import threadpool_limits

    from evalcert.irt.estimation.mml_multidim import _Cells, _estep, _start, product_grid

    observed = ~np.isnan(Y)
    Z, logw = product_grid(dims, n_points)
    cells = _Cells(np.where(observed, Y, 0.0), observed, len(Z))
    P = _start(np.where(observed, Y, 0.0), observed, dims)
    n_cells = int(observed.sum()) * len(Z)
    products = 2 if observed.all() else 4
    with threadpool_limits(1):
        took = best_of(lambda: _estep(cells, P, Z, logw), repeat)
        grid_floor = grid_floor_seconds(*Y.shape, len(Z), products, repeat)
    kernel = f"M2PL E-step, {n_points}^{dims} nodes"
    return [(kernel, n_cells, took, floor_seconds(n_cells, repeat)),
            (kernel, n_cells, took, grid_floor, grid_label(products))]


def cml_terms(Y: np.ndarray, repeat: int = 5) -> tuple:
    """``(kernel, cells x nodes, CPU s, floor CPU s)`` of the Rasch CML's hot kernel,
    :func:`~evalcert.irt.estimation.esf.conditional_cells` (each model's ``log gamma`` and
    conditional probabilities by Fourier inversion), at difficulties from the item
    proportions. Cells x nodes: every model's observed items times the circle nodes its
    score law keeps at its saddle point (``esf._circle``; the kernel evaluates a tilt
    group's nodes once for the group, and its leave-one-out sums per model). CPU seconds
    (all threads), as the kernel runs on a thread pool for large designs."""
    from evalcert.irt.estimation import esf

    observed = np.isfinite(Y)
    scores = np.nansum(Y, 1)
    keep = (scores > 0) & (scores < observed.sum(1))
    sets = esf.ObservedSets.from_mask(observed[keep])
    share = (np.nansum(Y[keep], 0) + 0.5) / (observed[keep].sum(0) + 1.0)
    b = -np.log(share / (1 - share))
    sizes = np.diff(sets.indptr)
    _, sd = esf._saddle_abilities(b, sets, scores[keep], np.ones(b.size), None)
    _, _, nodes = esf._circle(sd ** 2, sizes)
    cells = int(sizes @ nodes.sum(1))
    took = best_of(lambda: esf.conditional_cells(b, sets, scores[keep]), repeat,
                   time.process_time)
    return ("CML log gamma + pi (esf.conditional_cells)", cells, took,
            floor_seconds(cells, repeat, time.process_time))


def histogram_kernels(Y: np.ndarray, n_quad: int = 61, repeat: int = 5) -> list[tuple]:
    """The two halves of a pure-ML 2PL cycle with an empirical-histogram density
    (``TwoPL(slope_prior=0, density="histogram")``, fitted by the 3PL engine with floor 0):
    the items' objective (one marginal log-likelihood and its exact gradient, E-step
    included) over the observed cells x ``n_quad`` nodes, and the mass step
    (:meth:`~evalcert.irt.density.Histogram.maximise` at that E-step's posteriors, from
    the flat start) over models x nodes, each against one ``exp`` and one ``log`` pass over
    its cells x nodes; slopes 1, intercepts from the item proportions."""
    import copy

    from evalcert.irt.density import make_density
    from evalcert.irt.estimation.mml_direct import MarginalData
    from evalcert.irt.threepl import ThreePL

    observed = np.isfinite(Y)
    md = MarginalData(np.where(observed, Y, -1).astype(int), 2, n_quad)
    engine = ThreePL(guessing=0.0, slope_prior=0, intercept_prior=0.0, n_quad=n_quad,
                     density="histogram")
    engine._density = density = make_density("histogram", md.z)
    md.logw = density.log_weights(md.z)
    m = Y.shape[1]
    share = (np.nansum(Y, 0) + 0.5) / (observed.sum(0) + 1.0)
    x = np.concatenate([np.ones(m), np.log(share / (1 - share))])
    items = objective_kernel(lambda: engine._objective(x, md, m), observed, n_quad,
                             f"2PL log-lik + gradient, {n_quad} nodes", repeat)
    post = engine._last[1]
    took = best_of(lambda: copy.deepcopy(density).maximise(md.z, post), repeat)
    return [items, ("histogram mass step (Histogram.maximise)", post.size, took,
                    floor_seconds(post.size, repeat))]


def grid_label(products: int) -> str:
    """The ``floor`` column of a :func:`grid_floor_seconds` floor with ``products`` products."""
    return f"grid, {products} product{'s' * (products != 1)}"


def kernel_row(label: str, measured: tuple) -> tuple:
    """One row of :data:`KERNEL_HEADERS` from a measurement ``(kernel, cells x nodes, s,
    floor s[, floor])``; the floor defaults to :data:`EXP_LOG`."""
    kernel, cells, took, floor, *what = measured
    return (label, kernel, cells, 1e3 * took, what[0] if what else EXP_LOG, 1e3 * floor,
            took / floor)
