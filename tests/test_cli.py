"""The command line: fit and demo."""

from __future__ import annotations

import json

from evalcert.cli import main
from evalcert.datasets.demo import demo_scores


def test_demo_prints_fit_certificate_and_audit(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "certificate PASSED" in out and "binding upper box" in out
    assert "re-verified" in out and "MT-Bench" in out


def test_fit_writes_json(tmp_path, capsys):
    csv = tmp_path / "s.csv"
    demo_scores().to_frame().to_csv(csv)
    out_json = tmp_path / "fit.json"
    assert main(["fit", str(csv), "--box", "observed", "--json", str(out_json)]) == 0
    text = capsys.readouterr().out
    assert "ranking by theta" in text
    data = json.loads(out_json.read_text())
    assert data["box"] == "observed" and data["certificate"]["passed"] is True
    assert len(data["theta"]) == 30 and abs(sum(data["b"])) < 1e-9


def test_fit_long_format_and_bad_file(tmp_path, capsys):
    csv = tmp_path / "long.csv"
    demo_scores().to_long().to_csv(csv, index=False)
    assert main(["fit", str(csv), "--format", "long", "--solver", "osqp-direct"]) == 0
    bad = tmp_path / "bad.csv"
    bad.write_text("agent,x\na,2.5\n")
    assert main(["fit", str(bad)]) == 2
    assert "outside the bounds" in capsys.readouterr().err
