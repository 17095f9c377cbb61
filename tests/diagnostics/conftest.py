"""Small synthetic score matrices shared by the diagnostics tests."""

from __future__ import annotations

import numpy as np
import pytest

from evalcert.data import ScoreMatrix

TVD = "tvd/llm-peer-prediction"


def additive_scores(K: int = 12, J: int = 40, noise: float = 0.05, seed: int = 0) -> ScoreMatrix:
    """``theta_i - b_j + noise`` clipped to [-1, 1]."""
    rng = np.random.default_rng(seed)
    values = np.subtract.outer(rng.normal(0.2, 0.3, K), rng.normal(0.0, 0.25, J))
    return ScoreMatrix.from_array(np.clip(values + rng.normal(0, noise, (K, J)), -1, 1))


@pytest.fixture
def small() -> ScoreMatrix:
    return additive_scores()


@pytest.fixture(scope="module")
def dask_client():
    """A real dask.distributed cluster in this process (one worker, one thread)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            yield client
