"""Computerised adaptive testing: selection, updates, stopping, exposure and the held-out replay."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evalcert.errors import InputError
from evalcert.irt import TwoPL
from evalcert.irt.cat import CAT_SELECTIONS, run_cat, simulate_cat
from evalcert.irt.information import ItemParameters
from evalcert.irt.scoring import score_abilities


def _bank(n_items: int, seed: int = 0, spread: float = 0.6) -> ItemParameters:
    rng = np.random.default_rng(seed)
    return ItemParameters(rng.lognormal(0, spread, n_items), rng.normal(size=n_items),
                          np.zeros(n_items), tuple(f"q{j}" for j in range(n_items)), "2pl")


def _responses(bank: ItemParameters, theta: np.ndarray, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    P = 1 / (1 + np.exp(-bank.a * (theta[:, None] - bank.b)))
    return (rng.random(P.shape) < P).astype(float)


def test_adaptive_items_predict_accuracy_better_than_random_items():
    """The quick version of issue 26's benchmark: 200 new models, 800-item bank, 30 items."""
    bank = _bank(800, seed=1)
    Y = _responses(bank, np.random.default_rng(2).normal(size=200), seed=3)
    res = simulate_cat(bank, Y, holdout=None, max_items=30, seed=0)
    final = res.curve[-1]
    assert final["n_items"] == 30
    assert final["mae_accuracy"] < 0.9 * final["mae_random"]
    assert all(m["items_used"] == 30 for m in res.models)
    assert res.to_dict()["curve"][-1] == final and len(res.to_dict()["models"]) == 200


@pytest.mark.parametrize("update", ["eap", "map"])
def test_updates_equal_scoring_the_administered_items(update):
    """After every item the ability is the EAP (MAP) of the answers so far."""
    bank = _bank(300, seed=4)
    y = _responses(bank, np.array([0.7]), seed=5)[0]
    s = run_cat(bank, lambda item: y[int(item[1:])], max_items=25, update=update)
    for k in (1, 10, 25):
        idx = np.array([int(name[1:]) for name in s.items[:k]])
        obs = np.zeros((1, 300), bool)
        obs[0, idx] = True
        theta, se = score_abilities(bank, y[None, :], obs, method=update)
        assert s.theta_path[k - 1] == pytest.approx(theta[0], abs=1e-6)
        assert s.se_path[k - 1] == pytest.approx(se[0], rel=1e-5)


def test_maximum_information_takes_the_most_informative_item_each_time():
    bank = _bank(200, seed=6)
    y = _responses(bank, np.array([-0.4]), seed=7)[0]
    s = run_cat(bank, lambda item: y[int(item[1:])], max_items=12)
    from evalcert.irt.information import item_information

    seen: list[int] = []
    for k, name in enumerate(s.items):
        theta = 0.0 if k == 0 else s.theta_path[k - 1]
        info = item_information(np.array([theta]), bank)[0]
        info[seen] = -np.inf
        assert int(name[1:]) == int(np.argmax(info))
        seen.append(int(name[1:]))


def test_stopping_rules_and_skipped_items():
    bank = _bank(100, seed=8)
    y = _responses(bank, np.array([0.2]), seed=9)[0]
    respond = lambda item: y[int(item[1:])]                                  # noqa: E731
    se = run_cat(bank, respond, max_items=100, se_stop=0.35)
    assert se.stop_reason == "se_stop" and se.se <= 0.35 and se.se_path[-2] > 0.35
    delta = run_cat(bank, respond, max_items=100, delta_stop=0.02)
    assert delta.stop_reason == "delta_stop"
    assert abs(delta.theta_path[-1] - delta.theta_path[-2]) < 0.02
    every = run_cat(bank, respond, max_items=500)
    assert every.stop_reason == "no items left" and every.items_used == 100
    # NaN: the item cannot be given; the test goes on without it
    gaps = run_cat(bank, lambda item: np.nan if int(item[1:]) % 2 else respond(item),
                   max_items=10)
    assert gaps.items_used == 10 and all(int(n[1:]) % 2 == 0 for n in gaps.items)
    with pytest.raises(InputError, match="must be 0 or 1"):
        run_cat(bank, lambda item: 0.5)
    with pytest.raises(InputError, match="selection"):
        run_cat(bank, respond, selection="best")


@pytest.mark.parametrize("selection", CAT_SELECTIONS)
def test_every_selection_and_exposure_control(selection):
    bank = _bank(400, seed=10)
    Y = _responses(bank, np.random.default_rng(11).normal(size=60), seed=12)
    Y[0, :200] = np.nan                                           # missing cells: never given
    res = simulate_cat(bank, Y, holdout=None, max_items=15, selection=selection,
                       randomesque=3, max_exposure=0.25, seed=1)
    counts: dict[str, int] = {}
    for m in res.models:
        assert m["items_used"] == 15 and 0 <= m["predicted_accuracy"] <= 1
    for items in res.administered:
        assert len(set(items)) == len(items)
        for name in items:
            counts[name] = counts.get(name, 0) + 1
    assert max(counts.values()) <= 15                                # 25% of 60 models
    assert all(int(name[1:]) >= 200 for name in res.administered[0])


def test_holdout_fits_the_bank_on_the_other_models_and_refuses_mixups():
    bank = _bank(150, seed=13)
    Y = _responses(bank, np.random.default_rng(14).normal(size=100), seed=15)
    res = simulate_cat(TwoPL(method="mml"), Y, holdout=0.25, max_items=10, seed=2)
    assert res.n_train == 75 and len(res.models) == 25
    actual = {f"model{i}": Y[i].mean() for i in range(100)}
    excluded = 150 - res.n_items           # items all 0 or all 1 among the 75 (a note says so)
    assert (excluded > 0) == any("without finite parameters" in n for n in res.notes)
    for m in res.models:                   # accuracy over the bank's items
        assert abs(m["actual_accuracy"] - actual[m["model"]]) <= excluded / 149 + 1e-12
    json.dumps(res.to_dict())
    with pytest.raises(InputError, match="holdout=None"):
        simulate_cat(bank, Y, holdout=0.2)
    with pytest.raises(InputError, match="holdout must be in"):
        simulate_cat(TwoPL(method="mml"), Y, holdout=None)


@pytest.mark.slow
def test_issue_26_bank_adaptive_50_items_beats_random_by_10_percent():
    """400 models x 3,000 items (slopes spread), 2PL fitted on 320, 50 items on 80 held out."""
    bank = _bank(3000, seed=16, spread=0.5)
    Y = _responses(bank, np.random.default_rng(17).normal(size=400), seed=18)
    res = simulate_cat(TwoPL(method="mml", standard_errors=False), Y, holdout=0.2,
                       max_items=50, seed=0)
    final = res.curve[-1]
    assert final["mae_accuracy"] <= 0.9 * final["mae_random"]


def test_holdout_calibration_warnings_name_the_files_items():
    # the calibration fit used to run on a bare array, so its warnings said 'item3'
    import warnings

    import pandas as pd
    rng = np.random.default_rng(0)
    Y = (rng.random((60, 30)) < 0.5).astype(float)
    Y[:, 3] = 1.0
    frame = pd.DataFrame(Y, index=[f"m{i}" for i in range(60)],
                         columns=[f"q{j}" for j in range(30)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        simulate_cat(TwoPL(), frame, holdout=0.2, max_items=5, seed=0)
    messages = " ".join(str(w.message) for w in caught)
    assert "'q3'" in messages and "item3" not in messages


def _engine(bank: ItemParameters, n: int, prior=(0.0, 1.0), update: str = "map"):
    from evalcert.irt.cat import _Engine

    return _Engine(bank, prior, np.ones((n, bank.a.size), bool), selection="random",
                   update=update, randomesque=1, max_exposure=None,
                   rng=np.random.default_rng(0))


def _score_answered(engine, idx: np.ndarray, bank: ItemParameters, prior) -> tuple:
    from evalcert.irt.scoring import _Cells, score_cells

    lengths = [len(engine.items[i]) for i in idx]
    cells = _Cells(bank.a.size, indptr=np.concatenate([[0], np.cumsum(lengths)]),
                   cols=np.concatenate([engine.items[i] for i in idx]).astype(np.int64),
                   y=np.concatenate([engine.answers[i] for i in idx]))
    return score_cells(bank, cells, method="map", prior=prior)


def _count_exact(engine, monkeypatch) -> list:
    """Wrap the engine's exact (score_cells) path; the list holds the models it scored."""
    scored: list = []
    exact = engine._exact

    def counted(idx, method):
        scored.extend(idx.tolist())
        return exact(idx, method)
    monkeypatch.setattr(engine, "_exact", counted)
    return scored


@pytest.mark.parametrize("case", range(12))
def test_map_updates_by_newton_equal_exact_map_scoring(case, monkeypatch):
    """The CAT's incremental MAP (Newton from the last MAP on the answered items) equals
    score_cells' MAP to 1e-8 after every answer: Rasch and 2PL banks (steep, flat and
    negative slopes, near-step items), off-centre and wide priors, all-right and all-wrong
    models, answers flipped against the model, and models answering in lockstep with
    different counts so far. Newton settles all but a few of these stress updates."""
    rng = np.random.default_rng(100 + case)
    n_items, n = 120, 14
    a = (np.ones(n_items) if case % 4 == 0 else
         rng.lognormal(0, 1.0 if case % 4 == 3 else 0.5, n_items))
    if case % 4 == 2:
        a *= np.where(rng.random(n_items) < 0.15, -1, 1)            # a few reversed items
    if case % 6 == 5:
        a[:10] = 25.0                                               # near-step items
    bank = ItemParameters(a, rng.normal(0, 1.5, n_items), np.zeros(n_items),
                          tuple(f"q{j}" for j in range(n_items)), "rasch" if case % 4 == 0
                          else "2pl")
    prior = (float(rng.normal(0, 1)), float(rng.uniform(0.3, 3)))
    truth = rng.normal(prior[0], 2, n)
    Y = (rng.random((n, n_items)) < 1 / (1 + np.exp(-a * (truth[:, None] - bank.b)))) * 1.0
    Y[0], Y[1] = 1.0, 0.0                                           # all right, all wrong
    flip = rng.random((n, n_items)) < 0.2
    Y[2:5] = np.where(flip[2:5], 1 - Y[2:5], Y[2:5])                # misfitting answers
    engine = _engine(bank, n, prior)
    assert engine.newton
    exact = _count_exact(engine, monkeypatch)
    order = np.array([rng.permutation(n_items) for _ in range(n)])
    updates = 0
    for _ in range(40):
        idx = np.flatnonzero(rng.random(n) < 0.6)                   # who answers this round
        if idx.size == 0:
            continue
        items = order[idx, [len(engine.items[i]) for i in idx]]
        engine.record(idx, items, Y[idx, items])
        updates += idx.size
        theta, se = _score_answered(engine, idx, bank, prior)
        np.testing.assert_allclose(engine.theta[idx], theta, rtol=0, atol=1e-8)
        np.testing.assert_allclose(engine.se[idx], se, rtol=1e-8)
    assert {len(engine.items[i]) for i in range(n)} != {40}         # counts differ
    assert len(exact) <= 0.03 * updates


def test_map_updates_of_a_simulated_cat_never_need_the_exact_path(monkeypatch):
    """Lockstep maximum-information tests of 40 models on a 2PL bank: every update is
    Newton's and the final abilities and SEs are score_cells' MAPs."""
    bank = _bank(500, seed=19, spread=0.5)
    Y = _responses(bank, np.random.default_rng(20).normal(size=40), seed=21)
    engine = _engine(bank, 40)
    engine.selection = "mfi"
    exact = _count_exact(engine, monkeypatch)
    everyone = np.arange(40)
    for step in range(30):
        chosen = engine.select(everyone, step, 30)
        engine.record(everyone, chosen, Y[everyone, chosen])
    assert exact == []
    theta, se = _score_answered(engine, everyone, bank, (0.0, 1.0))
    np.testing.assert_allclose(engine.theta, theta, rtol=0, atol=1e-8)
    np.testing.assert_allclose(engine.se, se, rtol=1e-8)


def test_map_update_where_newton_cycles_falls_back_to_exact_scoring(monkeypatch):
    """One near-step item (a = 40, b = 3) answered right under a N(0, 1) prior: Newton from
    0 jumps to 40 and back (g = +-40, curvature ~1 at both), so score_cells scores it."""
    bank = ItemParameters(np.array([40.0, 1.0]), np.array([3.0, 0.0]), np.zeros(2),
                          ("steep", "flat"), "2pl")
    engine = _engine(bank, 1)
    exact = _count_exact(engine, monkeypatch)
    engine.record(np.array([0]), np.array([0]), np.array([1.0]))
    assert exact == [0]
    theta, se = _score_answered(engine, np.array([0]), bank, (0.0, 1.0))
    assert engine.theta[0] == theta[0] and 2.9 < theta[0] < 3.1
    np.testing.assert_allclose(engine.se, se, rtol=1e-12)
    engine.record(np.array([0]), np.array([1]), np.array([0.0]))     # Newton again, from there
    assert exact == [0]
    theta, se = _score_answered(engine, np.array([0]), bank, (0.0, 1.0))
    np.testing.assert_allclose(engine.theta, theta, rtol=0, atol=1e-8)
    np.testing.assert_allclose(engine.se, se, rtol=1e-8)


def test_map_updates_on_a_3pl_bank_take_the_exact_path():
    """Guessing makes the log posterior non-concave: no Newton shortcut, score_cells' MAP."""
    rng = np.random.default_rng(7)
    bank = ItemParameters(rng.lognormal(0, 0.5, 80), rng.normal(size=80),
                          rng.uniform(0.1, 0.3, 80), tuple(f"q{j}" for j in range(80)), "3pl")
    engine = _engine(bank, 6)
    assert not engine.newton
    Y = (rng.random((6, 80)) < 0.5) * 1.0
    for k in range(15):
        idx = np.arange(6)
        engine.record(idx, np.full(6, k), Y[:, k])
        theta, se = _score_answered(engine, idx, bank, (0.0, 1.0))
        np.testing.assert_array_equal(engine.theta, theta)
        np.testing.assert_array_equal(engine.se, se)
