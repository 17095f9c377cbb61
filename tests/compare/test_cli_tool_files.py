"""``evalcert compare`` reads the tools' own files (issue 24: "any results format the readers take")."""

from __future__ import annotations

import json
from pathlib import Path

from evalcert.cli import main

FORMATS = Path(__file__).resolve().parent.parent / "data" / "formats"


def test_compare_reads_inspect_logs_written_by_inspect_ai(tmp_path, capsys):
    out = tmp_path / "cmp.json"
    assert main(["compare", str(FORMATS / "inspect" / "eval"), "--boot", "50", "--n-jobs", "1",
                 "--no-progress", "--json", str(out)]) == 0
    err = capsys.readouterr().err
    assert "read as inspect (detected)" in err and "errored samples" in err
    result = json.loads(out.read_text())
    models = {r["model"] for r in result["ranks"]}
    assert models == {"mockllm/alpha", "mockllm/beta", "mockllm/gamma"}
    assert len(result["pairs"]) == 3
    # errored samples are missing cells: a pair shares only the items both models answered
    assert all(1 <= p["n_shared"] <= 6 for p in result["pairs"])


def test_compare_reads_lm_eval_folders_and_asks_for_a_filter(tmp_path, capsys):
    out = tmp_path / "cmp.json"
    argv = ["compare", str(FORMATS / "lm_eval"), "--format", "lm-eval", "--boot", "50",
            "--n-jobs", "1", "--no-progress", "--json", str(out)]
    assert main(argv) == 2                          # qa_gen was logged with two filters
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--filter" in last and "strict-match" in last and not out.exists()
    assert main(argv + ["--filter", "strict-match", "--force"]) == 0
    ranks = json.loads(out.read_text())["ranks"]
    assert {r["model"] for r in ranks} == {"mock/alpha", "mock/beta", "mock/gamma"}
