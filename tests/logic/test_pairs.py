"""M=2 (App. C): pair-count ILP, T_2 <= T_1, brute force for two graders, Table I."""

import itertools
from fractions import Fraction

import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from evalcert.errors import InputError
from evalcert.logic import (alarm, alarm_m2, alarm_threshold, consistent_ilp,
                            decisions_from_frame, m2_alarm_threshold, m2_best_min_accuracy,
                            m2_consistent)
from evalcert.datasets.mtbench import table1_decisions


def decisions(rows_by_grader, labels):
    rows = [(k, f"g{i}", labels[v]) for i, col in enumerate(rows_by_grader)
            for k, v in enumerate(col)]
    return decisions_from_frame(pd.DataFrame(rows, columns=["item", "grader", "label"]),
                                labels=labels)


def brute_force_truth(dec):
    """For two graders M=2 is the whole truth: max over every item-level answer key."""
    arr, r = dec.array, len(dec.labels)
    best = Fraction(0)
    for truth in itertools.product(range(r), repeat=len(dec.items)):
        q = [truth.count(l) for l in range(r)]
        v = min(Fraction(sum(1 for k, t in enumerate(truth) if t == l and arr[k, i] == l), q[l])
                for i in range(arr.shape[1]) for l in range(r) if q[l])
        best = max(best, v)
    return best


@settings(max_examples=12)
@given(st.integers(2, 3).flatmap(lambda r: st.tuples(st.just(r), st.integers(2, 6).flatmap(
    lambda q: st.lists(st.lists(st.integers(0, r - 1), min_size=q, max_size=q),
                       min_size=2, max_size=2)))))
def test_m2_threshold_equals_brute_force_for_two_graders(inst):
    r, cols = inst
    labels = ["a", "b", "c"][:r]
    dec = decisions(cols, labels)
    t2 = m2_alarm_threshold(dec)
    assert t2 == brute_force_truth(dec)
    assert t2 <= alarm_threshold(dec.label_counts())


@settings(max_examples=6)
@given(st.lists(st.lists(st.integers(0, 2), min_size=8, max_size=8), min_size=3, max_size=3))
def test_m2_never_looser_than_m1_three_graders(cols):
    dec = decisions(cols, ["a", "b", "c"])
    assert m2_alarm_threshold(dec) <= alarm_threshold(dec.label_counts())


def test_table1_m1_and_m2_thresholds():
    dec = table1_decisions()
    assert dec.label_counts().counts == ((5, 10, 10), (5, 18, 2))  # gpt4 as printed
    m1 = alarm(dec, "0.5", curves=False)
    assert m1.T == Fraction(2, 3) and m1.attaining_keys == ((7, 15, 3),)
    m2 = alarm_m2(dec, "0.5")
    assert m2.T == Fraction(5, 8) and m2.attaining_keys == ((6, 16, 3), (8, 14, 3))
    assert m2.m == 2 and not m2.fires


def test_experts_ground_truth_lies_inside_the_consistent_sets():
    dec = table1_decisions(("experts", "authors", "gpt4"))
    truth = (4, 14, 7)
    assert dec.label_counts().counts[0] == truth
    pair = table1_decisions()
    # true accuracies (authors 1/4, 9/14, 4/7; gpt4 1/4, ...) are all above 1/5
    assert consistent_ilp(pair, threshold=Fraction(1, 5), key=truth).feasible
    assert m2_consistent(pair, Fraction(1, 5), key=truth).feasible
    assert m2_best_min_accuracy(pair, truth).value >= Fraction(1, 4)


def test_m2_needs_aligned_decisions_of_two_graders():
    with pytest.raises(InputError, match="question-aligned"):
        m2_alarm_threshold({"x": {"a": 1, "b": 1}})
    with pytest.raises(InputError, match="two graders"):
        m2_alarm_threshold(decisions([[0, 1]], ["a", "b"]))
