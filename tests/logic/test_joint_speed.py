"""Fast paths of the exact alarms (issue 25, item 4), each against the path it replaced.

* :func:`joint_patterns` encodes each row as one integer (digits in row order) instead of
  ``np.unique(axis=0)``, and caches the answer per Decisions object: same patterns, same
  order, same counts, also with skipped decisions and past the int64 range (fallback).
* :func:`joint_lp_bounds` bisects the LP relaxation on one HiGHS model instead of building
  24 PuLP models: its start point is an exact key whose value is a lower bound on the brute
  force ``T_full``, and its infeasible level is above it (``T_full < bound``), as the PuLP
  path (:func:`lp_levels`) on the same logs.
"""

from fractions import Fraction

import numpy as np
from hypothesis import given, settings, strategies as st

from evalcert.logic.exact import lp_levels
from evalcert.logic.splits import _joint_builder, _joint_value, joint_lp_bounds, joint_patterns
from evalcert.logic.summaries import Decisions

from tests.logic._helpers import brute_force_joint, decisions, instance


def _dec(codes, n_labels):
    codes = np.asarray(codes, dtype=np.int64)
    return Decisions(tuple(f"q{k}" for k in range(codes.shape[0])),
                     tuple(f"g{i}" for i in range(codes.shape[1])),
                     tuple(f"l{t}" for t in range(n_labels)), tuple(map(tuple, codes.tolist())))


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 12), st.integers(1, 9), st.integers(1, 60), st.integers(0, 2**31))
def test_joint_patterns_equal_numpy_unique_rows(n_labels, n_graders, n_items, seed):
    rng = np.random.default_rng(seed)
    codes = rng.integers(-1, n_labels, size=(n_items, n_graders))
    codes[:, 0] = np.maximum(codes[:, 0], 0)
    dec = _dec(codes, n_labels)
    pats, counts = joint_patterns(dec)
    want, want_counts = np.unique(codes, axis=0, return_counts=True)
    assert pats.tolist() == want.tolist() and counts.tolist() == want_counts.tolist()
    again = joint_patterns(dec)  # cached: the same arrays, read-only
    assert again[0] is pats and not pats.flags.writeable


def test_joint_patterns_past_int64_fall_back_and_cache_is_per_object():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 40, size=(30, 13))  # 41^13 > 2^62: the np.unique path
    pats, counts = joint_patterns(_dec(codes, 40))
    want, want_counts = np.unique(codes, axis=0, return_counts=True)
    assert pats.tolist() == want.tolist() and counts.tolist() == want_counts.tolist()
    for k in range(12):  # new objects (ids may be reused) never see another's patterns
        small = rng.integers(0, 3, size=(5 + k, 2))
        got, cnt = joint_patterns(_dec(small, 3))
        want, want_counts = np.unique(small, axis=0, return_counts=True)
        assert got.tolist() == want.tolist() and cnt.tolist() == want_counts.tolist()


@settings(max_examples=12, deadline=None)
@given(instance(max_q=6, skip=True))
def test_lp_start_and_bound_sandwich_the_brute_force(inst):
    r, cols = inst
    cols = [c if any(v >= 0 for v in c) else [0] + c[1:] for c in cols]
    dec = decisions(cols, ["a", "b", "c"][:r], on_missing="keep")
    truth = brute_force_joint(dec)
    (value, key, split), bound = joint_lp_bounds(dec, Fraction(1), "highs")
    pats, counts = joint_patterns(dec)
    assert (split >= 0).all() and (split.sum(axis=1) == counts).all()
    assert tuple(split.sum(axis=0)) == key and value == _joint_value(pats, split)
    assert value <= truth
    assert bound is None or truth < bound
    _, old = lp_levels(_joint_builder(dec), Fraction(1), len(dec.items))
    if old is not None:  # the PuLP path's level is infeasible for the LP: so is T_full
        assert truth < old


def _splits(counts, r):
    """Every integer split of each pattern count over ``r`` labels (small cases only)."""
    import itertools

    per = [[c for c in itertools.product(range(n + 1), repeat=r) if sum(c) == n]
           for n in counts]
    for rows in itertools.product(*per):
        yield np.array(rows, dtype=np.int64)


@settings(max_examples=10, deadline=None)
@given(instance(max_q=5, skip=True), st.integers(0, 3))
def test_level_cuts_keep_every_integer_point_at_or_above_the_level(inst, pick):
    """The hull cuts of :meth:`KeySearch.level_cuts` at a level ``f <= T`` cut off no answer
    key reaching ``f`` (each such split, fixed in the model with its cuts, stays feasible),
    and they never report the LP infeasible at or below ``T``."""
    from evalcert.logic.search import KeySearch
    from evalcert.logic.splits import JointModel

    r, cols = inst
    cols = [c if any(v >= 0 for v in c) else [0] + c[1:] for c in cols]
    dec = decisions(cols, ["a", "b", "c"][:r], on_missing="keep")
    truth = brute_force_joint(dec)
    n = len(dec.items)
    levels = sorted({Fraction(a, b) for b in range(1, n + 1) for a in range(b + 1)
                     if Fraction(a, b) <= truth})
    level = levels[-1 - min(pick, len(levels) - 1)]
    pats, counts = joint_patterns(dec)
    model = JointModel(dec)
    finder = KeySearch(model.prob, model.q, model.correct, model.den, n)
    finder.set_level(level)
    assert finder.level_cuts(level)
    cols_x = [[finder.model.index[v.name] for v in row] for row in model.x]
    for split in _splits(counts.tolist(), r):
        if _joint_value(pats, split) < level:
            continue
        for p, row in enumerate(cols_x):
            for t, col in enumerate(row):
                finder.model.set_bounds(col, split[p, t], split[p, t])
        assert finder.model.solve() == "Optimal", (split.tolist(), level)
        for p, row in enumerate(cols_x):
            for t, col in enumerate(row):
                finder.model.set_bounds(col, 0, int(counts[p]))
    finder.clear_cuts()
