"""Declared bands and ties as half-right (issue 25, item 5), against brute forces: the full
joint over every item-level key, M=1 over every evaluation table at every key; M=2 equals
the full joint for two graders and lies between it and M=1 otherwise."""

from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from evalcert.cli import main
from evalcert.errors import InputError
from evalcert.logic import alarm, alarm_full, alarm_m2
from evalcert.logic.ordinal import (alarm_bands, alarm_credit, alarm_ties_half, credit_table,
                                    parse_bands)
from evalcert.logic.simulate import simulate_decisions
from tests.logic._helpers import decisions, instance
from tests.logic.test_ordinal import brute_joint, brute_m1


def half_table(r, tie):
    return [[1 if d == t else Fraction(1, 2) if tie in (d, t) else 0 for d in range(r)]
            for t in range(r)]


def band_table(band):
    return [[int(bd == bt) for bd in band] for bt in band]


@settings(max_examples=8, deadline=None)
@given(instance(max_graders=3, max_q=5, skip=True), st.data())
def test_full_joint_bands_and_half_ties_equal_brute_force(case, data):
    r, cols = case
    dec = decisions(cols, [f"l{t}" for t in range(r)], on_missing="keep")
    band = data.draw(st.lists(st.integers(0, 1), min_size=r, max_size=r))
    w = band_table(band)
    assert alarm_credit(dec, "0.5", w).T == brute_joint(dec, w)
    w = half_table(r, data.draw(st.integers(0, r - 1)))
    t_half = alarm_credit(dec, "0.5", w).T
    assert t_half == brute_joint(dec, w)
    assert t_half >= alarm_full(dec, "0.5").T if dec.complete else True


@settings(max_examples=6, deadline=None)
@given(instance(max_graders=2, max_q=5), st.data())
def test_m1_and_m2_bands_and_half_ties_match_brute_force(case, data):
    r, cols = case
    dec = decisions(cols, [f"l{t}" for t in range(r)])
    for w in (band_table(data.draw(st.lists(st.integers(0, 1), min_size=r, max_size=r))),
              half_table(r, data.draw(st.integers(0, r - 1)))):
        t1 = alarm_credit(dec, "0.5", w, m=1).T
        assert t1 == brute_m1(dec, w)
        t2 = alarm_credit(dec, "0.5", w, m=2).T
        assert t2 == brute_joint(dec, w)        # two graders: M=2 is the full joint
        assert t2 <= t1


@settings(max_examples=5, deadline=None)
@given(instance(min_graders=3, max_graders=3, max_q=4), st.integers(0, 2))
def test_m2_half_ties_between_full_joint_and_m1(case, tie):
    r, cols = case
    dec = decisions(cols, [f"l{t}" for t in range(r)])
    w = half_table(r, min(tie, r - 1))
    t_full, t2, t1 = (alarm_credit(dec, "0.5", w, m=m).T for m in ("full", 2, 1))
    assert t_full <= t2 <= t1
    assert (2 * t_full * len(dec.items)).denominator <= len(dec.items)  # multiple of 1/(2 Q_t)


def test_singleton_bands_are_the_exact_path():
    dec = simulate_decisions(12, 3, 3, seed=2)
    singles = [[lab] for lab in dec.labels]
    assert alarm_bands(dec, "0.5", singles, m=1).T == alarm(dec, "0.5").T
    assert alarm_bands(dec, "0.5", singles, m=2).T == alarm_m2(dec, "0.5").T
    assert alarm_bands(dec, "0.5", singles).T == alarm_full(dec, "0.5").T


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow),
                                  pytest.param(2, marks=pytest.mark.slow)])
def test_bands_equal_the_alarm_on_merged_labels(seed):
    """Without key bounds, bands are the usual alarm on the labels merged into bands (the
    module docstring's argument), for M=1 and the full joint."""
    dec = simulate_decisions(18, 4, 3, seed=seed)
    band = [0, 0, 1, 1]
    merged = decisions([[band[v] for v in dec.array[:, i]] for i in range(3)], ["lo", "hi"])
    groups = [[dec.labels[0], dec.labels[1]], [dec.labels[2], dec.labels[3]]]
    assert alarm_bands(dec, "0.5", groups).T == alarm_full(merged, "0.5").T
    assert alarm_bands(dec, "0.5", groups, m=1).T == alarm(merged, "0.5").T
    if seed:
        assert alarm_bands(dec, "0.5", groups, m=2).T <= alarm_bands(dec, "0.5", groups,
                                                                     m=1).T


def test_half_ties_on_mtbench_lie_above_exact_match():
    from evalcert.datasets.mtbench import table1_decisions

    dec = table1_decisions()
    for m, exact in (("1", alarm(dec, "0.5").T), ("2", alarm_m2(dec, "0.5").T),
                     ("full", alarm_full(dec, "0.5").T)):
        half = alarm_ties_half(dec, "0.5", m=m)
        assert half.T >= exact
        assert "half-right" in half.method
        assert sum(half.attaining_keys[0]) == 25


def test_parse_bands_and_credit_refusals():
    labels = [str(v) for v in range(1, 11)]
    assert parse_bands("1-3, 4-7 ,8-10", labels) == [0, 0, 0, 1, 1, 1, 1, 2, 2, 2]
    assert parse_bands("1,2-10", labels) == [0] + [1] * 9
    for bad in ("1-3,4-7", "1-3,3-10", "3-1,4-10", "1-3,4-7,8-11"):
        with pytest.raises(InputError, match="--bands"):
            parse_bands(bad, labels)
    assert parse_bands("-1-0,1", ["-1", "0", "1"]) == [0, 0, 1]  # labels with a minus sign
    with pytest.raises(InputError, match="tie label"):
        credit_table(["a", "b"], ties="half")
    with pytest.raises(InputError, match="one credit rule"):
        credit_table(["a", "b", "tie"], ties="half", tolerance=1)


def test_cli_bands_and_ties(tmp_path, capsys):
    log = tmp_path / "scores.csv"
    rows = [(k, f"g{i}", str(1 + (k * (i + 2)) % 6)) for k in range(8) for i in range(2)]
    log.write_text("item,grader,label\n" + "".join(f"{a},{b},{c}\n" for a, b, c in rows))
    assert main(["audit", str(log), "--labels", "1,2,3,4,5,6", "--m", "full",
                 "--bands", "1-2,3-4,5-6"]) == 0
    assert "declared bands 1-2,3-4,5-6" in capsys.readouterr().out
    assert main(["audit", str(log), "--labels", "1,2,3,4,5,6", "--bands", "1-2,3-6",
                 "--tolerance", "1"]) == 2
    assert main(["audit", str(log), "--labels", "1,2,3,4,5,6", "--bands", "1-2"]) == 2
    pair = tmp_path / "pair.csv"
    pair.write_text("item,grader,label\n" + "".join(
        f"q{k},{g},{['a', 'b', 'tie'][(k * (j + 1)) % 3]}\n" for k in range(6)
        for j, g in enumerate(("x", "y"))))
    for m in ("1", "full"):
        assert main(["audit", str(pair), "--labels", "a,b,tie", "--m", m,
                     "--ties", "half"]) == 0
        assert "half-right" in capsys.readouterr().out
