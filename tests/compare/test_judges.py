"""Judge-weighted Bradley-Terry: derivatives, recovery of known reliabilities, the CLI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import approx_fprime

from evalcert.compare.bradley_terry import _problem
from evalcert.compare.counts import CountsBuilder
from evalcert.compare.judges import _joint, fit_judge_weighted
from evalcert.compare.leaderboard import rank
from evalcert.errors import InputError
from evalcert.io.pairwise import read_pairwise
from tests._cli import run_cli


def _judged_log(gammas, n=6000, K=6, seed=0, ties=0.1):
    rng = np.random.default_rng(seed)
    theta = np.linspace(1.2, -1.2, K)
    a = rng.integers(0, K, n)
    b = (a + rng.integers(1, K, n)) % K
    judge = rng.integers(0, len(gammas), n)
    p = 1 / (1 + np.exp(-np.asarray(gammas)[judge] * (theta[a] - theta[b])))
    winner = np.where(rng.random(n) < p, "model_a", "model_b")
    winner = np.where(rng.random(n) < ties, "tie", winner)
    return pd.DataFrame({"model_a": [f"m{k}" for k in a], "model_b": [f"m{k}" for k in b],
                         "winner": winner, "judge": [f"j{l}" for l in judge]}), theta


def _counts(frame):
    builder = CountsBuilder()
    out = frame["winner"].map({"model_a": 0, "model_b": 1, "tie": 2}).to_numpy()
    builder.add(builder.codes(frame["model_a"].tolist()), builder.codes(frame["model_b"].tolist()),
                out, judge=builder.judge_codes(frame["judge"].tolist()))
    return builder.build()


def test_joint_gradient_and_hessian_match_finite_differences():
    counts = _counts(_judged_log([1.0, 0.5, -0.3], n=800)[0])
    i, j, C = _problem(counts, "half")
    K, L = counts.n_models, len(counts.judges)
    terms = (i, j, counts.judge, C.sum(axis=1), C[:, 0] - C[:, 1], K, L, 0.0, 1.0)
    x0 = np.random.default_rng(1).normal(size=K + L) * 0.5
    f = lambda x: _joint(x[:K], x[K:], *terms)[0]  # noqa: E731
    _, g, H = _joint(x0[:K], x0[K:], *terms)
    assert g == pytest.approx(approx_fprime(x0, f, 1e-6), abs=1e-3)
    num = np.array([approx_fprime(x0, lambda x, k=k: _joint(x[:K], x[K:], *terms)[1][k], 1e-6)
                    for k in range(K + L)])
    assert H == pytest.approx(num, abs=1e-3)


def test_known_reliabilities_are_recovered_in_order_with_the_adversary_negative():
    frame, theta = _judged_log([1.5, 0.4, -0.8], n=12000, seed=2)
    counts = _counts(frame)
    fit = fit_judge_weighted(counts, reliability_sd=2.0)
    g = fit.reliability
    assert g["j0"] > g["j1"] > 0 > g["j2"]
    assert fit.certificate.proves_optimum
    truth = [theta[int(m[1:])] for m in counts.models]
    assert np.corrcoef(fit.theta, truth)[0, 1] > 0.99
    assert sum(fit.n_verdicts.values()) == 12000


def test_weighting_beats_pooling_when_a_judge_is_adversarial():
    frame, theta = _judged_log([1.0, 1.0, -1.0], n=9000, seed=3)
    counts = _counts(frame)
    weighted = rank(counts, judge_weighted=True, reliability_sd=2.0)
    pooled = rank(counts)
    truth = dict(zip([f"m{k}" for k in range(6)], theta))

    def corr(res):
        return np.corrcoef(res.score, [truth[m] for m in res.models])[0, 1]

    assert corr(weighted) > 0.99 and corr(weighted) > corr(pooled)
    assert [r["judge"] for r in weighted.to_dict()["judges"]][-1] == "j2"


def test_reader_keeps_judges_and_pools_to_the_plain_counts(tmp_path):
    frame, _ = _judged_log([1.0, 0.5], n=500)
    path = tmp_path / "verdicts.parquet"
    frame.to_parquet(path)
    judged = read_pairwise(path, judge="judge")
    plain = read_pairwise(path)
    assert set(judged.judges) == {"j0", "j1"} and plain.judge is None
    pooled = judged.pooled()
    key = lambda c: sorted(zip(c.i.tolist(), c.j.tolist(), c.table().tolist()))  # noqa: E731
    assert key(pooled) == key(plain)


def test_judge_weighting_needs_a_judge_column():
    with pytest.raises(InputError, match="needs a judge column"):
        fit_judge_weighted(_counts(_judged_log([1.0])[0]).pooled())


def test_cli_judge_weighted(tmp_path):
    frame, _ = _judged_log([1.2, 0.2], n=3000, seed=4)
    path = tmp_path / "verdicts.csv"
    frame.to_csv(path, index=False)
    status, out, err = run_cli(["rank", str(path), "--judge-column", "judge",
                                "--judge-weighted"])
    assert status == 0, err
    assert "judge reliabilities (verdicts): j0" in out
    status, _, err = run_cli(["rank", str(path), "--judge-weighted"])
    assert status == 2 and "needs --judge-column" in err
