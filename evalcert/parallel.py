"""Map work over joblib backends with a tqdm progress bar.

``loky`` (local processes) is the default; ``dask`` runs on a
``dask.distributed`` cluster, either the caller's current ``Client`` or the
scheduler at ``scheduler="tcp://host:8786"`` (joblib's dask backend); ``ray``
runs on Ray when it is installed. Results come back in the order of the
inputs, so a sweep gives the same output on every backend.

An enclosing ``joblib.parallel_config(...)`` is honoured: with ``backend=None`` (the default
of :func:`parallel_map` and of the functions that call it) its backend is used, and with
``n_jobs=None`` its number of workers; without one, ``loky`` on every core. A backend or
``n_jobs`` passed explicitly wins.

Large inputs every task needs (a :class:`~evalcert.data.ScoreMatrix`, a
holdout) go in ``shared=``: each task receives them as extra arguments, and on
Dask they are scattered once to every worker (``broadcast``) instead of being
shipped with every task.

Example
-------
>>> parallel_map(abs, [-1, 2, -3], n_jobs=1, progress=False)
[1, 2, 3]
>>> import operator
>>> parallel_map(operator.add, [1, 2], shared=(10,), n_jobs=1, progress=False)
[11, 12]
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterable, Iterator, Literal, Sequence

import joblib

from evalcert.errors import BackendUnavailableError, InputError
from evalcert.progress import progress_bar

__all__ = ["BACKENDS", "parallel_map", "dask_client", "outer_config"]

BACKENDS = ("loky", "dask", "ray")
Backend = Literal["loky", "dask", "ray"]
#: seconds to wait for a Dask scheduler before refusing its address
CONNECT_TIMEOUT = 5.0


@contextlib.contextmanager
def dask_client(scheduler: str | None = None, timeout: float | None = None) -> Iterator[Any]:
    """The ``distributed.Client`` to run on: connected to ``scheduler``, or the current one.

    Raises
    ------
    BackendUnavailableError
        dask.distributed is not installed, or no scheduler is given and no
        ``Client`` exists in this process.
    InputError
        The scheduler at ``scheduler`` cannot be reached within ``timeout``
        seconds (default :data:`CONNECT_TIMEOUT`).

    Examples
    --------
    With a ``Client`` in this process (here an in-process cluster of one thread;
    on a real cluster, ``dask_client("tcp://HOST:8786")``):

    >>> import tempfile
    >>> import dask
    >>> from distributed import Client
    >>> with tempfile.TemporaryDirectory() as tmp, dask.config.set({"temporary-directory": tmp}):
    ...     with Client(processes=False, n_workers=1, threads_per_worker=1,
    ...                 dashboard_address=None) as client:  # scratch space inside tmp
    ...         with dask_client() as current:
    ...             same = current is client
    ...         values = parallel_map(abs, [-1, 2], backend="dask", progress=False)
    >>> same, values
    (True, [1, 2])
    """
    timeout = CONNECT_TIMEOUT if timeout is None else timeout
    try:
        from distributed import Client
    except ImportError:
        raise BackendUnavailableError("backend 'dask' needs dask[distributed]; "
                                      "pip install 'dask[distributed]'") from None
    if scheduler is None:
        try:
            current = Client.current()
        except ValueError:
            raise BackendUnavailableError(
                "backend 'dask' runs on a dask.distributed cluster: pass scheduler='tcp://HOST:8786' "
                "or create a Client in this process first (client = distributed.Client(address))"
            ) from None
        yield current  # outside the try: a ValueError of the work is not "no Client"
        return
    if not isinstance(scheduler, str) or not scheduler.strip():
        raise InputError(f"scheduler must be an address such as tcp://10.0.0.5:8786; got {scheduler!r}")
    try:
        client = Client(scheduler, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise InputError(f"cannot reach the Dask scheduler at {scheduler} within {timeout:g} s "
                         f"({type(exc).__name__}); start one (`dask scheduler`, then `dask worker "
                         f"{scheduler}` on each machine) or check the address") from None
    with client:
        yield client


def outer_config() -> dict[str, Any]:
    """The settings of an enclosing ``joblib.parallel_config(...)`` that were set (empty when
    none): ``backend``, ``n_jobs``, ...

    Examples
    --------
    >>> outer_config()
    {}
    >>> with joblib.parallel_config(backend="threading", n_jobs=2):
    ...     sorted(outer_config())
    ['backend', 'n_jobs']
    """
    config = getattr(joblib.parallel._backend, "config", None) or {}
    unset = type(joblib.parallel.default_parallel_config["backend"])
    return {k: v for k, v in config.items() if not isinstance(v, unset)}


def _check(backend: str | None, n_jobs: int | None, scheduler: str | None) -> None:
    if backend is not None and backend not in BACKENDS:
        raise BackendUnavailableError(f"unknown backend {backend!r}; choose one of {BACKENDS}")
    if n_jobs is not None and (not isinstance(n_jobs, int) or n_jobs == 0 or n_jobs < -1):
        raise InputError(f"n_jobs must be a positive integer, -1 (all workers) or None; got {n_jobs!r}")
    if scheduler is not None and backend != "dask":
        raise InputError(f"scheduler={scheduler!r} needs backend='dask' (got {backend!r})")


def parallel_map(func: Callable[..., Any], items: Iterable[Any], *,
                 shared: Sequence[Any] = (), backend: Backend | None = None,
                 n_jobs: int | None = None, scheduler: str | None = None,
                 progress: bool = True, desc: str | None = None) -> list[Any]:
    """Return ``[func(x, *shared) for x in items]``, computed in parallel.

    Parameters
    ----------
    func : callable
        Picklable function (module-level, or a ``functools.partial`` of one).
    items : iterable
        Inputs; materialised into a list.
    shared : sequence
        Extra arguments of every call. On Dask they are scattered once to
        every worker (``client.scatter(..., broadcast=True)``), so a large score
        matrix travels once per worker, not once per task.
    backend : {"loky", "dask", "ray"}, optional
        joblib backend; ``None``: the backend of an enclosing
        ``joblib.parallel_config(...)``, else ``loky``.
    n_jobs : int, optional
        Workers; ``None`` = the enclosing ``parallel_config``'s, else all cores (loky)
        or all cluster workers (dask, ray). ``n_jobs=1`` with ``loky`` runs in this
        process, in order.
    scheduler : str, optional
        Address of a Dask scheduler (``tcp://host:8786``) for ``backend="dask"``;
        default: the current ``distributed.Client``. An unreachable address
        raises :class:`InputError` after :data:`CONNECT_TIMEOUT` seconds.
    progress : bool
        Show a tqdm bar (stderr).
    desc : str, optional
        Label of the bar.

    Examples
    --------
    >>> import operator
    >>> parallel_map(abs, [-1, 2, -3], n_jobs=1, progress=False)  # in this process
    [1, 2, 3]
    >>> parallel_map(operator.mul, [1, 2, 3], shared=(10,), n_jobs=1, progress=False)
    [10, 20, 30]
    >>> with joblib.parallel_config(backend="threading", n_jobs=2):  # the caller's choice
    ...     parallel_map(abs, [-1, -2], progress=False)
    [1, 2]
    """
    items = list(items)
    _check(backend, n_jobs, scheduler)
    outer = outer_config()
    settings: dict[str, Any] = {}
    if backend is not None or "backend" not in outer:
        backend = settings["backend"] = backend or "loky"
    if n_jobs is not None or "n_jobs" not in outer:
        settings["n_jobs"] = -1 if n_jobs is None else n_jobs
    with contextlib.ExitStack() as stack:
        params: dict[str, Any] = {}
        if backend == "dask":
            client = stack.enter_context(dask_client(scheduler))
            params = {"client": client, "scatter": list(shared) or None}
        elif backend == "ray":
            try:
                from ray.util.joblib import register_ray
            except ImportError:
                raise BackendUnavailableError("backend 'ray' needs ray; pip install ray") from None
            register_ray()
        with joblib.parallel_config(**settings, **params):
            results = joblib.Parallel(return_as="generator")(
                joblib.delayed(func)(x, *shared) for x in items)
            return list(progress_bar(progress, len(items), desc, iterable=results, leave=True))
