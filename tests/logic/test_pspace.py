"""Fig. 2: a binary classifier's possible evaluations in P-space, counted and cross-checked
against the table enumeration of Sec. II, and the M=1 alarm read off the P-space view."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from evalcert.errors import InputError
from evalcert.logic.alarms import alarm
from evalcert.logic.evaluations import evaluation_counts, iter_evaluations
from evalcert.logic.pspace import (MAX_POINTS, STAGES, pspace_evaluations, pspace_size,
                                   shared_prevalences)
from evalcert.logic.qcomplex import iter_qcomplex


def test_q10_counts_286_210_35_as_sec_ii():
    assert [len(pspace_evaluations(10, (4, 6), s)) for s in STAGES] == [286, 210, 35]
    assert len(pspace_evaluations(10, stage="a priori")) == 11 * 12 * 13 // 6


def test_paper_example_point_excluded_by_the_axiom():
    """Sec. II: (R_aa, R_bb, Q_a) = (3, 1, 7) passes the inequalities, not the axioms;
    (2, 1, 7) passes both."""
    pts = {s: set(zip(*(a.tolist() for a in (sp.q_a, sp.r_aa, sp.r_bb))))
           for s in STAGES for sp in [pspace_evaluations(10, (4, 6), s)]}
    assert (7, 3, 1) in pts["inequalities"] and (7, 3, 1) not in pts["axioms"]
    assert (7, 2, 1) in pts["axioms"]


def test_p_coordinates_exact_and_undefined_where_a_label_is_empty():
    space = pspace_evaluations(10, stage="a priori")
    p_a, p_aa, p_bb = space.coordinates()
    for k in range(len(space)):
        exact = space.point(k)
        assert float(exact[0]) == p_a[k]
        assert (exact[1] is None) == np.isnan(p_aa[k]) == (space.q_a[k] == 0)
        assert (exact[2] is None) == np.isnan(p_bb[k]) == (space.q_a[k] == 10)
        if exact[1] is not None:
            assert exact[1] == Fraction(int(space.r_aa[k]), int(space.q_a[k]))
    assert int(np.isnan(p_aa).sum()) == int(np.isnan(p_bb).sum()) == 11


binary = st.integers(1, 14).flatmap(lambda q: st.tuples(st.just(q), st.integers(0, q)))


@settings(max_examples=60)
@given(binary)
def test_stages_equal_the_table_enumeration(qr):
    """Every 2x2 evaluation table of Sec. II is one R-space point (Q_a, E_aa, E_bb): the
    axioms stage is exactly the tables with the grader's column sums, at every key."""
    q, r_a = qr
    dec = (r_a, q - r_a)
    counts = evaluation_counts(dec)
    assert [pspace_size(q, dec, s) for s in STAGES] == \
        [counts.a_priori, counts.inequalities, counts.axioms]
    space = pspace_evaluations(q, dec, "axioms")
    got = sorted(zip(space.q_a.tolist(), space.r_aa.tolist(), space.r_bb.tolist()))
    want = sorted((key[0], t[0][0], t[1][1]) for key in iter_qcomplex(q, 2)
                  for t in iter_evaluations(key, dec))
    assert got == want
    ineq = pspace_evaluations(q, dec, "inequalities")
    assert np.all(ineq.r_aa <= r_a) and np.all(ineq.r_bb <= q - r_a)
    assert len(set(zip(ineq.q_a.tolist(), ineq.r_aa.tolist(), ineq.r_bb.tolist()))) == len(ineq)


@settings(max_examples=80)
@given(st.integers(1, 12).flatmap(lambda q: st.tuples(
    st.just(q), st.lists(st.integers(0, q), min_size=1, max_size=4),
    st.fractions(0, 1, max_denominator=12))))
def test_shared_prevalences_empty_iff_the_m1_alarm_fires(case):
    q, r_as, x = case
    summaries = {f"g{i}": {"a": r, "b": q - r} for i, r in enumerate(r_as)}
    spaces = [pspace_evaluations(q, (r, q - r)) for r in r_as]
    shared = shared_prevalences(spaces, x)
    result = alarm(summaries, x, labels=("a", "b"), curves=False)
    assert (len(shared) == 0) == result.fires
    # and each shared Q_a is a key whose closed-form value exceeds x
    for qa in shared.tolist():
        best = [min(qa, r) * 1 for r in r_as], [min(q - qa, q - r) for r in r_as]
        assert all(qa == 0 or Fraction(b, qa) > x for b in best[0])
        assert all(qa == q or Fraction(b, q - qa) > x for b in best[1])


def test_clears_is_strict_and_exact():
    space = pspace_evaluations(4, (2, 2))
    k = int(np.flatnonzero((space.q_a == 2) & (space.r_aa == 1))[0])   # 1/2 on a
    assert not space.clears("1/2")[k] and space.clears("0.49")[k]


def test_refusals():
    with pytest.raises(InputError, match="two labels"):
        pspace_evaluations(10, (4, 6), labels=("a", "b", "c"))
    with pytest.raises(InputError, match="summing to Q"):
        pspace_evaluations(10, (4, 5))
    with pytest.raises(InputError, match="limit"):
        pspace_evaluations(400, stage="a priori")
    assert pspace_size(400) > MAX_POINTS
    with pytest.raises(InputError, match="stage"):
        pspace_evaluations(4, (2, 2), stage="nope")


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40).flatmap(lambda q: st.tuples(
    st.just(q), st.lists(st.integers(0, q), min_size=1, max_size=4),
    st.fractions(0, 1, max_denominator=12), st.integers(2, 30))))
def test_summary_in_closed_form_equals_the_enumeration(case):
    """pspace_summary counts classes per prevalence without enumerating; the enumerated
    axioms-stage points, classified as plot_pspace colours them, give the same numbers, and
    every listed point is one of them with its class."""
    from evalcert.logic.pspace import CLASSES, pspace_summary

    q, r_as, x, max_points = case
    decided = [(r, q - r) for r in r_as]
    spaces = [pspace_evaluations(q, d, "axioms") for d in decided]
    shared = shared_prevalences(spaces, x)
    s = pspace_summary(q, decided, x, max_points=max_points)
    assert s["fires"] == (not len(shared))
    runs = [v for a, b in s["shared_prevalences"] for v in range(a, b + 1)]
    assert runs == shared.tolist() and s["n_shared"] == len(shared)
    for space, row in zip(spaces, s["graders"]):
        clears = space.clears(x)
        here = np.isin(space.q_a, shared)
        cls = np.where(~clears, 0, np.where(here, 2, 1))
        assert row["classes"] == {c: int((cls == k).sum()) for k, c in enumerate(CLASSES)}
        assert row["stages"] == {st_: pspace_size(q, space.decided, st_) for st_ in STAGES}
        assert row["points_total"] == len(space)
        clear_at = [v for a, b in row["clears_at"] for v in range(a, b + 1)]
        assert clear_at == np.unique(space.q_a[clears]).tolist()
        points = {(a, b, c): CLASSES[k] for a, b, c, k in
                  zip(space.q_a.tolist(), space.r_aa.tolist(), space.r_bb.tolist(), cls)}
        listed = row["points"]
        assert len(listed) == min(max_points, len(space))
        assert all(points[(a, b, c)] == k for a, b, c, k in listed)
        if listed:                                   # enumeration order, both ends kept
            assert listed[0][:3] == [int(space.q_a[0]), int(space.r_aa[0]),
                                     int(space.r_bb[0])]
            assert listed[-1][:3] == [int(space.q_a[-1]), int(space.r_aa[-1]),
                                      int(space.r_bb[-1])]
            assert listed == sorted(listed, key=lambda p: (p[0], p[1]))


def test_summary_is_bounded_at_real_size():
    """Q = 100,000: no enumeration (the axioms set has billions of points), bounded output."""
    import json

    from evalcert.logic.pspace import pspace_summary

    s = pspace_summary(100_000, [(60_000, 40_000), (45_000, 55_000)], "0.6", max_points=200)
    assert s["graders"][0]["points_total"] > 1_000_000_000
    assert sum(s["graders"][0]["classes"].values()) == s["graders"][0]["points_total"]
    assert len(json.dumps(s)) < 40_000
