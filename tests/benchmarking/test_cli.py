"""`evalcert bench --quick` writes every output file: the CSV of every run, the Markdown
report (summary, machine, versions, tolerances, verdict) and one PNG profile per group;
bad options and existing reports are refused before any run."""

import pandas as pd
import pytest

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
    # quick: 4 clipped-linear problems x 2 QP backends + 2 ILPs x 1 ILP backend
    assert len(runs) == 4 * 2 + 2
    assert {"build", "compile", "solve", "primal_residual", "dual_residual", "duality_gap",
            "objective_error", "peak_memory_mib", "success", "status"} <= set(runs.columns)
    report = (out / "report.md").read_text()
    for needle in ("## Summary", "## Machine", "numpy", "## Which backend should I use?",
                   "most reliable",
                   "## Tolerances given to each backend", "eps_abs=1e-08", "load average",
                   "evalcert bench --family clipped-linear ilp-m1"):
        assert needle in report
    for png in ("profile_qp_default.png", "profile_ilp_exact.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("option", [["--time-limit", "0"], ["--time-limit", "nan"],
                                    ["--shift", "nan"], ["--jobs", "0"]])
def test_bad_options_are_refused_by_the_parser(option, tmp_path, capsys):
    assert main(["bench", "--quick", "--out", str(tmp_path / "b"), *option]) == 2
    assert option[0] in capsys.readouterr().err
    assert not (tmp_path / "b").exists()


def test_existing_report_is_not_overwritten_without_force(tmp_path, capsys):
    out = tmp_path / "bench"
    out.mkdir()
    (out / "report.md").write_text("my notes")
    argv = ["bench", "--quick", "--family", "ilp-m1", "--backends", "pulp-highs",
            "--jobs", "1", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "report.md" in err and "--force" in err and "Traceback" not in err
    assert (out / "report.md").read_text() == "my notes"
    assert main(argv + ["--force"]) == 0
    assert "# evalcert solver benchmark" in (out / "report.md").read_text()


def test_real_family_says_when_it_has_no_data(tmp_path, capsys, monkeypatch):
    import evalcert.benchmarking.families as fam

    empty = tmp_path / "empty"
    empty.mkdir()
    argv = ["bench", "--family", "real", "ilp-m1", "--backends", "native", "pulp-highs",
            "--quick", "--jobs", "1", "--out", str(tmp_path / "b")]
    assert main(argv + ["--data-dir", str(empty)]) == 2          # asked for data: an error
    assert "--data-dir" in capsys.readouterr().err
    monkeypatch.setattr(fam, "default_data_dir", lambda: empty)  # e.g. after pip install .
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "real family found none" in err and "--data-dir" in err
    report = (tmp_path / "b" / "report.md").read_text()
    assert "## Notes" in report and "ran 0 problems" in report
