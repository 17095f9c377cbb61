"""Wide Parquet scores stay numeric end to end and read exactly as the CSV of the same table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcert.data import ScoreMatrix
from evalcert.io.scores import read_scores
from evalcert.errors import InputError


def _frame(rng, K=7, J=9, holes=True):
    values = rng.uniform(-1, 1, (K, J)).round(6)
    if holes:
        values[rng.random((K, J)) < 0.2] = np.nan
        values[:, 0] = 0.5                                      # every agent has a cell
        values[0, :] = -0.25                                    # every item has a cell
    frame = pd.DataFrame(values, columns=[f"q{j}" for j in range(J)])
    frame.insert(0, "agent", [f"m{k}" for k in range(K)])
    return frame


@pytest.mark.parametrize("seed, holes", [(0, True), (1, False), (2, True)])
def test_parquet_reads_like_csv(tmp_path, seed, holes):
    frame = _frame(np.random.default_rng(seed), holes=holes)
    frame["q3"] = frame["q3"].round().astype("Int64")           # an integer column, with nulls
    frame.to_parquet(tmp_path / "s.parquet", index=False)
    frame.to_csv(tmp_path / "s.csv", index=False)
    a, b = read_scores(tmp_path / "s.parquet"), read_scores(tmp_path / "s.csv")
    assert a.agents == b.agents and a.items == b.items
    for x, y in zip(a.cells(), b.cells()):
        assert np.array_equal(x, y)


def test_text_and_boolean_columns_take_the_checked_string_path(tmp_path):
    frame = _frame(np.random.default_rng(3), holes=False)
    frame["q1"] = frame["q1"].astype(str)                        # numbers stored as text
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    assert read_scores(tmp_path / "t.parquet").n_observed == frame.shape[0] * (frame.shape[1] - 1)
    frame["q2"] = frame["q2"] > 0
    frame.to_parquet(tmp_path / "b.parquet", index=False)
    with pytest.raises(InputError, match="boolean scores"):
        read_scores(tmp_path / "b.parquet")


def test_numeric_path_keeps_the_checks(tmp_path):
    frame = _frame(np.random.default_rng(4), holes=False)
    frame.loc[2, "agent"] = "m1"
    frame.to_parquet(tmp_path / "d.parquet", index=False)
    with pytest.raises(InputError, match="duplicate agent names"):
        read_scores(tmp_path / "d.parquet")
    frame = _frame(np.random.default_rng(4), holes=False)
    frame.loc[1, "q1"] = 3.0
    frame.to_parquet(tmp_path / "o.parquet", index=False)
    with pytest.raises(InputError, match="outside the bounds"):
        read_scores(tmp_path / "o.parquet")
    (tmp_path / "c.parquet").write_bytes((tmp_path / "o.parquet").read_bytes()[:200])
    with pytest.raises(InputError, match="corrupt or unreadable Parquet"):
        read_scores(tmp_path / "c.parquet")


def test_multi_chunk_columns(tmp_path):
    frame = _frame(np.random.default_rng(5), K=50, J=300, holes=True)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "m.parquet",
                   row_group_size=7)                            # many chunks per column
    S = read_scores(tmp_path / "m.parquet")
    dense = frame.drop(columns="agent").to_numpy()
    assert np.array_equal(S.values, dense, equal_nan=True)


def test_complete_dense_cells_as_nonzero_would_give():
    rng = np.random.default_rng(6)
    values = rng.uniform(-1, 1, (4, 5))
    S = ScoreMatrix(values, list("abcd"), list("vwxyz"))
    rows, cols = np.nonzero(np.ones_like(values, dtype=bool))
    r, c, s = S.cells()
    assert np.array_equal(r, rows) and np.array_equal(c, cols)
    assert np.array_equal(s, values[rows, cols])
    values[0, 0] = 9.0                                          # copy=True: S keeps its own
    assert S.cells()[2][0] != 9.0
