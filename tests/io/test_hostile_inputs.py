"""Files that are not what they seem: each refused with one line naming the file, or read
correctly, never a traceback, a hang or a silent misread (issue 21, items 3, 4 and 6)."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from evalcert.errors import InputError
from evalcert.io.decisions import load_audit_input, read_decisions
from evalcert.io.scores import read_scores
from evalcert.io.responses import read_responses
from evalcert.io.tables import check_file, read_table

SCORES = "agent,q1,q2\na,0.5,0.2\nb,0.1,-0.3\n"


@pytest.mark.parametrize("suffix", [".csv", ".json", ".jsonl", ".parquet"])
def test_a_named_pipe_is_refused_before_it_is_opened(tmp_path, suffix):
    fifo = tmp_path / f"pipe{suffix}"
    os.mkfifo(fifo)
    # opening a FIFO without a writer blocks forever; this must return at once
    for read in (check_file, read_table, read_scores, read_responses, load_audit_input):
        with pytest.raises(InputError, match="named pipe"):
            read(fifo)


def test_a_device_is_refused(tmp_path):
    with pytest.raises(InputError, match="character device"):
        read_table(os.devnull)


def test_a_parquet_folder_with_a_fifo_part_does_not_hang(tmp_path):
    pd.DataFrame({"agent": ["a", "b"], "item": ["q", "q"],
                  "score": [0.5, 0.1]}).to_parquet(tmp_path / "p0.parquet")
    os.mkfifo(tmp_path / "p1.parquet")
    try:
        S = read_scores(tmp_path, format="long")
    except InputError as exc:
        assert "named pipe" in str(exc)
    else:                          # pyarrow's discovery skipped the pipe: the data read
        assert S.n_observed == 2


def test_cells_longer_than_csv_default_limit_are_read(tmp_path):
    # _csv.Error "field larger than field limit (131072)" was a traceback in every reader
    long = "x" * 200_000
    path = tmp_path / "r.csv"
    path.write_text(f"model,q1,q2\n{long},1,0\nb,0,1\n")
    res = read_responses(path)
    assert res.table.index[0] == long and res.shape == (2, 2)
    path.write_text(f"item,grader,label\nq1,g1,a\nq1,g2,{long}\n")
    assert long in read_decisions(path).labels
    path.write_text(SCORES.replace("0.2", long))
    with pytest.raises(InputError, match="non-numeric"):
        read_scores(path)


def test_deep_json_and_huge_integers_are_refused_with_the_file(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    lines = tmp_path / "deep.jsonl"
    lines.write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    big = tmp_path / "big.jsonl"
    big.write_text('{"agent": "a", "item": "q", "score": ' + "7" * 5000 + "}\n")
    counts = tmp_path / "counts.json"
    counts.write_text('{"g1": {"a": ' + "1" * 5000 + ', "b": 2}, "g2": {"a": 1, "b": 2}}')
    for path, read in ((deep, read_table), (lines, read_table), (deep, load_audit_input),
                       (lines, read_responses), (big, lambda p: read_scores(p, "long")),
                       (counts, load_audit_input)):
        with pytest.raises(InputError, match=path.name):
            read(path)
    ok = tmp_path / "ok.json"                 # a large count is still read exactly
    ok.write_text('{"g1": {"a": 1, "b": ' + "1" * 30 + '}, "g2": {"a": ' + "1" * 30
                  + ', "b": 1}}')
    assert load_audit_input(ok).counts[0] == (1, int("1" * 30))


def test_pairwise_ids_with_the_separator_stay_distinct(tmp_path):
    # "q|1", "a", "b" and "q", "1|a", "b" were both the item "q|1|a|b": merged, then
    # refused as one comparison decided twice
    path = tmp_path / "pw.csv"
    path.write_text("question_id,model_a,model_b,winner,judge\n"
                    "q|1,a,b,model_a,j1\nq,1|a,b,model_b,j1\n"
                    "q|1,a,b,model_a,j2\nq,1|a,b,tie,j2\n")
    dec = read_decisions(path, format="pairwise")
    assert len(dec.items) == 2 and len(set(dec.items)) == 2
    assert dec.codes == ((0, 0), (1, 2))


def test_wide_format_on_a_long_file_is_refused_with_the_fix(tmp_path):
    path = tmp_path / "long.csv"
    path.write_text("item,grader,label\nq1,g1,a\nq1,g2,b\nq2,g1,b\nq2,g2,b\n")
    with pytest.raises(InputError, match="--format long"):
        read_decisions(path, format="wide")
    wide = tmp_path / "wide.csv"                # a grader literally named "label"
    wide.write_text("item,g1,label\nq1,a,a\nq2,b,b\nq3,a,b\n")
    dec = read_decisions(wide, format="wide")
    assert dec.graders == ("g1", "label") and len(dec.items) == 3


def test_agreement_with_one_grader_is_refused():
    from evalcert.logic.estimates import agreement
    from evalcert.logic.summaries import decisions_from_frame

    one = decisions_from_frame(pd.DataFrame({"item": ["q1", "q2"], "grader": ["g", "g"],
                                             "label": ["a", "b"]}))
    with pytest.raises(InputError, match="two graders"):
        agreement(one)


def test_a_parquet_part_without_the_score_column_is_named(tmp_path):
    folder = tmp_path / "parts"
    folder.mkdir()
    pd.DataFrame({"agent": ["a", "b"], "item": ["q", "q"],
                  "score": [0.5, 0.1]}).to_parquet(folder / "p0.parquet")
    pd.DataFrame({"agent": ["c"], "item": ["q"]}).to_parquet(folder / "p1.parquet")
    with pytest.raises(InputError, match="p1.parquet: lacks column"):
        read_scores(folder, format="long")


def test_binary_names_are_decoded_or_refused(tmp_path):
    path = tmp_path / "b.parquet"
    pd.DataFrame({"agent": [b"a", b"b", b"a", b"b"], "item": [b"q1", b"q1", b"q2", b"q2"],
                  "score": [0.5, 0.2, 0.1, 0.3]}).to_parquet(path)
    S = read_scores(path, format="long")
    assert S.agents == ("a", "b") and S.items == ("q1", "q2")
    wide = tmp_path / "w.parquet"
    pd.DataFrame({"model": [b"a", b"b"], "q1": [1, 0], "q2": [0, 1]}).to_parquet(wide)
    assert list(read_responses(wide).table.index) == ["a", "b"]
    bad = tmp_path / "bad.parquet"
    pd.DataFrame({"model": [b"\xff", b"b"], "q1": [1, 0]}).to_parquet(bad)
    with pytest.raises(InputError, match="not UTF-8"):
        read_responses(bad)
    json.dumps(S.agents)                           # plain strings
    assert np.isfinite(S.values[~np.isnan(S.values)]).all()
