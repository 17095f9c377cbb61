"""`evalcert audit` runs on CSV and JSON inputs; bad input exits with status 2."""

import json

import pytest

from evalcert.cli import main
from evalcert.datasets.mtbench import load_table1, paper_summaries
from evalcert.logic import mtbench_demo
from evalcert.plots.alarms import plot_label_curves


def test_table1_transcription_counts():
    t = load_table1()
    assert len(t) == 25
    counts = {c: tuple(int((t[c] == l).sum()) for l in ("a", "b", "tie"))
              for c in ("experts", "authors", "gpt4")}
    assert counts["experts"] == (4, 14, 7) and counts["authors"] == (5, 10, 10)
    # the paper's table prints gpt4 as (5, 18, 2); its Figs. 6-7 use (4, 18, 3)
    assert counts["gpt4"] == (5, 18, 2)
    assert paper_summaries().counts == ((5, 10, 10), (4, 18, 3))


def test_audit_json_with_plot_and_json(tmp_path, capsys):
    src = tmp_path / "s.json"
    src.write_text(json.dumps({"authors": {"a": 5, "b": 10, "tie": 10},
                               "gpt4": {"a": 4, "b": 18, "tie": 3}}))
    out, png = tmp_path / "o.json", tmp_path / "c.png"
    assert main(["audit", str(src), "--threshold", "0.7", "--plot", str(png),
                 "--json", str(out)]) == 0
    assert "FIRES" in capsys.readouterr().out and png.stat().st_size > 0
    assert json.loads(out.read_text())["T"] == "2/3"


def test_audit_long_csv_m2_and_errors(tmp_path, capsys):
    t = load_table1().melt(id_vars="item", value_vars=["authors", "gpt4"],
                           var_name="grader", value_name="label")
    path = tmp_path / "d.csv"
    t.to_csv(path, index=False)
    assert main(["audit", str(path), "--labels", "a,b,tie", "--m", "2"]) == 0
    assert "T = 5/8" in capsys.readouterr().out
    assert main(["audit", str(path), "--labels", "a,b"]) == 2
    assert main(["audit", str(path), "--threshold", "1.5"]) == 2


def test_demo_and_label_plot(tmp_path):
    res = mtbench_demo()
    assert res.to_dict()["T"] == "2/3"
    plot_label_curves(res, tmp_path / "l.png")
    assert (tmp_path / "l.png").stat().st_size > 0


def test_audit_cli_outputs_checked_before_work_and_force(tmp_path, capsys):
    src = tmp_path / "s.json"
    src.write_text(json.dumps({"authors": {"a": 5, "b": 10, "tie": 10},
                               "gpt4": {"a": 4, "b": 18, "tie": 3}}))
    assert main(["audit", str(src), "--json", str(src)]) == 2          # never the input
    assert "input file" in capsys.readouterr().err
    out = tmp_path / "o.json"
    out.write_text("{}")
    assert main(["audit", str(src), "--json", str(out)]) == 2          # exists: needs --force
    assert main(["audit", str(src), "--plot", str(tmp_path / "nodir" / "c.png")]) == 2
    assert main(["audit", str(src), "--plot", str(tmp_path / "c.txt")]) == 2
    assert main(["audit", str(src), "--json", str(out), "--force"]) == 0
    assert json.loads(out.read_text())["T"] == "2/3"


def test_audit_cli_json_has_read_block_method_and_small_curve(tmp_path, capsys):
    t = load_table1().melt(id_vars="item", value_vars=["authors", "gpt4"],
                           var_name="grader", value_name="label")
    t.loc[0, "label"] = " a"   # one label with a space: normalised and counted
    path = tmp_path / "d.csv"
    t.to_csv(path, index=False)
    out, png, csv = tmp_path / "o.json", tmp_path / "c.png", tmp_path / "b.csv"
    assert main(["audit", str(path), "--m", "full", "--plot", str(png), "--json", str(out),
                 "--csv", str(csv), "--panel"]) == 0
    cap = capsys.readouterr()
    assert "1 cells had surrounding whitespace removed" in cap.err
    assert "at least 5/8 (62.5%) correct on every label, and with nothing higher" in cap.out
    data = json.loads(out.read_text())
    assert data["T"] == "5/8" and data["m"] == "full" and data["method"] == "full joint"
    assert "highs" in data["computed_by"]           # the ILP and its solver
    assert data["read"]["items_used"] == 25 and data["read"]["whitespace_fixed"] == 1
    assert data["curve"]["n_keys"] == 351 and "values" not in data["curve"]
    assert csv.read_text().startswith("grader,label,key,items,method,min_correct,max_correct,"
                                      "min_accuracy,max_accuracy,free_min_correct")
    assert ",full joint," in csv.read_text() and data["bounds"]["method"] == "full joint"
    assert main(["audit", str(path), "--json", str(out), "--force", "--plot", str(png),
                 "--full-curve"]) == 0
    assert len(json.loads(out.read_text())["curve"]["values"]) == 351


def test_plot_shows_the_t_of_the_chosen_m(tmp_path):
    """Old code: --m 2 --plot drew only the M=1 curve labelled T = 2/3 beside T_2 = 5/8."""
    from evalcert.logic import minmax_curve
    from evalcert.logic.pairs import alarm_m2
    from evalcert.plots.alarms import plot_minmax_curve
    from evalcert.datasets.mtbench import table1_decisions

    dec = table1_decisions()
    fig = plot_minmax_curve(minmax_curve(dec), alarm_result=alarm_m2(dec, "0.5"))
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "T (M=2) = 5/8" in texts and "T (M=1) = 2/3" in texts
    assert "M=2" in fig.axes[0].get_title()


def test_plot_is_aggregated_with_extremes_kept():
    from evalcert.logic import label_counts, minmax_curve
    from evalcert.plots.alarms import plot_minmax_curve

    counts = label_counts({"x": {"a": 100, "b": 120, "c": 80}, "y": {"a": 90, "b": 150, "c": 60}})
    curve = minmax_curve(counts)
    fig = plot_minmax_curve(curve, max_points=500)
    ys = fig.axes[0].lines[0].get_ydata()
    assert len(ys) <= 500 < len(curve.keys)
    assert ys.min() == curve.values().min() and ys.max() == curve.values().max()


def test_audit_cli_spec_bounds_and_sequence(tmp_path, capsys):
    t = load_table1()[["item", "authors", "gpt4"]]
    path = tmp_path / "w.csv"
    t.to_csv(path, index=False)
    assert main(["audit", str(path), "--label-thresholds", "a=0.6,b=0.6,tie=0.3",
                 "--grade", "0.6"]) == 0
    # summaries wrap at 100 characters: compare with the line breaks folded
    assert "logically consistent (e.g. at key" in " ".join(capsys.readouterr().out.split())
    assert main(["audit", str(path), "--label-thresholds", "a=0.99,b=0.99,tie=0.99"]) == 0
    assert "INCONSISTENT" in capsys.readouterr().out
    assert main(["audit", str(path), "--lower", "8,8,8"]) == 0
    # keys (8,9,8), (9,8,8), (8,8,9); gpt4 said tie only twice: v = 2/8, 2/8, 2/9
    out = capsys.readouterr().out
    assert "T = 1/4" in out and "keys attaining T (2)" in out
    assert main(["audit", str(path), "--lower", "x,1,1"]) == 2
    assert main(["audit", str(path), "--sequence", "2"]) == 0
    assert "24 windows of 2 consecutive items, 9 labels" in capsys.readouterr().err


def test_correctness_squares_cli_and_counts(tmp_path, capsys):
    from evalcert.logic.evaluations import correctness_squares, iter_evaluations

    src = tmp_path / "s.json"
    src.write_text(json.dumps({"authors": {"a": 5, "b": 10, "tie": 10},
                               "gpt4": {"a": 4, "b": 18, "tie": 3}}))
    png = tmp_path / "sq.png"
    assert main(["audit", str(src), "--squares", str(png), "--key", "8,9,8"]) == 0
    assert png.stat().st_size > 0 and "at key (8, 9, 8)" in capsys.readouterr().err
    # Fig. 6: at (8, 9, 8) no evaluation has both graders above 50% on a or on tie
    sq = correctness_squares((8, 9, 8), (5, 10, 10), (4, 18, 3))
    for lab, q in ((0, 8), (2, 8)):
        assert all(sq[lab][a][b] == 0 for a in range(q + 1) for b in range(q + 1)
                   if a > q / 2 and b > q / 2)
    n_i = sum(1 for _ in iter_evaluations((8, 9, 8), (5, 10, 10)))
    assert sum(map(sum, sq[0])) == n_i * sum(1 for _ in iter_evaluations((8, 9, 8), (4, 18, 3)))


def test_m1_outputs_with_skipped_items_are_refused_before_any_solve(tmp_path, capsys):
    path = tmp_path / "w.csv"
    path.write_text("item,x,y\n1,a,a\n2,b,\n3,a,b\n4,b,b\n")
    for flag, name in (("--plot", "c.png"), ("--csv", "b.csv"), ("--squares", "s.png")):
        assert main(["audit", str(path), "--m", "full", "--on-missing", "keep", flag,
                     str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert flag in err and "integer programs" not in err
    assert main(["audit", str(path), "--m", "full", "--on-missing", "keep", "--bounds"]) == 2
    assert "--bounds needs every grader on every item" in capsys.readouterr().err
    assert main(["audit", str(path), "--m", "full", "--on-missing", "keep"]) == 0


@pytest.mark.parametrize("m", ["2", "full"])
def test_audit_cbc_agrees_with_highs(tmp_path, m):
    # issue 21: every --solver cbc run failed: check_integer_solution read PuLP's empty
    # __dummy column (fixed at 0, absent from CBC's solution) as "None is not an integer"
    from tests._cli import run_cli

    rows = "".join(f"q{i},g{g},{'ab'[(i * 7 + g * 3) % 5 < 3]}\n"
                   for i in range(12) for g in range(3))
    log = tmp_path / "j.csv"
    log.write_text("item,grader,label\n" + rows)
    answers = {}
    for solver in ("cbc", "highs"):
        out = tmp_path / f"{solver}.json"
        status, _, err = run_cli(["audit", str(log), "--m", m, "--solver", solver,
                                  "--json", str(out)])
        assert status == 0, err
        answers[solver] = json.loads(out.read_text())["T"]
    assert answers["cbc"] == answers["highs"]
