"""ScoreMatrix: construction, readers, validation errors, connectivity."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalcert.data import ScoreMatrix
from evalcert.io.scores import read_scores
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
    (tmp_path / "x.xyz").write_text("agent,q\na,0.5\n")   # .json is a table format now
    with pytest.raises(InputError, match="unknown file type"):
        read_scores(tmp_path / "x.xyz")


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


# ------------------------------------------------------------------ sparse cells (issue 13)
import pickle  # noqa: E402
import warnings  # noqa: E402


def _random_design(K, J, coverage, seed):
    """Random K x J design with every row and column observed (NaN = unobserved)."""
    rng = np.random.default_rng(seed)
    v = np.where(rng.random((K, J)) < coverage, rng.uniform(-1, 1, (K, J)), np.nan)
    v[np.arange(K), rng.integers(0, J, K)] = 0.25
    v[rng.integers(0, K, J), np.arange(J)] = -0.5
    return v


@pytest.mark.parametrize("seed", range(5))
def test_from_cells_equals_the_dense_constructor_on_random_designs(seed):
    v = _random_design(7, 11, 0.3, seed)
    dense = ScoreMatrix.from_array(v)
    r, c = np.nonzero(~np.isnan(v))
    perm = np.random.default_rng(seed).permutation(len(r))        # any order in, sorted out
    cells = ScoreMatrix.from_cells(r[perm], c[perm], v[r, c][perm], dense.agents, dense.items)
    for a, b in zip(dense.cells(), cells.cells()):
        assert np.array_equal(a, b)
    assert cells.cells()[0].dtype == np.int32 and cells.cells()[2].dtype == np.float64
    assert np.array_equal(cells.values, v, equal_nan=True)
    assert np.array_equal(cells.observed, ~np.isnan(v))
    assert cells.n_observed == dense.n_observed and cells.shape == (7, 11)
    keep = np.random.default_rng(seed + 9).random(cells.n_observed) < 0.8   # may empty a row
    mask2d = np.zeros(v.shape, bool)
    mask2d[cells.cells()[0][keep], cells.cells()[1][keep]] = True
    try:
        by_vector = cells.restrict(keep)
    except InputError as exc:
        with pytest.raises(InputError, match=str(exc).split(":")[0]):
            dense.restrict(mask2d)
    else:
        assert np.array_equal(by_vector.values, dense.restrict(mask2d).values, equal_nan=True)


def test_from_cells_refuses_duplicates_out_of_range_and_nan():
    with pytest.raises(InputError, match=r"duplicate \(agent, item\) pairs: \(a, y\)"):
        ScoreMatrix.from_cells([0, 1, 0], [1, 0, 1], [0.1, 0.2, 0.3], ["a", "b"], ["x", "y"])
    with pytest.raises(InputError, match="out of range"):
        ScoreMatrix.from_cells([0, 2], [0, 0], [0.1, 0.2], ["a", "b"], ["x"])
    with pytest.raises(InputError, match=r"NaN scores at .*\(b, x\)"):
        ScoreMatrix.from_cells([0, 1], [0, 0], [0.1, np.nan], ["a", "b"], ["x"])
    with pytest.raises(InputError, match="items with no observed score: y"):
        ScoreMatrix.from_cells([0, 1], [0, 0], [0.1, 0.2], ["a", "b"], ["x", "y"])


def test_dense_views_of_a_huge_sparse_matrix_are_refused_with_the_number():
    n = 400_000                      # 4e5 x 4e5 diagonal: 10 MB of cells, 1.3 TB dense
    idx = np.arange(n)
    S = ScoreMatrix.from_cells(idx, idx, np.zeros(n), [f"a{k}" for k in idx],
                               [f"i{k}" for k in idx])
    assert S.n_observed == n and S.coverage == 1 / n
    with pytest.raises(InputError, match=r"dense 400000 x 400000 score array needs 1\.2 TiB "
                                         r"but only .* available.*S\.cells\(\)"):
        S.values
    with pytest.raises(InputError, match="dense 400000 x 400000 mask needs"):
        S.observed
    assert S.connectivity().n_components == n                    # on cells, no dense mask
    assert S.restrict(np.ones(n, bool)).n_observed == n


def test_pickle_ships_cells_not_dense_views():
    S = ScoreMatrix.from_array(_random_design(30, 40, 0.2, 0))
    S.values, S.observed                                          # build the dense caches
    T = pickle.loads(pickle.dumps(S))
    assert "values" not in T.__dict__ and len(pickle.dumps(S)) < 30 * 40 * 8
    assert np.array_equal(T.values, S.values, equal_nan=True)
    with pytest.raises(ValueError):
        T.cells()[2][0] = 0.0                                     # still read-only


def test_long_parquet_streaming_equals_the_in_memory_reader(tmp_path):
    rng = np.random.default_rng(3)
    v = _random_design(9, 13, 0.4, 3)
    names = ["NA", "0.25", "None", "m3", "null", "m5", "N/A", "m7", "1.0"]
    S = ScoreMatrix.from_array(v, agents=names)
    long = S.to_long().sample(frac=1.0, random_state=1)          # rows in random order
    long["score"] = long["score"].astype(object)
    long.iloc[rng.choice(len(long), 3, replace=False), 2] = None  # 3 missing scores
    long.to_parquet(tmp_path / "l.parquet")
    long.to_csv(tmp_path / "l.csv", index=False)
    with pytest.warns(UserWarning, match=r"3 of \d+ rows .* missing score"):
        streamed = read_scores(tmp_path / "l.parquet", format="long", batch_rows=7)
    with pytest.warns(UserWarning, match="3 of"):
        in_memory = read_scores(tmp_path / "l.csv", format="long")
    assert streamed.agents == in_memory.agents and streamed.items == in_memory.items
    assert set(streamed.agents) == set(names)
    for a, b in zip(streamed.cells(), in_memory.cells()):
        assert np.array_equal(a, b)
    assert streamed.n_missing == in_memory.n_missing == 3
    assert "3 rows with a missing score" in streamed.summary()


# ------------------------------------------------ silent misreads refused (issue 10 item 4)
# Each test below fails on the old reader (pandas.read_csv + coercion).
def _write(tmp_path, text, name="s.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_csv_without_header_row_is_refused(tmp_path):
    # old: the first data row became names ("gpt4" agent column, items "0.5", "0.3")
    with pytest.raises(InputError, match="header row looks like data"):
        read_scores(_write(tmp_path, "gpt4,0.5,0.3\nclaude,0.1,0.2\n"))
    with pytest.raises(InputError, match="header row looks like data"):
        read_scores(_write(tmp_path, "0.25,0.5,0.3\n0.5,0.1,0.2\n"))
    # integer item names are fine
    assert read_scores(_write(tmp_path, "agent,81,82\ngpt4,0.5,0.3\n")).items == ("81", "82")


def test_duplicate_item_columns_are_refused_not_renamed(tmp_path):
    # old: pandas renamed the second q1 to q1.1 and fitted both
    with pytest.raises(InputError, match=r"duplicate column names \['q1'\]"):
        read_scores(_write(tmp_path, "agent,q1,q1\na,0.1,0.2\nb,0.3,0.4\n"))
    with pytest.raises(InputError, match="duplicate item columns q1"):
        ScoreMatrix.from_wide(pd.DataFrame([["a", 0.1, 0.2]], columns=["agent", "q1", "q1"]))


def test_agent_names_that_look_missing_stay_names(tmp_path):
    # old: NA, None, null, N/A became 'nan' (then duplicates)
    S = read_scores(_write(tmp_path, "agent,q1,q2\nNA,0.1,0.2\nNone,0.3,\nnull,,0.4\nN/A,0.5,0.6\n"))
    assert S.agents == ("NA", "None", "null", "N/A")
    assert S.n_observed == 6


def test_empty_agent_name_is_refused_with_its_row(tmp_path):
    # old: '' became the agent 'nan'
    with pytest.raises(InputError, match="empty agent name in data row 2"):
        read_scores(_write(tmp_path, "agent,q1\na,0.1\n,0.2\n"))
    with pytest.raises(InputError, match="empty agent name in data row 2"):
        read_scores(_write(tmp_path, "agent,item,score\na,q,0.1\n,q,0.2\n"), format="long")


def test_numeric_first_column_holds_names(tmp_path):
    # old: a float first column was taken as scores of an item named 'checkpoint'
    S = read_scores(_write(tmp_path, "checkpoint,q1,q2\n0.25,0.1,0.2\n0.5,0.3,0.4\n1.0,0.5,0.6\n"))
    assert S.agents == ("0.25", "0.5", "1.0") and S.items == ("q1", "q2")
    assert S.values[2, 1] == 0.6


@pytest.mark.parametrize("text, layout", [("agent,q1,q2\na,true,0.1\nb,false,0.2\n", "wide"),
                                          ("agent,item,score\na,q,True\nb,q,0.5\n", "long")])
def test_boolean_scores_are_refused(tmp_path, text, layout):
    # old: pandas read true/false as booleans and fitted them as 1/0
    with pytest.raises(InputError, match=r"boolean scores .*\(a, q1?\).*as numbers"):
        read_scores(_write(tmp_path, text), format=layout)
    frame = pd.DataFrame({"agent": ["a", "b"], "q1": [True, False]})
    with pytest.raises(InputError, match="boolean scores"):
        ScoreMatrix.from_wide(frame)


def test_long_row_with_empty_score_is_counted_and_reported(tmp_path, capsys):
    # old: the row vanished without a word
    path = _write(tmp_path, "agent,item,score\na,x,0.1\na,y,\nb,x,0.2\nb,y,0.3\n")
    with pytest.warns(UserWarning, match="1 of 4 rows of the long table have an empty"):
        S = read_scores(path, format="long")
    assert S.n_missing == 1 and S.n_observed == 3
    assert "1 rows with a missing score were not used" in S.summary()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_scores(_write(tmp_path, "agent,item,score\na,x,0.1\n", "t.csv"),
                           format="long").n_missing == 0


def test_duplicate_long_pairs_are_refused_in_every_reader(tmp_path):
    text = "agent,item,score\na,x,0.1\nb,x,0.2\na,x,0.3\n"
    frame = pd.read_csv(_write(tmp_path, text))
    frame.to_parquet(tmp_path / "d.parquet")
    for path in (tmp_path / "s.csv", tmp_path / "d.parquet"):
        with pytest.raises(InputError, match=r"duplicate \(agent, item\) pairs.*\(a, x\)"):
            read_scores(path, format="long")


def test_dictionary_parquet_reads_only_used_names_across_batches(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    agents = pa.array(["z", "NA", "m1", "unused"])            # 'unused' is in no row
    codes = pa.array(np.array([1, 0, 2, 1, 0, 2], np.int32))
    table = pa.table({"agent": pa.DictionaryArray.from_arrays(codes, agents),
                      "item": ["q1", "q1", "q1", "q2", "q2", "q2"],
                      "score": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]})
    pq.write_table(table, tmp_path / "d.parquet")
    S = read_scores(tmp_path / "d.parquet", format="long", batch_rows=2)
    assert S.agents == ("NA", "z", "m1") and S.items == ("q1", "q2")   # first appearance
    assert S.values[S.agents.index("m1"), 1] == 0.6


# --------------------------------------- the fast long reader (issue 13 item 2, session 4)
from evalcert.data.cells import _row_major_permutation, bipartite_components  # noqa: E402


@pytest.mark.parametrize("seed", range(6))
def test_counting_sort_equals_the_stable_argsort(seed):
    rng = np.random.default_rng(seed)
    K, J, n = rng.integers(1, 30), rng.integers(1, 30), rng.integers(2, 400)
    rows, cols = rng.integers(0, K, n), rng.integers(0, J, n)     # repeats included
    perm = _row_major_permutation(rows, cols, (K, J))
    expected = np.argsort(rows * J + cols, kind="stable")
    assert perm is not None and np.array_equal(perm, expected)     # stable: same order of ties
    key = np.unique(rows * J + cols)
    assert _row_major_permutation(key // J, key % J, (K, J)) is None   # sorted: no work


def test_a_counting_sort_that_loses_order_is_caught_not_trusted(monkeypatch):
    from evalcert.data import cells as data_cells
    monkeypatch.setattr(data_cells, "_counting_order", lambda keys, size, carry: carry[::-1])
    with pytest.raises(RuntimeError, match="counting sort of the cells failed"):
        ScoreMatrix.from_cells([1, 0, 1], [0, 0, 1], [0.1, 0.2, 0.3], ["a", "b"], ["x", "y"])


@pytest.mark.parametrize("seed", range(4))
def test_bipartite_components_on_unsorted_cells_match_a_union_find(seed):
    rng = np.random.default_rng(seed)
    K, J = 25, 30
    n = int(rng.integers(5, 40))
    rows, cols = rng.integers(0, K, n), rng.integers(0, J, n)
    parent = list(range(K + J))

    def find(a):
        while parent[a] != a:
            a = parent[a]
        return a
    for r, c in zip(rows, cols):
        parent[find(r)] = find(K + c)
    roots = np.array([find(a) for a in range(K + J)])
    lab_r, lab_c = bipartite_components(rows, cols, (K, J))
    labels = np.r_[lab_r, lab_c]
    # the same partition, label 0 on a largest component
    assert len(set(zip(labels, roots))) == len(set(labels)) == len(set(roots))
    assert np.sum(labels == 0) == np.max(np.bincount(labels))



def _components_of_the_whole_graph(rows, cols, K, J):
    """The reference: scipy's components of the bipartite graph on all K + J
    nodes (the code before session 6's agent graph), relabelled the same way."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components
    graph = sp.coo_matrix((np.ones(len(rows)), (rows, K + cols)), shape=(K + J, K + J))
    n, labels = connected_components(graph, directed=False)
    relabel = np.empty(n, dtype=np.int64)
    relabel[np.argsort(-np.bincount(labels, minlength=n), kind="stable")] = np.arange(n)
    return relabel[labels][:K], relabel[labels][K:]


@pytest.mark.parametrize("seed", range(12))
def test_bipartite_components_on_the_agent_graph_equal_the_whole_graphs_labels(seed):
    """Session 6: the components are found on the agents only (each item
    joined to one agent that observed it); the labels, not just the
    partition, equal those of the whole bipartite graph, also with agents and
    items without cells, sizes tied, K > J and no cell at all."""
    rng = np.random.default_rng(100 + seed)
    K, J = int(rng.integers(1, 40)), int(rng.integers(1, 40))
    n = int(rng.integers(0, 3 * (K + J))) if seed else 0
    rows, cols = rng.integers(0, K, n), rng.integers(0, J, n)
    got = bipartite_components(rows, cols, (K, J))
    want = _components_of_the_whole_graph(rows, cols, K, J)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


@pytest.mark.parametrize("seed", range(12))
def test_components_when_one_agent_sees_every_item_equal_the_whole_graphs_labels(seed):
    """The O(K + J) shortcut (one agent with a cell on every item, every agent with a
    cell) gives the labels of the whole bipartite graph; designs that just miss it (an
    agent without a cell, the busy agent one item short with repeats making up its
    degree) take the graph search and still agree."""
    from evalcert.data import cells as data_cells
    rng = np.random.default_rng(300 + seed)
    K, J = int(rng.integers(2, 30)), int(rng.integers(2, 30))
    n = int(rng.integers(K, 3 * (K + J)))
    rows, cols = rng.integers(0, K, n), rng.integers(0, J, n)
    busy = int(rng.integers(K))
    full_cols = np.arange(J) if seed % 3 else np.r_[np.arange(J - 1), 0]   # 0 repeated
    copies = n // J + 2                                  # the busiest agent by far
    rows = np.r_[rows, np.full(copies * J, busy), np.arange(K)]
    cols = np.r_[cols, np.tile(full_cols, copies), rng.integers(0, J, K)]
    if seed % 4 == 0:                                    # an agent without a cell
        lonely = (busy + 1) % K
        cols, rows = cols[rows != lonely], rows[rows != lonely]
    got = bipartite_components(rows, cols, (K, J))
    want = _components_of_the_whole_graph(rows, cols, K, J)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    order = np.argsort(rows, kind="stable")
    starts = np.searchsorted(rows[order], np.arange(K + 1))
    shortcut = data_cells._one_agent_sees_all(rows[order], cols[order], starts, J)
    sees_all = [len(set(cols[rows == k])) == J for k in range(K)]
    assert not shortcut or (any(sees_all) and len(set(rows)) == K)   # never a wrong yes
    if seed % 3 and seed % 4:
        assert shortcut                                  # planted: taken


def _random_long_table(rng, n_agents, n_items, n_missing):
    """A shuffled long table with tricky names and ``n_missing`` rows of an
    unobserved pair with no score; no duplicates."""
    agents = ["NA", "0.25", "None"][:n_agents] + [f"m{k}" for k in range(3, n_agents)]
    items = [f"q{j}" for j in range(n_items)]
    v = _random_design(n_agents, n_items, 0.35, int(rng.integers(1 << 30)))
    S = ScoreMatrix.from_array(v, agents=agents, items=items)
    free = np.argwhere(np.isnan(v))[rng.permutation(int(np.isnan(v).sum()))[:n_missing]]
    assert len(free) == n_missing
    empty = pd.DataFrame({"agent": [agents[i] for i in free[:, 0]],
                          "item": [items[j] for j in free[:, 1]], "score": [None] * n_missing})
    long = pd.concat([S.to_long().astype({"score": object}), empty], ignore_index=True)
    return long.sample(frac=1.0, random_state=int(rng.integers(1 << 30))).reset_index(drop=True)


@pytest.mark.parametrize("seed, unify_every", [(0, 1 << 22), (1, 1 << 22), (2, 1), (3, 2)])
def test_streaming_equals_in_memory_on_random_files_and_batch_sizes(tmp_path, monkeypatch, seed,
                                                                     unify_every):
    # unify_every small: names are unified (and cells recoded) during the scan too
    from evalcert.data import frames as data_io
    monkeypatch.setattr(data_io, "_UNIFY_EVERY", unify_every)
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    rng = np.random.default_rng(seed)
    long = _random_long_table(rng, int(rng.integers(3, 12)), int(rng.integers(3, 15)), 2)
    long.to_csv(tmp_path / "l.csv", index=False)
    long.to_parquet(tmp_path / "plain.parquet")
    table = pa.Table.from_pandas(long, preserve_index=False)
    table = table.set_column(0, "agent", table.column(0).dictionary_encode())
    table = table.set_column(1, "item", table.column(1).dictionary_encode())
    pq.write_table(table, tmp_path / "dict.parquet", row_group_size=5)
    with pytest.warns(UserWarning, match="2 of"):
        reference = read_scores(tmp_path / "l.csv", format="long")
    for name in ("plain.parquet", "dict.parquet"):
        for batch_rows in (1, 2, 3, 7, 10 ** 6):
            with pytest.warns(UserWarning, match="2 of"):
                got = read_scores(tmp_path / name, format="long", batch_rows=batch_rows)
            assert got.agents == reference.agents and got.items == reference.items
            assert all(np.array_equal(a, b) for a, b in zip(got.cells(), reference.cells()))
            assert got.n_missing == reference.n_missing == 2
            assert got.cells()[0].dtype == got.cells()[1].dtype == np.int32


@pytest.mark.parametrize("batch_rows", [1, 2, 5, 100])
def test_duplicates_split_across_batches_are_refused_by_every_reader(tmp_path, batch_rows):
    rng = np.random.default_rng(batch_rows)
    long = _random_long_table(rng, 6, 8, 0)
    first, last = long.iloc[[1]], long.iloc[[-1]]
    dup = pd.concat([long, first.assign(score=0.5), last.assign(score=0.25)],
                    ignore_index=True)                # the repeats arrive in the last batches
    dup.to_parquet(tmp_path / "d.parquet")
    dup.to_csv(tmp_path / "d.csv", index=False)
    messages = set()
    for path, kwargs in ((tmp_path / "d.parquet", {"batch_rows": batch_rows}),
                         (tmp_path / "d.csv", {})):
        with pytest.raises(InputError, match=r"duplicate \(agent, item\) pairs in the long "
                                             r"table: .*; aggregate") as err:
            read_scores(path, format="long", **kwargs)
        messages.add(str(err.value))
        pair = f"({first.iloc[0, 0]}, {first.iloc[0, 1]})"
        assert pair in str(err.value) and "(2 in all)" not in str(err.value)
    assert len(messages) == 1                         # the same pairs named, in the same order


def test_empty_and_null_names_are_refused_with_their_row_in_any_batch(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    table = pa.table({"agent": ["a", "b", "c", "d", None], "item": ["x", "x", "", "y", "y"],
                      "score": [0.1, 0.2, 0.3, 0.4, 0.5]})
    pq.write_table(table, tmp_path / "n.parquet")
    with pytest.raises(InputError, match="empty item name in data row 3"):
        read_scores(tmp_path / "n.parquet", format="long", batch_rows=2)
    pq.write_table(table.set_column(1, "item", pa.array(["x"] * 5)), tmp_path / "m.parquet")
    with pytest.raises(InputError, match="empty agent name in data row 5"):
        read_scores(tmp_path / "m.parquet", format="long", batch_rows=2)


def test_integer_and_large_string_names_in_parquet_read_as_their_text(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"agent": [7, 3, 7], "item": [10, 10, 11],
                             "score": [0.1, 0.2, 0.3]}), tmp_path / "i.parquet")
    S = read_scores(tmp_path / "i.parquet", format="long", batch_rows=1)
    assert S.agents == ("7", "3") and S.items == ("10", "11") and S.n_observed == 3
    pq.write_table(pa.table({"agent": pa.array(["b", "a", "b"], pa.large_string()),
                             "item": pa.array(["x", "x", "y"], pa.large_string()),
                             "score": [0.1, 0.2, 0.3]}), tmp_path / "l.parquet")
    S = read_scores(tmp_path / "l.parquet", format="long", batch_rows=2)
    assert S.agents == ("b", "a") and S.items == ("x", "y") and S.n_observed == 3


def test_long_readers_give_distinct_plain_str_names_without_a_second_check(tmp_path):
    """The long readers hand their dictionary's names (distinct by construction)
    to the ScoreMatrix without a per-name str() or set() (10^6 items cost 0.2 s);
    the names must still be plain, distinct str, as validate() confirms."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"agent": [7, 3, 7, 3], "item": ["x", "x", "y", "y"],
                             "score": [0.1, 0.2, 0.3, 0.4]}), tmp_path / "n.parquet")
    frame = pd.DataFrame({"agent": ["b", "a", "b"], "item": [1, 1, 2], "score": [0.1, 0.2, 0.3]})
    for S in (read_scores(tmp_path / "n.parquet", format="long", batch_rows=1),
              ScoreMatrix.from_long(frame)):
        assert all(type(name) is str for name in S.agents + S.items)
        assert len(set(S.agents)) == len(S.agents) and len(set(S.items)) == len(S.items)
        S.validate()
    with pytest.raises(InputError, match="duplicate agent names"):
        ScoreMatrix.from_cells(np.array([0, 1]), np.array([0, 0]), np.array([0.1, 0.2]),
                               ["m", "m"], ["q"])


# ------------------------------------------------------------ evalcert.memory (issue 13 item 5)
from evalcert import memory  # noqa: E402


def test_estimate_bytes_does_not_overflow_and_counts_copies():
    assert memory.estimate_bytes((10_000, 1_000_000)) == 8 * 10 ** 10
    assert memory.estimate_bytes(5, "int32", copies=3) == 60
    assert memory.estimate_bytes((3, 4), bool) == 12


def test_memory_available_and_require_memory(monkeypatch):
    avail = memory.memory_available()
    assert isinstance(avail, int) and avail > 0
    assert memory.require_memory(1024, "a tiny array") == 1024
    monkeypatch.setattr(memory, "memory_available", lambda: 4 * 2 ** 30)
    with pytest.raises(InputError, match=r"a big thing needs 3\.0 GiB but only 4\.0 GiB of memory "
                                         r"is available .*; use cells"):
        memory.require_memory(3 * 2 ** 30, "a big thing", "use cells")
    assert memory.require_memory(3 * 2 ** 30, "fits at 80%", fraction=0.8) == 3 * 2 ** 30
    n, J = 3000, 200_000                 # 4.5 GiB dense, 4.8 MB of cells
    S = ScoreMatrix.from_cells(np.arange(J) % n, np.arange(J), np.zeros(J),
                               [f"a{k}" for k in range(n)], [f"i{k}" for k in range(J)])
    with pytest.raises(InputError, match=r"dense 3000 x 200000 score array needs 4\.5 GiB but "
                                         r"only 4\.0 GiB .*S\.cells\(\)"):
        S.to_dense()
    assert S.connectivity().n_components == n and S.n_observed == J   # one star per agent


@pytest.mark.parametrize("seed", range(4))
def test_counting_sort_of_cells_grouped_by_item_equals_the_stable_argsort(seed):
    """Cells grouped by column (a long file written item by item) take one
    counting sort instead of two; the permutation is the stable argsort's."""
    rng = np.random.default_rng(seed)
    K, J, n = int(rng.integers(2, 30)), int(rng.integers(1, 30)), int(rng.integers(2, 400))
    cols = np.sort(rng.integers(0, J, n))
    rows = rng.integers(0, K, n)                                  # repeats included
    perm = _row_major_permutation(rows, cols, (K, J))
    assert perm is not None and np.array_equal(perm, np.argsort(rows * J + cols, kind="stable"))


@pytest.mark.parametrize("seed", range(4))
def test_names_keep_first_appearance_whatever_the_dictionary_order(seed):
    """The long reader numbers names by first appearance; it skips the sort
    when a batch's dictionary is in that order already (Parquet's), and sorts
    when it is not: both against a plain Python reference, over batches."""
    import pyarrow as pa
    from evalcert.data.frames import _NameCodes
    rng = np.random.default_rng(seed)
    pool = [f"n{i}" for i in range(40)]
    names, seen = _NameCodes("item"), []
    row0 = 0
    for batch in range(3):
        values = rng.permutation(pool)[:25].tolist()
        codes = rng.integers(0, len(values), 60)            # appearance: random order
        if batch == 1:
            codes = np.r_[np.arange(len(values)), codes]     # appearance = dictionary order
        column = pa.DictionaryArray.from_arrays(pa.array(codes, type=pa.int32()),
                                                pa.array(values))
        got = names.codes(column, row0)
        row0 += len(codes)
        for c in codes:
            if values[c] not in seen:
                seen.append(values[c])
        mapping = names.unify()
        assert [seen[i] for i in mapping[got]] == [values[c] for c in codes]
    assert names.names() == seen


def test_csv_scores_are_the_files_decimals_exactly(tmp_path):
    """pandas < 3 parses text with an inexact strtod (a third of 17-digit decimals off by
    one unit in the last place): a score read from CSV must be float(text), bit for bit."""
    rng = np.random.default_rng(21)
    x = rng.uniform(-1, 1, (20, 50))
    text = [[repr(float(v)) for v in row] for row in x]
    path = tmp_path / "s.csv"
    path.write_text("agent," + ",".join(f"q{j}" for j in range(50)) + "\n"
                    + "".join(f"m{k}," + ",".join(row) + "\n" for k, row in enumerate(text)))
    S = read_scores(path)
    assert np.array_equal(S.values, np.array([[float(t) for t in row] for row in text]))


def test_cell_coordinates_are_int32_while_every_linear_index_fits():
    # 4 bytes a coordinate while row * J + col fits in int32 (K J < 2^31), int64 beyond;
    # the same cells either way, and an index beyond int32 is refused, never wrapped
    from evalcert.data.cells import index_dtype
    small = ScoreMatrix.from_cells([0, 1], [1, 0], [0.5, -0.5], ["a", "b"], ["x", "y"])
    assert small.cells()[0].dtype == small.cells()[1].dtype == np.int32
    assert ScoreMatrix.from_array(np.eye(3)).cells()[0].dtype == np.int32
    K, J = 2, 2 ** 30                                   # K J = 2^31: int64
    assert index_dtype(K, J) is np.int64 and index_dtype(K, J - 1) is np.int32
    with pytest.raises(InputError, match="out of range"):
        ScoreMatrix.from_cells([0, 2 ** 32 + 1], [0, 1], [0.5, 0.5], ["a", "b"], ["x", "y"])
    with pytest.raises(InputError, match="out of range"):
        ScoreMatrix.from_cells([0, 1], [0, -2 ** 32], [0.5, 0.5], ["a", "b"], ["x", "y"],
                               presorted=True)
