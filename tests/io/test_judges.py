"""FastChat judgments (real published excerpts) and AlpacaEval annotations (written by
alpaca_eval itself, tests/data/formats/regenerate.py) as decisions for the audit."""

from __future__ import annotations

import json

import pytest

from evalcert.errors import InputError
from evalcert.io.alpaca_eval import instruction_hash, read_alpaca_eval
from evalcert.io.fastchat import read_fastchat_pair, read_fastchat_single
from evalcert.io.decisions import read_decisions
from tests.io._fixtures import FORMATS, run_cli

FASTCHAT = FORMATS / "fastchat"
ALPACA = FORMATS / "alpaca_eval"


def test_fastchat_pair_two_graders_per_judge_position_flip_visible():
    frame, source = read_fastchat_pair(FASTCHAT / "gpt-4_pair.jsonl")
    assert frame.values.tolist() == [["81|phi-3|phi-3-dpo|1", "gpt-4/g1", "a"],
                                     ["81|phi-3|phi-3-dpo|1", "gpt-4/g2", "b"]]
    d = read_decisions(FASTCHAT / "gpt-4_pair.jsonl")            # auto-detected
    assert d.graders == ("gpt-4/g1", "gpt-4/g2") and d.labels == ("a", "b", "tie")
    assert d.codes == ((0, 1),) and d.report.format == "fastchat-pair"


def test_fastchat_error_verdict_is_a_counted_missing_decision(tmp_path):
    # one record built from the shipped one with g2_winner "error" (FastChat writes "error"
    # when the judge's text has no verdict): no shipped excerpt holds one
    rec = json.loads((FASTCHAT / "gpt-4_pair.jsonl").read_text())
    path = tmp_path / "gpt-4_pair.jsonl"
    path.write_text(json.dumps(rec) + "\n" + json.dumps({**rec, "question_id": 82,
                                                         "g2_winner": "error"}) + "\n")
    frame, source = read_fastchat_pair(path)
    assert source["unparseable"] == {"error": 1} and len(frame) == 3
    with pytest.raises(InputError, match="graders skipped items.*unparseable decisions"):
        read_decisions(path)
    d = read_decisions(path, on_missing="drop")
    assert d.items == ("81|phi-3|phi-3-dpo|1",) and d.report.items_dropped == 1


def test_fastchat_single_scores_are_labels_minus_one_missing(tmp_path):
    frame, source = read_fastchat_single(FASTCHAT / "gpt-4_single.jsonl")
    assert frame["label"].tolist() == ["2", "3"] and set(frame["grader"]) == {"gpt-4"}
    assert frame["item"].tolist()[0] == "61|ELYZA-japanese-Llama-2-7b-fast-instruct|2"
    rows = (FASTCHAT / "gpt-4_single.jsonl").read_text().splitlines()
    failed = json.loads(rows[0]) | {"question_id": 99, "score": -1}   # built: a failed parse
    path = tmp_path / "x_single.jsonl"
    path.write_text("\n".join(rows + [json.dumps(failed)]) + "\n")
    assert read_fastchat_single(path)[1]["unparseable"] == {"-1": 1}


def test_alpaca_eval_item_is_the_stated_hash_and_preferences_map_to_labels():
    # written by alpaca_eval 0.6.6 itself (regenerate.py): alpha and beta against the
    # reference, annotators alpaca_eval_gpt4 and gpt4 (a local canned judge)
    frame, source = read_alpaca_eval(ALPACA)
    assert source["rows"] == 24 and set(frame["grader"]) == {"alpaca_eval_gpt4", "gpt4"}
    assert f"{instruction_hash('Name a prime number above 10.')}|reference|alpha" in \
        set(frame["item"])
    # alpaca_eval itself sets 1.5 (a tie) where both outputs are the same text
    records = json.loads((ALPACA / "alpha" / "gpt4" / "annotations.json").read_text())
    same = [r for r in records if r["output_1"] == r["output_2"]]
    assert same and all(r["preference"] == 1.5 for r in same)
    labels = frame.set_index(["grader", "item"])["label"]
    for r in same:
        key = f"{instruction_hash(r['instruction'])}|{r['generator_1']}|{r['generator_2']}"
        assert labels[("gpt4", key)] == "tie"
    assert set(frame["label"]) == {"a", "b", "tie"}


def test_alpaca_eval_failed_annotation_is_a_counted_missing_decision():
    # the judge gave no verdict on beta's garbled answer: alpaca_eval wrote a null
    # preference, one per annotator; both are counted, none becomes a decision
    frame, source = read_alpaca_eval(ALPACA / "beta")
    records = [r for f in sorted((ALPACA / "beta").rglob("annotations.json"))
               for r in json.loads(f.read_text())]
    nulls = sum(r["preference"] is None for r in records)
    assert nulls == 2 and source["unparseable"] == {"None": nulls}
    assert len(frame) == len(records) - nulls


def test_alpaca_eval_continuous_preferences_are_thresholded(tmp_path):
    records = json.loads((ALPACA / "alpha" / "alpaca_eval_gpt4" / "annotations.json")
                         .read_text())
    records[1]["preference"] = 1.2           # built: a weighted annotator's value
    path = tmp_path / "annotations.json"
    path.write_text(json.dumps(records))
    frame, source = read_alpaca_eval(path)
    assert source["thresholded"] == 1 and source["unparseable"] == {}


def test_audit_cli_reads_the_tool_files():
    status, out, err = run_cli(["audit", FASTCHAT / "gpt-4_pair.jsonl"])
    assert status == 0 and "no-knowledge alarm" in out
    status, out, err = run_cli(["audit", ALPACA, "--format", "alpaca-eval", "--on-missing",
                                "drop"])
    assert status == 0, err
    status, out, err = run_cli(["audit", FORMATS / "helm"])
    assert status == 2 and "not judge decisions" in err


def test_corrupt_judgment_files_exit_2(tmp_path):
    bad = tmp_path / "gpt-4_pair.jsonl"
    bad.write_text((FASTCHAT / "gpt-4_pair.jsonl").read_text()[:-30])
    status, out, err = run_cli(["audit", bad, "--format", "fastchat-pair"])
    assert status == 2 and "truncated" in err and err.count("\n") == 1
    ann = tmp_path / "annotations.json"
    ann.write_text('[{"instruction": "x"')
    status, out, err = run_cli(["convert", ann, "--format", "alpaca-eval", "--out",
                                tmp_path / "o.csv"])
    assert status == 2 and "not valid JSON" in err
