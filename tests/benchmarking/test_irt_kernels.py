"""benchmarks/irt_kernels.py: the floors' counts of cells x nodes and the floor each row names."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def kernels(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import irt_kernels
    yield irt_kernels
    sys.modules.pop("irt_kernels", None)


def _responses(n, m, missing, seed=0):
    rng = np.random.default_rng(seed)
    a, b, theta = rng.lognormal(0, 0.3, m), rng.normal(size=m), rng.normal(size=n)
    Y = (rng.random((n, m)) < 1 / (1 + np.exp(-a * (theta[:, None] - b)))).astype(float)
    Y[rng.random(Y.shape) < missing] = np.nan
    return Y, a, b


@pytest.mark.parametrize("missing", [0.0, 0.4])
def test_scoring_kernel_counts_the_grid_and_leaves_scores_alone(kernels, missing):
    from evalcert.irt import scoring
    from evalcert.irt.information import ItemParameters

    Y, a, b = _responses(60, 25, missing)
    params = ItemParameters(a, b, np.zeros(a.size), tuple(map(str, range(a.size))), "2pl")
    before = scoring.score_abilities(params, Y, ~np.isnan(Y), method="eap")
    kernel, cells, took, floor, what = kernels.scoring_kernel(params, Y, "eap", repeat=1)
    nodes = float(kernel.split(", ")[1].split()[0])
    # every model is evaluated on at least the nodes of one grid over mu +- 6 sd
    assert nodes >= 10
    # cells x nodes is the observed cells times the nodes per model (printed rounded)
    assert abs(cells / np.count_nonzero(~np.isnan(Y)) - nodes) <= 0.5
    assert what == ("grid, 0 products" if missing == 0 else "grid, 1 product")
    assert took > 0 and floor > 0
    # the counting wrappers are removed: the same scores as before
    after = scoring.score_abilities(params, Y, ~np.isnan(Y), method="eap")
    np.testing.assert_array_equal(before[0], after[0])
    assert scoring._LogLikGrid.__call__.__name__ == "__call__"


def test_cml_terms_counts_each_cell_at_least_at_one_node(kernels):
    Y, *_ = _responses(40, 300, 0.5, seed=1)
    kernel, cells, took, floor = kernels.cml_terms(Y, repeat=1)
    scores, counts = np.nansum(Y, 1), np.isfinite(Y).sum(1)
    kept = (scores > 0) & (scores < counts)
    # t = 0 is always kept; dropped nodes keep far fewer than K per model
    assert counts[kept].sum() < cells <= counts[kept].sum() * (counts.max() + 1) // 2
    assert "conditional_cells" in kernel and took > 0 and floor > 0


@pytest.mark.parametrize("missing, products", [(0.0, 2), (0.3, 4)])
def test_m2pl_estep_rows_name_their_floors(kernels, missing, products):
    Y, *_ = _responses(80, 12, missing, seed=2)
    first, second = kernels.m2pl_estep(Y, 2, 7, repeat=1)
    assert first[:3] == second[:3]           # one kernel, two floors
    assert first[1] == np.count_nonzero(~np.isnan(Y)) * 49
    assert second[4] == f"grid, {products} products"
    rows = [kernels.kernel_row("m2pl", r) for r in (first, second)]
    assert rows[0][4] == kernels.EXP_LOG
    assert len(rows[0]) == len(kernels.KERNEL_HEADERS)
    assert rows[1][6] == pytest.approx(second[2] / second[3])


def test_histogram_kernels_count_cells_and_models_at_every_node(kernels):
    Y, *_ = _responses(120, 8, 0.2, seed=3)
    items, masses = kernels.histogram_kernels(Y, n_quad=21, repeat=1)
    assert items[1] == np.count_nonzero(~np.isnan(Y)) * 21
    assert masses[1] == Y.shape[0] * 21
    assert all(r[2] > 0 and r[3] > 0 for r in (items, masses))
