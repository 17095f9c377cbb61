"""evalcert.compare: paired tests against SciPy/statsmodels, rank intervals with known truth."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from evalcert.compare.paired import compare
from evalcert.compare.rank_intervals import adjust_pvalues, rank_from_se, ranks_of
from evalcert.data import ScoreMatrix
from evalcert.errors import InputError


def _binary(seed=0, K=5, J=57, missing=0.15):
    rng = np.random.default_rng(seed)
    p = np.linspace(0.8, 0.4, K)[:, None]
    X = (rng.random((K, J)) < p).astype(float)
    X[rng.random((K, J)) < missing] = np.nan
    return X


def _matrix(X, bounds=(0, 1)):
    K, J = X.shape
    return ScoreMatrix.from_array(X, agents=[f"m{k}" for k in range(K)],
                                  items=[f"q{j}" for j in range(J)], bounds=bounds)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mcnemar_p_values_equal_scipy_binomtest_on_discordant_items(seed):
    X = _binary(seed)
    res = compare(_matrix(X), n_boot=0)
    assert res.test == "exact McNemar"
    index = {f"m{k}": k for k in range(len(X))}
    for p in res.pairs:
        a, b = X[index[p["model_a"]]], X[index[p["model_b"]]]
        both = ~np.isnan(a) & ~np.isnan(b)
        n10 = int(((a == 1) & (b == 0) & both).sum())
        n01 = int(((a == 0) & (b == 1) & both).sum())
        expected = stats.binomtest(n10, n10 + n01, 0.5).pvalue if n10 + n01 else 1.0
        assert p["p_value"] == pytest.approx(expected, rel=1e-12, abs=1e-15)
        assert p["n_shared"] == int(both.sum())
        assert p["diff"] == pytest.approx(float((a[both] - b[both]).mean()), abs=1e-15)


def test_graded_scores_use_paired_t_and_wilcoxon_like_scipy():
    rng = np.random.default_rng(3)
    X = rng.integers(1, 11, size=(4, 80)).astype(float) + np.array([[1.0], [0.5], [0], [0]])
    X[rng.random(X.shape) < 0.1] = np.nan
    S = _matrix(X, bounds=(0, 20))
    res_t = compare(S, n_boot=0)
    res_w = compare(S, n_boot=0, test="wilcoxon")
    assert res_t.test == "paired t" and res_w.test == "Wilcoxon signed-rank"
    index = {f"m{k}": k for k in range(4)}
    for pt, pw in zip(res_t.pairs, res_w.pairs):
        a, b = X[index[pt["model_a"]]], X[index[pt["model_b"]]]
        both = ~np.isnan(a) & ~np.isnan(b)
        assert pt["p_value"] == pytest.approx(stats.ttest_rel(a[both], b[both]).pvalue, rel=1e-10)
        assert pw["p_value"] == pytest.approx(stats.wilcoxon(a[both] - b[both]).pvalue, rel=1e-10)
        ci = stats.ttest_rel(a[both], b[both]).confidence_interval(0.95)
        assert (pt["ci_low"], pt["ci_high"]) == pytest.approx((ci.low, ci.high), rel=1e-10)


def test_mcnemar_refused_for_graded_scores():
    X = np.array([[0.5, 1, 0], [0, 1, 1.0]])
    with pytest.raises(InputError, match="McNemar test needs 0/1 scores"):
        compare(_matrix(X), test="mcnemar", n_boot=0)


@pytest.mark.parametrize("method, sm", [("holm", "holm"), ("bh", "fdr_bh")])
def test_adjusted_p_values_equal_statsmodels(method, sm):
    multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests
    p = np.random.default_rng(4).uniform(0, 0.2, 37)
    p[[3, 9]] = p[5]                                     # ties
    assert adjust_pvalues(p, method) == pytest.approx(multipletests(p, method=sm)[1], rel=1e-12)
    res = compare(_matrix(_binary(5)), adjust=method, n_boot=0)
    raw = np.array([q["p_value"] for q in res.pairs])
    assert [q["p_adjusted"] for q in res.pairs] == pytest.approx(
        multipletests(raw, method=sm)[1], rel=1e-12)


def test_singleton_clusters_give_the_paired_interval_and_clusters_widen_it():
    rng = np.random.default_rng(6)
    J = 120
    X = rng.normal(size=(2, J)) * 0.2 + np.array([[0.1], [0.0]])
    items = [f"q{j}" for j in range(J)]
    S = ScoreMatrix.from_array(X, agents=["a", "b"], items=items, bounds=(-5, 5))
    plain = compare(S, n_boot=0).pairs[0]
    single = compare(S, groups=items, n_boot=0).pairs[0]
    assert (single["ci_low"], single["ci_high"]) == pytest.approx(
        (plain["ci_low"], plain["ci_high"]), rel=1e-10)
    # 12 clusters of 10 items sharing a cluster effect on the difference
    effect = np.repeat(rng.normal(0, 0.3, 12), 10)
    X2 = X.copy()
    X2[0] += effect
    S2 = ScoreMatrix.from_array(X2, agents=["a", "b"], items=items, bounds=(-5, 5))
    naive = compare(S2, n_boot=0).pairs[0]
    robust = compare(S2, groups={it: j // 10 for j, it in enumerate(items)}, n_boot=0)
    assert robust.test == "cluster-robust t" and robust.n_groups == 12
    r = robust.pairs[0]
    assert r["ci_high"] - r["ci_low"] > 1.5 * (naive["ci_high"] - naive["ci_low"])


def test_minimum_detectable_difference_is_the_power_formula_and_shrinks_with_n():
    small = compare(_matrix(_binary(7, K=2, J=40, missing=0)), n_boot=0).pairs[0]
    large = compare(_matrix(_binary(7, K=2, J=400, missing=0)), n_boot=0).pairs[0]
    n = small["n_shared"]
    se = (small["ci_high"] - small["diff"]) / stats.t.ppf(0.975, n - 1)
    assert small["mdd"] == pytest.approx((stats.t.ppf(0.975, n - 1) + stats.t.ppf(0.8, n - 1)) * se)
    assert large["mdd"] < small["mdd"] / 2


def _leaderboard_covered(seed: int, alpha: float) -> bool:
    rng = np.random.default_rng(seed)
    p = np.array([0.80, 0.74, 0.72, 0.65, 0.60, 0.50])
    X = (rng.random((6, 300)) < p[:, None]).astype(float)
    res = compare(_matrix(X), n_boot=200, seed=seed, alpha=alpha)
    truth = dict(zip([f"m{k}" for k in range(6)], ranks_of(p)))
    return all(r["rank_ci_low"] <= truth[r["model"]] <= r["rank_ci_high"] for r in res.ranks)


def test_simultaneous_rank_intervals_cover_the_true_ranks_at_the_nominal_rate():
    covered = np.mean([_leaderboard_covered(seed, 0.1) for seed in range(60)])
    # nominal 90% for all six ranks at once; 60 leaderboards: 3 standard errors below is 0.78
    assert covered >= 0.78


def test_rank_intervals_are_not_trivial_when_models_differ_a_lot():
    rng = np.random.default_rng(8)
    X = (rng.random((4, 2000)) < np.array([[0.9], [0.7], [0.5], [0.3]])).astype(float)
    res = compare(_matrix(X), n_boot=300)
    assert [(r["rank_ci_low"], r["rank_ci_high"]) for r in res.ranks] == [(1, 1), (2, 2), (3, 3),
                                                                          (4, 4)]


def test_rank_from_se_bonferroni_coverage_with_known_truth():
    rng = np.random.default_rng(9)
    truth = np.linspace(2, 0, 8)
    hits = []
    for _ in range(400):
        est = truth + rng.normal(0, 0.3, 8)
        _, lo, hi, _ = rank_from_se(est, np.full(8, 0.3), alpha=0.1)
        hits.append(np.all((lo <= ranks_of(truth)) & (ranks_of(truth) <= hi)))
    assert np.mean(hits) >= 0.88


def test_irt_rank_intervals_from_rasch_abilities():
    rng = np.random.default_rng(10)
    theta, b = np.array([1.5, 0.5, -0.5, -1.5]), rng.normal(size=150)
    X = (rng.random((4, 150)) < 1 / (1 + np.exp(b - theta[:, None]))).astype(float)
    res = compare(_matrix(X), n_boot=0, irt="rasch")
    ranks = res.to_dict()["irt_ranks"]
    assert [r["model"] for r in ranks] == ["m0", "m1", "m2", "m3"]
    assert all(r["rank_ci_low"] <= r["rank"] <= r["rank_ci_high"] and r["se"] > 0 for r in ranks)


def test_json_fields_are_the_documented_ones():
    d = compare(_matrix(_binary(11)), n_boot=50).to_dict()
    assert {"model_a", "model_b", "n_shared", "diff", "ci_low", "ci_high", "p_value",
            "p_adjusted"} <= set(d["pairs"][0])
    assert set(d["ranks"][0]) == {"model", "score", "rank", "rank_ci_low", "rank_ci_high"}


def test_one_model_and_pairs_without_shared_items_are_refused():
    with pytest.raises(InputError, match="only one model"):
        compare(_matrix(np.array([[1, 0, 1.0]])))
    X = np.array([[1, 0, np.nan, np.nan], [np.nan, np.nan, 1, 0.0], [1, 1, 0, 0.0]])
    with pytest.raises(InputError, match="share fewer than 2 scored items .*m0 and m1"):
        compare(_matrix(X))


def test_too_many_pairs_are_refused_before_any_work():
    with pytest.raises(InputError, match="700 models make 244650 pairs"):
        compare(ScoreMatrix.from_array(np.zeros((700, 3)), bounds=(0, 1)))
