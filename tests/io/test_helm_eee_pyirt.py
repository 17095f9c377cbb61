"""HELM runs and Every Eval Ever records (real files, MIT), py-irt; round trips via convert."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evalcert.errors import InputError
from evalcert.io.eee import read_eee
from evalcert.io.helm import read_helm, scenario_of
from evalcert.io.py_irt import read_py_irt
from tests.io._fixtures import FORMATS, HELM, INSPECT_EVAL, LM_EVAL, run_cli


def test_helm_runs_models_from_run_spec_items_per_scenario():
    read = read_helm(HELM)
    assert set(read.matrix.agents) == {"openai/gpt2", "eleutherai/pythia-1b-v0"}
    scenarios = {i.split("|")[0] for i in read.matrix.items}
    assert scenarios == {"mmlu:subject=philosophy,method=multiple_choice_joint",
                         "commonsense:dataset=hellaswag,method=multiple_choice_joint",
                         "narrative_qa"}
    # every cell is the exact_match mean HELM wrote for that instance (independent read)
    frame = read.matrix.to_frame()
    run = HELM / "mmlu-subject=philosophy,method=multiple_choice_joint,model=openai_gpt2"
    for inst in json.loads((run / "per_instance_stats.json").read_text()):
        (stat,) = [s for s in inst["stats"] if s["name"]["name"] == "exact_match"
                   and "perturbation" not in s["name"]]
        item = f"mmlu:subject=philosophy,method=multiple_choice_joint|{inst['instance_id']}"
        assert frame.loc["openai/gpt2", item] == stat["mean"]
    with pytest.raises(InputError, match="no stat 'accuracy'"):
        read_helm(HELM, stat="accuracy")


def test_helm_perturbation_is_its_own_item(tmp_path):
    # one run built here: no shipped HELM run has perturbations
    run = tmp_path / "r"
    run.mkdir()
    (run / "run_spec.json").write_text(json.dumps({"name": "boolq:model=m",
                                                   "adapter_spec": {"model": "m"}}))
    stat = {"name": {"name": "exact_match", "split": "valid"}, "count": 1, "sum": 1, "mean": 1.0}
    pert = {"name": {"name": "exact_match", "split": "valid",
                     "perturbation": {"name": "typos", "computed_on": "perturbed"}},
            "count": 1, "sum": 0, "mean": 0.0}
    (run / "per_instance_stats.json").write_text(json.dumps(
        [{"instance_id": "id7", "train_trial_index": 0, "stats": [stat, pert]}]))
    read = read_helm(run)
    assert read.matrix.items == ("boolq|id7", "boolq|id7|typos:perturbed")
    assert read.matrix.cells()[2].tolist() == [1.0, 0.0]
    assert scenario_of("x:a=1,model=m,b=2") == "x:a=1,b=2"


def test_eee_real_record():
    read = read_eee(FORMATS / "eee")
    assert read.matrix.agents == ("demo-org/demo-model",)
    assert read.matrix.items == ("demo-source.demo_bench|demo_0001",)
    assert read.matrix.cells()[2].tolist() == [1.0]


@pytest.mark.parametrize("source, options", [
    (HELM, []), (INSPECT_EVAL, ["--epochs", "keep"]),
    (LM_EVAL, ["--filter", "strict-match"])])
def test_round_trips_through_convert_to_eee_and_py_irt(tmp_path, source, options):
    long_csv = tmp_path / "long.csv"
    assert run_cli(["convert", source, "--out", long_csv, *options])[0] == 0
    for to in ("eee", "py-irt"):
        out = tmp_path / f"{to}.jsonl"
        status, stdout, err = run_cli(["convert", source, "--to", to, "--out", out, *options])
        assert status == 0, err
        back = tmp_path / f"{to}.csv"
        assert run_cli(["convert", out, "--format", to, "--out", back])[0] == 0
        import pandas as pd

        a = pd.read_csv(long_csv).sort_values(["model", "item"]).reset_index(drop=True)
        b = pd.read_csv(back).sort_values(["model", "item"]).reset_index(drop=True)
        assert a.equals(b)


def test_py_irt_refuses_non_binary_and_bad_lines(tmp_path):
    out = tmp_path / "p.jsonl"
    status, _, err = run_cli(["convert", INSPECT_EVAL, "--scorer", "detail", "--score-key",
                              "chars", "--to", "py-irt", "--out", out])
    assert status == 2 and "py-irt reads 0/1" in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"subject_id": "m", "responses": {"q": "yes"}}\n')
    with pytest.raises(InputError, match="not a number"):
        read_py_irt(bad)
    cut = tmp_path / "cut.jsonl"
    cut.write_text('{"subject_id": "m", "responses": {"q": 1}}\n{"subject_id": "n", "resp')
    with pytest.raises(InputError, match="truncated"):
        read_py_irt(cut)
