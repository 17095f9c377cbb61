"""Every result class: it pickles (a worker can send it back, a user can save it) with the same
``to_dict()``, and ``to_frame()``, where the result holds a table, has one row per entry of
that table with the result's own values.

The instances come from small runs of the public API; every dataclass result reachable from
them (certificates, timings, read reports, metrics...) is collected by walking their fields,
and the test fails when a result class exists that none of these runs produces.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import pickle
import pkgutil
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import evalcert
from evalcert.results import ResultMixin, to_jsonable

#: result classes no small run produces here, with the reason
NOT_BUILT = {
    "TVDMIExamples": "built from critic calls of an LLM (tests/diagnostics/test_tvdmi.py)",
    "TVDMIScores": "built from critic calls of an LLM (tests/diagnostics/test_tvdmi.py)",
    "FailedFit": "only when a sparse fit fails (tests/diagnostics/test_experiments.py)",
}


def _all_result_classes() -> set[type]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for info in pkgutil.walk_packages(evalcert.__path__, "evalcert."):
            if not info.name.endswith("__main__"):
                importlib.import_module(info.name)

    def below(cls: type) -> set[type]:
        out = set(cls.__subclasses__())
        return out.union(*(below(c) for c in out)) if out else out

    return {c for c in below(ResultMixin) if dataclasses.is_dataclass(c)}


def _collect(obj, found: dict[type, object], depth: int = 0) -> None:
    if depth > 6:
        return
    if isinstance(obj, ResultMixin) and dataclasses.is_dataclass(obj):
        found.setdefault(type(obj), obj)
        for f in dataclasses.fields(obj):
            _collect(getattr(obj, f.name), found, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for v in obj[:3]:
            _collect(v, found, depth + 1)
    elif isinstance(obj, dict):
        for v in list(obj.values())[:5]:
            _collect(v, found, depth + 1)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[type, object]:
    from evalcert import (ClippedLinear, Rasch, ScoreMatrix, TwoPL, alarm, bench, curl_test,
                          demo_scores)
    from evalcert.diagnostics import bootstrap_fidelity, enforce_dcore, sparse_recovery
    from evalcert.diagnostics.baselines import RaschLeastSquares
    from evalcert.diagnostics.experiments import baseline_comparison, coverage_sweep
    from evalcert.diagnostics.sampling import sample_training
    from evalcert import label_counts, read_decisions
    from evalcert.datasets.mtbench import paper_summaries
    from evalcert.logic.audit import run_audit
    from evalcert.logic.summaries import decisions_from_frame
    from evalcert.logic.swaps import merge_swapped
    from evalcert.logic.ilp import best_min_accuracy_ilp
    from evalcert.solvers.certificates import QP, qp_certificate
    from evalcert.logic.evaluations import evaluation_counts
    from evalcert.logic.keys import weighted_vote_key
    from evalcert.logic.pspace import pspace_evaluations
    from evalcert.logic.exams import grade_sets
    from evalcert.solvers.gini_projection import gini_projection
    from evalcert.irt import (evaluate_anchors, holdout_evaluate, item_fit,
                                      likelihood_ratio_test, score_models)
    from evalcert.irt.holdout import cross_validate

    S = demo_scores(n_agents=12, n_items=20)
    rng = np.random.default_rng(0)
    theta, b = rng.normal(size=60), rng.normal(size=15)
    Y = (rng.random((60, 15)) < 1 / (1 + np.exp(b - theta[:, None]))).astype(float)
    rasch = Rasch(method="mml").fit(Y)
    hold = S.observed & (np.random.default_rng(1).random(S.shape) < 0.2)
    log = tmp_path_factory.mktemp("results") / "judges.csv"
    log.write_text("item,grader,label\n" + "".join(
        f"q{i},g{g},{'ab'[(i + (g == 2 and i % 3 == 0)) % 2]}\n"
        for i in range(12) for g in range(3)))
    made = [
        ClippedLinear().fit(S).result_, curl_test(S, n_rectangles=200, n_boot=5),
        gini_projection(demo_scores(n_agents=5, n_items=6), penalised=True, lam=1e-3),
        rasch.result_, item_fit(rasch, Y), score_models(rasch, Y[:4], method="wle"),
        likelihood_ratio_test(rasch, TwoPL(method="mml").fit(Y)),
        evaluate_anchors(Rasch(method="mml"), Y, n_anchors=5, seed=0),
        holdout_evaluate(Rasch(method="map"), Y, "entrywise", seed=0),
        cross_validate(Rasch(method="map"), Y, "lam", [0.5, 1.0], n_folds=2, seed=0),
        run_audit(log, "1/2", m="2", with_bounds=True, page=True,
                  estimators=("mv",), with_agreement=True, n_boot=5, population="exact"),
        alarm({"a": {"x": 3, "y": 1}, "b": {"x": 2, "y": 2}}, "1/2"),
        read_decisions(log), label_counts({"a": {"x": 3, "y": 1}}),
        merge_swapped(decisions_from_frame(pd.DataFrame(
            {"item": ["1|x|y", "1|y|x"], "grader": "g", "label": ["a", "b"]}), labels="a,b")),
        best_min_accuracy_ilp(paper_summaries(), (6, 15, 4)),
        qp_certificate(QP(P=sp.eye(1, format="csc"), q=np.array([-2.0]),
                          A=sp.eye(1, format="csc"), l=np.array([-1.0]), u=np.array([1.0])),
                       np.array([1.0]), np.array([1.0])),
        gini_projection(ScoreMatrix.from_array(np.add.outer([0.3, 0.0, -0.2], [0.1, -0.1]))),
        evaluation_counts((4, 6)), grade_sets({"x": {"a": 1, "b": 1}}),
        pspace_evaluations(10, (4, 6)),
        weighted_vote_key([("1", "x", "y", "1", "expert_0", "a"),
                           ("1", "y", "x", "1", "expert_1", "tie"),
                           ("1", "x", "y", "1", "author_0", "b")]),
        enforce_dcore(S.observed, 2, method="prune"),
        sample_training(S.observed, hold, "nlogn", C=2.0, seed=0),
        S.connectivity(),
        sparse_recovery(S, "nlogn", C=2.0, seeds=2, n_jobs=1, progress=False),
        coverage_sweep(S, [("nlogn", {"C": 2.0})], seeds=1, n_jobs=1, progress=False),
        baseline_comparison(S, {"additive": RaschLeastSquares("identity")}, C=2.0),
        bootstrap_fidelity(RaschLeastSquares("identity"), S, S.observed & ~hold, hold,
                           n_boot=3, n_jobs=1, progress=False),
        bench(["ilp-m1"], backends=["pulp-highs"], profiles=["default"], quick=True,
              n_jobs=1, memory=False, progress=False),
    ]
    from evalcert.io.convert import convert
    from evalcert.io.results import CellCollector
    from evalcert.irt.cat import run_cat, simulate_cat
    from evalcert.irt.information import item_parameters

    folder = tmp_path_factory.mktemp("convert")
    (folder / "r.jsonl").write_text(json.dumps({"subject_id": "m", "responses": {"q": 1}})
                                    + "\n")
    cells = CellCollector("demo", "py-irt")
    cells.add("m1", "q1", 1.0)
    bank = item_parameters(rasch)
    made += [convert(folder / "r.jsonl", folder / "long.csv"), cells.finish(),
             run_cat(bank, lambda item: 1.0, max_items=3),
             simulate_cat(bank, Y, holdout=None, max_items=3)]
    from evalcert.compare.bradley_terry import fit_bradley_terry
    from evalcert.compare.counts import CountsBuilder, PairwiseCounts
    from evalcert.compare.judges import fit_judge_weighted
    from evalcert.compare.leaderboard import rank
    from evalcert.compare.paired import compare
    from evalcert.datasets.battles import simulate_battles

    battles, _ = simulate_battles(n_models=5, n_battles=400, seed=0)
    counts = PairwiseCounts.from_battles(battles["model_a"], battles["model_b"],
                                         battles["winner"])
    judged = CountsBuilder()
    a, c = judged.codes(["x", "y", "z", "x"] * 5), judged.codes(["y", "z", "x", "z"] * 5)
    judged.add(a, c, np.array([0, 0, 0, 1] * 5), judge=judged.judge_codes(["j1", "j2"] * 10))
    made += [compare(ScoreMatrix.from_array((Y[:6] > 0).astype(float), bounds=(0, 1)),
                     n_boot=20, irt="rasch", n_jobs=1),
             counts, rank(counts, n_boot=10, n_jobs=1), fit_bradley_terry(counts),
             fit_judge_weighted(judged.build())]
    from evalcert.irt import MultidimensionalTwoPL, select_dims

    made += [MultidimensionalTwoPL(dims=2, n_points=7).fit(Y).score(Y[:3]),
             select_dims(Y, dims=(1, 2), n_points=7)]
    from evalcert.irt.density import DensityChoice

    # a real --density auto fit takes ~26 CPU-s even at 60 x 15 (six densities): the table
    # is built from numbers as irt.density.choose_density builds it
    made.append(DensityChoice(("normal", "davidian-1", "histogram"), (-410.2, -409.8, -401.0),
                              (30, 31, 88), 60, "normal"))
    found: dict[type, object] = {}
    for result in made:
        _collect(result, found)
    return found


def test_every_result_class_is_built(results):
    missing = {c.__name__ for c in _all_result_classes()} - {c.__name__ for c in results} \
        - set(NOT_BUILT)
    assert not missing, f"add a run producing {sorted(missing)} to the results fixture"


def test_every_result_pickles(results):
    for cls, obj in results.items():
        again = pickle.loads(pickle.dumps(obj))
        assert type(again) is cls
        assert json.dumps(to_jsonable(again.to_dict()), sort_keys=True, default=str) == \
            json.dumps(to_jsonable(obj.to_dict()), sort_keys=True, default=str), cls.__name__


def _frame_of(results, name):
    obj = next(o for c, o in results.items() if c.__name__ == name)
    frame = obj.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame)
    return obj, frame


def test_to_frame_holds_the_results_values(results):
    fit, frame = _frame_of(results, "ClippedLinearResult")
    assert frame["agent"].tolist() == list(fit.agents) and np.array_equal(frame["theta"], fit.theta)
    assert np.array_equal(fit.to_frame("items")["b"], fit.b)
    curl, frame = _frame_of(results, "CurlResult")
    assert dict(zip(frame["link"], frame["median"])) == curl.median
    irt, frame = _frame_of(results, "IRTResult")
    assert np.array_equal(frame["abilities"], irt.parameters["abilities"])
    assert np.array_equal(frame["abilities_se"], irt.standard_errors["abilities"])
    assert np.array_equal(irt.to_frame("items")["difficulties"], irt.parameters["difficulties"])
    bench, frame = _frame_of(results, "BenchmarkResult")
    assert len(frame) == len(bench.records) and frame["success"].tolist() == [
        r.success for r in bench.records]
    sparse, frame = _frame_of(results, "SparseRecoveryResult")
    assert frame["rmse"].tolist() == [m.rmse for m in sparse.runs]
    boot, frame = _frame_of(results, "BootstrapResult")
    assert len(frame) == boot.n_boot and np.array_equal(frame["rmse"], boot.replicates["rmse"])
    res, frame = _frame_of(results, "AlarmResult")
    assert [tuple(r) for r in frame.itertuples(index=False)] == list(res.attaining_keys)
    curve, frame = _frame_of(results, "MinMaxCurve")
    k = int(np.argmax(frame["value"]))
    assert Fraction(int(frame["numer"][k]), int(frame["denom"][k])) == max(
        curve.value(i) for i in range(len(curve.keys)))
    bounds, frame = _frame_of(results, "LabelBounds")
    assert frame.to_dict("records") == bounds.rows()
    counts, frame = _frame_of(results, "LabelCounts")
    assert frame.to_numpy().tolist() == [list(c) for c in counts.counts]
    decisions, frame = _frame_of(results, "Decisions")
    assert frame.shape == (len(decisions.items), len(decisions.graders))
    assert frame.iloc[0, 0] == decisions.labels[decisions.codes[0][0]]
    fitres, frame = _frame_of(results, "FitResult")
    assert np.array_equal(frame["infit"], fitres.items["infit"])
    assert len(fitres.to_frame("models")) == len(fitres.model_names)
    scores, frame = _frame_of(results, "ScoreResult")
    assert np.array_equal(frame["ability"], scores.abilities)
    lrt, frame = _frame_of(results, "LRTestResult")
    assert frame.loc["general", "loglik"] == lrt.general.loglik
    cmp, frame = _frame_of(results, "CompareResult")
    assert frame["model"].tolist() == [r["model"] for r in cmp.ranks]
    assert cmp.to_frame("pairs")["p_adjusted"].tolist() == [p["p_adjusted"] for p in cmp.pairs]
    assert cmp.to_frame("irt_ranks")["model"].tolist() == [r["model"] for r in cmp.irt_ranks]
    board, frame = _frame_of(results, "RankResult")
    assert frame["model"].tolist() == list(board.models)
    assert np.array_equal(frame["score"], board.score)
    cat, frame = _frame_of(results, "CATResult")
    assert frame["predicted_accuracy"].tolist() == [m["predicted_accuracy"] for m in cat.models]
    assert cat.to_frame("curve")["n_items"].tolist() == [c["n_items"] for c in cat.curve]
    for name in ("AuditReport", "AnchorResult", "CVResult", "ConnectivityReport",
                 "BaselineComparisonResult", "CoverageSweepResult", "GiniProjectionResult"):
        _frame_of(results, name)
