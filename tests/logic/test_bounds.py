"""Per-(grader, label) accuracy bounds at fixed keys (issue 11 item 7): cross-checked against
brute force under M=1 (every evaluation table), M=2 (every pair split, joined) and the full
joint (every item-level answer key); full within M=2 within M=1; binding == max at T."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings, strategies as st

from evalcert.datasets.mtbench import paper_summaries, table1_decisions
from evalcert.errors import InfeasibleError, InputError
from evalcert.logic import alarm, best_correct, decisions_from_frame
from evalcert.logic.bounds import LabelBounds, check_bounds_size, label_bounds
from evalcert.logic.evaluations import iter_evaluations
from evalcert.logic.joint import alarm_full
from evalcert.logic.pairs import alarm_m2

from tests.logic._helpers import forbid_solvers


def decisions(cols, labels):
    rows = [(k, f"g{i}", labels[v]) for i, col in enumerate(cols) for k, v in enumerate(col)]
    return decisions_from_frame(pd.DataFrame(rows, columns=["item", "grader", "label"]),
                                labels=labels)


def _ranges(points, n_g, r, key, level):
    """(lo, hi) of correct counts over points (each an (N, R) array) meeting the level."""
    need = [math.ceil(level * q) for q in key]
    ok = [p for p in points if all(p[i][t] >= need[t] for i in range(n_g) for t in range(r)
                                   if key[t] > 0)]
    if not ok:
        return None
    arr = np.array(ok)
    return arr.min(axis=0), arr.max(axis=0)


def brute_full(dec, key):
    arr, r = dec.array, len(dec.labels)
    points = []
    for truth in itertools.product(range(r), repeat=len(dec.items)):
        truth = np.array(truth)
        if tuple(np.bincount(truth, minlength=r)) != tuple(key):
            continue
        points.append([[int(((truth == t) & (arr[:, i] == t)).sum()) for t in range(r)]
                       for i in range(arr.shape[1])])
    return points


def brute_m1(counts, key):
    """Per grader, every M=1 table at the key (graders are independent under M=1)."""
    return [[tuple(tab[t][t] for t in range(len(key))) for tab in iter_evaluations(key, dec)]
            for dec in counts.counts]


def _splits(c, r):
    for cut in itertools.combinations(range(c + r - 1), r - 1):
        bounds = (-1,) + cut + (c + r - 1,)
        yield tuple(bounds[k + 1] - bounds[k] - 1 for k in range(r))


def brute_m2(dec, key):
    """Every tuple of M=1 tables (E^0, ..., E^N-1) such that each pair's observed pair table
    splits by true label into tables projecting onto both (App. C), at the key."""
    r, n_g = len(dec.labels), len(dec.graders)
    pair_sets = {}
    for i, j in itertools.combinations(range(n_g), 2):
        obs = dec.pair_counts(i, j)
        cells = [(a, b) for a in range(r) for b in range(r)]
        found = set()
        for parts in itertools.product(*(list(_splits(int(obs[a, b]), r)) for a, b in cells)):
            p = np.zeros((r, r, r), dtype=int)        # p[t][a][b]
            for (a, b), part in zip(cells, parts):
                p[:, a, b] = part
            if tuple(p.sum(axis=(1, 2))) != tuple(key):
                continue
            found.add((tuple(map(tuple, p.sum(axis=2))), tuple(map(tuple, p.sum(axis=1)))))
        pair_sets[(i, j)] = found
    points = []
    firsts = {e0 for e0, _ in pair_sets[(0, 1)]}
    tables = [sorted({e[k] for pair, s in pair_sets.items() for e in s
                      for k, g in ((0, pair[0]), (1, pair[1])) if g == gi})
              for gi in range(n_g)]
    for combo in itertools.product(sorted(firsts), *tables[1:]):
        if all((combo[i], combo[j]) in pair_sets[(i, j)] for i, j in pair_sets):
            points.append([[combo[i][t][t] for t in range(r)] for i in range(n_g)])
    return points


def check(b, points_or_ranges, k, key, free):
    lo, hi = (b.free_min_correct, b.free_max_correct) if free else (b.min_correct, b.max_correct)
    exp_lo, exp_hi = points_or_ranges
    for t in range(len(key)):
        if key[t] > 0:
            assert (lo[k, :, t] == exp_lo[:, t]).all() and (hi[k, :, t] == exp_hi[:, t]).all()
        else:
            assert (lo[k, :, t] == -1).all()


def instance(max_graders=3, max_q=5):
    return st.tuples(st.integers(2, 3), st.integers(2, max_q),
                     st.integers(2, max_graders)).flatmap(
        lambda t: st.tuples(st.just(t[0]), st.lists(
            st.lists(st.integers(0, t[0] - 1), min_size=t[1], max_size=t[1]),
            min_size=t[2], max_size=t[2]), st.lists(st.integers(0, t[0] - 1), min_size=t[1],
                                                    max_size=t[1]), st.integers(0, 6)))


def _setup(inst):
    r, cols, truth, k6 = inst
    labels = list("abc"[:r])
    dec = decisions(cols, labels)
    key = tuple(int(v) for v in np.bincount(truth, minlength=r))
    return dec, key, k6


def _level(points, key, k6):
    """From the brute force's best level v* at the key: v* (k6 = 6), just above it (k6 = 5:
    empty at the level), or a fraction of it (feasible)."""
    best = max(min((Fraction(int(p[i][t]), key[t]) for i in range(len(p))
                    for t in range(len(key)) if key[t] > 0)) for p in points)
    if k6 == 6:
        return best
    if k6 == 5:
        return min(Fraction(1), best + Fraction(1, 6 * sum(key)))
    return best * Fraction(k6, 5)


def _compare(dec, key, k6, m, points):
    n_g, r = len(dec.graders), len(dec.labels)
    level = _level(points, key, k6)
    at_level = _ranges(points, n_g, r, key, level)
    assert at_level is not None or k6 == 5  # levels up to v* are attained
    if at_level is None:
        with pytest.raises(InfeasibleError):
            label_bounds(dec, [key], level, m=m)
        return
    b = label_bounds(dec, [key], level, m=m)
    check(b, at_level, 0, key, free=False)
    check(b, _ranges(points, n_g, r, key, Fraction(0)), 0, key, free=True)


@settings(max_examples=12, deadline=None)
@given(instance())
def test_full_joint_bounds_equal_brute_force(inst):
    dec, key, k6 = _setup(inst)
    _compare(dec, key, k6, "full", brute_full(dec, key))


@settings(max_examples=12, deadline=None)
@given(instance())
def test_m1_bounds_equal_brute_force(inst):
    dec, key, k6 = _setup(inst)
    per_grader = brute_m1(dec.label_counts(), key)
    points = [list(p) for p in itertools.product(*per_grader)]
    _compare(dec, key, k6, 1, points)


@settings(max_examples=8, deadline=None)
@given(instance(max_q=4))
def test_m2_bounds_equal_brute_force(inst):
    dec, key, k6 = _setup(inst)
    _compare(dec, key, k6, 2, brute_m2(dec, key))


@settings(max_examples=10, deadline=None)
@given(instance(max_q=6))
def test_ranges_nest_m1_m2_full_and_binding_is_max_at_t(inst):
    dec, _, _ = _setup(inst)
    res = alarm_full(dec, "0")
    assume(res.T > 0)
    keys = res.attaining_keys[:3]
    got = {m: label_bounds(dec, keys, res.T, m=m) for m in (1, 2, "full")}
    for wide, narrow in ((got[1], got[2]), (got[2], got["full"])):
        assert (wide.min_correct <= narrow.min_correct).all()
        assert (wide.max_correct >= narrow.max_correct).all()
        assert (wide.free_min_correct <= narrow.free_min_correct).all()
        assert (wide.free_max_correct >= narrow.free_max_correct).all()
    for b in got.values():  # the level narrows every range
        assert (b.free_min_correct <= b.min_correct).all()
        assert (b.free_max_correct >= b.max_correct).all()
    # a (grader, label) binds at a key iff its max accuracy at T is T exactly
    full = got["full"]
    binds = {(g, lab) for k, key in enumerate(keys) for i, g in enumerate(dec.graders)
             for t, lab in enumerate(dec.labels)
             if key[t] > 0 and Fraction(int(full.max_correct[k, i, t]), key[t]) == res.T}
    assert binds == set(res.binding)


def test_m2_binding_and_m1_closed_form_on_mtbench():
    dec = table1_decisions()
    r2 = alarm_m2(dec, "0.5")
    b2 = label_bounds(dec, r2.attaining_keys, r2.T, m=2)
    binds = {(r["grader"], r["label"]) for r in b2.rows() if r["max_accuracy"] == str(r2.T)}
    assert binds == set(r2.binding) == {("authors", "a"), ("authors", "b"), ("gpt4", "a")}
    # M=1 at its attaining key: the maxima at T are the closed form min(q_l, R_{l,i})
    r1 = alarm(paper_summaries(), "0.5", curves=False)
    b1 = label_bounds(paper_summaries(), r1.attaining_keys, r1.T, m=1)
    assert (b1.max_correct[0] == best_correct(paper_summaries(), r1.attaining_keys[0])).all()
    binds = {(r["grader"], r["label"]) for r in b1.rows() if r["max_accuracy"] == str(r1.T)}
    assert binds == set(r1.binding)


def test_bad_input_is_refused_before_any_solve(monkeypatch):
    forbid_solvers(monkeypatch)
    dec = table1_decisions()
    with pytest.raises(InputError, match="label counts"):
        label_bounds(paper_summaries(), [(6, 15, 4)], "0.5", m=2)
    with pytest.raises(InputError, match="summing to Q=25"):
        label_bounds(dec, [(6, 15, 3)], "0.5")
    with pytest.raises(InputError, match="whole numbers"):
        label_bounds(dec, [("x", 1, 2)], "0.5")
    with pytest.raises(InputError, match="no answer keys"):
        label_bounds(dec, [], "0.5")
    with pytest.raises(InputError, match="--max-keys"):
        label_bounds(dec, [(6, 15, 4)] * 200, "0.5")
    with pytest.raises(InputError, match="use 1, 2 or full"):
        label_bounds(dec, [(6, 15, 4)], "0.5", m=3)
    skipped = decisions_from_frame(pd.DataFrame(
        [("1", "x", "a"), ("1", "y", "b"), ("2", "x", "b")],
        columns=["item", "grader", "label"]), on_missing="keep")
    with pytest.raises(InputError, match="--on-missing drop"):
        label_bounds(skipped, [(1, 1)], "0", m="full")
    assert check_bounds_size(1, 2, 3, free=False) == 13


def test_infeasible_level_raises_and_result_is_jsonable():
    dec = table1_decisions()
    with pytest.raises(InfeasibleError, match="at least 2/3"):
        label_bounds(dec, [(6, 16, 3)], "2/3", m="full")  # T_full = 5/8
    b = label_bounds(dec, [(6, 16, 3)], "5/8", m="full", free=False)
    assert isinstance(b, LabelBounds) and b.free_min_correct is None
    d = b.to_dict()
    assert d["method"] == "full joint" and d["level"] == "5/8" and len(d["rows"]) == 6
    assert "free_min_correct" not in d["rows"][0] and "5/8" in b.summary()


@pytest.mark.parametrize("m", [1, 2, "full"])
def test_cbc_gives_the_same_bounds_as_highs(m):
    """A feasibility solve with an empty objective makes CBC return a None-valued dummy
    column, which the exact re-check refuses (CertificateError): the module's first draft
    failed this test; feasibility now maximises the total correct count."""
    dec = table1_decisions()
    keys = [(6, 16, 3), (8, 14, 3)]
    a = label_bounds(dec, keys, "5/8", m=m, solver="cbc")
    b = label_bounds(dec, keys, "5/8", m=m)
    for name in ("min_correct", "max_correct", "free_min_correct", "free_max_correct"):
        assert (getattr(a, name) == getattr(b, name)).all()


def test_level_zero_gives_the_free_range_without_extra_solves():
    dec = table1_decisions()
    b0 = label_bounds(dec, [(6, 16, 3)], 0, m="full")
    only = label_bounds(dec, [(6, 16, 3)], 0, m="full", free=False)
    assert (b0.min_correct == b0.free_min_correct).all()
    assert (b0.max_correct == b0.free_max_correct).all()
    assert b0.n_solves == only.n_solves
    free = label_bounds(dec, [(6, 16, 3)], "5/8", m="full")
    assert (free.free_min_correct == b0.min_correct).all()
    assert (free.free_max_correct == b0.max_correct).all()
