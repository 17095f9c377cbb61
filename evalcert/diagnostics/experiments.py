"""The paper's sparse-recovery experiments (paper 000, Sec. 5-6, Tables 3-5, Fig. 2).

Protocol (App. D.1): hold out cells once (fixed ``holdout_seed``); fit the
dense model on every other observed cell (the reference for Spearman and
Kendall); for each sampling seed draw a training design under a regime with
d-core >= 3, fit, and score it on the same holdout. Seeds run through
:func:`evalcert.parallel.parallel_map` (loky, dask or ray, with tqdm); on Dask
(``backend="dask"``, ``scheduler="tcp://host:8786"`` or the current Client) the
scores, holdout and dense reference are scattered once per worker.

A fit that fails with a typed solver error (:class:`~evalcert.errors.SolverError`,
:class:`~evalcert.errors.InfeasibleError`) does not lose the run: it is
recorded as a :class:`FailedFit` (seed, setting, error), counted in the
summary and the JSON, and reported on stderr ("1 of 50 fits failed: ...");
``strict=True`` restores fail-fast (the first failure is raised).

Holdout, training designs and d-core top-ups are boolean vectors over
``S.cells()`` (O(observed cells)); a model with ``predict_cells(rows, cols)``
is scored on the held-out cells without any K x J array (the ranking AUC,
which averages over every item, uses ``predict()``).

Example
-------
>>> import numpy as np
>>> from evalcert.data import ScoreMatrix
>>> from evalcert.diagnostics.baselines import RaschLeastSquares
>>> rng = np.random.default_rng(0)
>>> S = ScoreMatrix.from_array(np.clip(np.add.outer(rng.normal(0, .3, 12), rng.normal(0, .3, 40))
...                            + rng.normal(0, .05, (12, 40)), -1, 1))
>>> res = sparse_recovery(S, "nlogn", C=1.0, seeds=2, model=RaschLeastSquares("identity"),
...                       n_jobs=1, progress=False)
>>> res.runs[0].rmse < 0.1
True
"""

from __future__ import annotations

import copy
import dataclasses
import sys
import time
from typing import Any, Mapping, Sequence

import numpy as np

from evalcert.data import ScoreMatrix
from evalcert.diagnostics.metrics import FidelityMetrics, fidelity
from evalcert.errors import InfeasibleError, SolverError
from evalcert.diagnostics.sampling import HoldoutScheme, holdout_on_cells, sample_training_cells
from evalcert.parallel import Backend, parallel_map
from evalcert.results import ResultMixin, format_table

__all__ = ["model_predictions", "FailedFit", "SparseRecoveryResult", "sparse_recovery",
           "CoverageSweepResult", "coverage_sweep", "BaselineComparisonResult", "baseline_comparison"]

_METRICS = ("coverage", "rmse", "spearman", "kendall", "auc")


def _default_model() -> Any:
    from evalcert.solvers import ClippedLinear
    return ClippedLinear(lam=1e-6, solver="native")


@dataclasses.dataclass(frozen=True)
class _Protocol:
    """What every run shares: scores, holdout, dense reference, partition, unfitted model.

    The model is a copy taken before any fit: fitted solvers may hold
    factorisations that cannot be pickled to workers.
    """

    S: ScoreMatrix
    holdout: np.ndarray     # boolean over S.cells()
    dense: FidelityMetrics
    reference_theta: np.ndarray
    partition: np.ndarray | None
    model: Any
    d: int
    holdout_fraction: float
    holdout_seed: int

    def score(self, model: Any, train: np.ndarray) -> FidelityMetrics:
        model.fit(self.S.restrict(train))
        return fidelity(model_predictions(model, self.S, self.partition is not None),
                        model.theta_, self.S, train, self.holdout, self.reference_theta,
                        self.partition)


def model_predictions(model: Any, S: ScoreMatrix, every_cell: bool = False,
                      only: np.ndarray | None = None) -> np.ndarray:
    """A fitted model's predictions for :func:`~evalcert.diagnostics.metrics.fidelity`.

    At the observed cells of ``S`` (order of ``S.cells()``, O(observed cells))
    when the model has ``predict_cells`` and ``every_cell`` is False; otherwise
    the K x J ``predict()`` (needed for the ranking AUC, which averages over
    all items). ``only`` (a boolean vector over ``S.cells()``, e.g. the
    holdout, all that the RMSE reads) restricts the cell predictions to those
    cells; the others are NaN.

    Examples
    --------
    >>> from evalcert import ClippedLinear, demo_scores
    >>> S = demo_scores()
    >>> model = ClippedLinear().fit(S)
    >>> on_cells, dense = model_predictions(model, S), model_predictions(model, S, True)
    >>> on_cells.shape == (S.n_observed,), dense.shape
    (True, (30, 200))
    >>> held = np.arange(S.n_observed) % 5 == 0
    >>> part = model_predictions(model, S, only=held)
    >>> bool(np.array_equal(part[held], on_cells[held])), bool(np.isnan(part[~held]).all())
    (True, True)
    """
    if not every_cell and hasattr(model, "predict_cells"):
        rows, cols, _ = S.cells()
        if only is None:
            return np.asarray(model.predict_cells(rows, cols))
        out = np.full(len(rows), np.nan)
        out[only] = model.predict_cells(rows[only], cols[only])
        return out
    return model.predict()


@dataclasses.dataclass(frozen=True)
class FailedFit(ResultMixin):
    """One sparse fit that raised a typed solver error, kept instead of losing the run.

    Attributes
    ----------
    seed : int
    regime : str
    params : dict of str to float
    error : str
        The exception's class name (``SolverError``, ``CertificateError``, ...).
    message : str

    Examples
    --------
    >>> f = FailedFit(357, "nlogn", {"C": 1.6}, "SolverError", "status 'cycling'")
    >>> f.summary()
    "seed 357 (nlogn, C=1.6): SolverError: status 'cycling'"
    """

    seed: int
    regime: str
    params: dict[str, float]
    error: str
    message: str

    def summary(self) -> str:
        params = ", ".join(f"{k}={v:g}" for k, v in self.params.items())
        return f"seed {self.seed} ({self.regime}{', ' + params if params else ''}): " \
               f"{self.error}: {self.message}"


#: What a failed fit may raise and still be recorded rather than end the run.
FIT_ERRORS = (SolverError, InfeasibleError)


def _run(job: tuple[str, dict[str, float], int, bool], protocol: _Protocol
         ) -> FidelityMetrics | FailedFit:
    """One sparse fit; ``protocol`` is shared (scattered once per Dask worker).
    A typed solver error becomes a :class:`FailedFit` unless ``strict``."""
    regime, params, seed, strict = job
    design = sample_training_cells(protocol.S, protocol.holdout, regime, d=protocol.d,
                                   seed=seed, **params)
    try:
        return protocol.score(copy.deepcopy(protocol.model), design.mask)
    except FIT_ERRORS as err:
        if strict:
            raise
        return FailedFit(seed, regime, dict(params), type(err).__name__, str(err))


def _protocol(S: ScoreMatrix, model: Any, partition: np.ndarray | None, holdout_fraction: float,
              holdout_seed: int, holdout_scheme: HoldoutScheme, d: int) -> _Protocol:
    model = _default_model() if model is None else model
    template = copy.deepcopy(model)
    holdout = holdout_on_cells(S, holdout_fraction, holdout_seed, holdout_scheme)
    dense_train = ~holdout
    model.fit(S.restrict(dense_train))
    theta = np.array(model.theta_)
    dense = fidelity(model_predictions(model, S, partition is not None), theta, S, dense_train,
                     holdout, theta, partition)
    return _Protocol(S, holdout, dense, theta, partition, template, d, holdout_fraction,
                     holdout_seed)


def _stats(runs: Sequence[FidelityMetrics], name: str) -> tuple[float, float, float, float]:
    v = np.array([getattr(r, name) for r in runs], dtype=float)
    if len(v) == 0:         # every fit failed
        return (float("nan"),) * 4
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0, float(v.min()), float(v.max())


@dataclasses.dataclass(frozen=True)
class SparseRecoveryResult(ResultMixin):
    """Dense reference and one sparse fit per seed (Tables 3-4).

    Attributes
    ----------
    regime : str
    params : dict of str to float
    seeds : tuple of int
    d : int
    holdout_fraction : float
    holdout_seed : int
    dense : FidelityMetrics
        Fit on every non-held-out cell.
    runs : tuple of FidelityMetrics
        One per seed whose fit succeeded (in seed order).
    failures : tuple of FailedFit
        One per seed whose fit raised a typed solver error; ``n_failed``
        counts them (also in the JSON).

    Examples
    --------
    >>> from evalcert.diagnostics.baselines import RaschLeastSquares
    >>> rng = np.random.default_rng(0)
    >>> S = ScoreMatrix.from_array(np.clip(np.add.outer(rng.normal(0, .3, 12),
    ...                                                 rng.normal(0, .3, 40)), -1, 1))
    >>> res = sparse_recovery(S, "nlogn", C=1.0, seeds=2, model=RaschLeastSquares("identity"),
    ...                       n_jobs=1, progress=False)
    >>> res.regime, res.params, res.seeds, res.d, len(res.runs)
    ('nlogn', {'C': 1.0}, (0, 1), 3, 2)
    """

    regime: str
    params: dict[str, float]
    seeds: tuple[int, ...]
    d: int
    holdout_fraction: float
    holdout_seed: int
    dense: FidelityMetrics
    runs: tuple[FidelityMetrics, ...]
    failures: tuple[FailedFit, ...] = ()
    n_failed: int = 0

    def mean(self, metric: str) -> float:
        """Mean over seeds of ``metric`` (``coverage``, ``rmse``, ``spearman``, ...)."""
        return _stats(self.runs, metric)[0]

    def to_frame(self) -> Any:
        """One row per seed that fitted: the seed and its fidelity metrics."""
        import pandas as pd

        failed = {f.seed for f in self.failures}
        seeds = [s for s in self.seeds if s not in failed]
        return pd.DataFrame([{"seed": s, **m.to_dict()} for s, m in zip(seeds, self.runs)])

    def summary(self) -> str:
        params = ", ".join(f"{k}={v:g}" for k, v in self.params.items())
        rows = [(m, getattr(self.dense, m), *_stats(self.runs, m)) for m in _METRICS
                if getattr(self.dense, m) is not None]
        rel = self.mean("rmse") / self.dense.rmse - 1.0
        failed = "" if not self.failures else (
            f"\n{_failure_line(self.failures, len(self.seeds))}; statistics over the "
            f"{len(self.runs)} fits that succeeded")
        return (f"Sparse recovery: {self.regime} ({params}), d-core >= {self.d}, "
                f"{len(self.seeds)} seeds, holdout {self.holdout_fraction:.0%} "
                f"(seed {self.holdout_seed})\n"
                + format_table(rows, ["metric", "dense", "sparse mean", "sd", "min", "max"])
                + f"\nholdout RMSE relative increase: {rel:+.1%}" + failed)


def _failure_line(failures: Sequence[FailedFit], n_fits: int, shown: int = 3) -> str:
    """``"2 of 50 fits failed: seed 3 (...): ...; seed 9 (...): ..."``."""
    more = f"; ... {len(failures) - shown} more" if len(failures) > shown else ""
    return (f"{len(failures)} of {n_fits} fits failed: "
            + "; ".join(f.summary() for f in failures[:shown]) + more)


def _sweep(protocol: _Protocol, configs: Sequence[tuple[str, dict[str, float]]],
           seeds: Sequence[int], backend: Backend | None, n_jobs: int | None, scheduler: str | None,
           progress: bool, strict: bool) -> list[SparseRecoveryResult]:
    jobs = [(regime, params, s, strict) for regime, params in configs for s in seeds]
    runs = parallel_map(_run, jobs, shared=(protocol,), backend=backend, n_jobs=n_jobs,
                        scheduler=scheduler, progress=progress, desc="sparse recovery")
    failed = [r for r in runs if isinstance(r, FailedFit)]
    if failed:
        print(_failure_line(failed, len(runs)) + " (strict=True / --strict stops at the first)",
              file=sys.stderr)
    n = len(seeds)
    out = []
    for k, (regime, params) in enumerate(configs):
        chunk = runs[k * n:(k + 1) * n]
        bad = tuple(r for r in chunk if isinstance(r, FailedFit))
        out.append(SparseRecoveryResult(
            regime, dict(params), tuple(seeds), protocol.d, protocol.holdout_fraction,
            protocol.holdout_seed, protocol.dense,
            tuple(r for r in chunk if not isinstance(r, FailedFit)), bad, len(bad)))
    return out


def sparse_recovery(S: ScoreMatrix, regime: str = "nlogn", *, C: float | None = None,
                    alpha: float | None = None, beta: float | None = None,
                    seeds: int | Sequence[int] = 50, partition: np.ndarray | None = None,
                    holdout_fraction: float = 0.2, holdout_seed: int = 0,
                    holdout_scheme: HoldoutScheme = "entrywise", d: int = 3, model: Any = None,
                    backend: Backend | None = None, n_jobs: int | None = None,
                    scheduler: str | None = None, progress: bool = True,
                    strict: bool = False) -> SparseRecoveryResult:
    """Sparse recovery under one regime over many sampling seeds (Tables 3-4).

    Parameters
    ----------
    S : ScoreMatrix
    regime : {"row", "column", "hybrid", "nlogn"}
    C, alpha, beta : float
        Regime parameters (see :func:`evalcert.diagnostics.sampling.sample_training`).
    seeds : int or sequence of int
        Sampling seeds (an int ``n`` means ``0..n-1``).
    partition : ndarray, shape (K,), optional
        1 good / 0 problematic / NaN unlabelled, for the ranking AUC.
    holdout_fraction, holdout_seed, holdout_scheme
        The fixed holdout (:func:`holdout_mask`).
    d : int
        d-core of every training design.
    model : estimator, optional
        Default ``ClippedLinear(lam=1e-6, solver="native")``; any object with
        ``fit``/``predict``/``theta_`` (e.g. a baseline).
    backend, n_jobs, scheduler, progress
        See :func:`evalcert.parallel.parallel_map`; ``scheduler="tcp://host:8786"``
        runs the seeds on that Dask cluster (with ``backend="dask"``).
    strict : bool, default False
        Raise the first typed solver error of a sparse fit instead of
        recording it in ``failures`` (the dense reference fit always raises).

    Examples
    --------
    >>> from evalcert.diagnostics.baselines import RaschLeastSquares
    >>> rng = np.random.default_rng(0)
    >>> S = ScoreMatrix.from_array(np.clip(np.add.outer(rng.normal(0, .3, 12),
    ...                                                 rng.normal(0, .3, 40)), -1, 1))
    >>> res = sparse_recovery(S, "nlogn", C=2.0, seeds=2, model=RaschLeastSquares("identity"),
    ...                       n_jobs=1, progress=False)
    >>> bool(res.mean("coverage") < 1), bool(res.mean("rmse") < 0.1)
    (True, True)
    """
    seeds = tuple(range(seeds)) if isinstance(seeds, int) else tuple(int(s) for s in seeds)
    params = {k: v for k, v in (("C", C), ("alpha", alpha), ("beta", beta)) if v is not None}
    protocol = _protocol(S, model, partition, holdout_fraction, holdout_seed, holdout_scheme, d)
    return _sweep(protocol, [(regime, params)], seeds, backend, n_jobs, scheduler, progress,
                  strict)[0]


@dataclasses.dataclass(frozen=True)
class CoverageSweepResult(ResultMixin):
    """Holdout RMSE against training coverage over regimes and parameters (Fig. 2).

    Examples
    --------
    >>> from evalcert.diagnostics.baselines import RaschLeastSquares
    >>> rng = np.random.default_rng(0)
    >>> S = ScoreMatrix.from_array(np.clip(np.add.outer(rng.normal(0, .3, 12),
    ...                                                 rng.normal(0, .3, 40)), -1, 1))
    >>> sweep = coverage_sweep(S, [("nlogn", {"C": 1.0}), ("nlogn", {"C": 2.0})], seeds=2,
    ...                        model=RaschLeastSquares("identity"), n_jobs=1, progress=False)
    >>> [p.params for p in sweep.points]
    [{'C': 1.0}, {'C': 2.0}]
    >>> sweep.points[0].mean("coverage") < sweep.points[1].mean("coverage")
    True
    """

    points: tuple[SparseRecoveryResult, ...]

    def to_frame(self) -> Any:
        """One row per setting and seed (regime, its parameters, seed, metrics)."""
        import pandas as pd

        return pd.concat([p.to_frame().assign(regime=p.regime, **p.params)
                          for p in self.points], ignore_index=True)

    def summary(self) -> str:
        rows = [(p.regime, ", ".join(f"{k}={v:g}" for k, v in p.params.items()),
                 p.mean("coverage"), p.mean("rmse"), _stats(p.runs, "rmse")[1])
                for p in self.points]
        head = f"Coverage sweep (dense RMSE {self.points[0].dense.rmse:.4f})\n"
        failed = [f for p in self.points for f in p.failures]
        tail = "" if not failed else "\n" + _failure_line(
            failed, sum(len(p.seeds) for p in self.points))
        return head + format_table(rows, ["regime", "params", "coverage", "RMSE", "sd"]) + tail


def coverage_sweep(S: ScoreMatrix, configs: Sequence[tuple[str, Mapping[str, float]]], *,
                   seeds: int | Sequence[int] = 10, partition: np.ndarray | None = None,
                   holdout_fraction: float = 0.2, holdout_seed: int = 0, d: int = 3,
                   model: Any = None, backend: Backend | None = None, n_jobs: int | None = None,
                   scheduler: str | None = None, progress: bool = True,
                   strict: bool = False) -> CoverageSweepResult:
    """Run :func:`sparse_recovery` for each ``(regime, params)`` on one shared holdout (Fig. 2).

    Failed fits are recorded per point (``points[k].failures``) unless ``strict``.

    Examples
    --------
    >>> from evalcert.diagnostics.baselines import RaschLeastSquares
    >>> rng = np.random.default_rng(0)
    >>> S = ScoreMatrix.from_array(np.clip(np.add.outer(rng.normal(0, .3, 12),
    ...                                                 rng.normal(0, .3, 40)), -1, 1))
    >>> configs = [("nlogn", {"C": c}) for c in (0.5, 1.0, 2.0)]
    >>> sweep = coverage_sweep(S, configs, seeds=2, model=RaschLeastSquares("identity"),
    ...                        n_jobs=1, progress=False)
    >>> coverage = [p.mean("coverage") for p in sweep.points]
    >>> len(coverage), coverage == sorted(coverage)  # more cells with a larger C
    (3, True)
    """
    seeds = tuple(range(seeds)) if isinstance(seeds, int) else tuple(int(s) for s in seeds)
    protocol = _protocol(S, model, partition, holdout_fraction, holdout_seed, "entrywise", d)
    return CoverageSweepResult(tuple(_sweep(protocol, [(r, dict(p)) for r, p in configs], seeds,
                                            backend, n_jobs, scheduler, progress, strict)))


@dataclasses.dataclass(frozen=True)
class BaselineComparisonResult(ResultMixin):
    """Every model on the same sparse design and holdout (Table 5).

    Attributes
    ----------
    metrics : dict of str to FidelityMetrics
    seconds : dict of str to float
        Fit time per model.
    coverage : float

    Examples
    --------
    >>> from evalcert.diagnostics.baselines import RaschLeastSquares
    >>> rng = np.random.default_rng(0)
    >>> S = ScoreMatrix.from_array(np.clip(np.add.outer(rng.normal(0, .3, 12),
    ...                                                 rng.normal(0, .3, 40)), -1, 1))
    >>> res = baseline_comparison(S, {"additive": RaschLeastSquares("identity")}, C=1.0)
    >>> sorted(res.metrics), sorted(res.seconds), bool(0 < res.coverage < 1)
    (['additive'], ['additive'], True)
    """

    metrics: dict[str, FidelityMetrics]
    seconds: dict[str, float]
    coverage: float

    def to_frame(self) -> Any:
        """One row per method: its fidelity metrics and seconds."""
        import pandas as pd

        return pd.DataFrame([{"method": k, **m.to_dict(), "seconds": self.seconds.get(k)}
                             for k, m in self.metrics.items()])

    def summary(self) -> str:
        rows = [(name, m.rmse, m.spearman, m.kendall,
                 m.auc if m.auc is not None else float("nan"), self.seconds[name])
                for name, m in self.metrics.items()]
        return (f"Baselines at {self.coverage:.1%} coverage\n"
                + format_table(rows, ["method", "RMSE", "Spearman", "Kendall", "AUC", "fit s"]))


def baseline_comparison(S: ScoreMatrix, models: Mapping[str, Any], *, regime: str = "nlogn",
                        C: float | None = 1.6, alpha: float | None = None,
                        beta: float | None = None, seed: int = 0,
                        partition: np.ndarray | None = None, holdout_fraction: float = 0.2,
                        holdout_seed: int = 0, d: int = 3,
                        reference: Any = None) -> BaselineComparisonResult:
    """Fit every model on one sparse design; metrics against the dense ``reference`` (Table 5).

    ``reference`` (default ``ClippedLinear(solver="native")``) is fitted on all
    non-held-out cells and supplies the abilities for Spearman and Kendall.

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert.data import ScoreMatrix
    >>> from evalcert.diagnostics.baselines import RaschLeastSquares, UVFactorization
    >>> rng = np.random.default_rng(0)
    >>> S = ScoreMatrix.from_array(np.clip(np.add.outer(rng.normal(0, .3, 12), rng.normal(0, .3, 40))
    ...                            + rng.normal(0, .05, (12, 40)), -1, 1))
    >>> result = baseline_comparison(S, {"additive": RaschLeastSquares("identity"),
    ...                                  "uv": UVFactorization(rank=2)}, C=1.0)
    >>> sorted(result.metrics), bool(result.metrics["additive"].rmse < 0.1)
    (['additive', 'uv'], True)
    """
    protocol = _protocol(S, reference, partition, holdout_fraction, holdout_seed, "entrywise", d)
    params = {k: v for k, v in (("C", C), ("alpha", alpha), ("beta", beta)) if v is not None}
    train = sample_training_cells(S, protocol.holdout, regime, d=d, seed=seed, **params).mask
    metrics, seconds = {}, {}
    for name, model in models.items():
        start = time.perf_counter()
        metrics[name] = protocol.score(model, train)
        seconds[name] = time.perf_counter() - start
    K, J = S.shape
    return BaselineComparisonResult(metrics, seconds, float(train.sum() / (K * J)))
