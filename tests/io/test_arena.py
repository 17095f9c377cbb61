"""Readers of pairwise logs: the Arena JSON array streamed, every format to the same counts."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalcert.datasets.battles import simulate_battles
from evalcert.errors import InputError
from evalcert.io.arena import read_arena
from evalcert.io.pairwise import iter_json_array, read_pairwise


def _arena_records(n=400, seed=0):
    frame, _ = simulate_battles(n_models=7, n_battles=n, seed=seed)
    records = frame.astype(str).to_dict("records")
    rng = np.random.default_rng(seed)
    for k, r in enumerate(records):
        r.update({"judge": f"arena_user_{k % 13}", "turn": int(rng.integers(1, 4)),
                  "anony": bool(k % 3), "language": "English" if k % 4 else "German",
                  "tstamp": 1.7e9 + k, "conv_metadata": {"sum_user_tokens": k, "turns": [1, 2]},
                  "category_tag": {"criteria_v0.1": {"code": False, "x": "] , {"}}})
    return records


def _expected(records, keep=lambda r: True):
    a = [r["model_a"] for r in records if keep(r)]
    b = [r["model_b"] for r in records if keep(r)]
    w = [r["winner"] for r in records if keep(r)]
    from evalcert.compare.counts import PairwiseCounts
    return PairwiseCounts.from_battles(a, b, w)


def _same(c1, c2):
    t1 = {(c1.models[i], c1.models[j]): (x, y, t) for i, j, x, y, t in
          zip(c1.i, c1.j, c1.wins_i, c1.wins_j, c1.ties)}
    t2 = {(c2.models[i], c2.models[j]): (x, y, t) for i, j, x, y, t in
          zip(c2.i, c2.j, c2.wins_i, c2.wins_j, c2.ties)}
    return t1 == t2


@given(chunk=st.integers(min_value=1, max_value=3000))
def test_json_array_streamed_in_chunks_equals_json_load(chunk, tmp_path_factory):
    path = tmp_path_factory.mktemp("arena") / "clean_battle.json"
    records = _arena_records(60)
    path.write_text(json.dumps(records, indent=1))
    assert list(iter_json_array(path, chunk_bytes=chunk)) == records


def test_arena_dump_and_its_parquet_jsonl_csv_forms_give_the_same_counts(tmp_path):
    records = _arena_records()
    expected = _expected(records)
    (tmp_path / "clean_battle_20240814.json").write_text(json.dumps(records))
    frame = pd.DataFrame(records)[["model_a", "model_b", "winner", "anony", "language"]]
    frame.to_parquet(tmp_path / "battles.parquet")
    frame.to_csv(tmp_path / "battles.csv", index=False)
    frame.to_json(tmp_path / "battles.jsonl", orient="records", lines=True)
    for name in ("clean_battle_20240814.json", "battles.parquet", "battles.csv", "battles.jsonl"):
        counts = read_arena(tmp_path / name, batch_rows=97)
        assert _same(counts, expected), name
        assert counts.n_battles == len(records)


def test_arena_filters_are_applied_and_counted(tmp_path):
    records = _arena_records()
    path = tmp_path / "clean_battle.json"
    path.write_text(json.dumps(records))
    counts = read_arena(path, anony_only=True, language="English")
    keep = lambda r: r["anony"] and r["language"] == "English"  # noqa: E731
    assert _same(counts, _expected(records, keep))
    assert sum(counts.dropped.values()) == sum(not keep(r) for r in records)


def test_winner_may_name_a_model_and_unknown_winners_are_refused(tmp_path):
    path = tmp_path / "votes.csv"
    path.write_text("model_a,model_b,winner,judge\nx,y,y,j1\nx,y,x,j2\nx,y,model_a,j1\n")
    assert read_pairwise(path).table().tolist() == [[2, 1, 0]]
    path.write_text("model_a,model_b,winner\nx,y,left\nx,y,model_a\nx,y,left\n")
    with pytest.raises(InputError, match="2 rows have a winner that is not .*'left'"):
        read_pairwise(path)


def test_rows_without_a_model_or_winner_are_counted_not_dropped_silently(tmp_path):
    path = tmp_path / "votes.csv"
    path.write_text("model_a,model_b,winner\nx,y,model_a\n,y,model_a\nx,y,\ny,y,tie\n")
    counts = read_pairwise(path)
    assert counts.n_battles == 1
    assert counts.dropped == {"without a model name": 1, "without a winner": 1,
                              "self-battle": 1}


def test_custom_column_names_and_missing_columns(tmp_path):
    path = tmp_path / "votes.parquet"
    pd.DataFrame({"left": ["x", "y"], "right": ["y", "x"], "verdict": ["tie", "model_b"]}
                 ).to_parquet(path)
    assert read_pairwise(path, model_a="left", model_b="right", winner="verdict"
                         ).table().tolist() == [[1, 0, 1]]
    with pytest.raises(InputError, match="no column.*model_a"):
        read_pairwise(path)


@pytest.mark.parametrize("text, message", [
    ('{"model_a": "x"}', "not a JSON array"),
    ('[{"model_a": "x", "model_b": "y", "winner": "tie"}, 3]', "must be an object"),
    ('[{"model_a": "x", "model_b": "y", "winner": "tie"}, {"model_a": "x", "mo', "truncated"),
    ('[{"model_a": "x", "model_b": "y", "winner": "tie"}', "not closed"),
    ("[]", "empty"),
])
def test_malformed_json_arrays_get_one_clear_line(tmp_path, text, message):
    path = tmp_path / "clean_battle.json"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        read_arena(path)


def test_corrupt_parquet_and_missing_file(tmp_path):
    path = tmp_path / "battles.parquet"
    path.write_bytes(b"PAR1 not really parquet")
    with pytest.raises(InputError):
        read_arena(path)
    with pytest.raises(InputError, match="no such file"):
        read_arena(tmp_path / "nope.json")
