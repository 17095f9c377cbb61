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
