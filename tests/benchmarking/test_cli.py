"""`evalcert bench --quick` writes every output file: the CSV of every run, the Markdown
report (summary, machine, versions, tolerances) and one PNG profile per group; runs go
through joblib worker processes."""

import pandas as pd

from evalcert.cli import main


def test_quick_bench_writes_all_outputs(tmp_path, capsys):
    out = tmp_path / "bench"
    argv = ["bench", "--quick", "--family", "clipped-linear", "ilp-m1",
            "--backends", "native", "osqp-direct", "pulp-highs", "--profile", "default",
            "--jobs", "2", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "SGM" in printed and "report written" in printed
    runs = pd.read_csv(out / "runs.csv")
    # quick: 16 clipped-linear problems x 2 QP backends + 2 ILPs x 1 ILP backend
    assert len(runs) == 16 * 2 + 2
    assert {"build", "compile", "solve", "primal_residual", "dual_residual", "duality_gap",
            "objective_error", "peak_memory_mib", "success", "status"} <= set(runs.columns)
    report = (out / "report.md").read_text()
    for needle in ("## Summary", "## Machine", "numpy",
                   "## Tolerances given to each backend", "eps_abs=1e-08", "load average",
                   "evalcert bench --family clipped-linear ilp-m1"):
        assert needle in report
    for png in ("profile_qp_default.png", "profile_ilp_exact.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
