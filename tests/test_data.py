"""ScoreMatrix: construction, readers, validation errors, connectivity."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalcert.data import ScoreMatrix, read_scores
from evalcert.errors import ConnectivityError, InputError
from evalcert.solvers import ClippedLinear


def test_from_array_default_names_and_views():
    S = ScoreMatrix.from_array(np.array([[0.5, np.nan, 0.1], [0.2, -0.3, np.nan]]))
    assert S.agents == ("agent_0", "agent_1") and S.items == ("item_0", "item_1", "item_2")
    assert S.n_observed == 4 and S.coverage == pytest.approx(4 / 6)
    rows, cols, s = S.cells()
    assert list(zip(rows, cols)) == [(0, 0), (0, 2), (1, 0), (1, 1)]
    assert np.allclose(s, [0.5, 0.1, 0.2, -0.3])
    with pytest.raises(ValueError):
        S.values[0, 0] = 1.0  # read-only


def test_wide_and_long_round_trip(tmp_path):
    S = ScoreMatrix.from_array(np.array([[0.5, np.nan], [0.2, -0.3]]), agents=["a", "b"],
                               items=["x", "y"])
    wide = tmp_path / "w.csv"
    S.to_frame().to_csv(wide)
    long = tmp_path / "l.parquet"
    S.to_long().to_parquet(long)
    for T in (read_scores(wide), read_scores(long, format="long")):
        assert T.agents == S.agents and T.items == S.items
        assert np.array_equal(np.isnan(T.values), np.isnan(S.values))
        assert np.allclose(np.nan_to_num(T.values), np.nan_to_num(S.values))


@pytest.mark.parametrize("values, match", [
    (np.zeros((0, 3)), "empty"),
    (np.array([[0.1, np.inf]]), "infinite"),
    (np.array([[0.1, 1.5]]), r"outside the bounds .*\(agent_0, item_1\)"),
    (np.array([[0.1, 0.2], [np.nan, np.nan]]), "agents with no observed score: agent_1"),
    (np.array([[0.1, np.nan], [0.2, np.nan]]), "items with no observed score: item_1"),
])
def test_bad_arrays_raise_input_error(values, match):
    with pytest.raises(InputError, match=match):
        ScoreMatrix.from_array(values)


def test_custom_bounds_accept_wider_scores():
    S = ScoreMatrix.from_array(np.array([[3.0, 4.0]]), bounds=(0, 5))
    assert S.bounds == (0.0, 5.0)


def test_non_numeric_wide_cell_is_named():
    frame = pd.DataFrame({"agent": ["a", "b"], "x": [0.1, "oops"], "y": [0.2, 0.3]})
    with pytest.raises(InputError, match=r"non-numeric .*\(b, x\).*'oops'"):
        ScoreMatrix.from_wide(frame)


def test_long_table_errors():
    dup = pd.DataFrame({"agent": ["a", "a"], "item": ["x", "x"], "score": [0.1, 0.2]})
    with pytest.raises(InputError, match=r"duplicate \(agent, item\) pairs.*\(a, x\)"):
        ScoreMatrix.from_long(dup)
    with pytest.raises(InputError, match="lacks column"):
        ScoreMatrix.from_long(dup.rename(columns={"score": "value"}))
    bad = pd.DataFrame({"agent": ["a"], "item": ["x"], "score": ["high"]})
    with pytest.raises(InputError, match="non-numeric"):
        ScoreMatrix.from_long(bad)


def test_duplicate_names_and_unknown_file(tmp_path):
    with pytest.raises(InputError, match="duplicate agent names: a"):
        ScoreMatrix.from_array(np.zeros((2, 1)), agents=["a", "a"])
    with pytest.raises(InputError, match="no such file"):
        read_scores(tmp_path / "missing.csv")
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(InputError, match="cannot tell the format"):
        read_scores(tmp_path / "x.json")


def test_connectivity_report_and_disconnected_fit_raises():
    v = np.full((4, 4), np.nan)
    v[:2, :2] = 0.1   # component 1: agents 0-1, items 0-1
    v[2:, 2:] = 0.2   # component 2: agents 2-3, items 2-3
    v[0, 1] = 0.3
    S = ScoreMatrix.from_array(v)
    rep = S.connectivity()
    assert rep.n_components == 2 and rep.component_sizes == [(2, 2), (2, 2)]
    assert rep.min_agent_degree == 2 and rep.min_item_degree == 2
    with pytest.raises(ConnectivityError, match="2 components") as err:
        ClippedLinear().fit(S)
    assert err.value.component_sizes == [(2, 2), (2, 2)]
    v[1, 2] = 0.0  # link them
    assert ScoreMatrix.from_array(v).connectivity().is_connected


def test_restrict_checks_mask():
    S = ScoreMatrix.from_array(np.array([[0.1, 0.2], [0.3, 0.4]]))
    with pytest.raises(InputError, match="boolean array of shape"):
        S.restrict(np.ones((3, 2), dtype=bool))
    T = S.restrict(np.array([[True, False], [True, True]]))
    assert T.n_observed == 3 and S.n_observed == 4


def test_copy_false_adopts_the_array_read_only_and_default_copies():
    arr = np.array([[0.5, np.nan], [0.1, -0.2]])
    adopted = ScoreMatrix.from_array(arr, copy=False)
    assert np.shares_memory(adopted.values, arr) and not arr.flags.writeable
    with pytest.raises(ValueError):
        arr[0, 0] = 0.0
    fresh = np.array([[0.5, np.nan], [0.1, -0.2]])
    copied = ScoreMatrix.from_array(fresh)
    assert not np.shares_memory(copied.values, fresh) and fresh.flags.writeable
    # an array that must be converted is copied anyway, and a rejected one stays writable
    ints = np.array([[0, 1], [1, 0]])
    assert not np.shares_memory(ScoreMatrix.from_array(ints, copy=False).values, ints)
    bad = np.array([[0.5, 2.0], [0.1, 0.2]])
    with pytest.raises(InputError):
        ScoreMatrix.from_array(bad, copy=False)
    assert bad.flags.writeable
