"""The full joint with skipped items (``on_missing="keep"``) on the key search (issue 11).

A fixed key does not fix the denominators when graders skip items; the key search then adds
convex-hull cuts of ``ceil(T * den)`` at each key, and binding cells are decided by
feasibility. Cross-checks on small logs: the key search equals the whole-Q-complex level
search and brute force over every item-level truth; binding (grader, label) pairs equal the
brute-force definition (no consistent point at level T puts the cell above T, and some
gives it a decided item), including graders whose denominator can be 0 at the key.
"""

import itertools
from fractions import Fraction

import numpy as np
from hypothesis import given, settings, strategies as st

from evalcert.logic.exact import _add_level, exact_alarm
from evalcert.logic.ilp import run_solver
from evalcert.logic.joint import alarm_full
from evalcert.logic.splits import _joint_builder, joint_start
from evalcert.logic.levels import ceil_hull, linear_value
from evalcert.logic.simulate import simulate_decisions

from tests.logic._helpers import brute_force_joint, decisions, instance

LABELS = ["a", "b", "c"]


def skip_log(inst):
    r, cols = inst
    cols = [c if any(v >= 0 for v in c) else [0] + c[1:] for c in cols]  # nobody skips all
    return decisions(cols, LABELS[:r], on_missing="keep")


def ratios(dec, truth):
    """(correct, den) per (grader, label) of an item-level truth."""
    arr, r = dec.array, len(dec.labels)
    corr = np.array([[((truth == t) & (arr[:, i] == t)).sum() for t in range(r)]
                     for i in range(arr.shape[1])])
    den = np.array([[((truth == t) & (arr[:, i] >= 0)).sum() for t in range(r)]
                    for i in range(arr.shape[1])])
    return corr, den


def brute_force_binding(dec, key, level):
    """The definition: cell (i, t) binds at ``key`` iff no truth with that key, every cell at
    least ``level``, puts it above ``level``, and some such truth gives it a decided item."""
    r = len(dec.labels)
    above = has_den = None
    for truth in itertools.product(range(r), repeat=len(dec.items)):
        truth = np.array(truth)
        if tuple(int((truth == t).sum()) for t in range(r)) != tuple(key):
            continue
        corr, den = ratios(dec, truth)
        if any(c * level.denominator < level.numerator * d for c, d in
               zip(corr.ravel(), den.ravel()) if d):
            continue
        up = (corr * level.denominator > level.numerator * den) & (den > 0)
        above = up if above is None else above | up
        has_den = den > 0 if has_den is None else has_den | (den > 0)
    return {(dec.graders[i], dec.labels[t]) for i, t in zip(*np.nonzero(has_den & ~above))}


def level_search(dec):
    """The previous path for skipped items: the whole-Q-complex level search."""
    return exact_alarm(_joint_builder(dec), dec, "0.5", upper=Fraction(1), m="full",
                       method="full-joint ILP", search="levels", max_checks=0,
                       max_binding_keys=0, start=joint_start(dec, Fraction(1), "highs"))


@settings(max_examples=12, deadline=None)
@given(instance(max_graders=3, max_q=6, skip=True))
def test_key_search_with_skips_equals_level_search_and_brute_force(inst):
    dec = skip_log(inst)
    res = alarm_full(dec, "0.5", max_binding_keys=1)
    assert res.T == level_search(dec).T == brute_force_joint(dec)
    key = res.attaining_keys[0]
    if res.T > 0:
        assert set(res.binding) == brute_force_binding(dec, key, res.T)


def old_binding(dec, key, level):
    """The previous rule: maximise the slack ``b * correct - a * den`` of each cell at the key
    and call it binding when the optimum is 0 at a point with ``den > 0``."""
    out = set()
    for i, g in enumerate(dec.graders):
        for t, lab in enumerate(dec.labels):
            spec = _joint_builder(dec)(key)
            _add_level(spec, level)
            spec.prob += (level.denominator * spec.correct[i][t]
                          - level.numerator * spec.den[i][t])
            assert run_solver(spec.prob)[0] == "Optimal"
            values = {v.name: round(v.varValue) for v in spec.prob.variables()}
            corr, den = (linear_value(e, values) for e in (spec.correct[i][t], spec.den[i][t]))
            if den > 0 and corr * level.denominator == level.numerator * den:
                out.add((g, lab))
    return out


@settings(max_examples=8, deadline=None)
@given(instance(max_graders=3, max_q=6))
def test_binding_pairs_equal_the_old_rule_and_brute_force_on_complete_logs(inst):
    r, cols = inst
    dec = decisions(cols, LABELS[:r])
    res = alarm_full(dec, "0.5", max_binding_keys=1)
    if res.T > 0:
        key = res.attaining_keys[0]
        assert set(res.binding) == old_binding(dec, key, res.T) == \
            brute_force_binding(dec, key, res.T)


def test_a_grader_whose_denominator_can_be_zero_is_decided_exactly():
    """g2 decided one item: at a key, its cells on the other labels have no decided item
    in some answer keys (den = 0) and one in others. Binding is the definition's, and the
    old rule (which looked at one optimal point only) is not needed to decide it."""
    cols = [[0, 0, 1, 1, 2, 2], [0, 1, 1, 2, 2, 0], [0, -1, -1, -1, -1, -1]]
    dec = decisions(cols, LABELS, on_missing="keep")
    res = alarm_full(dec, "0.5", max_binding_keys=1)
    assert res.T == level_search(dec).T == brute_force_joint(dec)
    key = res.attaining_keys[0]
    assert set(res.binding) == brute_force_binding(dec, key, res.T)
    for truth in itertools.product(range(3), repeat=6):  # den of g2 is 0 somewhere
        truth = np.array(truth)
        if tuple(int((truth == t).sum()) for t in range(3)) == key:
            assert (ratios(dec, truth)[1][2] == 0).any()
            break


def test_regression_binding_needs_fewer_solves_than_cells():
    """Old code solved one slack-maximising MILP per (grader, label) at each key (12 here);
    cells a point already puts above T need no solve now."""
    dec = simulate_decisions(60, 3, 4, seed=1, skip=0.1, on_missing="keep")
    with_b = alarm_full(dec, "0.5", max_binding_keys=1)
    without = alarm_full(dec, "0.5", max_binding_keys=0)
    assert with_b.T == without.T
    assert with_b.n_solves - without.n_solves < 12 and with_b.binding


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 40), st.integers(0, 40), st.integers(1, 60), st.integers(1, 60))
def test_ceil_hull_is_the_lower_convex_hull_of_ceil(lo, width, a, b):
    level, hi = Fraction(min(a, b), max(a, b)), lo + width
    edges = ceil_hull(level, lo, hi)
    pts = [(d, -(-level.numerator * d // level.denominator)) for d in range(lo, hi + 1)]
    if width == 0:
        assert edges == []
    for (d1, m1), (d2, m2) in edges:  # every point on or above every edge; ends are points
        assert (d1, m1) in pts and (d2, m2) in pts and d1 < d2
        assert all((d2 - d1) * (m - m1) >= (m2 - m1) * (d - d1) for d, m in pts)
    if edges:  # the edges chain from the first point to the last
        assert edges[0][0] == pts[0] and edges[-1][1] == pts[-1]
        assert all(e[1] == f[0] for e, f in zip(edges, edges[1:]))


def test_simulated_skip_logs_match_the_level_search():
    """Larger than brute force (Q = 40, 4 graders, 15% skipped): both searches agree."""
    for seed in range(2):
        dec = simulate_decisions(40, 3, 4, seed=seed, skip=0.15, on_missing="keep")
        assert alarm_full(dec, "0.5", max_binding_keys=0).T == level_search(dec).T


@settings(max_examples=8, deadline=None)
@given(instance(min_graders=2, max_graders=4, max_q=7, skip=True),
       st.sampled_from([1e-9, 0.05]))
def test_a_time_limit_returns_proven_bounds_around_the_exact_t(case, limit):
    """Stopped early, the full joint returns T in [T, T_upper] around the exact T (a brute
    force over item keys)."""
    r, cols = case
    dec = decisions(cols, [f"l{t}" for t in range(r)], on_missing="keep")
    exact = brute_force_joint(dec)
    res = alarm_full(dec, "0.5", time_limit=limit)
    if res.T_upper is None:
        assert res.T == exact
    else:
        assert res.T <= exact <= res.T_upper
        assert res.binding == () and res.n_attaining is None
        assert res.fires == (Fraction(1, 2) >= res.T_upper)


def test_m2_time_limit_bounds_contain_the_exact_t2():
    from evalcert.logic.pairs import alarm_m2

    dec = simulate_decisions(60, 3, 3, seed=4)
    exact = alarm_m2(dec, "0.5").T
    res = alarm_m2(dec, "0.5", time_limit=1e-9)
    assert res.T_upper is not None and res.T <= exact <= res.T_upper
    assert "time limit reached" in res.summary()
    from evalcert.logic.audit import panel_statement

    assert "undecided" in panel_statement(res) and "nothing higher." not in panel_statement(res)
