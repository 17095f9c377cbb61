"""Fixed-key MILPs in value form for panels that skip items (issue 25, item 4).

:class:`evalcert.logic.missing.SkipKeySearch` is what :func:`alarm_full` runs when graders
skip items. Cross-checks on small random logs with skips: its ``T`` equals brute force over
every item-level truth and the previous key search (:class:`KeySearch`, convex-hull rows
only); each fixed-key answer equals brute force at that key and level, with one search
object deciding many keys in turn (its binaries are reused from key to key, so a row left
over from an earlier key would show here).
"""

import itertools
from fractions import Fraction

import numpy as np
from hypothesis import given, settings, strategies as st

from evalcert.logic.exact import exact_alarm
from evalcert.logic.joint import alarm_full
from evalcert.logic.missing import SkipKeySearch
from evalcert.logic.search import KeySearch
from evalcert.logic.splits import JointModel, _joint_builder, joint_start

from tests.logic._helpers import brute_force_joint, decisions, instance

LABELS = ["a", "b", "c"]


def skip_log(inst):
    r, cols = inst
    cols = [list(c) for c in cols]  # one list per grader (two or more graders)
    cols[0] = [-1] + [max(v, 0) for v in cols[0][1:]]  # grader 0 skips item 0 only
    cols[1][0] = max(cols[1][0], 0)  # grader 1 decides it
    return decisions(cols, LABELS[:r], on_missing="keep")


def brute_force_at_key(dec, key, level):
    """Some item-level truth with label counts ``key`` puts every (grader, label) cell with
    a decided item at ``level`` or above."""
    arr, r = dec.array, len(dec.labels)
    for truth in itertools.product(range(r), repeat=len(dec.items)):
        truth = np.array(truth)
        if tuple(int((truth == t).sum()) for t in range(r)) != tuple(key):
            continue
        ok = True
        for i in range(arr.shape[1]):
            for t in range(r):
                den = int(((truth == t) & (arr[:, i] >= 0)).sum())
                corr = int(((truth == t) & (arr[:, i] == t)).sum())
                if corr * level.denominator < level.numerator * den:
                    ok = False
        if ok:
            return True
    return False


@settings(max_examples=15, deadline=None)
@given(instance(max_graders=3, max_q=7, skip=True))
def test_value_form_equals_hull_search_and_brute_force(inst):
    dec = skip_log(inst)
    assert not dec.complete
    res = alarm_full(dec, "0.5", max_binding_keys=0)
    assert "stopped" not in res.method
    old = exact_alarm(_joint_builder(dec), dec, "0.5", upper=Fraction(1), m="full",
                      method="full-joint ILP", max_checks=0, max_binding_keys=0,
                      start=joint_start(dec, Fraction(1), "highs"), key_search=KeySearch)
    assert res.T == old.T == brute_force_joint(dec)


@settings(max_examples=10, deadline=None)
@given(instance(max_graders=3, max_q=6, skip=True), st.sampled_from(
    [Fraction(1, 3), Fraction(1, 2), Fraction(3, 5), Fraction(2, 3), Fraction(1)]))
def test_fixed_key_answers_equal_brute_force_key_after_key(inst, level):
    dec = skip_log(inst)
    n, r = len(dec.items), len(dec.labels)
    model = JointModel(dec)
    search = SkipKeySearch(model.prob, model.q, model.correct, model.den, n)
    keys = [k for k in itertools.product(range(n + 1), repeat=r) if sum(k) == n]
    for key in keys + keys[::-1]:  # each key twice, after different predecessors
        assert search.solve_at(key, level) == brute_force_at_key(dec, key, level), key
