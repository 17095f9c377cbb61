"""The per-judge table (issue 25, item 1) on simulated panels with known truth: a planted
broken judge is flagged and good ones are not; Dawid-Skene on patterns agrees with
crowd-kit's; the exact columns come from the bounds."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from evalcert.logic.audit import AuditSpec, run_audit
from evalcert.logic.judges import dawid_skene, judge_table
from tests.logic._helpers import decisions

LABELS = ["a", "b", "tie"]


def panel(seed, accs, n_items=400, r=3):
    """Columns of judges with the given accuracies (errors uniform over the other labels)
    and the truth they were drawn from."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(r, size=n_items, p=[0.4, 0.4, 0.2])
    cols = []
    for acc in accs:
        wrong = (truth + rng.integers(1, r, size=n_items)) % r
        cols.append(np.where(rng.random(n_items) < acc, truth, wrong))
    return truth, cols


@pytest.mark.parametrize("seed", range(4))
def test_a_planted_broken_judge_is_flagged_and_good_ones_are_not(seed):
    _, cols = panel(seed, [0.85, 0.8, 0.9, 0.85, 0.45])
    table = judge_table(decisions(cols, LABELS), n_boot=100, seed=seed)
    flags = {row.judge: row.flag for row in table.rows}
    assert flags["g4"] == "weakest"
    assert all(flags[g] is None for g in ("g0", "g1", "g2", "g3"))
    assert table.verdict[0].startswith("g4: weakest")
    row = {r.judge: r for r in table.rows}["g4"]
    assert row.ds_ci_low <= row.ds_accuracy <= row.ds_ci_high
    assert abs(row.ds_accuracy - 0.45) < 0.1  # the truth it was drawn from


@pytest.mark.parametrize("seed", range(4))
def test_a_good_panel_has_no_flag(seed):
    _, cols = panel(seed, [0.85, 0.8, 0.9, 0.82])
    table = judge_table(decisions(cols, LABELS), n_boot=100, seed=seed)
    assert [row.flag for row in table.rows] == [None] * 4


def test_always_a_is_degenerate_and_a_copy_is_a_copy():
    rng = np.random.default_rng(7)
    _, cols = panel(7, [0.85, 0.8, 0.9])
    always_a = np.zeros_like(cols[0])
    copy = cols[0].copy()
    flip = rng.random(len(copy)) < 0.005
    copy[flip] = (copy[flip] + 1) % 3
    table = judge_table(decisions(cols + [always_a, copy], LABELS), n_boot=50)
    flags = {row.judge: row.flag for row in table.rows}
    assert flags["g3"] == "degenerate"
    assert flags["g0"] == flags["g4"] == "copy"
    assert "g0" in {r.judge: r for r in table.rows}["g4"].reason


def test_dawid_skene_on_patterns_agrees_with_crowd_kit():
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    _, cols = panel(3, [0.85, 0.7, 0.9, 0.6])
    dec = decisions(cols, LABELS)
    pats, counts = np.unique(dec.array, axis=0, return_counts=True)
    prior, conf = dawid_skene(pats, counts, 3)
    arr = dec.array
    k, i = np.nonzero(arr >= 0)
    frame = pd.DataFrame({"task": k, "worker": i, "label": arr[k, i]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = crowdkit.DawidSkene(n_iter=100).fit(frame)
    for g in range(4):
        for t in range(3):
            assert abs(conf[g, t, t] - float(model.errors_.loc[(g, t), t])) < 0.01
    assert np.allclose(prior, model.priors_.sort_index().to_numpy(), atol=0.01)


def test_exact_columns_come_from_the_bounds_and_binding(tmp_path):
    _, cols = panel(5, [0.85, 0.8, 0.5], n_items=60)
    rows = [(k, f"g{i}", LABELS[v]) for i, col in enumerate(cols) for k, v in enumerate(col)]
    log = tmp_path / "log.csv"
    pd.DataFrame(rows, columns=["item", "grader", "label"]).to_csv(log, index=False)
    report = run_audit(AuditSpec(log, "0.5", labels="a,b,tie", judges=True))
    out = report.to_dict()["judges"]
    assert [set(r) >= {"judge", "ds_accuracy", "ds_ci_low", "ds_ci_high", "kappa_mean",
                       "alpha_without", "min_accuracy", "max_accuracy", "swap_consistency",
                       "flag"} for r in out] == [True] * 3
    json.dumps(out)
    T = report.result.T
    for r in report.judges.rows:
        assert r.min_accuracy is not None and r.min_accuracy >= T  # every judge >= T
        assert r.max_accuracy >= T
        assert r.binds == (r.judge in {g for g, _ in report.result.binding})
        if r.binds:
            assert r.max_accuracy == T
    assert report.summary().startswith("judges: ")


def test_plot_judges_shows_an_exact_range_of_one_value():
    """A judge whose exact range is one value (min == max) still gets a visible mark; a
    zero-width bar would not show (seen on a page: the binding judge had no grey mark)."""
    import dataclasses
    from fractions import Fraction

    from evalcert.logic.judges import judge_table
    from evalcert.logic.simulate import simulate_decisions
    from evalcert.plots.judges import plot_judges

    table = judge_table(simulate_decisions(100, 2, 3, seed=0), n_boot=0)
    ranges = [(Fraction(1, 2), Fraction(1, 2)), (Fraction(1, 2), Fraction(3, 4)), (None, None)]
    rows = tuple(dataclasses.replace(r, min_accuracy=lo, max_accuracy=hi)
                 for r, (lo, hi) in zip(table.rows, ranges))
    ax = plot_judges(dataclasses.replace(table, rows=rows, T=Fraction(1, 2))).axes[0]
    bars = [p for p in ax.patches if p.get_width() > 0]
    ticks = [ln for ln in ax.lines if ln.get_label() == "exact range at T"
             or (len(set(ln.get_xdata())) == 1 and len(ln.get_xdata()) == 2
                 and ln.get_color() == "0.6")]
    assert len(bars) == 1 and abs(bars[0].get_width() - 0.25) < 1e-12
    assert len(ticks) == 1 and list(ticks[0].get_xdata()) == [0.5, 0.5]
    assert [t.get_text() for t in ax.get_legend().get_texts()].count("exact range at T") == 1
