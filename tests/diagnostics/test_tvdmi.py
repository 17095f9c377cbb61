"""TVD-MI scores from judge decisions (paper 000, App. B, Eq. 11)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalcert.diagnostics.tvdmi import tvdmi_scores
from evalcert.io.tvdmi import read_tvdmi_examples
from evalcert.errors import InputError
from tests.conftest import require_shared
from tests.diagnostics.conftest import TVD


def _table(seed: int = 0, K: int = 4, J: int = 3, draws: int = 2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [(f"q{j}", f"a{i}", f"a{k}", d, float(rng.choice([0.0, 0.25, 1.0])))
            for j in range(J) for i in range(K) for k in range(K) if k != i
            for d in ("P", "Q") for _ in range(draws)]
    return pd.DataFrame(rows, columns=["item", "agent", "partner", "draw", "outcome"])


def test_eq11_score_is_mean_over_partners_of_tpr_minus_fpr():
    t = _table()
    res = tvdmi_scores(t)
    g = t[(t.item == "q1") & (t.agent == "a2")]
    rate = g.groupby(["partner", "draw"]).outcome.mean().unstack()
    assert res.scores[2, 1] == pytest.approx((rate.P - rate.Q).mean())
    assert res.n_calls == len(t) and res.n_failed_calls == 0


def test_failed_calls_are_missing_counted_and_reported():
    t = _table(draws=1)
    fail = (t.item == "q0") & (t.agent == "a0") & (t.partner == "a1") & (t.draw == "P")
    t.loc[fail, "outcome"] = np.nan
    res = tvdmi_scores(t)
    ok = t[(t.item == "q0") & (t.agent == "a0") & (t.partner != "a1")]
    rate = ok.groupby(["partner", "draw"]).outcome.mean().unstack()
    assert res.scores[0, 0] == pytest.approx((rate.P - rate.Q).mean())   # 2 partners, not 3
    assert res.n_failed_calls == 1 and res.n_missing_terms == 1
    assert "failed calls" in res.summary()


def test_holdout_before_scoring_a_held_out_cell_feeds_no_training_score():
    t = _table()
    hold = np.zeros((4, 3), bool)
    hold[1, 2] = True
    base = tvdmi_scores(t, hold)
    changed = t.copy()
    touches = (changed.item == "q2") & ((changed.agent == "a1") | (changed.partner == "a1"))
    changed.loc[touches, "outcome"] = 1.0 - changed.loc[touches, "outcome"]
    again = tvdmi_scores(changed, hold)
    np.testing.assert_array_equal(base.scores, again.scores)
    assert np.isnan(base.scores[1, 2]) and not np.isnan(base.holdout_scores[1, 2])
    assert base.n_excluded_terms == 3 + 3 and base.matrix().n_observed == 11


def test_bad_outcome_tables_are_typed():
    with pytest.raises(InputError, match="column"):
        tvdmi_scores(pd.DataFrame({"item": [1]}))
    t = _table()
    t.loc[0, "draw"] = "R"
    with pytest.raises(InputError, match="draw"):
        tvdmi_scores(t)
    with pytest.raises(InputError, match="holdout"):
        tvdmi_scores(_table(), np.zeros((2, 2), bool))


@pytest.mark.parametrize("domain,name,failed", [
    ("pubmed_200_config_results", "pubmed_200", 376),
    ("peer_review_results_100", "iclr_peer_review_100", 87)])
def test_reader_rebuilds_the_derived_matrices_byte_for_byte(domain, name, failed):
    folder = require_shared(f"{TVD}/eval_results/{domain}/tvd_mi_individual_examples")
    ex = read_tvdmi_examples(folder)
    assert ex.n_failed_calls == failed                    # README: 376 PubMed, 87 ICLR
    for kind, S in (("directional", ex.scores().matrix()), ("bidirectional", ex.bidirectional())):
        expected = require_shared(f"{TVD}/derived/{name}_S_{kind}.csv").read_text()
        assert S.to_frame().to_csv(float_format="%.10f") == expected


def test_reader_needs_example_files(tmp_path):
    with pytest.raises(InputError, match="tvd_mi_example"):
        read_tvdmi_examples(tmp_path)
