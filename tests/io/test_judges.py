"""FastChat judgments and AlpacaEval annotations, written by the tools themselves
(tests/data/formats/regenerate.py), as decisions for the audit."""

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


def _records(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_fastchat_pair_two_graders_per_judge_position_flip_visible():
    # written by FastChat 0.2.36's gen_judgment.py (pairwise-all: both answer orders) for
    # alpha, beta and gamma on 3 two-turn questions, a local canned judge (regenerate.py)
    path = FASTCHAT / "gpt-4_pair.jsonl"
    frame, source = read_fastchat_pair(path)
    records = _records(path)
    assert source["rows"] == len(records) == 18
    labels = frame.set_index(["item", "grader"])["label"]
    # the judge's position bias, as FastChat recorded it: g1 says model_1, g2 model_2
    flips = [r for r in records if {r["g1_winner"], r["g2_winner"]} == {"model_1", "model_2"}]
    assert flips
    for r in flips:
        item = f"{r['question_id']}|{r['model_1']}|{r['model_2']}|{r['turn']}"
        assert (labels[(item, "gpt-4/g1")], labels[(item, "gpt-4/g2")]) == ("a", "b")
    d = read_decisions(path, on_missing="drop")                  # auto-detected
    assert d.graders == ("gpt-4/g1", "gpt-4/g2") and set(d.labels) == {"a", "b", "tie"}
    assert d.report.format == "fastchat-pair"


def test_fastchat_error_verdict_is_a_counted_missing_decision():
    # where the judge's reply had no verdict FastChat wrote "error" (both orders)
    path = FASTCHAT / "gpt-4_pair.jsonl"
    records = _records(path)
    errors = sum((r["g1_winner"] == "error") + (r["g2_winner"] == "error") for r in records)
    frame, source = read_fastchat_pair(path)
    assert errors == 4 and source["unparseable"] == {"error": errors}
    assert len(frame) == 2 * len(records) - errors
    # both orders failed on the same two comparisons: no grader decided them, so they are
    # not items, and the report says how many decisions were skipped
    d = read_decisions(path)
    assert len(d.items) == len(records) - 2
    assert "4 unparseable decisions counted as skipped" in d.report.summary()


def test_fastchat_error_in_one_order_only_is_refused_or_dropped_by_name(tmp_path):
    # built from the tool's file: one comparison's g2 verdict turned into "error", so one
    # grader skipped an item the other decided
    records = _records(FASTCHAT / "gpt-4_pair.jsonl")
    k = next(i for i, r in enumerate(records) if r["g2_winner"] != "error")
    records[k] = {**records[k], "g2_winner": "error"}
    path = tmp_path / "gpt-4_pair.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(InputError, match="graders skipped items.*unparseable decisions"):
        read_decisions(path)
    d = read_decisions(path, on_missing="drop")
    assert len(d.items) == len(records) - 3 and d.report.items_dropped == 1


def test_fastchat_single_scores_are_labels_minus_one_missing():
    path = FASTCHAT / "gpt-4_single.jsonl"
    frame, source = read_fastchat_single(path)
    records = _records(path)
    failed = [r for r in records if r["score"] == -1]        # FastChat's own -1: no rating
    assert len(failed) == 1 and source["unparseable"] == {"-1": 1}
    assert len(frame) == len(records) - 1 and set(frame["grader"]) == {"gpt-4"}
    scored = {f"{r['question_id']}|{r['model']}|{r['turn']}": str(r["score"]) for r in records
              if r["score"] != -1}
    assert dict(zip(frame["item"], frame["label"])) == scored


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
