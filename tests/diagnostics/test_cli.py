"""CLI verbs ``evalcert curl`` and ``evalcert experiment sparse-recovery``."""

from __future__ import annotations

import json

from evalcert.cli import main
from tests.diagnostics.conftest import additive_scores


def test_curl_verb_prints_the_table_and_writes_json(tmp_path, capsys):
    path = tmp_path / "S.csv"
    additive_scores(8, 20).to_frame().to_csv(path)
    assert main(["curl", str(path), "--rectangles", "500", "--json", str(tmp_path / "c.json")]) == 0
    assert "median |D|" in capsys.readouterr().out
    assert json.loads((tmp_path / "c.json").read_text())["n_rectangles"] == 500


def test_experiment_sparse_recovery_verb(tmp_path, capsys):
    S = additive_scores(10, 40)
    path = tmp_path / "S.csv"
    S.to_frame().to_csv(path)
    labels = tmp_path / "labels.csv"
    labels.write_text("agent,good_faith\n" + "".join(f"{a},{int(k < 5)}\n"
                                                     for k, a in enumerate(S.agents)))
    out = tmp_path / "r.json"
    code = main(["experiment", "sparse-recovery", "--scores", str(path), "--regime", "nlogn",
                 "--C", "1.2", "--seeds", "2", "--labels", str(labels), "--n-jobs", "1",
                 "--no-progress", "--json", str(out)])
    assert code == 0 and "Sparse recovery" in capsys.readouterr().out
    assert len(json.loads(out.read_text())["runs"]) == 2


def test_bad_regime_parameters_exit_with_status_2(tmp_path, capsys):
    path = tmp_path / "S.csv"
    additive_scores(6, 12).to_frame().to_csv(path)
    assert main(["experiment", "sparse-recovery", "--scores", str(path), "--regime", "row",
                 "--seeds", "1", "--n-jobs", "1", "--no-progress"]) == 2
    assert "alpha" in capsys.readouterr().err
