"""No-knowledge alarms (Sec. III): closed form == ILP == brute-force enumeration, and the
MT-Bench numbers. The paper's 46% (Sec. III, Fig. 7, Sec. V) does not follow from the
M=1 axioms: at key (6, 15, 4) every grader can beat 46% on every label; T = 2/3."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from evalcert.logic import (alarm, alarm_threshold, best_correct, best_min_accuracy_ilp,
                            consistent_ilp, iter_evaluations, iter_qcomplex, key_value,
                            label_counts, minmax_curve, mtbench_demo)

MT = {"authors": {"a": 5, "b": 10, "tie": 10}, "gpt4": {"a": 4, "b": 18, "tie": 3}}


def test_mtbench_t_is_two_thirds_only_at_6_15_4():
    r = alarm(MT, "0.5")
    assert r.n_keys == 351 and len(r.curve.keys) == 351
    assert r.T == Fraction(2, 3) and r.attaining_keys == ((6, 15, 4),) and r.n_attaining == 1
    assert set(r.binding) == {("authors", "b"), ("gpt4", "a")}
    assert not r.fires and alarm(MT, Fraction(2, 3), curves=False).fires


def test_mtbench_value_at_8_9_8_is_three_eighths_and_min_is_3_25():
    counts = label_counts(MT)
    assert key_value(counts, (8, 9, 8)) == Fraction(3, 8)
    curve = minmax_curve(counts)
    assert min(curve.value(k) for k in range(len(curve.keys))) == Fraction(3, 25)
    assert max(curve.value(k) for k in range(len(curve.keys))) == Fraction(2, 3)


def test_paper_46_percent_does_not_follow():
    assert not alarm(MT, "0.46", curves=False).fires
    witness = best_correct(label_counts(MT), (6, 15, 4))  # authors 5,10,4; gpt4 4,15,3
    assert (witness / np.array([6, 15, 4]) > 0.46).all()
    assert mtbench_demo().T == Fraction(2, 3)


def instances(max_q=12):
    """(Q, per-grader cut points): N <= 3 graders, R <= 4 labels, Q <= max_q."""
    return st.tuples(st.integers(1, max_q), st.integers(2, 4), st.integers(1, 3)).flatmap(
        lambda t: st.tuples(st.just(t[0]), st.lists(
            st.lists(st.integers(0, t[0]), min_size=t[1] - 1, max_size=t[1] - 1),
            min_size=t[2], max_size=t[2])))


def to_counts(n, cuts):
    data = {}
    for i, c in enumerate(cuts):
        edges = [0, *sorted(c), n]
        data[f"g{i}"] = {f"l{k}": edges[k + 1] - edges[k] for k in range(len(edges) - 1)}
    return label_counts(data)


def brute_best_min(counts, key):
    """Max over enumerated evaluation tables of min_l E[l][l]/q_l, per grader; min over graders."""
    best = []
    for dec in counts.counts:
        best.append(max(min(Fraction(t[l][l], key[l]) for l in range(len(key)) if key[l])
                        for t in iter_evaluations(key, dec)))
    return min(best)


@settings(max_examples=25)
@given(instances(max_q=9), st.data())
def test_closed_form_equals_brute_force_at_a_key(inst, data):
    counts = to_counts(*inst)
    keys = list(iter_qcomplex(counts.n_items, len(counts.labels)))
    key = keys[data.draw(st.integers(0, len(keys) - 1))]
    assert key_value(counts, key) == brute_best_min(counts, key)
    best = best_correct(counts, key)
    for i, dec in enumerate(counts.counts):  # all labels reach the bound in one table
        assert any(all(t[l][l] == best[i, l] for l in range(len(key)))
                   for t in iter_evaluations(key, dec))


@settings(max_examples=20)
@given(instances(max_q=12), st.data())
def test_closed_form_equals_ilp(inst, data):
    counts = to_counts(*inst)
    keys = list(iter_qcomplex(counts.n_items, len(counts.labels)))
    key = keys[data.draw(st.integers(0, len(keys) - 1))]
    assert best_min_accuracy_ilp(counts, key).value == key_value(counts, key)
    t = alarm_threshold(counts)
    assert not consistent_ilp(counts, threshold=t).feasible
    below = sorted({Fraction(k, n) for n in range(1, counts.n_items + 1) for k in range(n + 1)
                    if Fraction(k, n) <= t})
    if len(below) > 1:
        res = consistent_ilp(counts, threshold=below[-2])
        assert res.feasible and key_value(counts, res.key) == t


@given(instances(max_q=12), st.data())
def test_fast_threshold_equals_walk_with_and_without_bounds(inst, data):
    counts = to_counts(*inst)
    n, r = counts.n_items, len(counts.labels)
    curve = minmax_curve(counts)
    walk = max(key_value(counts, k) for k in iter_qcomplex(n, r))
    assert alarm_threshold(counts) == walk == max(curve.value(k) for k in range(len(curve.keys)))
    lower = data.draw(st.lists(st.integers(0, 2), min_size=r, max_size=r))
    upper = [lo + data.draw(st.integers(0, n)) for lo in lower]
    if sum(lower) <= n <= sum(min(u, n) for u in upper):
        walk_b = max(key_value(counts, k) for k in iter_qcomplex(n, r, lower, upper))
        res = alarm(counts, 0, lower=lower, upper=upper, curves=False)
        assert res.T == walk_b
        att = [k for k in iter_qcomplex(n, r, lower, upper) if key_value(counts, k) == walk_b]
        assert res.n_attaining == len(att) and list(res.attaining_keys) == att[:1000]


@settings(max_examples=15)
@given(instances(max_q=5))
def test_threshold_equals_brute_force_over_whole_qcomplex(inst):
    counts = to_counts(*inst)
    brute = max(brute_best_min(counts, k)
                for k in iter_qcomplex(counts.n_items, len(counts.labels)))
    assert alarm_threshold(counts) == brute


def test_per_label_curves_and_empty_labels():
    counts = label_counts(MT)
    curve = minmax_curve(counts)
    k = [tuple(v) for v in curve.keys.tolist()].index((0, 0, 25))
    assert np.isnan(curve.label_values(0)[k]) and curve.value(k) == Fraction(3, 25)
    assert curve.label_values(2)[k] == pytest.approx(3 / 25)


@pytest.mark.parametrize("solver", ["highs", "cbc"])
def test_solvers_agree_and_report_themselves(solver):
    res = best_min_accuracy_ilp(MT, (8, 9, 8), solver=solver)
    assert (res.solver, res.status, res.value) == (solver, "Optimal", Fraction(3, 8))


def test_grade_and_per_label_specs_match_closed_form():
    key = (8, 9, 8)
    best = best_correct(label_counts(MT), key).sum(axis=1).min()  # 3+... = 20 for gpt4
    assert consistent_ilp(MT, grade=Fraction(int(best) - 1, 25), key=key).feasible
    assert not consistent_ilp(MT, grade=Fraction(int(best), 25), key=key).feasible
    assert consistent_ilp(MT, label_thresholds={"a": "0.49", "b": "0.99"}, key=key).feasible
    assert not consistent_ilp(MT, label_thresholds={"tie": Fraction(3, 8)}, key=key).feasible
