"""Swapped answer orders (issue 25, item 3): a pairwise log holding each comparison as A/B and
B/A becomes one item judged by ``<judge>/ab`` and ``<judge>/ba``, with the judge's swap
consistency; a judge that always picks the first answer is caught."""

import numpy as np
import pandas as pd
import pytest

from evalcert.errors import InputError
from evalcert.logic.audit import AuditSpec, run_audit
from evalcert.logic.summaries import decisions_from_frame
from evalcert.logic.swaps import merge_swapped


def pairwise_log(n=60, seed=0, one_order=0):
    """Judges ``fair`` (right 90%, same in both orders), ``first`` (always the answer shown
    first) and ``noisy`` (right 75%, independent per order); the better model is known."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n):
        x, y = "m1", f"m{2 + q % 3}"
        better = x if rng.random() < 0.6 else y
        fair = better if rng.random() < 0.9 else "tie"
        orders = [(x, y), (y, x)][:1 if q < one_order else 2]
        for a, b in orders:
            def said(winner):
                return "tie" if winner == "tie" else ("model_a" if winner == a else "model_b")
            noisy = better if rng.random() < 0.75 else (a if better == b else b)
            rows += [(q, a, b, said(fair), "fair"), (q, a, b, "model_a", "first"),
                     (q, a, b, said(noisy), "noisy")]
    return pd.DataFrame(rows, columns=["question_id", "model_a", "model_b", "winner", "judge"])


def test_merge_flips_the_swapped_presentation_and_measures_consistency(tmp_path):
    log = tmp_path / "pairs.csv"
    pairwise_log().to_csv(log, index=False)
    report = run_audit(AuditSpec(log, "0.5", fmt="pairwise", swapped=True, judges=True,
                                 m="full"))
    sw = report.read["swapped"]
    assert sw["items_before"] == 120 and sw["comparisons"] == 60
    assert sw["swap_consistency"]["fair"] == 1.0
    assert sw["swap_consistency"]["first"] == 0.0  # "a" in both orders means opposite answers
    assert 0.4 < sw["swap_consistency"]["noisy"] < 0.9
    assert set(report.result.graders) == {f"{g}/{o}" for g in ("fair", "first", "noisy")
                                          for o in ("ab", "ba")}
    rows = {r["judge"]: r for r in report.to_dict()["judges"]}
    assert rows["first/ab"]["swap_consistency"] == 0.0
    assert rows["fair/ba"]["swap_consistency"] == 1.0


def test_merged_codes_against_a_hand_count():
    frame = pairwise_log(n=12, seed=3)
    frame["item"] = (frame.question_id.astype(str) + "|" + frame.model_a + "|" + frame.model_b)
    frame["label"] = frame.winner.map({"model_a": "a", "model_b": "b", "tie": "tie"})
    frame["grader"] = frame.judge
    merged = merge_swapped(decisions_from_frame(frame, labels="a,b,tie"))
    dec = merged.decisions
    for k, item in enumerate(dec.items):
        q, first, second = item.split("|")
        for i, g in enumerate(dec.graders):
            judge, order = g.split("/")
            a, b = (first, second) if order == "ab" else (second, first)
            raw = frame[(frame.question_id.astype(str) == q) & (frame.model_a == a)
                        & (frame.model_b == b) & (frame.judge == judge)].label.item()
            winner = {"a": a, "b": b, "tie": "tie"}[raw]
            want = {first: "a", second: "b", "tie": "tie"}[winner]
            assert dec.labels[dec.codes[k][i]] == want


def test_one_order_only_follows_on_missing(tmp_path):
    log = tmp_path / "pairs.csv"
    pairwise_log(one_order=5).to_csv(log, index=False)
    with pytest.raises(InputError, match="one order only"):
        run_audit(AuditSpec(log, "0.5", fmt="pairwise", swapped=True))
    report = run_audit(AuditSpec(log, "0.5", fmt="pairwise", swapped=True, on_missing="drop"))
    assert report.read["swapped"]["dropped_one_order"] == 5
    assert report.read["swapped"]["judged_in_both_orders"]["fair"] == 55


def test_items_that_are_not_pairwise_are_refused():
    dec = decisions_from_frame(pd.DataFrame({"item": ["q1"], "grader": "g", "label": "a"}),
                               labels="a,b")
    with pytest.raises(InputError, match="pairwise items"):
        merge_swapped(dec)
