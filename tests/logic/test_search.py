"""Issue 25, item 4: the binding check's local move (:func:`evalcert.logic.search.
exchange_above`) against a brute force over every single exchange, the binding pairs with
and without it against brute force over item-level truths, and the overall time limit
passed into every HiGHS solve (:attr:`evalcert.logic.ilp.HighsModel.deadline`)."""

import itertools
import time
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from evalcert.errors import SolverError
from evalcert.logic.joint import alarm_full
from evalcert.logic.search import exchange_above
from evalcert.logic.simulate import simulate_decisions

from tests.logic._helpers import brute_force_joint, decisions, hard_knapsack, instance
from tests.logic.test_joint_skips import brute_force_binding

LABELS = ["a", "b", "c"]


def cells(pats, split):
    """(correct, den) per (grader, label) of a joint split, by plain loops."""
    n_g, r = pats.shape[1], split.shape[1]
    corr = np.zeros((n_g, r), dtype=np.int64)
    den = np.zeros((n_g, r), dtype=np.int64)
    for p in range(len(pats)):
        for t in range(r):
            for i in range(n_g):
                corr[i, t] += split[p, t] * (pats[p, i] == t)
                den[i, t] += split[p, t] * (pats[p, i] >= 0)
    return corr, den


def at_level(corr, den, level):
    a, b = level.numerator, level.denominator
    return all(b * c >= a * d for c, d in zip(corr.ravel(), den.ravel()) if d)


def above(corr, den, cell, level):
    return den[cell] >= 1 and level.denominator * corr[cell] > level.numerator * den[cell]


def single_exchanges(split):
    """Every split one exchange away (p1: s -> t, p2: t -> s), by brute force."""
    n_p, r = split.shape
    for p1, p2, s, t in itertools.product(range(n_p), range(n_p), range(r), range(r)):
        if p1 != p2 and s != t and split[p1, s] > 0 and split[p2, t] > 0:
            out = split.copy()
            out[p1, s] -= 1
            out[p1, t] += 1
            out[p2, t] -= 1
            out[p2, s] += 1
            yield t, out


@st.composite
def split_case(draw):
    r = draw(st.integers(2, 3))
    n_g = draw(st.integers(1, 4))
    n_p = draw(st.integers(1, 6))
    pats = np.array(draw(st.lists(st.lists(st.integers(-1, r - 1), min_size=n_g,
                                           max_size=n_g), min_size=n_p, max_size=n_p)))
    split = np.array(draw(st.lists(st.lists(st.integers(0, 3), min_size=r, max_size=r),
                                   min_size=n_p, max_size=n_p)))
    level = draw(st.sampled_from([Fraction(0), Fraction(1, 3), Fraction(1, 2),
                                  Fraction(2, 3), Fraction(3, 4)]))
    cell = (draw(st.integers(0, n_g - 1)), draw(st.integers(0, r - 1)))
    return pats, split, level, cell


@settings(max_examples=100, deadline=None)
@given(split_case())
def test_exchange_above_finds_a_single_exchange_iff_one_exists(case):
    pats, split, level, cell = case
    corr, den = cells(pats, split)
    assume(at_level(corr, den, level))  # as the witness of T is
    out = exchange_above(pats, split, cell, level)
    if above(corr, den, cell, level):
        assert out is None  # nothing to find
        return
    wanted = [new for t, new in single_exchanges(split) if t == cell[1] and
              at_level(*cells(pats, new), level) and above(*cells(pats, new), cell, level)]
    if out is None:
        assert wanted == []
        return
    assert (out >= 0).all() and (out.sum(axis=1) == split.sum(axis=1)).all()
    assert (out.sum(axis=0) == split.sum(axis=0)).all()  # the key stays
    new_corr, new_den = cells(pats, out)
    assert at_level(new_corr, new_den, level) and above(new_corr, new_den, cell, level)
    assert any((out == w).all() for w in wanted)


@settings(max_examples=10, deadline=None)
@given(instance(max_graders=4, max_q=6, skip=True))
def test_binding_with_the_local_move_equals_brute_force(inst):
    """Binding pairs (local move first, then MILPs) on logs with and without skips equal
    the definition over every item-level truth at the witness key."""
    r, cols = inst
    cols = [c if any(v >= 0 for v in c) else [0] + c[1:] for c in cols]
    dec = decisions(cols, LABELS[:r], on_missing="keep")
    res = alarm_full(dec, "0.5", max_binding_keys=1)
    assert res.T == brute_force_joint(dec)
    if res.T > 0:
        assert set(res.binding) == brute_force_binding(dec, res.attaining_keys[0], res.T)


def test_the_local_move_saves_milps_on_a_simulated_panel(monkeypatch):
    """On a simulated 200-item panel the binding pairs are the same with the local move
    switched off, and the move decides some cells without a MILP."""
    import evalcert.logic.joint as joint

    dec = simulate_decisions(200, 3, 5, seed=3)
    with_move = alarm_full(dec, "0.5")
    calls = []
    monkeypatch.setattr(joint, "exchange_above", lambda *a: calls.append(a) and None)
    without = alarm_full(dec, "0.5")
    assert with_move.T == without.T and set(with_move.binding) == set(without.binding)
    assert with_move.n_solves <= without.n_solves


def test_a_deadline_in_the_past_stops_the_next_solve():
    model = hard_knapsack()
    model.deadline = time.perf_counter() - 1.0
    with pytest.raises(SolverError, match="time limit") as err:
        model.solve()
    assert err.value.status == "time_limit"
    model.deadline = None
    assert model.solve() == "Optimal"


@pytest.mark.parametrize("limit", [0.05, 0.3, 1.0])
def test_a_time_limit_inside_one_milp_returns_bounds_in_time(limit):
    """A limit that ends inside a MILP (the 1000-item, 8-grader panel's first fixed-key
    MILPs take ~1 s each) returns the proven bounds around the exact T (computed once,
    without a limit) within the limit plus a small slack (the LP start point and one
    re-solve)."""
    dec = simulate_decisions(400, 3, 8, seed=1)
    exact = alarm_full(dec, "0.5", max_binding_keys=0, max_checks=0).T
    start = time.perf_counter()
    res = alarm_full(dec, "0.5", time_limit=limit)
    wall = time.perf_counter() - start
    if res.T_upper is not None:
        assert res.T <= exact <= res.T_upper
    else:
        assert res.T == exact
    assert wall <= limit + 1.5


@pytest.mark.parametrize("m", ["1", "2", "full"])
@pytest.mark.parametrize("seed", [0, 1])
def test_half_credit_key_search_equals_the_level_search(m, seed):
    """Half credit (doubled ratios, denominators up to 2 Q) on the key search equals the
    whole-Q-complex level search it replaced, on 30-item logs (brute force covers the small
    ones in test_ordinal_credit.py)."""
    from evalcert.logic.ordinal import alarm_credit, credit_table

    dec = simulate_decisions(30, 3, 3, seed=seed)
    table = credit_table(("a", "b", "tie"), ties="half")
    keys = alarm_credit(dec, "0.5", table, m=m)
    levels = alarm_credit(dec, "0.5", table, m=m, search="levels")
    assert keys.T == levels.T
    if keys.attaining_keys[:1] == levels.attaining_keys[:1]:  # binding is per witness key
        assert set(keys.binding) == set(levels.binding)


@pytest.mark.parametrize("which", ["m2", "full", "half"])
def test_the_bar_says_keys_decided_and_bounds_on_t(which, capsys):
    """M=2, the full joint and half credit all draw the key search's bar (keys decided, the
    proven bounds on T) on stderr; ``verbose`` draws it at once instead of past ~3 s."""
    from evalcert.logic.ordinal import alarm_credit, credit_table
    from evalcert.logic.pairs import alarm_m2

    dec = simulate_decisions(60, 3, 3, seed=2)
    if which == "m2":
        res = alarm_m2(dec, "0.5", verbose=True)
    elif which == "full":
        res = alarm_full(dec, "0.5", verbose=True)
    else:
        res = alarm_credit(dec, "0.5", credit_table(("a", "b", "tie"), ties="half"),
                           verbose=True)
    err = capsys.readouterr().err
    assert "T in [" in err and "key" in err
    assert f"T = {res.T}" in err  # the closing line names the exact T


@settings(max_examples=25, deadline=None)
@given(instance(max_graders=3, max_q=6), st.sampled_from([Fraction(1, 3), Fraction(1, 2),
                                                          Fraction(2, 3), Fraction(3, 4)]))
def test_fixed_key_verdicts_equal_brute_force(inst, level):
    """Every fixed-key MILP verdict of the key search (an LP infeasibility proof first, the
    correct-count columns continuous: implied integer) at every key of a small complete log,
    with and without a cell required strictly above ``level``, equals the brute force over
    every item-level truth with that key."""
    from evalcert.logic.search import KeySearch
    from evalcert.logic.splits import JointModel

    r, cols = inst
    dec = decisions(cols, LABELS[:r])
    arr, q_n = dec.array, len(dec.items)
    reach = {}  # key -> set of (cells at level, cells above) reachable, by brute force
    for truth in itertools.product(range(r), repeat=q_n):
        truth = np.array(truth)
        key = tuple(int((truth == t).sum()) for t in range(r))
        corr = np.array([[int(((truth == t) & (arr[:, i] == t)).sum()) for t in range(r)]
                         for i in range(arr.shape[1])])
        den = np.array([list(key)] * arr.shape[1])
        if at_level(corr, den, level):
            reach.setdefault(key, []).append((corr, den))
    model = JointModel(dec)
    search = KeySearch(model.prob, model.q, model.correct, model.den, q_n)
    a, b = level.numerator, level.denominator
    for key in itertools.product(range(q_n + 1), repeat=r):
        if sum(key) != q_n:
            continue
        points = reach.get(key, [])
        assert search.solve_at(key, level) == bool(points)
        for i, t in itertools.product(range(arr.shape[1]), range(r)):
            want = any(above(corr, den, (i, t), level) for corr, den in points)
            got = search.solve_at(key, level, require=[
                ([(model.correct[i][t], b), (model.den[i][t], -a)], 1)])
            assert got == want, (key, i, t)


def test_correct_counts_summing_integer_variables_are_continuous_columns():
    """With complete decisions, columns standing for correct counts (sums of integer
    variables) are continuous in HiGHS (implied integer); the key counts and level columns
    stay integer, and so does every column with skipped items (the key does not fix the
    denominators); a combination with a fractional coefficient or a continuous variable is
    not implied integer."""
    import pulp

    from evalcert.logic.search import KeySearch, _implied_integer
    from evalcert.logic.splits import JointModel

    model = JointModel(simulate_decisions(20, 3, 2, seed=0))
    search = KeySearch(model.prob, model.q, model.correct, model.den, 20)
    assert all(search.column(e) in search.model.integer for e in model.q)
    assert all(search.column(e) not in search.model.integer for row in model.correct
               for e in row)
    assert all(m in search.model.integer for _, m, _ in search.levels)  # M stays integer
    assert search.dens_fixed  # complete decisions: the key fixes every denominator
    skips = JointModel(decisions([[0, 1, -1, 2], [1, 1, 0, -1]], LABELS, on_missing="keep"))
    search = KeySearch(skips.prob, skips.q, skips.correct, skips.den, 4)
    assert not search.dens_fixed  # with skipped items every column stays as it was
    assert all(search.column(e) in search.model.integer for row in skips.correct
               for e in row)
    prob = pulp.LpProblem("demo", pulp.LpMaximize)
    x = prob.add_variable("x", 0, 3, cat="Integer")
    y = prob.add_variable("y", 0, 3)
    assert _implied_integer(2 * x + 1) and not _implied_integer(0.5 * x)
    assert not _implied_integer(x + y) and not _implied_integer(x + 0.5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_primal_lp_ranges_equal_the_dual_ones(seed):
    """The key search's LP range queries take the primal simplex on complete decisions;
    each key count's LP minimum and maximum at a level equals the dual simplex's."""
    from evalcert.logic.search import KeySearch
    from evalcert.logic.splits import JointModel

    dec = simulate_decisions(150, 3, 4, seed=seed)
    model = JointModel(dec)
    search = KeySearch(model.prob, model.q, model.correct, model.den, 150)
    assert search.dens_fixed
    for level in (Fraction(1, 2), Fraction(2, 3)):
        search.set_level(level)
        search._fix(None, level)
        for col in search.key:
            for maximize in (False, True):
                search.model.set_objective({col: 1.0}, maximize=maximize)
                ends = []
                for primal in (True, False):
                    assert search.model.solve(relax=True, primal=primal) == "Optimal"
                    ends.append(search.model.values()[col])
                assert ends[0] == pytest.approx(ends[1], abs=1e-6)
