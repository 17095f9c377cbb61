"""The fast exact search for M=2 and the full joint (issue 11, item 3): answer keys listed
from the LP relaxation and decided one by one (:class:`evalcert.logic.search.KeySearch`).

Cross-checks on small cases: the key search equals the previous whole-Q-complex level
search and brute force over every item-level truth (ties as a third label, unbalanced
labels); M=2 stays between the full joint and M=1; a solver stop raises instead of
returning an unproven T.
"""

import itertools
from fractions import Fraction

import pulp
import pytest
from hypothesis import given, settings

from evalcert.errors import SolverError
from evalcert.logic import alarm_threshold
from evalcert.logic.ilp import HighsModel
from evalcert.logic.exact import exact_alarm
from evalcert.logic.joint import alarm_full
from evalcert.logic.splits import _joint_builder, joint_start
from evalcert.logic.pairs import _build as m2_builder, alarm_m2
from evalcert.logic.simulate import simulate_decisions

from tests.logic._helpers import brute_force_joint, decisions, hard_knapsack, instance

LABELS = ["a", "b", "tie"]


def both_searches(dec, build, upper):
    """T by the key search and by the level search, from the same start point."""
    start = joint_start(dec, upper, "highs")
    out = []
    for search in ("keys", "levels"):
        res = exact_alarm(build, dec, "0.5", upper=upper, m="x", method="test", search=search,
                          start=start, max_checks=0, max_binding_keys=0)
        out.append(res.T)
    return out


@settings(max_examples=15, deadline=None)
@given(instance(max_graders=4, max_q=7))
def test_key_search_equals_level_search_and_brute_force_full(inst):
    r, cols = inst
    dec = decisions(cols, LABELS[:r])
    keys, levels = both_searches(dec, _joint_builder(dec), alarm_threshold(dec.label_counts()))
    assert keys == levels == brute_force_joint(dec)


@settings(max_examples=8, deadline=None)
@given(instance(max_graders=4, max_q=7))
def test_key_search_equals_level_search_m2_and_is_sandwiched(inst):
    r, cols = inst
    dec = decisions(cols, LABELS[:r])
    top = alarm_threshold(dec.label_counts())
    keys, levels = both_searches(dec, m2_builder(dec, None, None), top)
    assert keys == levels
    assert brute_force_joint(dec) <= keys <= top


@pytest.mark.parametrize("seed", range(4))
def test_key_search_with_ties_and_unbalanced_labels_matches_levels(seed):
    """Simulated logs too large for brute force (Q = 40): both searches agree exactly, for
    M=2 and the full joint, and T_full <= T_2 <= T_1."""
    dec = simulate_decisions(40, 3, 4, seed=seed, alpha=0.7, acc_low=0.4, acc_high=0.8)
    top = alarm_threshold(dec.label_counts())
    full = both_searches(dec, _joint_builder(dec), top)
    m2 = both_searches(dec, m2_builder(dec, None, None), top)
    assert full[0] == full[1] <= m2[0] == m2[1] <= top


def test_regression_m2_climbs_in_a_few_milps():
    """Old code: from the joint start, every feasible whole-Q-complex MILP returned a point
    barely above the level tried, so M=2 climbed in tens of MILPs (58 at Q = 1000, seed 1;
    9 here). The key search maximises the level at each key: a few here (4 MILPs under
    highspy 1.16, 5 under 1.7.1, the oldest allowed: which of several optimal vertices HiGHS
    returns differs between versions)."""
    dec = simulate_decisions(150, 3, 5, seed=1)
    res = alarm_m2(dec, "0.5", max_checks=0, max_binding_keys=0)
    old = exact_alarm(m2_builder(dec, None, None), dec, "0.5",
                      upper=alarm_threshold(dec.label_counts()), m=2, method="M=2 ILP",
                      search="levels", start=joint_start(dec, Fraction(1), "highs"),
                      max_checks=0, max_binding_keys=0)
    assert res.T == old.T
    assert res.n_solves <= 5 < old.n_solves


def test_full_joint_key_search_gives_an_exact_witness():
    """The witness attains T exactly, and a cell reported binding is at T in it."""
    dec = simulate_decisions(200, 3, 5, seed=3)
    res = alarm_full(dec, "0.5", max_binding_keys=1)
    w = res.witness
    vals = {(g, lab): Fraction(c, q) for g in res.graders
            for lab, c, q in zip(res.labels, w["correct"][g], w["key"]) if q}
    assert min(vals.values()) == res.T and sum(w["key"]) == 200
    assert res.n_solves <= 20 and tuple(w["key"]) in res.attaining_keys


def test_time_limit_raises_a_typed_error_not_an_answer():
    model = hard_knapsack(time_limit=1e-9)
    with pytest.raises(SolverError, match="time limit") as err:
        model.solve()
    assert err.value.status == "time_limit"


def test_highs_model_counts_and_exact_recheck_of_a_written_back_point():
    from evalcert.logic.levels import check_integer_solution

    prob = pulp.LpProblem("p", pulp.LpMaximize)
    a = prob.add_variable("a", 0, 7, cat="Integer")
    b = prob.add_variable("b", 0, 7, cat="Integer")
    prob += 3 * a + 5 * b <= 17, "c"
    model = HighsModel(prob)
    model.set_objective({0: 2.0, 1: 3.0}, maximize=True)
    assert model.solve(relax=True) == "Optimal" and model.solve() == "Optimal"
    model.write_back()
    values = check_integer_solution(prob, "test")
    assert 3 * values["a"] + 5 * values["b"] <= 17
    assert 2 * values["a"] + 3 * values["b"] == max(
        2 * i + 3 * j for i, j in itertools.product(range(8), repeat=2) if 3 * i + 5 * j <= 17)
    assert (model.n_lp, model.n_mip) == (1, 1)


@pytest.mark.parametrize("seed", range(2))
def test_bounded_keys_without_a_start_point_match_the_level_search(seed):
    """With bounds on the key there is no rounded start: the key search starts at 0,
    climbs from the LP relaxation's best point and bisects; same T as the level search."""
    from evalcert.logic.pairs import _build

    dec = simulate_decisions(30, 3, 3, seed=seed, alpha=0.7)
    lo, hi = (5, 5, 5), (20, 20, 20)
    for build, fast in ((_build(dec, lo, hi), lambda: alarm_m2(dec, "0.5", lower=lo, upper=hi)),
                        (_joint_builder(dec, lo, hi),
                         lambda: alarm_full(dec, "0.5", lower=lo, upper=hi))):
        old = exact_alarm(build, dec, "0.5", upper=Fraction(1), m="x", method="x",
                          search="levels", max_checks=0, max_binding_keys=0)
        res = fast()
        assert res.T == old.T
        assert all(a <= v <= b for k in res.attaining_keys for a, v, b in zip(lo, k, hi))
