"""Bradley-Terry: an independent Newton fit, the certificate, refusals, the bootstrap."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize

from evalcert.compare.bradley_terry import _problem, certify, check_mle_exists, fit_bradley_terry
from evalcert.compare.counts import CountsBuilder, PairwiseCounts
from evalcert.compare.leaderboard import ELO_BASE, ELO_SCALE, _multinomial, rank
from evalcert.datasets.battles import simulate_battles
from evalcert.errors import ConnectivityError, InputError


def _counts(frame) -> PairwiseCounts:
    return PairwiseCounts.from_battles(frame["model_a"].astype(str).tolist(),
                                       frame["model_b"].astype(str).tolist(),
                                       frame["winner"].astype(str).tolist())


def _reference_newton(frame, models):
    """An independent fit: the K x K matrix of half-tie wins, Newton with model 0 fixed at 0."""
    K = len(models)
    idx = {m: k for k, m in enumerate(models)}
    a = frame["model_a"].astype(str).map(idx).to_numpy()
    b = frame["model_b"].astype(str).map(idx).to_numpy()
    w = frame["winner"].astype(str).to_numpy()
    W = np.zeros((K, K))                  # W[i, j] = wins of i over j, a tie half each way
    np.add.at(W, (a[w == "model_a"], b[w == "model_a"]), 1.0)
    np.add.at(W, (b[w == "model_b"], a[w == "model_b"]), 1.0)
    tie = np.char.startswith(w.astype(str), "tie")
    np.add.at(W, (a[tie], b[tie]), 0.5)
    np.add.at(W, (b[tie], a[tie]), 0.5)
    N = W + W.T
    x = np.zeros(K)
    for _ in range(100):
        P = 1 / (1 + np.exp(x[None, :] - x[:, None]))       # P[i, j] = P(i beats j)
        g = (W - N * P).sum(axis=1)                          # d loglik / d x_i
        H = -(N * P * P.T)
        H[np.diag_indices(K)] = -H.sum(axis=1)
        step = np.zeros(K)
        step[1:] = np.linalg.solve(H[1:, 1:], g[1:])
        x += step
        if np.abs(step).max() < 1e-13:
            break
    return x - x.mean()


@pytest.mark.parametrize("seed", [0, 1])
def test_log_strengths_equal_an_independent_newton_fit(seed):
    frame, _ = simulate_battles(n_models=12, n_battles=6000, seed=seed)
    counts = _counts(frame)
    fit = fit_bradley_terry(counts)
    ref = _reference_newton(frame, counts.models)
    assert np.abs(fit.theta - ref).max() < 1e-6
    assert fit.certificate.proves_optimum
    assert np.linalg.norm(fit.theta - ref) <= fit.certificate.distance_bound + 1e-9


def test_elo_is_the_arena_scale_of_the_centred_scores():
    frame, _ = simulate_battles(n_models=6, n_battles=3000, seed=2)
    res = rank(_counts(frame))
    assert abs(res.score.sum()) < 1e-9
    assert res.elo == pytest.approx(400 / np.log(10) * res.score + 1000, rel=1e-12)
    assert ELO_SCALE == pytest.approx(173.7177927613, rel=1e-10) and ELO_BASE == 1000
    assert list(res.rank) == sorted(res.rank)


def test_davidson_matches_a_generic_optimiser():
    frame, _ = simulate_battles(n_models=6, n_battles=4000, tie_rate=0.25, seed=3)
    counts = _counts(frame)
    fit = fit_bradley_terry(counts, ties="davidson")
    i, j, C = _problem(counts, "davidson")
    K = counts.n_models

    def nll(z):
        theta = np.append(z[:K - 1], -z[:K - 1].sum())
        d = (theta[i] - theta[j]) / 2
        logits = np.column_stack([d, -d, np.full_like(d, z[-1])])
        lse = np.logaddexp.reduce(logits, axis=1)
        return float((C.sum(axis=1) * lse).sum() - (C * logits).sum())

    best = optimize.minimize(nll, np.zeros(K), method="BFGS", options={"gtol": 1e-9})
    theta = np.append(best.x[:K - 1], -best.x[:K - 1].sum())
    assert np.abs(fit.theta - theta).max() < 1e-4 and abs(fit.eta - best.x[-1]) < 1e-4
    assert fit.certificate.proves_optimum


def test_certificate_bounds_the_distance_of_a_perturbed_point():
    frame, _ = simulate_battles(n_models=10, n_battles=5000, seed=4)
    counts = _counts(frame)
    fit = fit_bradley_terry(counts)
    i, j, C = _problem(counts, "half")
    rng = np.random.default_rng(0)
    for scale in (1e-6, 1e-4, 1e-2):
        delta = rng.normal(size=counts.n_models)
        delta -= delta.mean()
        delta *= scale / np.linalg.norm(delta)
        cert = certify(fit.theta + delta, i, j, C, counts.n_models, 0.0)
        assert cert.proves_optimum
        assert cert.distance_bound >= scale * (1 - 1e-6)
        assert cert.distance_bound <= 100 * scale


def test_certificate_refuses_a_point_far_from_the_optimum():
    frame, _ = simulate_battles(n_models=10, n_battles=5000, seed=5)
    counts = _counts(frame)
    i, j, C = _problem(counts, "half")
    far = fit_bradley_terry(counts).theta + np.linspace(-3, 3, counts.n_models)
    assert not certify(far, i, j, C, counts.n_models, 0.0).proves_optimum


def _log(rows):
    a, b, w = zip(*rows)
    return PairwiseCounts.from_battles(list(a), list(b), list(w))


def test_a_model_that_never_wins_or_never_loses_is_named():
    c = _log([("a", "b", "model_a"), ("b", "c", "model_a"), ("c", "a", "model_a"),
              ("d", "a", "model_b"), ("d", "b", "model_b")])
    with pytest.raises(InputError, match="does not exist: d never won"):
        check_mle_exists(c)
    c = _log([("a", "b", "model_a"), ("b", "c", "model_a"), ("c", "a", "model_a"),
              ("top", "a", "model_a"), ("top", "c", "tie")])
    check_mle_exists(c)                                # a tie is a win each way: it exists
    c = _log([("a", "b", "model_a"), ("b", "c", "model_a"), ("c", "a", "model_a"),
              ("top", "a", "model_a")])
    with pytest.raises(InputError, match="top never lost"):
        rank(c)


def test_a_disconnected_graph_and_a_dominating_group_are_named():
    c = _log([("a", "b", "model_a"), ("b", "a", "model_a"), ("x", "y", "model_a"),
              ("y", "x", "model_a"), ("y", "z", "tie")])
    with pytest.raises(ConnectivityError, match="disconnected .* a, b never played"):
        rank(c)
    c = _log([("a", "b", "model_a"), ("b", "a", "model_a"), ("x", "y", "model_a"),
              ("y", "x", "model_a"), ("a", "x", "model_a"), ("b", "y", "model_a")])
    with pytest.raises(ConnectivityError, match="a, b beat every model outside this group"):
        rank(c)


def test_a_prior_keeps_the_fit_finite_and_certified():
    c = _log([("a", "b", "model_a"), ("b", "c", "model_a"), ("a", "c", "model_a")])
    with pytest.raises(InputError):
        rank(c)
    res = rank(c, prior_sd=1.0)
    assert res.models == ("a", "b", "c") and res.certificate.proves_optimum
    assert np.isfinite(res.score).all() and res.prior_sd == 1.0


def test_one_model_and_an_empty_log_are_refused():
    with pytest.raises(InputError, match="no battle between two different models"):
        _log([("a", "a", "model_a")])
    builder = CountsBuilder()
    builder.codes(["solo"])
    with pytest.raises(InputError, match="no battle"):
        builder.build()


def test_counts_are_aggregated_per_unordered_pair():
    c = _log([("a", "b", "model_a"), ("b", "a", "model_a"), ("b", "a", "tie (bothbad)"),
              ("a", "b", "model_b"), ("a", "a", "tie")])
    assert c.table().tolist() == [[1, 2, 1]] and c.dropped == {"self-battle": 1}
    assert c.per_model()["wins"].tolist() == [1, 2]


def test_exact_multinomial_sampler_has_multinomial_moments():
    rng = np.random.default_rng(0)
    prob = np.array([0.5, 0.3, 0.15, 0.05])
    total = 200_000
    draws = np.array([_multinomial(rng, total, prob) for _ in range(2000)])
    assert (draws.sum(axis=1) == total).all()
    assert draws.mean(axis=0) == pytest.approx(total * prob, rel=2e-3)
    assert draws.var(axis=0) == pytest.approx(total * prob * (1 - prob), rel=0.1)
    cov01 = np.cov(draws[:, 0], draws[:, 1])[0, 1]
    assert cov01 == pytest.approx(-total * prob[0] * prob[1], rel=0.15)


def test_bootstrap_is_reproducible_and_its_intervals_contain_the_fit():
    frame, _ = simulate_battles(n_models=8, n_battles=4000, seed=6)
    c = _counts(frame)
    one = rank(c, n_boot=60, seed=3, n_jobs=1)
    two = rank(c, n_boot=60, seed=3, n_jobs=1)
    assert np.array_equal(one.ci_low, two.ci_low) and one.n_boot_failed == 0
    assert ((one.ci_low <= one.score) & (one.score <= one.ci_high)).all()
    assert ((one.rank_ci_low <= one.rank) & (one.rank <= one.rank_ci_high)).all()


def test_bootstrap_intervals_cover_the_true_strengths():
    # no ties: random ties that ignore strength pull half-tie scores towards 0, so the
    # simulated theta is the estimand only without them
    hits, total = 0, 0
    for seed in range(8):
        frame, theta = simulate_battles(n_models=6, n_battles=3000, tie_rate=0.0,
                                        seed=100 + seed)
        res = rank(_counts(frame), n_boot=100, alpha=0.1, seed=seed)
        true = dict(zip([f"m{k:03d}" for k in range(6)], theta))
        truth = np.array([true[m] for m in res.models])
        hits += int(((res.ci_low <= truth) & (truth <= res.ci_high)).sum())
        total += 6
    assert hits / total >= 0.78                       # nominal 0.9 per model


@pytest.mark.slow
def test_arena_size_fit_equals_the_independent_newton_fit():
    frame, theta = simulate_battles(seed=0)
    builder = CountsBuilder()
    a = builder.codes(frame["model_a"].astype(str).tolist())
    b = builder.codes(frame["model_b"].astype(str).tolist())
    out = np.minimum(frame["winner"].cat.codes.to_numpy(), 2)
    builder.add(a, b, out)
    counts = builder.build()
    fit = fit_bradley_terry(counts)
    ref = _reference_newton(frame, counts.models)
    assert np.abs(fit.theta - ref).max() < 1e-6 and fit.certificate.proves_optimum


def test_too_many_models_for_a_dense_hessian_are_refused():
    names = [f"m{k}" for k in range(5001)]
    c = PairwiseCounts.from_battles(names, names[1:] + names[:1], ["model_a"] * 5001)
    with pytest.raises(InputError, match="5001 models; .* at most 5000"):
        rank(c)
