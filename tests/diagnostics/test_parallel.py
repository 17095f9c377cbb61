"""evalcert.parallel: one map over loky, dask (real local cluster) and ray."""

from __future__ import annotations

import operator

import pytest

from evalcert.errors import BackendUnavailableError
from evalcert.parallel import parallel_map


def test_loky_keeps_the_input_order():
    assert parallel_map(operator.neg, range(7), n_jobs=2, progress=False) == [-k for k in range(7)]


def test_unknown_backend_is_refused():
    with pytest.raises(BackendUnavailableError, match="unknown backend"):
        parallel_map(abs, [1], backend="spark")


def test_dask_without_a_client_says_how_to_start_one():
    pytest.importorskip("distributed")
    with pytest.raises(BackendUnavailableError, match="Client"):
        parallel_map(abs, [1], backend="dask")


def test_ray_absent_is_a_typed_error():
    try:
        import ray  # noqa: F401
    except ImportError:
        with pytest.raises(BackendUnavailableError, match="ray"):
            parallel_map(abs, [1], backend="ray")
    else:
        pytest.skip("ray is installed")


def test_dask_backend_runs_on_a_real_local_cluster(dask_client):
    assert parallel_map(operator.neg, range(5), backend="dask", progress=False) == [0, -1, -2,
                                                                                   -3, -4]


# ------------------------------------------- Dask: scheduler address and scatter (issue 13)
import time  # noqa: E402

import numpy as np  # noqa: E402

from evalcert import parallel  # noqa: E402
from evalcert.diagnostics.baselines import RaschLeastSquares  # noqa: E402
from evalcert.diagnostics.bootstrap import bootstrap_fidelity  # noqa: E402
from evalcert.diagnostics.experiments import sparse_recovery  # noqa: E402
from evalcert.diagnostics.sampling import holdout_on_cells  # noqa: E402
from evalcert.errors import InputError  # noqa: E402
from tests.diagnostics.conftest import additive_scores  # noqa: E402


def test_unreachable_scheduler_fails_fast_with_input_error(monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr(parallel, "CONNECT_TIMEOUT", 1.0)
    start = time.perf_counter()
    with pytest.raises(InputError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        parallel_map(abs, [1], backend="dask", scheduler="tcp://127.0.0.1:9", progress=False)
    assert time.perf_counter() - start < 10
    with pytest.raises(InputError, match="needs backend='dask'"):
        parallel_map(abs, [1], scheduler="tcp://127.0.0.1:9")
    with pytest.raises(InputError, match="n_jobs"):
        parallel_map(abs, [1], n_jobs=0)


def _pick(k, array):
    return float(array[k])


def test_shared_arguments_are_scattered_once_to_every_worker(dask_client, monkeypatch):
    calls = []
    original = type(dask_client).scatter

    def spy(self, data, *args, **kwargs):
        calls.append((data, kwargs.get("broadcast")))
        return original(self, data, *args, **kwargs)

    monkeypatch.setattr(type(dask_client), "scatter", spy)
    big = np.arange(10_000.0)
    out = parallel_map(_pick, range(6), shared=(big,), backend="dask",
                       scheduler=dask_client.scheduler.address, progress=False)
    assert out == [float(k) for k in range(6)]
    assert len(calls) == 1 and calls[0][1] is True and calls[0][0][0] is big


def test_dask_bootstrap_equals_loky_result_for_result(dask_client):
    S = additive_scores(10, 30)
    hold = holdout_on_cells(S, 0.2, seed=1)
    kw = dict(n_boot=12, seed=3, chunk_size=4)
    local = bootstrap_fidelity(RaschLeastSquares("identity"), S, ~hold, hold, n_jobs=1, **kw)
    remote = bootstrap_fidelity(RaschLeastSquares("identity"), S, ~hold, hold, backend="dask",
                                scheduler=dask_client.scheduler.address, **kw)
    for name, values in local.replicates.items():
        np.testing.assert_array_equal(values, remote.replicates[name])
    assert local.to_dict() == remote.to_dict()


def test_dask_sparse_recovery_via_scheduler_address_equals_loky(dask_client):
    S = additive_scores(12, 40)
    kw = dict(C=1.0, seeds=3, model=RaschLeastSquares("identity"), progress=False)
    local = sparse_recovery(S, "nlogn", n_jobs=1, **kw)
    remote = sparse_recovery(S, "nlogn", backend="dask", scheduler=dask_client.scheduler.address,
                             **kw)
    assert local.to_dict() == remote.to_dict()


def _where(_):
    import os
    import threading

    return os.getpid(), threading.current_thread() is threading.main_thread()


def test_outer_parallel_config_is_honoured():
    """``with joblib.parallel_config(backend="threading")`` around evalcert's parallel work
    runs it on the caller's backend (threads of this process), not on evalcert's default
    loky processes; an explicit ``backend=`` still wins."""
    import os

    import joblib

    from evalcert.parallel import outer_config, parallel_map

    assert outer_config() == {}
    with joblib.parallel_config(backend="threading", n_jobs=2):
        assert set(outer_config()) == {"backend", "n_jobs"}
        where = parallel_map(_where, range(6), progress=False)
        assert {pid for pid, _ in where} == {os.getpid()}
        assert not any(main for _, main in where)          # worker threads, not this one
        inline = parallel_map(_where, range(3), backend="loky", n_jobs=1, progress=False)
        assert all(main for _, main in inline)             # explicit: loky in this process
    with joblib.parallel_config(n_jobs=1):                 # only n_jobs set: loky, in process
        assert all(main for _, main in parallel_map(_where, range(3), progress=False))


def test_an_error_of_the_work_is_not_reported_as_no_client(dask_client):
    """The oldest-versions run (joblib 1.3: no return_as='generator' on dask) showed joblib's
    ValueError re-raised as "create a Client first", although a Client existed."""
    with pytest.raises(ValueError, match="the work's own error"):
        with parallel.dask_client() as client:
            assert client is dask_client
            raise ValueError("the work's own error")
