"""Ordinal labels within a tolerance (issue 25, item 5), against brute forces: the full
joint over every item-level key, M=1 over every evaluation table at every key."""

import itertools
from fractions import Fraction

import numpy as np
from hypothesis import given, settings, strategies as st

from evalcert.cli import main
from evalcert.logic import alarm, alarm_full, alarm_m2
from evalcert.logic.ordinal import alarm_tolerance
from evalcert.logic.qcomplex import iter_qcomplex
from evalcert.logic.simulate import simulate_decisions
from tests.logic._helpers import decisions, instance


def tables(rows, cols):
    """Every non-negative integer table with these row and column sums."""
    if len(rows) == 1:
        yield [list(cols)]
        return
    for first in itertools.product(*(range(min(rows[0], c) + 1) for c in cols)):
        if sum(first) == rows[0]:
            rest = [c - f for c, f in zip(cols, first)]
            for tail in tables(rows[1:], rest):
                yield [list(first)] + tail


def tolerance_table(r, tol):
    """Credit 1 for a decision within ``tol`` label steps of the key, else 0."""
    return [[int(abs(d - t) <= tol) for d in range(r)] for t in range(r)]


def brute_joint(dec, w):
    """The full joint over every item-level key, with credit ``w[key][decision]``."""
    arr, r = dec.array, len(dec.labels)
    w = np.array([[Fraction(v) for v in row] for row in w], dtype=object)
    best = Fraction(0)
    for z in itertools.product(range(r), repeat=len(dec.items)):
        z = np.array(z)
        vals = []
        for i in range(arr.shape[1]):
            for t in range(r):
                on = (z == t) & (arr[:, i] >= 0)
                if on.any():
                    vals.append(sum((w[t][d] for d in arr[on, i]), Fraction(0)) / int(on.sum()))
        best = max(best, min(vals, default=Fraction(1)))
    return best


def brute_m1(dec, w):
    """M=1: graders are coupled only through the key, so T_1 = max_q min_i best_i(q)."""
    counts = dec.label_counts()
    r, n = len(dec.labels), counts.n_items
    best = Fraction(0)
    for q in iter_qcomplex(n, r):
        worst = Fraction(1)
        for said in counts.counts:
            top = Fraction(0)
            for e in tables(list(q), list(said)):
                vals = [sum((Fraction(w[t][d]) * e[t][d] for d in range(r)), Fraction(0)) / q[t]
                        for t in range(r) if q[t]]
                top = max(top, min(vals))
            worst = min(worst, top)
        best = max(best, worst)
    return best


@settings(max_examples=15, deadline=None)
@given(instance(max_graders=3, max_q=5, skip=True), st.integers(0, 2))
def test_full_joint_within_tolerance_equals_brute_force(case, tol):
    r, cols = case
    dec = decisions(cols, [f"l{t}" for t in range(r)], on_missing="keep")
    assert alarm_tolerance(dec, "0.5", tol).T == brute_joint(dec, tolerance_table(r, tol))


@settings(max_examples=10, deadline=None)
@given(instance(max_graders=2, max_q=5), st.integers(0, 1))
def test_m1_and_m2_within_tolerance_bracket_and_match_brute_force(case, tol):
    r, cols = case
    dec = decisions(cols, [f"l{t}" for t in range(r)])
    t1 = alarm_tolerance(dec, "0.5", tol, m=1).T
    assert t1 == brute_m1(dec, tolerance_table(r, tol))
    t2 = alarm_tolerance(dec, "0.5", tol, m=2).T
    assert brute_joint(dec, tolerance_table(r, tol)) <= t2 <= t1


def test_tolerance_zero_is_the_usual_alarm_and_wider_bands_raise_t():
    dec = simulate_decisions(20, 3, 3, seed=2)
    assert alarm_tolerance(dec, "0.5", 0, m=1).T == alarm(dec, "0.5").T
    assert alarm_tolerance(dec, "0.5", 0, m=2).T == alarm_m2(dec, "0.5").T
    assert alarm_tolerance(dec, "0.5", 0).T == alarm_full(dec, "0.5").T
    assert alarm_tolerance(dec, "0.5", 0).T <= alarm_tolerance(dec, "0.5", 1).T


def test_cli_tolerance(tmp_path, capsys):
    log = tmp_path / "scores.csv"
    rows = [(k, f"g{i}", str(1 + (k * (i + 2)) % 5)) for k in range(8) for i in range(2)]
    log.write_text("item,grader,label\n" + "".join(f"{a},{b},{c}\n" for a, b, c in rows))
    assert main(["audit", str(log), "--labels", "1,2,3,4,5", "--m", "full",
                 "--tolerance", "1"]) == 0
    assert "within 1 label step" in capsys.readouterr().out
    assert main(["audit", str(log), "--labels", "1,2,3,4,5", "--tolerance", "1",
                 "--bounds"]) == 2


def _t_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("T = "))


def test_cli_orders_undeclared_numeric_labels(tmp_path, capsys):
    """Scores read from a file come in order of first appearance (here 4, 1, 5, 2, 3):
    "within one step" must mean numerically, so the undeclared labels are sorted and the
    answer equals the one with the order declared (it differed before: the tolerance was
    taken over the appearance order, silently)."""
    rng = np.random.default_rng(3)
    truth = rng.integers(1, 6, 30)
    truth[0] = 4
    rows = [(k, f"g{i}", int(np.clip(truth[k] + rng.integers(-1, 2), 1, 5)))
            for k in range(30) for i in range(3)]
    log = tmp_path / "scores.csv"
    log.write_text("item,grader,label\n" + "".join(f"q{a},{b},{c}\n" for a, b, c in rows))
    for flag in (["--tolerance", "1"], ["--bands", "1-2,3-5"]):
        assert main(["audit", str(log), "--labels", "1,2,3,4,5", "--m", "full", *flag]) == 0
        declared = _t_line(capsys.readouterr().out)
        assert main(["audit", str(log), "--m", "full", *flag]) == 0
        out = capsys.readouterr()
        assert "labels put in numeric order 1, 2, 3, 4, 5" in out.err + out.out
        assert _t_line(out.out) == declared
    words = tmp_path / "words.csv"
    words.write_text("item,grader,label\nq1,g1,good\nq1,g2,poor\nq2,g1,fair\nq2,g2,good\n")
    assert main(["audit", str(words), "--m", "full", "--tolerance", "1"]) == 2
    err = capsys.readouterr().err
    assert "declare the order with --labels" in err and len(err.strip().splitlines()) == 1
