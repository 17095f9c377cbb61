"""Inspect logs written by inspect_ai itself (.eval archives with zstd members, .json logs)."""

from __future__ import annotations

import json
import zipfile
from collections import defaultdict

import numpy as np
import pytest

from evalcert.errors import InputError
from evalcert.io.inspect_logs import read_inspect, value_to_float
from tests.io._fixtures import INSPECT_EVAL, INSPECT_JSON, copy, run_cli


def _json_epochs(scorer="match", key=None):
    """{(model, sample): {epoch: float}} and errored (model, sample, epoch), from the JSON logs."""
    scored, errored = defaultdict(dict), set()
    for log in INSPECT_JSON.glob("*.json"):
        doc = json.loads(log.read_text())
        model = doc["eval"]["model"]
        for s in doc["samples"]:
            if s.get("error"):
                errored.add((model, s["id"], s["epoch"]))
                continue
            value = s["scores"][scorer]["value"]
            scored[(model, s["id"])][s["epoch"]] = value_to_float(value[key] if key else value)
    return scored, errored


def test_eval_members_are_zstd_and_read_like_the_json_logs():
    archive = next(INSPECT_EVAL.glob("*.eval"))
    assert {i.compress_type for i in zipfile.ZipFile(archive).infolist()} == {93}
    a, b = read_inspect(INSPECT_EVAL), read_inspect(INSPECT_JSON)
    fa, fb = a.matrix.to_frame(), b.matrix.to_frame()
    assert sorted(fa.index) == sorted(fb.index) and sorted(fa.columns) == sorted(fb.columns)
    assert fa.sort_index().sort_index(axis=1).equals(fb.sort_index().sort_index(axis=1))


def test_epoch_mean_matches_an_independent_reading_and_errors_are_counted():
    scored, errored = _json_epochs()
    read = read_inspect(INSPECT_JSON)
    frame = read.matrix.to_frame()
    for (model, sid), epochs in scored.items():
        assert frame.loc[model, f"arith|{sid}"] == pytest.approx(np.mean(list(epochs.values())))
    # beta errored once (q3, epoch 1: its epoch 2 still scores q3); gamma twice on q5
    assert read.report.errored == {m: sum(1 for e in errored if e[0] == m)
                                   for m in read.report.errored}
    assert read.report.errored["mockllm/beta"] == 1 and read.report.errored["mockllm/gamma"] == 2
    assert read.report.missing["mockllm/gamma"] == 1 and read.report.missing["mockllm/beta"] == 0
    assert np.isnan(frame.loc["mockllm/gamma", "arith|q5"])
    assert "errored" in read.summary() and "mockllm/gamma: 1 missing" in read.summary()


def test_epochs_keep_and_first():
    keep = read_inspect(INSPECT_EVAL, epochs="keep")
    assert keep.matrix.n_items == 12 and keep.report.missing["mockllm/beta"] == 1
    assert keep.report.missing["mockllm/gamma"] == 2
    first = read_inspect(INSPECT_EVAL, epochs="first").matrix.to_frame()
    scored, _ = _json_epochs()
    assert np.isnan(first.loc["mockllm/beta", "arith|q3"])          # epoch 1 errored
    assert first.loc["mockllm/alpha", "arith|q1"] == scored[("mockllm/alpha", "q1")][1]
    with pytest.raises(InputError, match="epochs='all'"):
        read_inspect(INSPECT_EVAL, epochs="all")


def test_partial_credit_and_dict_scores():
    graded = read_inspect(INSPECT_EVAL, scorer="graded").matrix.to_frame()
    assert graded.loc["mockllm/alpha", "arith|q6"] == 0.5            # "P", as inspect maps it
    with pytest.raises(InputError, match=r"dict values with keys \['exact', 'chars'\]"):
        read_inspect(INSPECT_EVAL, scorer="detail")
    chars = read_inspect(INSPECT_EVAL, scorer="detail", score_key="chars")
    scored, _ = _json_epochs("detail", "chars")
    frame = chars.matrix.to_frame()
    for (model, sid), epochs in scored.items():
        assert frame.loc[model, f"arith|{sid}"] == pytest.approx(np.mean(list(epochs.values())))
    assert chars.matrix.bounds[1] >= frame.max().max()              # widened to the scores
    with pytest.raises(InputError, match="no scorer 'nope'"):
        read_inspect(INSPECT_EVAL, scorer="nope")


def test_value_to_float_like_inspect():
    assert [value_to_float(v) for v in ("C", "I", "P", "N", True, 3, "0.25", "yes")] == \
        [1.0, 0.0, 0.5, 0.0, 1.0, 3.0, 0.25, 1.0]
    with pytest.raises(ValueError):
        value_to_float([1, 2])


def test_truncated_and_corrupt_eval_exit_2(tmp_path):
    logs = copy(INSPECT_EVAL, tmp_path / "logs")
    victim = sorted(logs.glob("*.eval"))[0]
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2])
    status, out, err = run_cli(["convert", logs, "--out", tmp_path / "x.csv"])
    assert status == 2 and "evalcert: error" in err and err.strip().count("\n") <= 1
    assert "corrupt or truncated" in err
    # a member whose bytes are damaged: zstd refuses, one line
    buf = bytearray(data)
    original = sorted(INSPECT_EVAL.glob("*.eval"))[0]
    info = next(i for i in zipfile.ZipFile(original).infolist()
                if i.filename.startswith("samples/"))
    at = info.header_offset + 30 + len(info.filename.encode()) + 4
    buf[at:at + 16] = b"\x00" * 16
    victim.write_bytes(bytes(buf))
    with pytest.raises(InputError, match="does not decompress|not valid JSON"):
        read_inspect(logs)


def test_real_inspect_logs_two_models_one_task():
    from tests.conftest import require_shared

    folder = require_shared("formats/inspect")
    read = read_inspect(folder)
    arc = [i for i in read.matrix.items if i.startswith("inspect_evals/arc_easy|")]
    assert len(arc) == 5
    assert read.report.skipped == {"logs without samples (written with --no-log-samples?)": 1}


def test_sample_without_score_nor_error_is_missing_not_errored(tmp_path):
    # built from a shipped JSON log: one sample's scores removed (a scorer that never ran)
    log = sorted(INSPECT_JSON.glob("*.json"))[0]
    doc = json.loads(log.read_text())
    target = next(s for s in doc["samples"] if not s.get("error"))
    for s in doc["samples"]:
        if s["id"] == target["id"] and not s.get("error"):
            s["scores"] = {}
    path = tmp_path / "log.json"
    path.write_text(json.dumps(doc))
    read = read_inspect(path)
    model = doc["eval"]["model"]
    before = read_inspect(log)
    assert read.report.errored == before.report.errored
    assert read.report.missing[model] == before.report.missing[model] + 1
    assert f"arith|{target['id']}" not in read.matrix.items or \
        read.matrix.n_observed == before.matrix.n_observed - 1
