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
