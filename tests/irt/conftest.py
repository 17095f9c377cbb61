"""Synthetic response matrices with known parameters for the IRT tests."""

from __future__ import annotations

import numpy as np
import pytest


def simulate(n_models: int, n_items: int, seed: int, *, slopes: bool = False):
    """Rasch (or 2PL with ``slopes``) data; returns Y, theta, b, a."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n_models)
    b = rng.normal(size=n_items)
    b -= b.mean()
    a = rng.lognormal(0.0, 0.3, n_items) if slopes else np.ones(n_items)
    p = 1 / (1 + np.exp(-a * (theta[:, None] - b[None, :])))
    return (rng.random(p.shape) < p).astype(float), theta, b, a


@pytest.fixture(scope="session")
def rasch_data():
    return simulate(400, 60, seed=1)


@pytest.fixture(scope="session")
def twopl_data():
    return simulate(600, 40, seed=2, slopes=True)


@pytest.fixture
def forced_path(monkeypatch):
    """``forced_path(sparse_below, *args, **kw)``: ``score_abilities(*args, **kw)`` with the
    observed share below which responses go to cell lists forced to ``sparse_below``
    (1.1: always cell lists; 0.0: always the dense mask)."""
    from evalcert.irt import scoring

    def run(sparse_below: float, *args, **kwargs):
        with monkeypatch.context() as patch:
            patch.setattr(scoring, "_SPARSE_BELOW", sparse_below)
            return scoring.score_abilities(*args, **kwargs)
    return run
