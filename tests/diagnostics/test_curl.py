"""Curl / discrete integrability test (paper 000, Sec. 4.2-4.3, Tables 1-2, 6)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from evalcert.data import ScoreMatrix
from evalcert.io.scores import read_scores
from evalcert.diagnostics.curl import (curl_test, link_transform, rectangle_deviation,
                                       sample_rectangles, score_grid)
from evalcert.errors import InputError
from tests.conftest import require_shared
from tests.diagnostics.conftest import TVD, additive_scores


def test_eq8_rectangle_deviation_signs():
    s = np.array([[1.0, 2.0], [4.0, 8.0]])
    assert rectangle_deviation(s, np.array([[0, 1, 0, 1]]))[0] == 1 - 4 - 2 + 8


def test_eq9_10_additive_scores_have_zero_curl_on_every_link_identity_only():
    theta, b = np.array([0.5, 0.1, -0.2, 0.3]), np.array([0.0, 0.2, -0.3, 0.1, 0.4])
    res = curl_test(ScoreMatrix.from_array(np.subtract.outer(theta, b)), n_rectangles=500)
    assert res.median["identity"] < 1e-12 and res.p95["identity"] < 1e-12
    assert res.median["logit"] > 0.01


def test_links_use_p_of_clipped_scores():
    s = np.array([-1.0, 0.0, 1.0])
    np.testing.assert_allclose(link_transform(s, "logit"), np.log([0.005 / 0.995, 1, 199]))
    np.testing.assert_allclose(link_transform(s, "probit")[1], 0.0)
    with pytest.raises(InputError, match="unknown link"):
        link_transform(s, "cloglog")


def test_rectangles_have_distinct_rows_cols_and_observed_corners():
    rng = np.random.default_rng(1)
    obs = rng.random((15, 30)) < 0.6
    rect = sample_rectangles(obs, 2000, seed=3)
    i, ip, j, jp = rect.T
    assert np.all(i != ip) and np.all(j != jp)
    assert all(obs[a, c].all() for a, c in ((i, j), (ip, j), (i, jp), (ip, jp)))
    np.testing.assert_array_equal(rect, sample_rectangles(obs, 2000, seed=3))


def test_same_rectangles_for_every_link(small):
    res = curl_test(small, n_rectangles=300, seed=5)
    for link in res.links:
        expected = np.abs(rectangle_deviation(link_transform(small.values, link), res.rectangles))
        np.testing.assert_array_equal(res.abs_deviation[link], expected)


def test_table6_curl_of_additive_predictions_is_zero_for_identity(small):
    pred = np.subtract.outer(small.values.mean(axis=1), small.values.mean(axis=0))
    res = curl_test(small, n_rectangles=300, predictions=pred)
    assert res.prediction_median["identity"] < 1e-12
    assert res.prediction_median["logit"] > 0


def test_table2_bootstrap_cis_are_seeded_and_ordered(small):
    a = curl_test(small, n_rectangles=300, n_boot=20, seed=2)
    b = curl_test(small, n_rectangles=300, n_boot=20, seed=2)
    assert [d.to_dict() for d in a.differences] == [d.to_dict() for d in b.differences]
    assert [(d.a, d.b) for d in a.differences] == [("identity", "probit"), ("identity", "logit"),
                                                   ("probit", "logit")]
    assert all(d.lower <= d.upper for d in a.differences)
    assert "bootstrap" in a.summary() and a.to_dict()["median_exact"] is None


def test_score_grid_finds_the_tvdmi_denominator():
    assert score_grid(np.array([[3 / 116, 7 / 116], [1.0, np.nan]])) == 116
    assert score_grid(np.array([[np.pi / 10]])) is None


def test_fewer_than_two_observed_rows_is_an_input_error():
    with pytest.raises(InputError, match="two observed rows"):
        sample_rectangles(np.ones((1, 5), bool), 10)


def test_too_sparse_for_any_rectangle_is_an_input_error():
    with pytest.raises(InputError, match="complete rectangles"):
        sample_rectangles(np.eye(6, dtype=bool), 10)


def test_predictions_of_wrong_shape_are_rejected(small):
    with pytest.raises(InputError, match="shape"):
        curl_test(small, n_rectangles=10, predictions=np.zeros((2, 2)))


@pytest.mark.parametrize("name,exact,probit,logit", [
    # Table 1 reports 0.129 (PubMed) and 0.080 (ICLR): exactly 15/116 and 9/112 on the grid.
    ("pubmed_200_S_directional", Fraction(15, 116), 0.2400, 0.4312),
    ("iclr_peer_review_100_S_directional", Fraction(9, 112), 0.2930, 0.6042),
    # OPUS: the paper's 0.150 is 18/120 = 3/20 exactly here.
    ("opus_gpt4omini_186_S_directional", Fraction(3, 20), 0.2668, 0.4720),
])
def test_table1_identity_median_and_link_ranges_on_real_data(name, exact, probit, logit):
    S = read_scores(require_shared(f"{TVD}/derived/{name}.csv"))
    res = curl_test(S, n_rectangles=20_000, seed=0)
    assert res.median_exact == exact
    assert abs(res.median["identity"] - float(exact)) < 1e-8
    assert 0.23 <= res.median["probit"] <= 0.30 and 0.42 <= res.median["logit"] <= 0.61
    assert res.median["probit"] == pytest.approx(probit, abs=5e-4)
    assert res.median["logit"] == pytest.approx(logit, abs=5e-4)


def test_table1_identity_median_exact_for_other_seeds():
    S = read_scores(require_shared(f"{TVD}/derived/pubmed_200_S_directional.csv"))
    assert {curl_test(S, ("identity",), seed=s).median_exact for s in (1, 2, 3)} == {
        Fraction(15, 116)}


# ------------------------------------------------------ on cells (issue 13, item 3)
import itertools  # noqa: E402

from scipy.stats import chisquare  # noqa: E402

from evalcert.diagnostics import curl as curl_module  # noqa: E402


def _grouped_design(groups=200, size=10, items_per_group=50, seed=0):
    """0.1% coverage: every item is judged by 2 of the 10 agents of its group."""
    rng = np.random.default_rng(seed)
    rows, cols = [], []
    for g in range(groups):
        for k in range(items_per_group):
            pair = g * size + rng.choice(size, 2, replace=False)
            rows += pair.tolist()
            cols += [g * items_per_group + k] * 2
    K, J = groups * size, groups * items_per_group
    scores = rng.uniform(-1, 1, len(rows))
    return ScoreMatrix.from_cells(rows, cols, scores, [f"a{k}" for k in range(K)],
                                  [f"q{j}" for j in range(J)])


def test_curl_finds_rectangles_at_0_1_percent_coverage():
    S = _grouped_design()
    assert S.coverage == pytest.approx(0.001)
    cells = curl_module._Cells.of(S)
    # four uniform random corners are all observed once in ~10^12 draws: the old sampler fails
    assert curl_module._uniform_draws(cells, 200, np.random.default_rng(0)) is None
    res = curl_test(S, n_rectangles=500, seed=0)
    i, ip, j, jp = res.rectangles.T
    assert len(res.rectangles) == 500 and np.all(i != ip) and np.all(j != jp)
    for a, b in ((i, j), (ip, j), (i, jp), (ip, jp)):
        assert cells.find(a, b)[0].all()
    assert "values" not in S.__dict__ and "observed" not in S.__dict__   # never densified
    again = curl_test(S, n_rectangles=500, seed=0)
    np.testing.assert_array_equal(res.rectangles, again.rectangles)


def test_sparse_rectangles_are_uniform_over_complete_rectangles():
    rng = np.random.default_rng(4)
    obs = rng.random((7, 10)) < 0.42                     # sparse: the wedge sampler runs
    assert obs.mean() < 0.5
    complete = [(a, b, c, d) for a, b in itertools.permutations(range(7), 2)
                for c, d in itertools.permutations(range(10), 2)
                if obs[a, c] and obs[b, c] and obs[a, d] and obs[b, d]]
    assert len(complete) >= 20
    rect = sample_rectangles(obs, 40 * len(complete), seed=1)
    index = {r: k for k, r in enumerate(complete)}
    counts = np.bincount([index[tuple(r)] for r in rect.tolist()], minlength=len(complete))
    assert chisquare(counts).pvalue > 1e-3              # brute-force enumeration as reference


def test_bootstrap_resample_on_cells_equals_the_dense_resample():
    rng = np.random.default_rng(2)
    v = np.where(rng.random((7, 9)) < 0.6, rng.uniform(-1, 1, (7, 9)), np.nan)
    v[:, 0] = v[0, :] = 0.5
    S = ScoreMatrix.from_array(v)
    pick_r, pick_c = rng.integers(0, 7, 7), rng.integers(0, 9, 9)
    sub = curl_module._resample(curl_module._Cells.of(S), pick_r, pick_c)
    dense = v[np.ix_(pick_r, pick_c)]
    r, c = np.nonzero(~np.isnan(dense))
    np.testing.assert_array_equal(sub.rows, r)
    np.testing.assert_array_equal(sub.cols, c)
    np.testing.assert_array_equal(sub.scores, dense[r, c])
