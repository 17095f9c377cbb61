"""Estimates beside the bounds (issue 11 item 6): crowd-kit, statsmodels, krippendorff.

The logic is the referee: an estimate's claimed common accuracy must not exceed T, and the
evaluation at its hard labels is recomputed here by hand.
"""

from fractions import Fraction

import numpy as np
import pytest

pytest.importorskip("crowdkit", reason="crowd-kit not installed (pip install evalcert[estimates])")
pytest.importorskip("statsmodels", reason="statsmodels not installed")
pytest.importorskip("krippendorff", reason="krippendorff not installed")

from evalcert.datasets.mtbench import table1_decisions  # noqa: E402
from evalcert.logic.estimates import agreement, bootstrap_t, estimate  # noqa: E402
from evalcert.logic.joint import full_alarm_threshold  # noqa: E402
from evalcert.logic.simulate import simulate_decisions, simulate_log  # noqa: E402


@pytest.mark.parametrize("method", ["ds", "mv"])
def test_estimates_are_checked_against_t_and_their_evaluation_is_exact(method):
    dec = simulate_decisions(30, 3, 4, seed=3)
    t = full_alarm_threshold(dec)
    est = estimate(dec, t, method)
    assert est.hard_min <= t  # T is the max over all keys of this very quantity
    if method == "mv":  # its hard labels are a key: only hard_min <= T is left to check
        assert est.consistent == (est.hard_min <= t)
    else:  # the whole evaluation is checked: a claim above T can never pass
        assert est.consistent <= (est.claimed_min <= float(t) + 1e-9)
    arr = dec.array
    for i, g in enumerate(dec.graders):
        assert sum(est.decided[g]) == len(dec.items)
        assert sum(est.correct[g]) <= int((arr[:, i] >= 0).sum())
    assert sum(est.key) == len(dec.items)


def test_an_overconfident_claim_is_reported_outside_the_consistent_set():
    est = estimate(table1_decisions(), Fraction(1, 10), "mv")
    assert not est.consistent and "FAILS" in est.summary()


def test_majority_vote_of_unanimous_graders_is_the_truth():
    log, truth = simulate_log(30, 3, 3, seed=1, acc_low=1.0, acc_high=1.0)
    from evalcert.logic import decisions_from_frame

    dec = decisions_from_frame(log, labels=["l0", "l1", "l2"])
    est = estimate(dec, Fraction(1), "mv")
    assert est.key == tuple(int((truth == t).sum()) for t in range(3))
    assert est.hard_min == 1


def test_agreement_matches_hand_computed_cohen_kappa():
    dec = table1_decisions()  # authors vs gpt4
    ag = agreement(dec)
    arr = dec.array
    po = float((arr[:, 0] == arr[:, 1]).mean())
    pe = sum(float((arr[:, 0] == l).mean() * (arr[:, 1] == l).mean()) for l in range(3))
    assert ag.cohen_kappa["authors~gpt4"] == pytest.approx((po - pe) / (1 - pe), abs=1e-12)
    assert -1 <= ag.krippendorff_alpha <= 1 and ag.fleiss_kappa is not None


def test_agreement_with_skipped_items():
    dec = simulate_decisions(40, 3, 3, seed=2, skip=0.2)
    ag = agreement(dec)
    assert ag.fleiss_kappa is None and np.isfinite(ag.krippendorff_alpha)


def test_bootstrap_is_seeded_and_labelled_a_population_statement():
    dec = table1_decisions()
    a, b = bootstrap_t(dec, 50, seed=4), bootstrap_t(dec, 50, seed=4)
    assert a == b and "population" in a["meaning"]
    assert 0 <= a["interval"][0] <= a["interval"][1] <= 1
