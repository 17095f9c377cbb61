"""App. E, chained: the window key of a sequence-aligned audit comes from one item-level key
(issue 25, item 0), checked against brute forces over every item-level key and, on MT-Bench,
against an independent MILP written directly in scipy."""

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from evalcert.datasets.mtbench import table1_decisions
from evalcert.errors import InputError
from evalcert.logic.alarms import key_value
from evalcert.logic.levels import farey_successor
from evalcert.logic.sequences import (alarm_sequence, sequence_aligned, window_key_of,
                                      window_key_realizable)
from tests.logic._helpers import decisions, instance


def brute_chained(dec, size):
    """(T_full, T_1) of the windows over every item-level key z: the full joint's exact
    min ratio of the windows' evaluation at z, and M=1's v(window key of z)."""
    arr, r = dec.array, len(dec.labels)
    win = sequence_aligned(dec, size)
    codes, n_lab = win.array, len(win.labels)
    counts = win.label_counts() if win.complete else None
    best_full, best_1 = Fraction(0), Fraction(0)
    for z in itertools.product(range(r), repeat=len(dec.items)):
        key = window_key_of(z, r, size)
        truth = np.zeros(len(codes), dtype=np.int64)
        for s in range(size):
            truth = truth * r + np.array(z[s:s + len(codes)])
        vals = []
        for i in range(arr.shape[1]):
            for t in range(n_lab):
                den = int(((truth == t) & (codes[:, i] >= 0)).sum())
                if den:
                    vals.append(Fraction(int(((truth == t) & (codes[:, i] == t)).sum()), den))
        best_full = max(best_full, min(vals, default=Fraction(1)))
        if counts is not None:
            best_1 = max(best_1, key_value(counts, key))
    return best_full, best_1


@settings(max_examples=12, deadline=None)
@given(instance(max_graders=2, max_q=6), st.integers(2, 3))
def test_chained_alarms_equal_brute_force_over_item_keys(case, size):
    r, cols = case
    if size > len(cols[0]) or r ** size > 64:
        return
    dec = decisions(cols, [f"l{t}" for t in range(r)])
    full, m1 = brute_chained(dec, size)
    assert alarm_sequence(dec, size, "0.5", m="full").T == full
    assert alarm_sequence(dec, size, "0.5", m=1).T == m1
    assert full <= m1


@settings(max_examples=10, deadline=None)
@given(instance(max_graders=2, max_q=6, skip=True))
def test_chained_full_joint_with_skips_equals_brute_force(case):
    r, cols = case
    dec = decisions(cols, [f"l{t}" for t in range(r)], on_missing="keep")
    if len(dec.items) < 2:  # items nobody decided are dropped
        return
    full, _ = brute_chained(dec, 2)
    assert alarm_sequence(dec, 2, "0.5", m="full").T == full


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 3), st.integers(2, 3), st.integers(2, 7))
def test_realizable_window_keys_are_exactly_those_of_item_keys(r, size, q):
    if size > q or r ** size > 9:
        return
    n_win = q - size + 1
    from evalcert.logic.qcomplex import iter_qcomplex

    attained = {window_key_of(z, r, size) for z in itertools.product(range(r), repeat=q)}
    for key in iter_qcomplex(n_win, r ** size):
        assert window_key_realizable(key, r, size) == (tuple(key) in attained)


def _independent_chain_milp(dec, level):
    """Feasibility of "every (grader, window label) cell at least ``level``" with the item
    labels as binaries, written directly for scipy's HiGHS MILP (flow form of the chain)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    arr, r = dec.array, len(dec.labels)
    q, n_g = arr.shape
    n_win = q - 1
    ny = q * r
    nw = n_win * r * r

    def y(k, t):
        return k * r + t

    def w(k, s, t):
        return ny + (k * r + s) * r + t

    rows, lo, hi = [], [], []

    def add(coefs, a, b):
        row = np.zeros(ny + nw)
        for c, v in coefs:
            row[c] += v
        rows.append(row)
        lo.append(a)
        hi.append(b)

    for k in range(q):
        add([(y(k, t), 1) for t in range(r)], 1, 1)
    for k in range(n_win):
        for s in range(r):
            add([(w(k, s, t), 1) for t in range(r)] + [(y(k, s), -1)], 0, 0)
        for t in range(r):
            add([(w(k, s, t), 1) for s in range(r)] + [(y(k + 1, t), -1)], 0, 0)
    a, b = level.numerator, level.denominator
    for i in range(n_g):
        for s, t in itertools.product(range(r), repeat=2):
            coefs = [(w(k, s, t), b * (arr[k, i] == s and arr[k + 1, i] == t) - a)
                     for k in range(n_win)]
            add(coefs, 0, np.inf)
    res = milp(np.zeros(ny + nw), constraints=LinearConstraint(np.array(rows), lo, hi),
               integrality=np.ones(ny + nw), bounds=Bounds(0, 1))
    return res.status == 0


def test_mtbench_sequence_2_is_three_sevenths_not_one_half():
    """Issue 25: the unchained windows gave T = 1/2 at (2,6,0,2,6,4,2,2,0), which no item
    key has (out - in degree (2, -2, 0)); chained, T = 3/7, and an independent MILP agrees
    (feasible at 3/7, infeasible at the next ratio a window count allows)."""
    dec = table1_decisions()
    assert not window_key_realizable((2, 6, 0, 2, 6, 4, 2, 2, 0), 3, 2)
    for m in ("full", 1):
        result = alarm_sequence(dec, 2, "0.5", m=m)
        assert result.T == Fraction(3, 7)
        assert all(window_key_realizable(k, 3, 2) for k in result.attaining_keys)
    witness = alarm_sequence(dec, 2, "0.5", m="full").witness
    z = [dec.labels.index(v) for v in witness["item_key"]]
    assert list(window_key_of(z, 3, 2)) == witness["key"]
    assert _independent_chain_milp(dec, Fraction(3, 7))
    assert not _independent_chain_milp(dec, farey_successor(Fraction(3, 7), 24))


def test_m2_sequence_is_refused_with_a_message():
    with pytest.raises(InputError, match="--m 2"):
        alarm_sequence(table1_decisions(), 2, "0.5", m=2)
