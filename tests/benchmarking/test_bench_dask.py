"""benchmarks/bench_dask.py: the at-scale design is built on cells, equal to bench_scale's file."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def scripts(monkeypatch):
    pytest.importorskip("pyarrow")
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import bench_dask
    import bench_scale
    yield bench_dask, bench_scale
    for name in ("bench_dask", "bench_scale"):
        sys.modules.pop(name, None)


def test_on_cells_equals_the_parquet_file_of_bench_scale(scripts, tmp_path, monkeypatch):
    bench_dask, bench_scale = scripts
    from evalcert.io.scores import read_scores

    monkeypatch.setattr(bench_scale, "BLOCK_CELLS", 500)     # several blocks
    K, J, n = 40, 300, 2400
    S = bench_dask.on_cells(K, J, n)
    path = tmp_path / "design.parquet"
    assert bench_scale.write_parquet(path, K, J, n) == S.n_observed == n
    F = read_scores(path, format="long")
    # the same (agent, item) -> score cells, whatever order the reader numbers names in
    ours = {(S.agents[r], S.items[c]): v for r, c, v in zip(*S.cells())}
    theirs = {(F.agents[r], F.items[c]): v for r, c, v in zip(*F.cells())}
    assert ours.keys() == theirs.keys()
    np.testing.assert_array_equal([ours[k] for k in theirs], list(theirs.values()))
