"""lm-eval sample logs written by lm-evaluation-harness itself (tests/data/formats)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from evalcert.errors import InputError
from evalcert.io.lm_eval import read_lm_eval
from tests.io._fixtures import FORMATS, LM_EVAL, copy, jsonl, run_cli


def _newest(folder, task):
    files = sorted(folder.glob(f"samples_{task}_*.jsonl"))
    return files[-1]


def test_three_models_joined_on_task_and_doc_with_the_rows_own_scores():
    read = read_lm_eval(LM_EVAL, filter="strict-match")
    S = read.matrix
    assert set(S.agents) == {"mock/alpha", "mock/beta", "mock/gamma"}
    assert S.shape == (3, 12) and S.n_observed == 36
    # every cell is the metric of the row lm-eval wrote (an independent json read)
    frame = S.to_frame()
    for model in ("alpha", "beta", "gamma"):
        folder = LM_EVAL / f"mock__{model}"
        for row in jsonl(_newest(folder, "qa_gen")):
            if row["filter"] == "strict-match":
                assert frame.loc[f"mock/{model}", f"qa_gen|{row['doc_id']}"] == row["exact_match"]
        for row in jsonl(_newest(folder, "qa_mc")):
            assert frame.loc[f"mock/{model}", f"qa_mc|{row['doc_id']}"] == row["acc"]


def test_several_filters_need_a_choice_and_each_filter_gives_its_own_scores():
    with pytest.raises(InputError, match=r"qa_gen .*several filters \['flexible-extract', "
                                         r"'strict-match'\]"):
        read_lm_eval(LM_EVAL)
    strict = read_lm_eval(LM_EVAL, filter="strict-match")
    flexible = read_lm_eval(LM_EVAL, filter="flexible-extract")
    assert strict.report.skipped["rows of filter flexible-extract (not strict-match)"] == 18
    gen = [k for k, i in enumerate(strict.matrix.items) if i.startswith("qa_gen")]
    # the mock answers every third doc without the tag: the strict regex misses those
    assert not np.array_equal(strict.matrix.values[:, gen], flexible.matrix.values[:, gen])
    with pytest.raises(InputError, match="no filter 'nope'"):
        read_lm_eval(LM_EVAL, filter="nope")


def test_cli_names_the_filters_on_one_line_with_exit_2():
    status, out, err = run_cli(["convert", LM_EVAL, "--out", "x.csv"])
    assert status == 2 and err.count("\n") == 2            # the detection line + the error
    assert "flexible-extract" in err and "strict-match" in err and "--filter" in err


def test_metric_default_first_listed_and_pickable():
    acc = read_lm_eval(LM_EVAL, filter="strict-match", tasks=["qa_mc"])
    norm = read_lm_eval(LM_EVAL, filter="strict-match", tasks=["qa_mc"], metric="acc_norm")
    rows = jsonl(_newest(LM_EVAL / "mock__beta", "qa_mc"))
    assert rows[0]["metrics"][0] == "acc"
    got = norm.matrix.to_frame().loc["mock/beta"]
    assert [got[f"qa_mc|{r['doc_id']}"] for r in rows] == [r["acc_norm"] for r in rows]
    assert all(i.startswith("qa_mc|") for i in acc.matrix.items)
    with pytest.raises(InputError, match=r"no task \['qa_x'\]"):
        read_lm_eval(LM_EVAL, tasks=["qa_x"])
    with pytest.raises(InputError, match="no metric 'bleu'"):
        read_lm_eval(LM_EVAL, filter="strict-match", metric="bleu")


def test_newest_run_read_unless_all_runs():
    read = read_lm_eval(LM_EVAL, filter="strict-match")
    assert read.report.skipped["files of older runs of a (model, task) (all_runs=True reads them)"] == 2
    newest = {r["doc_id"]: r["acc"] for r in jsonl(_newest(LM_EVAL / "mock__alpha", "qa_mc"))}
    frame = read.matrix.to_frame()
    assert all(frame.loc["mock/alpha", f"qa_mc|{d}"] == v for d, v in newest.items())
    every = read_lm_eval(LM_EVAL, filter="strict-match", all_runs=True)
    alphas = [m for m in every.matrix.agents if m.startswith("mock/alpha@")]
    assert len(alphas) == 2 and every.matrix.n_agents == 4


def test_mismatched_document_is_an_error_naming_task_and_doc(tmp_path):
    runs = copy(LM_EVAL, tmp_path / "runs")
    copy(FORMATS / "lm_eval_mismatch" / "mock__delta", runs / "mock__delta")
    with pytest.raises(InputError, match=r"task qa_(gen|mc), doc 2: mock/delta and mock/\w+ "
                                         r"scored different documents"):
        read_lm_eval(runs, filter="strict-match")


def test_real_harness_run_model_name_from_results_json():
    read = read_lm_eval(FORMATS / "lm_eval_real")
    assert read.matrix.agents == (
        "RylanSchaeffer/mem_Qwen3-93M_minerva_math_rep_0_sbst_1.0000_epch_1_ot_1",)
    assert read.matrix.n_items == 10 and read.matrix.items[0] == "math_perturbed_full|0"


def test_leaderboard_details_as_parquet_read_like_the_jsonl(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "mock__beta"
    folder.mkdir()
    src = _newest(LM_EVAL / "mock__beta", "qa_mc")
    rows = jsonl(src)
    table = pa.table({k: [r[k] for r in rows] for k in ("doc_id", "filter", "metrics",
                                                         "doc_hash", "acc", "acc_norm")})
    pq.write_table(table, folder / src.name.replace(".jsonl", ".parquet"))
    from_parquet = read_lm_eval(folder)
    from_jsonl = read_lm_eval(src)
    assert from_parquet.matrix.items == from_jsonl.matrix.items
    assert np.array_equal(from_parquet.matrix.values, from_jsonl.matrix.values)


def test_truncated_and_corrupt_logs_exit_2_one_line(tmp_path):
    runs = copy(LM_EVAL, tmp_path / "runs")
    target = _newest(runs / "mock__beta", "qa_mc")
    data = target.read_bytes()
    target.write_bytes(data[: len(data) - 40])                      # cut inside the last line
    status, out, err = run_cli(["convert", runs, "--format", "lm-eval", "--filter",
                                "strict-match", "--out", tmp_path / "a.csv"])
    assert status == 2 and err.count("\n") == 1 and "truncated" in err
    lines = data.decode().splitlines(keepends=True)
    lines[2] = lines[2][:50] + "\n"                                  # a broken middle line
    target.write_text("".join(lines))
    status, out, err = run_cli(["convert", runs, "--format", "lm-eval", "--filter",
                                "strict-match", "--out", tmp_path / "b.csv"])
    assert status == 2 and re.search(r"line 3 is not valid JSON", err)
    assert not (tmp_path / "a.csv").exists() and not (tmp_path / "b.csv").exists()


def test_null_metric_is_a_counted_missing_cell(tmp_path):
    src = _newest(LM_EVAL / "mock__gamma", "qa_mc")
    rows = jsonl(src)
    rows[1]["acc"] = None      # one row whose metric is null: unit case built from a real row
    folder = tmp_path / "mock__gamma"
    folder.mkdir()
    import json
    (folder / src.name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    read = read_lm_eval(folder)
    assert read.report.missing == {"mock/gamma": 1}
    assert read.matrix.n_observed == len(rows) - 1 and read.matrix.n_missing == 1


def test_parallel_config_reads_the_same_cells():
    import joblib

    one = read_lm_eval(LM_EVAL, filter="strict-match")
    with joblib.parallel_config(backend="threading", n_jobs=2):
        two = read_lm_eval(LM_EVAL, filter="strict-match")
    assert one.matrix.agents == two.matrix.agents and one.matrix.items == two.matrix.items
    assert all(np.array_equal(a, b) for a, b in zip(one.matrix.cells(), two.matrix.cells()))
