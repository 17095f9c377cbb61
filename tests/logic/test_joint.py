"""The full-joint alarm and the exact search behind M=2 / full (issue 11 items 2-3).

Cross-checks: full joint == brute force over every item-level answer key (also with skipped
decisions), T_full <= T_2 <= T_1, the Farey / Stern-Brocot helpers against enumeration, and
the exact integer re-check refusing a point that violates the model.
"""

import itertools
from fractions import Fraction

import numpy as np
import pulp
import pytest
from hypothesis import given, settings, strategies as st

from evalcert.datasets.mtbench import table1_decisions
from evalcert.errors import CertificateError, InputError
from evalcert.logic import alarm_threshold
from evalcert.logic.joint import alarm_full, full_alarm_threshold
from evalcert.logic.splits import rounded_joint_point
from evalcert.logic.pairs import alarm_m2, m2_alarm_threshold
from evalcert.logic.levels import (check_integer_solution, farey_successor, max_ratio,
                                   simplest_between)

from tests.logic._helpers import brute_force_joint, decisions, instance


@settings(max_examples=15, deadline=None)
@given(instance())
def test_full_joint_equals_brute_force(inst):
    r, cols = inst
    dec = decisions(cols, ["a", "b", "c"][:r])
    assert full_alarm_threshold(dec) == brute_force_joint(dec)


@settings(max_examples=10, deadline=None)
@given(instance(skip=True))
def test_full_joint_with_skipped_items_equals_brute_force(inst):
    r, cols = inst
    cols = [c if any(v >= 0 for v in c) else [0] + c[1:] for c in cols]  # nobody skips all
    dec = decisions(cols, ["a", "b", "c"][:r], on_missing="keep")
    res = alarm_full(dec, "0.5")
    assert res.T == brute_force_joint(dec)
    if not dec.complete:  # no M=1 candidates to check: a witness key is listed
        assert res.n_attaining is None and len(res.attaining_keys) == 1


@settings(max_examples=8, deadline=None)
@given(instance(min_graders=3, max_graders=4, max_q=8))
def test_m2_sandwiched_between_full_joint_and_m1(inst):
    r, cols = inst
    dec = decisions(cols, ["a", "b", "c"][:r])
    t_full, t2 = full_alarm_threshold(dec), m2_alarm_threshold(dec)
    assert t_full <= t2 <= alarm_threshold(dec.label_counts())


@settings(max_examples=10, deadline=None)
@given(instance(max_q=5))
def test_full_alarm_attaining_keys_are_exact(inst):
    r, cols = inst
    dec = decisions(cols, ["a", "b", "c"][:r])
    res = alarm_full(dec, "0.5")
    arr = dec.array
    by_key = {}
    for truth in itertools.product(range(r), repeat=len(dec.items)):
        truth = np.array(truth)
        key = tuple(int((truth == t).sum()) for t in range(r))
        vals = [Fraction(int(((truth == t) & (arr[:, i] == t)).sum()), key[t])
                for i in range(arr.shape[1]) for t in range(r) if key[t]]
        by_key[key] = max(by_key.get(key, Fraction(0)), min(vals))
    assert set(res.attaining_keys) == {k for k, v in by_key.items() if v == res.T}
    assert res.n_attaining == len(res.attaining_keys)


def test_table1_full_joint_equals_m2_for_two_graders():
    # for two graders the pair counts are the joint: both give 5/8 at the same two keys
    full, m2 = alarm_full(table1_decisions(), "0.5"), alarm_m2(table1_decisions(), "0.5")
    assert full.T == m2.T == Fraction(5, 8)
    assert full.attaining_keys == m2.attaining_keys == ((6, 16, 3), (8, 14, 3))
    assert full.m == "full" and full.to_dict()["T"] == "5/8"


def test_three_graders_full_joint_strictly_below_m2():
    """A documented small case where the joint is strictly stronger than the pairs."""
    cols = [[0, 0, 1, 1, 2, 2], [0, 1, 1, 2, 2, 0], [1, 0, 2, 1, 0, 2]]
    dec = decisions(cols, ["a", "b", "c"])
    t_full, t2 = full_alarm_threshold(dec), m2_alarm_threshold(dec)
    assert t_full == brute_force_joint(dec)
    assert t_full <= t2 <= alarm_threshold(dec.label_counts())


def test_rounded_lp_point_is_a_valid_lower_bound():
    dec = table1_decisions(("experts", "authors", "gpt4"))
    value, key, split = rounded_joint_point(dec, Fraction(1, 2))
    assert (split.sum(axis=0) == key).all()
    assert sum(key) == 25 and value <= full_alarm_threshold(dec)


def test_full_needs_decisions_and_refuses_bad_keys():
    with pytest.raises(InputError, match="question-aligned"):
        alarm_full({"x": {"a": 1, "b": 1}}, "0.5")


def test_farey_successor_and_simplest_between_match_enumeration():
    for n in range(1, 13):
        fr = sorted({Fraction(k, d) for d in range(1, n + 1) for k in range(d + 1)})
        for a, b in zip(fr, fr[1:]):
            assert farey_successor(a, n) == b
    fr = sorted({Fraction(k, d) for d in range(1, 30) for k in range(d + 1)})
    for lo, hi in itertools.combinations(fr[::7], 2):
        inside = [f for f in fr if lo < f < hi]
        assert simplest_between(lo, hi).denominator == min(f.denominator for f in inside)


@pytest.mark.parametrize("target", [Fraction(0), Fraction(1), Fraction(355, 997),
                                    Fraction(999_999, 1_000_000)])
def test_max_ratio_finds_any_fraction_without_listing(target):
    calls = []

    def feasible(f):
        calls.append(f)
        return target if f <= target else None

    got, n = max_ratio(feasible, Fraction(1), 1_000_000)
    assert got == target and n == len(calls) and n <= 60  # no O(Q^2) enumeration


def test_exact_recheck_refuses_a_point_that_violates_the_model():
    prob = pulp.LpProblem("p", pulp.LpMaximize)
    v = prob.add_variable("v", 0, 10, cat="Integer")
    prob += 3 * v <= 7, "c"
    v.varValue = 3.0  # what a sloppy solver might return: 9 > 7
    with pytest.raises(CertificateError, match="violates constraint c"):
        check_integer_solution(prob, "test")
    v.varValue = 2.4
    with pytest.raises(CertificateError, match="not an integer"):
        check_integer_solution(prob, "test")
    v.varValue = 2.0
    assert check_integer_solution(prob, "test") == {"v": 2}


def test_eq18_pair_statistics_match_item_level_counts():
    from evalcert.logic.splits import joint_patterns, pair_statistics

    cols = [[0, 0, 1, 1, 2, 2, 0], [0, 1, 1, 2, 2, 0, 0], [1, 0, 2, 1, 0, 2, 0]]
    dec = decisions(cols, ["a", "b", "c"])
    truth = np.array([0, 0, 1, 1, 2, 2, 1])
    pats, _ = joint_patterns(dec)
    arr = dec.array
    split = np.zeros((len(pats), 3), dtype=np.int64)
    for k, t in enumerate(truth):
        split[np.flatnonzero((pats == arr[k]).all(axis=1))[0], t] += 1
    stats = pair_statistics(dec, split)
    for i, j in itertools.combinations(range(3), 2):
        for t, lab in enumerate(dec.labels):
            on = truth == t
            n = int(on.sum())
            ci = Fraction(int((on & (arr[:, i] == t)).sum()), n)
            cj = Fraction(int((on & (arr[:, j] == t)).sum()), n)
            cij = Fraction(int((on & (arr[:, i] == t) & (arr[:, j] == t)).sum()), n)
            assert stats[f"g{i}~g{j}"][lab] == str(cij - ci * cj)


def test_witness_is_consistent_and_attains_t():
    dec = table1_decisions(("experts", "authors", "gpt4"))
    for res in (alarm_full(dec, "0.5"), alarm_m2(dec, "0.5")):
        w = res.witness
        assert sum(w["key"]) == 25
        vals = [Fraction(c, q) for g in res.graders for c, q in zip(w["correct"][g], w["key"])
                if q]
        assert min(vals) == res.T
        counts = dec.label_counts()
        for i, g in enumerate(res.graders):  # correct <= what each grader said and the key
            assert all(c <= min(q, n) for c, q, n in zip(w["correct"][g], w["key"],
                                                       counts.counts[i]))


def test_sequence_aligned_summaries():
    from evalcert.logic.sequences import sequence_aligned

    dec = table1_decisions()
    seq = sequence_aligned(dec, 2)
    assert len(seq.items) == 24 and len(seq.labels) == 9 and seq.labels[1] == "a|b"
    arr, sarr = dec.array, seq.array
    assert (sarr == arr[:-1] * 3 + arr[1:]).all()
    assert full_alarm_threshold(seq) <= m2_alarm_threshold(seq) <= alarm_threshold(
        seq.label_counts())
    with pytest.raises(InputError, match="sequence labels"):
        sequence_aligned(dec, 4)


def test_regression_m2_at_real_size_builds_no_ratio_list():
    """Old code built every k/n with n <= Q before solving (Q = 20000: a 1.5 GiB array).
    Two graders: M=2 is the joint, so both searches must agree exactly."""
    from evalcert.logic.simulate import simulate_decisions

    dec = simulate_decisions(3000, 3, 2, seed=5)
    m2 = alarm_m2(dec, "0.5", max_checks=0, max_binding_keys=0)
    full = alarm_full(dec, "0.5", max_checks=0, max_binding_keys=0)
    assert m2.T == full.T <= alarm_threshold(dec.label_counts())
    assert m2.n_solves < 40 and m2.witness["key"] == list(m2.attaining_keys[0])


@settings(max_examples=10, deadline=None)
@given(instance(max_q=6, skip=True), st.integers(0, 2**31))
def test_local_search_keeps_an_exact_key_and_never_lowers_the_value(inst, seed):
    from evalcert.logic.joint import _joint_value, improve_split, joint_patterns

    r, cols = inst
    cols = [c if any(v >= 0 for v in c) else [0] + c[1:] for c in cols]
    dec = decisions(cols, ["a", "b", "c"][:r], on_missing="keep")
    pats, counts = joint_patterns(dec)
    rng = np.random.default_rng(seed)
    x = np.stack([rng.multinomial(c, np.ones(r) / r) for c in counts])
    y = improve_split(pats, x)
    assert (y.sum(axis=1) == counts).all() and (y >= 0).all()
    assert _joint_value(pats, x) <= _joint_value(pats, y) <= brute_force_joint(dec)
