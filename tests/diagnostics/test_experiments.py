"""The paper's experiments (paper 000, Sec. 5-6, Tables 3-5, Figs. 1-2)."""

from __future__ import annotations

import numpy as np
import pytest

from evalcert.io.scores import read_scores
from evalcert.diagnostics.baselines import (IsotonicCalibrated, MeanImputedSVD,
                                            NuclearNormCompletion, RaschLeastSquares,
                                            UVFactorization)
from evalcert.diagnostics.curl import curl_test
from evalcert.diagnostics.experiments import (baseline_comparison, coverage_sweep,
                                              sparse_recovery)
from evalcert.diagnostics.metrics import partition_vector, ranking_auc
from evalcert.io.agent_labels import read_agent_labels
from evalcert.plots.coverage import plot_coverage_sweep
from evalcert.plots.curl import plot_curl_ecdf
from evalcert.solvers import ClippedLinear
from tests.conftest import require_shared
from tests.diagnostics.conftest import TVD, additive_scores


def _pubmed():
    S = read_scores(require_shared(f"{TVD}/derived/pubmed_200_S_directional.csv"))
    labels = read_agent_labels(require_shared(f"{TVD}/derived/agent_labels.csv"), S.agents)
    return S, partition_vector(S.agents, labels)


def test_sparse_recovery_is_seeded_and_backend_independent(dask_client):
    S = additive_scores(12, 40)
    kw = dict(C=1.0, seeds=3, model=RaschLeastSquares("identity"), progress=False)
    local = sparse_recovery(S, "nlogn", n_jobs=1, **kw)
    remote = sparse_recovery(S, "nlogn", backend="dask", **kw)
    assert local.to_dict() == remote.to_dict()
    assert local.runs[0].coverage > 0 and "relative increase" in local.summary()


def test_coverage_sweep_and_fig2_plot(tmp_path):
    S = additive_scores(12, 40)
    sweep = coverage_sweep(S, [("nlogn", {"C": 0.8}), ("row", {"alpha": 0.3})], seeds=2,
                           model=RaschLeastSquares("identity"), n_jobs=1, progress=False)
    assert [p.regime for p in sweep.points] == ["nlogn", "row"]
    plot_coverage_sweep(sweep, tmp_path / "fig2.png")
    assert (tmp_path / "fig2.png").stat().st_size > 0


def test_fig1_plot(tmp_path):
    res = curl_test(additive_scores(6, 10, noise=0.3), n_rectangles=200)
    fig = plot_curl_ecdf({"a": res, "b": res}, tmp_path / "fig1.png")
    assert len(fig.axes) == 2 and (tmp_path / "fig1.png").exists()


def test_dense_fit_pubmed_rmse_and_auc():
    S, part = _pubmed()
    res = sparse_recovery(S, "nlogn", C=1.6, seeds=range(4), partition=part, n_jobs=1,
                          progress=False)
    # Sec. 6.1: dense RMSE 0.111 (Table 3: 0.111 [0.107, 0.116]); ours 0.1152 with holdout seed 0.
    assert res.dense.rmse == pytest.approx(0.113, abs=0.006)
    # Sec. 6.1: n log n with C = 1.6 gives 33% coverage and RMSE 0.117; ours 0.119.
    assert res.mean("coverage") == pytest.approx(0.334, abs=0.005)
    assert all(r.rmse < 0.125 and r.spearman >= 0.95 for r in res.runs)
    # Dense AUC with this random holdout is 202/210; the full-data fit gives the 0.967 below.
    assert res.dense.auc == pytest.approx(202 / 210)


def test_ranking_auc_of_the_full_dense_fit_is_0_967():
    S, part = _pubmed()
    model = ClippedLinear(solver="native").fit(S)
    labelled = ~np.isnan(part)
    auc = ranking_auc(model.predict().mean(axis=1)[labelled], part[labelled] == 1)
    # 14 good (Faithful + Style) vs 15 problematic: 203 of 210 pairs ordered = 0.9667 (Sec. 6.3).
    assert auc == pytest.approx(203 / 210)


def test_table5_baselines_on_pubmed():
    S, part = _pubmed()
    models = {"clipped": ClippedLinear(solver="native"), "isotonic": IsotonicCalibrated(),
              "probit": RaschLeastSquares("probit"), "logit": RaschLeastSquares("logit"),
              "nuclear": NuclearNormCompletion(), "svd": MeanImputedSVD(),
              "uv": UVFactorization()}
    res = baseline_comparison(S, models, C=1.6, seed=0, partition=part)
    rmse = {k: m.rmse for k, m in res.metrics.items()}
    # Table 5: 0.121 / 0.122 / 0.122 / 0.123 / 0.126 / 0.172; additive models within 0.005.
    for name in ("clipped", "isotonic", "probit", "logit"):
        assert rmse[name] == pytest.approx(0.121, abs=0.005)
    assert rmse["nuclear"] == pytest.approx(0.1272, abs=1e-3)      # tau = 1 (paper: unstated)
    assert rmse["svd"] == pytest.approx(0.1648, abs=1e-3)          # paper 0.172
    # Paper: UV 0.196. Not reproducible without its rank, ridge and iterations (unstated);
    # ours (rank 2, ridge 0.1, 100 ALS sweeps) is 0.144, and 0.21 with ridge 0.01: the number
    # is set by the regulariser, not by the lack of an additive constraint alone.
    assert rmse["uv"] == pytest.approx(0.1437, abs=1e-3)
    assert min(rmse, key=rmse.get) in {"clipped", "isotonic", "probit", "logit"}
    assert "Baselines at 33.4% coverage" in res.summary()


def _fail_second_fit(monkeypatch):
    """Make the second sparse fit raise a typed solver error (as a cycling native fit did)."""
    from evalcert.diagnostics import experiments
    from evalcert.errors import SolverError

    real, calls = experiments._Protocol.score, []

    def flaky(self, model, train):
        calls.append(1)
        if len(calls) == 2:
            raise SolverError("solver 'native' did not solve the clipped-linear fit: status "
                              "'cycling'", solver="native", status="cycling")
        return real(self, model, train)

    monkeypatch.setattr(experiments._Protocol, "score", flaky)


def test_one_failed_fit_is_recorded_not_fatal(monkeypatch, capsys):
    # Regression: one failed fit (seed 357 of a 500-seed run) used to lose the whole run.
    S = additive_scores(12, 40)
    kw = dict(C=1.0, model=RaschLeastSquares("identity"), n_jobs=1, progress=False)
    clean = sparse_recovery(S, "nlogn", seeds=[0, 2], **kw)
    _fail_second_fit(monkeypatch)
    res = sparse_recovery(S, "nlogn", seeds=3, **kw)
    assert res.n_failed == 1 and len(res.runs) == 2 and res.seeds == (0, 1, 2)
    (failed,) = res.failures
    assert (failed.seed, failed.regime, failed.params, failed.error) == \
        (1, "nlogn", {"C": 1.0}, "SolverError")
    assert "cycling" in failed.message
    assert res.runs == clean.runs                     # the other seeds are untouched
    assert res.mean("rmse") == clean.mean("rmse")
    assert "1 of 3 fits failed: seed 1 (nlogn, C=1): SolverError" in res.summary()
    assert "1 of 3 fits failed: seed 1" in capsys.readouterr().err
    as_json = res.to_dict()
    assert as_json["n_failed"] == 1 and as_json["failures"][0]["seed"] == 1


def test_strict_keeps_fail_fast(monkeypatch):
    from evalcert.errors import SolverError

    _fail_second_fit(monkeypatch)
    with pytest.raises(SolverError, match="cycling"):
        sparse_recovery(additive_scores(12, 40), "nlogn", C=1.0, seeds=3, strict=True,
                        model=RaschLeastSquares("identity"), n_jobs=1, progress=False)


def test_coverage_sweep_counts_failures_per_point(monkeypatch, capsys):
    _fail_second_fit(monkeypatch)
    sweep = coverage_sweep(additive_scores(12, 40), [("nlogn", {"C": 0.8}), ("nlogn", {"C": 1.2})],
                           seeds=2, model=RaschLeastSquares("identity"), n_jobs=1, progress=False)
    assert [p.n_failed for p in sweep.points] == [1, 0]
    assert "1 of 4 fits failed: seed 1 (nlogn, C=0.8)" in sweep.summary()
    assert "1 of 4 fits failed" in capsys.readouterr().err


def test_cli_strict_flag(monkeypatch, tmp_path, capsys):
    from evalcert.cli import main

    S = additive_scores(12, 40)
    path = tmp_path / "s.csv"
    S.to_frame().to_csv(path, index_label="agent")
    _fail_second_fit(monkeypatch)
    argv = ["experiment", "sparse-recovery", "--scores", str(path), "--C", "1", "--seeds", "3",
            "--n-jobs", "1", "--no-progress", "--json", str(tmp_path / "out.json")]
    assert main(argv) == 0
    out = capsys.readouterr()
    assert "1 of 3 fits failed" in out.out and "1 of 3 fits failed" in out.err
    import json
    assert json.loads((tmp_path / "out.json").read_text())["n_failed"] == 1
    _fail_second_fit(monkeypatch)
    assert main(argv[:-2] + ["--strict"]) != 0


def test_seed_357_of_the_demo_fits():
    # Regression: on the shipped demo matrix, nlogn C=1.6 seed 357 ended the native fit
    # in "cycling" (a degenerate KKT point; see tests/solvers/test_native_cycling.py)
    # and so lost the whole experiment; strict=True makes any failure raise here.
    from evalcert.datasets.demo import demo_scores

    res = sparse_recovery(demo_scores(), "nlogn", C=1.6, seeds=[357], n_jobs=1, progress=False,
                          strict=True)
    assert res.n_failed == 0 and res.runs[0].rmse < 0.15
