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
