"""Bootstrap of the training cells with refits on a fixed holdout (paper 000, App. D.4).

For ``b = 1..B``: resample the ``n`` training cells with replacement (cell
multiplicities ``w ~ Multinomial(n, 1/n)``, drawn as the counts of ``n``
uniform cell indices, ``np.bincount(rng.integers(0, n, n), minlength=n)``:
the same distribution as ``rng.multinomial(n, [1/n] * n)``, ~4x cheaper at
10^7 cells; earlier versions drew the latter, so a given seed's replicates
differ from theirs), refit the model with
``sample_weight=w``, evaluate on the original, never resampled, holdout and
record every fidelity metric. A resample that leaves an agent or item without
cells, or splits the design, is drawn again (and counted): its parameters
would not be identified. The CIs are the ``(1 - confidence)/2`` and
``(1 + confidence)/2`` percentiles of the replicates. Replicate ``b`` draws
from the ``b``-th child of ``SeedSequence(seed)``, so the output does not
depend on the backend or the chunking. Weights are one per training cell
(order of ``S.restrict(train).cells()``): memory O(observed cells); a model
with ``predict_cells`` is scored on the observed cells (no K x J array).

Warm refits everywhere: in this process every refit reuses the given model,
fitted on all training cells first, so each refit starts from the previous
optimum (a ``ClippedLinear`` keeps its compiled problem and factorisations).
Tasks of ``chunk_size`` replicates run through
:func:`evalcert.parallel.parallel_map`; on Dask the scores, design and model
are scattered once per worker, and each worker thread keeps ONE model for the
whole run (a cache keyed by the run's token, emptied on the Dask workers when
the run ends; a loky worker process frees it at the next run or when loky
retires the idle process): it fits all training cells once, then every
replicate of every task it runs warm-starts from the previous one, exactly as
in this process. A model with an ``_assume_connected(keep)`` method
(``ClippedLinear``) is told that the resample's cells connect the design, which
this module has just checked, so its fit does not check it again.
See :func:`bootstrap_fidelity` for an example.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import threading
import uuid
from typing import Any

import numpy as np

from evalcert.data import ScoreMatrix, bipartite_components
from evalcert.diagnostics.experiments import model_predictions
from evalcert.diagnostics.metrics import FidelityMetrics, fidelity
from evalcert.errors import EvalcertError, InputError
from evalcert.parallel import Backend, dask_client, parallel_map
from evalcert.results import ResultMixin, format_table

__all__ = ["METRICS", "BootstrapResult", "bootstrap_fidelity", "connected_resample",
           "resample_weights"]

METRICS = ("rmse", "spearman", "kendall", "auc")
_MAX_REDRAWS = 100


@dataclasses.dataclass(frozen=True)
class BootstrapResult(ResultMixin):
    """Point estimates and percentile CIs of the fidelity metrics (Table 3).

    Attributes
    ----------
    estimate : FidelityMetrics
        Metrics of the fit on the original training cells.
    intervals : dict of str to tuple of float
        ``(lower, upper)`` per available metric.
    n_boot, seed : int
    confidence : float
    n_redrawn : int
        Resamples drawn again because they left an agent or item without cells
        or split the design (the bootstrap is conditional on a connected design).
    replicates : dict of str to ndarray
        Per-replicate values; not in ``to_dict``.

    Examples
    --------
    Returned by :func:`bootstrap_fidelity` (see its example):

    >>> from evalcert.diagnostics.metrics import FidelityMetrics
    >>> estimate = FidelityMetrics(0.05, None, None, None, n_train=120, n_holdout=30, coverage=0.75)
    >>> res = BootstrapResult(estimate, {"rmse": (0.04, 0.06)}, n_boot=20, seed=0, confidence=0.95,
    ...                       n_redrawn=0, replicates={})
    >>> res.intervals["rmse"], res.estimate.rmse
    ((0.04, 0.06), 0.05)
    """

    estimate: FidelityMetrics
    intervals: dict[str, tuple[float, float]]
    n_boot: int
    seed: int
    confidence: float
    n_redrawn: int
    replicates: dict[str, np.ndarray] = dataclasses.field(repr=False)

    def to_frame(self) -> Any:
        """One row per bootstrap replicate, one column per metric."""
        import pandas as pd

        return pd.DataFrame({k: np.asarray(v) for k, v in self.replicates.items()})

    def summary(self) -> str:
        rows = [(m, getattr(self.estimate, m), lo, hi) for m, (lo, hi) in self.intervals.items()]
        pct = f"{self.confidence:.0%}"
        return (f"Bootstrap of training cells: {self.n_boot} refits ({self.n_redrawn} redrawn), "
                f"seed {self.seed}, {pct} percentile intervals\n"
                + format_table(rows, ["metric", "estimate", f"{pct} lower", f"{pct} upper"]))


@dataclasses.dataclass(frozen=True)
class _Run:
    """What every task of one bootstrap run shares (scattered once per Dask worker).

    ``model`` is the fitted model itself in this process (``in_process``),
    otherwise a copy taken before any fit (fitted solvers may hold
    factorisations that cannot be pickled). ``token`` names the run in the
    per-thread cache of :func:`_worker_state`.
    """

    model: Any
    S: ScoreMatrix
    train: np.ndarray
    holdout: np.ndarray
    reference_theta: np.ndarray | None
    partition: np.ndarray | None
    in_process: bool
    token: str

    def metrics(self, model: Any) -> FidelityMetrics:
        # on cells, the holdout RMSE reads the held-out cells only: predict there
        predictions = model_predictions(model, self.S, self.partition is not None, self.holdout)
        return fidelity(predictions, model.theta_, self.S, self.train, self.holdout,
                        self.reference_theta, self.partition)


#: ``thread id -> (token, model, S_train)``: one model per worker thread that
#: persists across the tasks of a run (at most one run's fit held per thread).
_STATE: dict[int, tuple[str, Any, ScoreMatrix]] = {}


def _worker_state(run: _Run) -> tuple[Any, ScoreMatrix]:
    """This thread's model and training scores for ``run``, fitted on all training cells."""
    key = threading.get_ident()
    state = _STATE.get(key)
    if state is None or state[0] != run.token:
        _STATE.pop(key, None)             # free an earlier run's fit before fitting this one
        S_train = run.S.restrict(run.train)
        if run.in_process:
            model = run.model             # already fitted on S_train's cells by the caller
        else:
            model = copy.deepcopy(run.model).fit(S_train)
        state = _STATE[key] = (run.token, model, S_train)
    return state[1], state[2]


def _forget(token: str) -> int:
    """Drop every cached state of run ``token`` in this process; return how many."""
    keys = [k for k, state in list(_STATE.items()) if state[0] == token]
    for k in keys:
        _STATE.pop(k, None)
    return len(keys)


def _forget_on_workers(scheduler: str | None, token: str) -> None:
    """Free the workers' cached fits of run ``token`` (best effort: when the
    cluster is gone, so are they; the run's own error, if any, is what propagates)."""
    with contextlib.suppress(EvalcertError, OSError, TimeoutError):
        with dask_client(scheduler) as client:
            client.run(_forget, token)


def resample_weights(rng: np.random.Generator, n: int) -> np.ndarray:
    """Multiplicities of ``n`` cells resampled with replacement: ``Multinomial(n, 1/n)``.

    Drawn as the counts of ``n`` uniform indices (O(n), ~4x cheaper than
    ``rng.multinomial`` over ``n`` categories); deterministic given ``rng``.

    Examples
    --------
    >>> w = resample_weights(np.random.default_rng(0), 5)
    >>> again = resample_weights(np.random.default_rng(0), 5)
    >>> w.dtype, float(w.sum()), w.tolist() == again.tolist()
    (dtype('float64'), 5.0, True)
    """
    return np.bincount(rng.integers(0, n, n), minlength=n).astype(float)


def connected_resample(rng: np.random.Generator, S_train: ScoreMatrix) -> tuple[np.ndarray, int]:
    """One bootstrap replicate's cell weights (:func:`resample_weights` over
    ``S_train.cells()``), drawn again until the resampled cells connect every
    agent and item (at most 100 draws); return the weights and the redraws.

    Raises :class:`~evalcert.errors.InputError` when 100 draws in a row fail.

    Examples
    --------
    >>> from evalcert.data import ScoreMatrix
    >>> S = ScoreMatrix.from_array(np.zeros((3, 4)))
    >>> w, redraws = connected_resample(np.random.default_rng(0), S)
    >>> len(w), float(w.sum()), redraws >= 0
    (12, 12.0, True)
    """
    rows, cols, _ = S_train.cells()
    for redraws in range(_MAX_REDRAWS):
        weight = resample_weights(rng, len(rows))
        used = weight > 0
        lr, lc = bipartite_components(rows[used], cols[used], S_train.shape)
        if max(lr.max(), lc.max()) == 0:
            return weight, redraws
    raise InputError(f"{_MAX_REDRAWS} resamples in a row left an agent or item without "
                     "cells or split the design; use a denser (d-core >= 3) design")


def _replicates(seeds: list[np.random.SeedSequence], run: _Run
                ) -> list[tuple[FidelityMetrics, int]]:
    """Refit this thread's model once per seed on multinomially resampled training cells."""
    model, S_train = _worker_state(run)
    # checked here for every model; a model that checks too is told it holds
    assume_connected = getattr(model, "_assume_connected", None)
    out = []
    for child in seeds:
        weight, redraws = connected_resample(np.random.default_rng(child), S_train)
        if assume_connected is not None:
            assume_connected(weight > 0)
        model.fit(S_train, sample_weight=weight)
        out.append((run.metrics(model), redraws))
    return out


def bootstrap_fidelity(model: Any, S: ScoreMatrix, train: np.ndarray, holdout: np.ndarray, *,
                       n_boot: int = 500, seed: int = 0,
                       reference_theta: np.ndarray | None = None,
                       partition: np.ndarray | None = None, confidence: float = 0.95,
                       chunk_size: int = 50, backend: Backend | None = None,
                       n_jobs: int | None = 1, scheduler: str | None = None,
                       progress: bool = False) -> BootstrapResult:
    """Percentile bootstrap of the fidelity metrics over the training cells (App. D.4).

    Parameters
    ----------
    model : estimator
        ``fit(S, sample_weight=)`` / ``predict()`` / ``theta_``, e.g.
        ``ClippedLinear(solver="native")`` or a baseline.
    S : ScoreMatrix
        All scores.
    train, holdout : ndarray of bool, shape (K, J) or (n_observed,)
        Training design (resampled) and holdout (fixed): K x J masks or boolean
        vectors over ``S.cells()``.
    n_boot : int
        Refits (paper: 500).
    seed : int
        Same seed, same replicates.
    reference_theta, partition : ndarray, optional
        For Spearman / Kendall and the ranking AUC (see :func:`fidelity`).
    confidence : float
        Level of the percentile intervals.
    chunk_size : int
        Replicates per parallel task (smaller: finer load balance and progress).
    backend, n_jobs, scheduler, progress
        See :func:`evalcert.parallel.parallel_map` (``scheduler`` = address of a
        Dask scheduler, with ``backend="dask"``). With ``loky`` and
        ``n_jobs=1`` every refit reuses the given model object in this process;
        otherwise every worker thread fits one copy (taken before any fit:
        fitted solvers may hold factorisations that cannot be pickled) on all
        training cells and reuses it for all its replicates (warm starts).

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert.data import ScoreMatrix
    >>> from evalcert.diagnostics.baselines import RaschLeastSquares
    >>> rng = np.random.default_rng(0)
    >>> S = ScoreMatrix.from_array(np.clip(np.add.outer(rng.normal(0, .3, 8), rng.normal(0, .3, 20))
    ...                            + rng.normal(0, .05, (8, 20)), -1, 1))
    >>> hold = np.random.default_rng(1).random(S.shape) < 0.2
    >>> res = bootstrap_fidelity(RaschLeastSquares("identity"), S, ~hold, hold, n_boot=20, n_jobs=1)
    >>> low, high = res.intervals["rmse"]  # a 95% interval per metric
    >>> res.n_boot, len(res.replicates["rmse"]), res.confidence, bool(0 < low < high)
    (20, 20, 0.95, True)

    (The estimate, a fit on all training cells, need not lie inside: refits on
    resampled cells typically predict the holdout a little worse, so it sits in the
    lower tail of the replicates.)
    """
    train, holdout = S.cell_mask(train), S.cell_mask(holdout)
    in_process = backend in (None, "loky") and n_jobs == 1
    run = _Run(model if in_process else copy.deepcopy(model), S, train, holdout,
               reference_theta, partition, in_process, uuid.uuid4().hex)
    model.fit(S.restrict(train))
    estimate = run.metrics(model)
    seeds = np.random.SeedSequence(seed).spawn(n_boot)
    chunks = [seeds[k:k + chunk_size] for k in range(0, n_boot, chunk_size)]
    try:
        done = [r for chunk in parallel_map(_replicates, chunks, shared=(run,), backend=backend,
                                            n_jobs=n_jobs, scheduler=scheduler,
                                            progress=progress, desc="bootstrap") for r in chunk]
    finally:
        _forget(run.token)
        if backend == "dask":
            _forget_on_workers(scheduler, run.token)
    runs = [m for m, _ in done]
    alpha = (1.0 - confidence) / 2.0
    replicates, intervals = {}, {}
    for name in METRICS:
        if getattr(estimate, name) is None:
            continue
        values = np.array([getattr(m, name) for m in runs])
        replicates[name] = values
        lo, hi = np.quantile(values, [alpha, 1.0 - alpha])
        intervals[name] = (float(lo), float(hi))
    return BootstrapResult(estimate, intervals, int(n_boot), int(seed), float(confidence),
                           sum(r for _, r in done), replicates)
