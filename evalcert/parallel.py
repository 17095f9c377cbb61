"""Map work over joblib backends with a tqdm progress bar.

``loky`` (local processes) is the default; ``dask`` runs on the
``dask.distributed`` cluster of the caller's current ``Client`` (joblib's dask
backend); ``ray`` runs on Ray when it is installed. Results come back in the
order of the inputs, so a sweep gives the same output on every backend.

Example
-------
>>> parallel_map(abs, [-1, 2, -3], n_jobs=1, progress=False)
[1, 2, 3]
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Literal

import joblib
from tqdm.auto import tqdm

from evalcert.errors import BackendUnavailableError

__all__ = ["BACKENDS", "parallel_map"]

BACKENDS = ("loky", "dask", "ray")
Backend = Literal["loky", "dask", "ray"]


def _activate(backend: str) -> None:
    """Make ``backend`` usable by joblib or raise :class:`BackendUnavailableError`."""
    if backend == "loky":
        return
    if backend == "dask":
        try:
            from distributed import Client
        except ImportError:
            raise BackendUnavailableError("backend 'dask' needs dask[distributed]; "
                                          "pip install 'dask[distributed]'") from None
        try:
            Client.current()
        except ValueError:
            raise BackendUnavailableError(
                "backend 'dask' runs on the current dask.distributed Client: create one first "
                "(client = distributed.Client(address)) in this process") from None
        return
    if backend == "ray":
        try:
            from ray.util.joblib import register_ray
        except ImportError:
            raise BackendUnavailableError("backend 'ray' needs ray; pip install ray") from None
        register_ray()
        return
    raise BackendUnavailableError(f"unknown backend {backend!r}; choose one of {BACKENDS}")


def parallel_map(func: Callable[[Any], Any], items: Iterable[Any], *,
                 backend: Backend = "loky", n_jobs: int | None = None,
                 progress: bool = True, desc: str | None = None) -> list[Any]:
    """Return ``[func(x) for x in items]``, computed in parallel.

    Parameters
    ----------
    func : callable
        Picklable function of one argument (module-level, or a
        ``functools.partial`` of one).
    items : iterable
        Inputs; materialised into a list.
    backend : {"loky", "dask", "ray"}
        joblib backend. ``dask`` needs a running ``distributed.Client``.
    n_jobs : int, optional
        Workers; ``None`` = all cores (loky) or all cluster workers (dask,
        ray). ``n_jobs=1`` with ``loky`` runs in this process, in order.
    progress : bool
        Show a tqdm bar.
    desc : str, optional
        Label of the bar.
    """
    items = list(items)
    _activate(backend)
    n_jobs = -1 if n_jobs is None else n_jobs
    with joblib.parallel_config(backend=backend, n_jobs=n_jobs):
        results = joblib.Parallel(return_as="generator")(joblib.delayed(func)(x) for x in items)
        return list(tqdm(results, total=len(items), disable=not progress, desc=desc))
