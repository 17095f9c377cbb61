"""tinyBenchmarks anchors: selection, the accuracy estimate and its held-out error."""

from __future__ import annotations

import numpy as np
import pytest

from evalcert.errors import InputError
from evalcert.irt import LogisticFactor, Rasch, TwoPL
from evalcert.irt.anchors import estimate_accuracy, evaluate_anchors, select_anchors
from evalcert.irt.information import ability_prior, item_parameters
from evalcert.irt.scoring import score_abilities
from tests.irt.conftest import simulate


@pytest.fixture(scope="module")
def bench():
    return simulate(150, 300, seed=41, slopes=True)[0]


def test_estimate_matches_a_direct_computation(bench):
    fit = TwoPL(method="mml").fit(bench[:120])
    p, prior = item_parameters(fit), ability_prior(fit)
    Y = bench[120:]
    O = np.random.default_rng(0).random(Y.shape) < 0.9
    anchors = np.arange(0, 300, 15)
    w = np.full(anchors.size, 1 / anchors.size)
    got = estimate_accuracy(p, prior, Y, O, anchors, w, scoring="eap")
    for i in range(5):
        seen = np.zeros(300, bool)
        seen[anchors] = O[i, anchors]
        th, _ = score_abilities(p, Y[i:i + 1], seen[None, :], method="eap", prior=prior)
        P = 1 / (1 + np.exp(-p.a * (th[0] - p.b)))
        ref = np.mean(np.where(seen, Y[i], P)[O[i]])
        assert got["irt"][i] == pytest.approx(ref, rel=1e-10)
        assert got["anchor_mean"][i] == pytest.approx(Y[i, anchors][O[i, anchors]].mean())


@pytest.mark.parametrize("selection", ["information", "cluster", "random"])
def test_heldout_error_is_small_and_reproducible(bench, selection):
    res = evaluate_anchors(TwoPL(method="mml"), bench, n_anchors=30, selection=selection,
                           seed=3)
    assert res.n_anchors == len(res.anchors) <= 30 and len(res.test_models) == 30
    assert res.weights.sum() == pytest.approx(1.0)
    # binomial noise of a 30-item mean is ~0.09; the IRT estimate must do better than that
    assert res.mae["irt"] < 0.07
    again = evaluate_anchors(TwoPL(method="mml"), bench, n_anchors=30, selection=selection,
                             seed=3)
    np.testing.assert_array_equal(res.estimates["irt"], again.estimates["irt"])
    assert "held-out model" in res.summary()


def test_information_anchors_follow_the_ability_quantiles(bench):
    fit = Rasch(method="mml").fit(bench)
    anchors, _ = select_anchors(fit, bench, 10, "information")
    b = np.sort(fit.difficulties_[anchors])
    targets = np.quantile(fit.abilities_, (np.arange(10) + 0.5) / 10)
    # a Rasch item is most informative where theta = b: each anchor sits near its quantile
    assert np.max(np.abs(b - targets)) < 0.25


def test_cluster_anchors_recover_duplicated_item_groups():
    rng = np.random.default_rng(5)
    base = (rng.random((80, 4)) < rng.uniform(0.2, 0.8, 4)).astype(float)
    sizes = np.array([5, 10, 15, 20])
    Y = np.repeat(base, sizes, axis=1)                  # 4 groups of identical items
    fit = Rasch(method="mml").fit(Y)
    anchors, weights = select_anchors(fit, Y, 4, "cluster", seed=0)
    group = np.repeat(np.arange(4), sizes)
    assert sorted(group[anchors]) == [0, 1, 2, 3]
    np.testing.assert_allclose(weights, sizes[group[anchors]] / 50)


def test_refusals(bench):
    fit = Rasch(method="mml").fit(bench[:50, :20])
    with pytest.raises(InputError, match="n_anchors"):
        select_anchors(fit, bench[:50, :20], 20)
    with pytest.raises(InputError, match="selection"):
        select_anchors(fit, bench[:50, :20], 5, "kmeans")
    with pytest.raises(InputError, match="test_frac"):
        evaluate_anchors(Rasch(), bench, test_frac=1.0)
    with pytest.raises(InputError, match="infinite"):
        evaluate_anchors(Rasch(), bench, scoring="ml")
    with pytest.raises(InputError, match="rasch, 2pl or 3pl"):
        evaluate_anchors(LogisticFactor(), bench)
    with pytest.raises(InputError, match="fewer than 2"):
        evaluate_anchors(Rasch(), bench[:2], test_frac=0.5)
