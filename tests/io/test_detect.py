"""Auto-detection, the convert verb's report, and fit/irt reading the tools' files."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from evalcert.commands import _sources
from evalcert.errors import InputError
from evalcert.io import detect
from tests.io._fixtures import FORMATS, HELM, INSPECT_EVAL, INSPECT_JSON, LM_EVAL, run_cli


def test_cli_format_lists_match_the_library():
    assert _sources.RESULTS_FORMATS == detect.RESULTS_FORMATS
    assert _sources.DECISION_FORMATS == detect.DECISION_FORMATS
    assert _sources.TOOL_FORMATS == detect.FORMATS


@pytest.mark.parametrize("path, expected", [
    (HELM, "helm"), (INSPECT_EVAL, "inspect"), (INSPECT_JSON, "inspect"),
    (next(INSPECT_JSON.glob("*.json")), "inspect"), (next(INSPECT_EVAL.glob("*.eval")), "inspect"),
    (LM_EVAL, "lm-eval"), (FORMATS / "lm_eval_real", "lm-eval"),
    (FORMATS / "eee", "eee"), (FORMATS / "fastchat" / "gpt-4_pair.jsonl", "fastchat-pair"),
    (FORMATS / "fastchat" / "gpt-4_single.jsonl", "fastchat-single"),
    (FORMATS / "alpaca_eval", "alpaca-eval"),
    (FORMATS.parent / "crowdkit_toy_ysda.csv", None)])
def test_detects_each_tool(path, expected):
    assert detect.detect_format(path) == expected


def test_mixed_folder_refused_naming_tools(tmp_path):
    shutil.copytree(HELM, tmp_path / "helm")
    shutil.copytree(INSPECT_EVAL, tmp_path / "inspect")
    with pytest.raises(InputError, match="several tools \\(helm, inspect\\)"):
        detect.detect_format(tmp_path)


def test_arena_dump_dispatches_to_the_arena_reader_or_says_it_is_missing(tmp_path):
    dump = tmp_path / "clean_battle_20240814_public.json"
    dump.write_text('[{"model_a": "x", "model_b": "y", "winner": "model_a", "judge": "arena_user_1",'
                    ' "turn": 1, "anony": true, "language": "English", "tstamp": 1.0}]')
    assert detect.detect_format(dump) == "arena"
    try:
        import evalcert.io.arena  # noqa: F401
    except ImportError:
        status, out, err = run_cli(["convert", dump, "--out", tmp_path / "a.csv"])
        assert status == 2 and "arena reader" in err and "not available" in err


def test_convert_prints_what_it_read_and_says_what_it_detected(tmp_path):
    out = tmp_path / "long.parquet"
    status, stdout, err = run_cli(["convert", INSPECT_EVAL, "--out", out])
    assert status == 0 and "read as inspect (detected" in err
    stdout = " ".join(stdout.split())  # summaries wrap at 100 characters (a long path)
    assert "3 models x 6 items, 17 scored cells" in stdout
    assert "mockllm/gamma: 1 missing cells (2 errored samples)" in stdout
    assert "mockllm/beta: 0 missing cells (1 errored samples)" in stdout
    frame = pd.read_parquet(out)
    assert list(frame.columns) == ["model", "item", "score"] and len(frame) == 17
    status, stdout, err = run_cli(["convert", FORMATS / "fastchat" / "gpt-4_pair.jsonl",
                                   "--out", tmp_path / "d.csv"])
    assert status == 0 and list(pd.read_csv(tmp_path / "d.csv").columns) == \
        ["item", "grader", "label"]
    status, stdout, err = run_cli(["convert", HELM, "--out", tmp_path / "h.csv", "--epochs",
                                   "keep"])
    assert status == 2 and "--epochs does not apply to helm" in err
    assert run_cli(["convert", HELM, "--out", tmp_path / "long.parquet"])[0] == 2   # exists


def test_fit_and_irt_read_tool_files(tmp_path):
    status, out, err = run_cli(["irt", "fit", INSPECT_EVAL, "--epochs", "first",
                                "--method", "mml"])
    assert status == 0, err
    assert "read as inspect" in err and "errored" in err
    status, out, err = run_cli(["irt", "fit", LM_EVAL, "--filter", "strict-match",
                                "--method", "mml"])
    assert status == 0, err
    # a wide CSV is still read as before (auto falls back to wide)
    csv = tmp_path / "r.csv"
    csv.write_text("model,q1,q2,q3\na,1,0,1\nb,0,1,1\nc,1,1,0\n")
    assert run_cli(["irt", "fit", csv, "--method", "mml"])[0] == 0
    status, out, err = run_cli(["fit", INSPECT_EVAL, "--epochs", "first"])
    assert status == 0 and "certificate" in out.lower(), err
    status, out, err = run_cli(["irt", "fit", FORMATS / "fastchat" / "gpt-4_pair.jsonl"])
    assert status == 2 and "not per-item responses" in err


def test_report_is_json_able():
    read = detect.read_results(INSPECT_EVAL)
    d = read.to_dict()
    assert d["shape"] == [3, 6] and d["report"]["errored"]["mockllm/gamma"] == 2
    assert np.isfinite(read.matrix.cells()[2]).all()
