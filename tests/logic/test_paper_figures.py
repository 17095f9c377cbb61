"""Fig. 8 (per-label min-max curves) and Fig. 2 (P-space) from the library and from
``evalcert audit --plot-per-label / --pspace``: the figures hold the numbers of the exact
computation."""

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from evalcert.datasets.mtbench import paper_summaries
from evalcert.logic.alarms import alarm, minmax_curve
from evalcert.logic.pspace import pspace_evaluations
from evalcert.plots.alarms import plot_label_curves, plot_pspace
from tests._cli import run_cli

TABLE1 = "evalcert/datasets/mtbench_table1.csv"


def test_fig8_lines_are_the_exact_per_label_values():
    counts = paper_summaries()
    curve = minmax_curve(counts)
    fig = plot_label_curves(curve)
    lines = fig.axes[0].get_lines()
    assert len(lines) == 3                              # one per label, no threshold given
    mins = counts.array.min(axis=0)
    for l, line in enumerate(lines):
        keys = [k for k in curve.keys.tolist() if k[l] > 0]
        want = sorted(Fraction(min(k[l], int(mins[l])), k[l]) for k in keys)
        assert len(keys) == 351 - 26                      # keys with items of the label
        assert np.array_equal(line.get_ydata(), np.array([float(v) for v in want]))
        assert f"{want[0]} to {want[-1]}" in line.get_label()
    # Sec. III: every label's range reaches 1, so no per-label alarm is possible
    assert all(line.get_label().endswith("to 1") for line in lines)


def test_fig8_thinned_keeps_both_extremes():
    curve = alarm({"g": {"a": 30, "b": 50, "c": 20}}, "0.5").curve
    line = plot_label_curves(curve, max_points=50).axes[0].get_lines()[0]
    vals = curve.label_values(0)
    assert len(line.get_ydata()) <= 50
    assert line.get_ydata()[0] == np.nanmin(vals) and line.get_ydata()[-1] == np.nanmax(vals)


def test_fig2_a_priori_panel_and_undefined_accuracies_as_segments():
    space = pspace_evaluations(10, stage="a priori")
    fig = plot_pspace(space)
    ax = fig.axes[0]
    pts = ax.collections[0]
    assert pts.get_offsets().shape[0] == 286 - 22          # 22 points have an empty label
    fig.canvas.draw()                                   # 3-D segments project on draw
    assert len(ax.collections[1].get_segments()) == 22
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_zlabel()) == \
        ("P_a = Q_a/Q", "P_a,a", "P_b,b")


def test_fig2_colours_follow_the_exact_alarm():
    spaces = [pspace_evaluations(10, (4, 6)), pspace_evaluations(10, (7, 3))]
    fig = plot_pspace(spaces, threshold=Fraction(1, 2), graders=["i", "j"])
    assert len(fig.axes) == 2 and "Q_a in [5, 7]" in fig._suptitle.get_text()
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    n_green = int(spaces[0].clears("1/2")[np.isin(spaces[0].q_a, [5, 6, 7])].sum())
    assert f"clears x with every grader ({n_green})" in labels
    fires = plot_pspace(spaces, threshold=Fraction(9, 10))   # T_1 = 2/3 <= 9/10: fires
    assert alarm({"i": {"a": 4, "b": 6}, "j": {"a": 7, "b": 3}}, "0.9").fires
    assert "alarm fires" in fires._suptitle.get_text()


def _binary_log(path, n=30, seed=0):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, n)
    rows = [(f"q{i}", g, "ab"[t if rng.random() < acc else 1 - t])
            for g, acc in (("g1", 0.9), ("g2", 0.75)) for i, t in enumerate(truth)]
    pd.DataFrame(rows, columns=["item", "grader", "label"]).to_csv(path, index=False)


def test_cli_plot_per_label_and_pspace(tmp_path):
    f8 = tmp_path / "f8.png"
    code, _, err = run_cli(["audit", TABLE1, "--graders", "authors,gpt4",
                            "--plot-per-label", str(f8)])
    assert code == 0 and f8.stat().st_size > 0 and "Fig. 8" in err
    log, f2 = tmp_path / "bin.csv", tmp_path / "f2.svg"
    _binary_log(log)
    code, _, err = run_cli(["audit", str(log), "--labels", "a,b", "--pspace", str(f2),
                            "--threshold", "0.6", "--m", "2"])
    assert code == 0 and "Fig. 2" in err and f2.read_text().startswith("<?xml")


@pytest.mark.parametrize("extra, message", [
    (["--pspace", "p.png"], "two-label"),
    (["--pspace", "p.png", "--labels", "a,b,tie", "--sequence", "2", "--m", "full"], "M=1"),
    (["--plot-per-label", "p.txt"], "p.txt"),
])
def test_cli_refusals(tmp_path, extra, message):
    extra = [str(tmp_path / e) if e.startswith("p.") else e for e in extra]
    code, _, err = run_cli(["audit", TABLE1, "--graders", "authors,gpt4", *extra])
    assert code == 2 and message in err


def test_cli_pspace_refuses_bounds(tmp_path):
    log = tmp_path / "bin.csv"
    _binary_log(log)
    code, _, err = run_cli(["audit", str(log), "--labels", "a,b", "--lower", "1,1",
                            "--pspace", str(tmp_path / "p.png")])
    assert code == 2 and "--lower/--upper" in err


def test_label_curves_are_the_exact_sorted_values_and_the_figure_draws_them():
    """MinMaxCurve.label_curves (the JSON's label_curves) against a brute force over the
    keys; plot_label_curves draws exactly those points."""
    counts = paper_summaries()
    curve = minmax_curve(counts)
    mins = counts.array.min(axis=0)
    for max_points in (7, 5000):
        lines = plot_label_curves(curve, max_points=max_points).axes[0].get_lines()
        for l, (c, line) in enumerate(zip(curve.label_curves(max_points), lines)):
            want = sorted(Fraction(min(k[l], int(mins[l])), k[l])
                          for k in curve.keys.tolist() if k[l] > 0)
            got = [Fraction(v) for v in c["values"]]
            assert c["n_keys"] == len(want) and c["label"] == counts.labels[l]
            assert got == [want[p] for p in c["positions"]]
            assert (Fraction(c["min"]), Fraction(c["max"])) == (want[0], want[-1])
            assert c["positions"][0] == 0 and c["positions"][-1] == len(want) - 1
            assert c["thinned"] == (len(want) > max_points) and len(got) <= max_points
            for key, end in ((c["argmin"], want[0]), (c["argmax"], want[-1])):
                assert Fraction(min(key[l], int(mins[l])), key[l]) == end
            assert list(line.get_xdata()) == c["positions"]
            assert list(line.get_ydata()) == [float(v) for v in got]


def test_cli_views_without_a_file_go_to_the_json_and_the_text(tmp_path):
    log, out = tmp_path / "bin.csv", tmp_path / "a.json"
    _binary_log(log)
    code, text, err = run_cli(["audit", str(log), "--labels", "a,b", "--threshold", "0.6",
                               "--plot-per-label", "--pspace", "--json", str(out)])
    assert code == 0, err
    data = __import__("json").loads(out.read_text())
    assert [c["label"] for c in data["label_curves"]] == ["a", "b"]
    assert data["pspace"]["labels"] == ["a", "b"] and data["pspace"]["threshold"] == "3/5"
    assert "per-label min-max (Fig. 8, M=1): a " in text and "P-space (Fig. 2, M=1)" in text
    assert "written to" not in err and not list(tmp_path.glob("*.png"))
    code, _, _ = run_cli(["audit", str(log), "--labels", "a,b", "--json", str(out),
                          "--force"])
    data = __import__("json").loads(out.read_text())
    assert data["label_curves"] is None and data["pspace"] is None       # not asked


@pytest.mark.parametrize("extra, message", [
    (["--plot-per-label"], "without FILE"),
    (["--pspace"], "without FILE"),
    (["--plot-per-label", "--json", "-"], "--json -"),
    (["--plot-per-label", "nodir/f8.png"], "folder"),
    (["--pspace", "nodir/f2.png", "--html", "p.html"], "folder"),
    (["--pspace", "--html", "nodir/p.html"], "folder"),
])
def test_cli_view_flags_refused_in_one_line(tmp_path, extra, message):
    log = tmp_path / "bin.csv"
    _binary_log(log)
    extra = [str(tmp_path / e) if e.startswith(("nodir", "p.")) else e for e in extra]
    code, out, err = run_cli(["audit", str(log), "--labels", "a,b", *extra])
    assert code == 2 and message in err and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_cli_pspace_file_sized_before_the_audit(tmp_path):
    summary = tmp_path / "counts.json"
    summary.write_text('{"g1": {"a": 3000, "b": 3000}, "g2": {"a": 2500, "b": 3500}}')
    code, _, err = run_cli(["audit", str(summary), "--pspace", str(tmp_path / "p.png")])
    assert code == 2 and "without a file" in err
    code, _, err = run_cli(["audit", str(summary), "--pspace", "--json",
                            str(tmp_path / "p.json")])
    assert code == 0, err


@pytest.mark.parametrize("flag", ["--plot-per-label", "--pspace"])
def test_cli_view_flag_before_the_log_leaves_the_log_to_the_path(tmp_path, flag):
    """``audit --plot-per-label LOG``: argparse gives LOG to the flag's optional FILE; the
    audit takes it back as the judge log (the flag then has no FILE), as if written after."""
    log, out = tmp_path / "bin.csv", tmp_path / "a.json"
    _binary_log(log)
    code, text, err = run_cli(["audit", flag, str(log), "--labels", "a,b", "--json", str(out)])
    assert code == 0, err
    data = __import__("json").loads(out.read_text())
    key = "label_curves" if flag == "--plot-per-label" else "pspace"
    assert data[key] is not None and "written to" not in err


def test_cli_audit_without_a_log_is_refused_in_one_line():
    code, out, err = run_cli(["audit", "--m", "2"])
    assert code == 2 and "needs a judge log" in err and len(err.strip().splitlines()) == 1
