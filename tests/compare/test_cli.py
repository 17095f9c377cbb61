"""`evalcert compare` and `evalcert rank`: outputs, and one line with exit 2 on bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from evalcert.commands import compare as command
from evalcert.compare import paired, rank_intervals
from evalcert.compare.bradley_terry import TIES
from evalcert.datasets.battles import simulate_battles
from tests._cli import run_cli


def test_choice_lists_match_the_library():
    assert command.TESTS == paired.TESTS and command.ADJUST == rank_intervals.ADJUST
    assert command.TIES == TIES


def _results(tmp_path, X, name="results.csv"):
    K, J = X.shape
    frame = pd.DataFrame(X, columns=[f"q{j // 2}/t{j % 2}" for j in range(J)])
    frame.insert(0, "model", [f"m{k}" for k in range(K)])
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


def test_compare_writes_json_with_the_documented_fields_and_a_plot(tmp_path):
    X = (np.random.default_rng(0).random((4, 60)) < [[0.9], [0.6], [0.5], [0.2]]).astype(int)
    path = _results(tmp_path, X)
    status, out, err = run_cli(["compare", str(path), "--boot", "100", "--n-jobs", "1",
                                "--json", str(tmp_path / "c.json"), "--plot",
                                str(tmp_path / "c.png"), "--group-sep", "/", "--adjust", "bh"])
    assert status == 0, err
    assert "cluster-robust t test, bh adjustment over 6 pairs" in " ".join(out.split())  # wrapped
    d = json.loads((tmp_path / "c.json").read_text())
    assert d["n_groups"] == 30 and len(d["pairs"]) == 6 and d["ranks"][0]["model"] == "m0"
    assert (tmp_path / "c.png").stat().st_size > 1000


def test_rank_on_a_parquet_log_with_bootstrap_json_and_plot(tmp_path):
    frame, _ = simulate_battles(n_models=8, n_battles=5000, seed=1)
    path = tmp_path / "battles.parquet"
    frame.to_parquet(path)
    status, out, err = run_cli(["rank", str(path), "--bootstrap", "40", "--n-jobs", "1",
                                "--json", str(tmp_path / "r.json"), "--plot",
                                str(tmp_path / "r.svg"), "--ties", "davidson"])
    assert status == 0, err
    assert "certificate PROVES the optimum" in out and "Davidson ties" in out
    d = json.loads((tmp_path / "r.json").read_text())
    assert len(d["ranks"]) == 8 and d["certificate"]["proves_optimum"] and d["n_boot"] == 40
    assert {"model", "score", "elo", "rank", "rank_ci_low", "rank_ci_high"} <= set(d["ranks"][0])
    assert (tmp_path / "r.svg").exists()


def _battles(tmp_path, rows):
    path = tmp_path / "battles.csv"
    path.write_text("model_a,model_b,winner\n" + "\n".join(",".join(r) for r in rows) + "\n")
    return path


@pytest.mark.parametrize("rows, message", [
    ([("a", "a", "tie")], "no battle between two different models"),
    ([("a", "b", "model_a"), ("b", "c", "model_a"), ("c", "a", "model_a"), ("d", "a", "model_b")],
     "d never won"),
    ([("a", "b", "model_a"), ("b", "a", "model_a"), ("x", "y", "model_a"), ("y", "x", "model_a")],
     "comparison graph is disconnected"),
    ([("a", "b", "maybe")], "winner that is not"),
])
def test_rank_bad_logs_get_one_line_and_exit_2(tmp_path, rows, message):
    status, out, err = run_cli(["rank", str(_battles(tmp_path, rows))])
    assert status == 2 and message in err and len(err.strip().splitlines()) == 1 and out == ""


def test_compare_bad_results_get_one_line_and_exit_2(tmp_path):
    one = _results(tmp_path, np.array([[1, 0, 1, 1]]), "one.csv")
    status, _, err = run_cli(["compare", str(one)])
    assert status == 2 and "only one model" in err and len(err.strip().splitlines()) == 1
    apart = tmp_path / "apart.csv"
    apart.write_text("model,q1,q2,q3,q4\na,1,0,,\nb,,,1,0\n")
    status, _, err = run_cli(["compare", str(apart)])
    assert status == 2 and "share fewer than 2 scored items" in err
    status, _, err = run_cli(["compare", str(one), "--groups", "g.csv", "--group-sep", "/"])
    assert status == 2 and "give one" in err


def test_compare_groups_from_a_table_with_a_named_column(tmp_path):
    X = (np.random.default_rng(1).random((3, 40)) < [[0.8], [0.5], [0.3]]).astype(int)
    path = _results(tmp_path, X)
    items = pd.read_csv(path).columns[1:]
    pd.DataFrame({"item": items, "subset": [f"s{k % 4}" for k in range(len(items))]}).to_csv(
        tmp_path / "items.csv", index=False)
    status, out, err = run_cli(["compare", str(path), "--boot", "0", "--groups",
                                str(tmp_path / "items.csv"), "--group-column", "subset"])
    assert status == 0, err
    assert "in 4 clusters: cluster-robust t test" in out
    status, _, err = run_cli(["compare", str(path), "--groups", str(tmp_path / "items.csv")])
    assert status == 2 and "group" in err
