"""Possible evaluations of one grader (Sec. II): the paper's Q=10 binary counts and the
M=1 axiom identity. The paper's 285 and 235 do not follow from its definitions: its own
formula (Q+1)(Q+2)(Q+3)/6 gives 286, and the inequality count is 210."""

from math import comb

from hypothesis import given, strategies as st

from evalcert.logic import count_evaluations, evaluation_counts, iter_evaluations, m1_axiom_terms
from evalcert.logic.evaluations import trace_range_feasible
from evalcert.logic.exams import grade_sets, grades_at_key


def test_binary_q10_counts_286_210_35():
    c = evaluation_counts((4, 6))
    assert (c.a_priori, c.inequalities, c.axioms) == (286, 210, 35)
    assert c.a_priori == 11 * 12 * 13 // 6
    assert [n for _, n in c.axioms_by_key] == [1, 2, 3, 4, 5, 5, 5, 4, 3, 2, 1]


def test_binary_axiom_filter_on_3d_points_gives_35():
    pts = [(qa, ra, rb) for qa in range(11) for ra in range(min(qa, 4) + 1)
           for rb in range(min(10 - qa, 6) + 1)]
    assert len(pts) == 210
    assert sum(ra - qa + 6 - rb == 0 for qa, ra, rb in pts) == 35
    assert 3 - 7 + 6 - 1 != 0 and 2 - 7 + 6 - 1 == 0  # the paper's (3,1,7) vs (2,1,7)


def test_three_label_a_priori_is_c_q_plus_8_choose_8():
    for q in (1, 4, 9):
        assert evaluation_counts((q, 0, 0)).a_priori == comb(q + 8, 8)


@given(st.integers(2, 3).flatmap(lambda r: st.tuples(
    st.lists(st.integers(0, 4), min_size=r, max_size=r),
    st.lists(st.integers(0, 4), min_size=r, max_size=r))))
def test_enumeration_count_axioms_and_traces(pair):
    key, dec = pair
    if sum(key) != sum(dec) or sum(key) == 0:
        dec = list(key)
    tables = list(iter_evaluations(key, dec))
    assert len(tables) == len(set(tables)) == count_evaluations(key, dec)
    for t in tables:
        assert [sum(row) for row in t] == list(key)
        assert [sum(col) for col in zip(*t)] == list(dec)
        assert m1_axiom_terms(t, key, dec) == [0] * len(key)
    traces = {sum(t[l][l] for l in range(len(key))) for t in tables}
    assert set(grades_at_key(dec, key)) == traces
    assert all(trace_range_feasible(key, dec, c) == (c in traces) for c in range(sum(key) + 1))


def test_trace_set_can_have_gaps_and_union_is_everything():
    assert grades_at_key((1, 1), (1, 1)) == (0, 2)
    g = grade_sets({"x": {"a": 3, "b": 1, "c": 2}})
    assert len(g.grades["x"]) == 7
