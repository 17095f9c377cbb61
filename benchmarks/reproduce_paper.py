"""Reproduce the tables and figures of paper 000 on the shared judge data; print ours vs paper.

Reads ``../shared/data/tvd/llm-peer-prediction/derived`` (never copied into the
repository). Full run: 20,000 rectangles, 500 bootstrap resamples, 50 seeds (a few
minutes on two cores); ``--quick`` (2,000 rectangles, 20 resamples, 3 seeds, a short
Fig. 2 sweep; under a minute) is the smoke run that tests/test_reproduce_paper.py runs.

Two differences from the paper are explained in the output:

* Ranking AUC partition. Table 3's caption ranks "4 faithful and 15 problematic
  agents": the ``category`` Faithful against Strategic + Low Effort, Style agents
  left out. ``agent_labels.csv``'s ``good_faith`` column (from the step-by-step
  paper's analysis) counts Style agents as good too; with it ICLR's AUC is 0.476.
  The script uses the caption's partition and prints both.
* Table 3 intervals. A bootstrap refit sees on average 1 - (1 - 1/n)^n = 63.2% of
  the distinct training cells (multinomial weights, the rest weigh 0), so each
  replicate is a fit on less information: its holdout RMSE is higher and its rank
  correlations lower than the fit on all training cells. The percentile interval
  describes the replicate fits; the full-data estimate can fall outside it. The table
  prints both, with the share of replicates on each side of the estimate. The paper's
  sparse Spearman and Kendall points (0.972, 0.890) lie near the medians of our 500
  refits (0.968, 0.880) and far from our full fit (0.990, 0.945), as if the paper
  reported a centre of its refits; its RMSE and AUC points match neither (dense RMSE
  0.111 vs our full fit 0.115 and refit median 0.118).

    python benchmarks/reproduce_paper.py [--quick] [--out figures/] [--backend loky]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from evalcert.diagnostics import (IsotonicCalibrated, MeanImputedSVD, NuclearNormCompletion,
                                  RaschLeastSquares, UVFactorization, baseline_comparison,
                                  bootstrap_fidelity, coverage_sweep, curl_test,
                                  partition_vector, sparse_recovery)
from evalcert.diagnostics.sampling import holdout_mask, sample_training
from evalcert.io.agent_labels import read_agent_labels
from evalcert.io.scores import read_scores
from evalcert.plots.coverage import plot_coverage_sweep
from evalcert.plots.curl import plot_curl_ecdf
from evalcert.results import format_table
from evalcert.solvers import ClippedLinear

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "tvd" / "llm-peer-prediction"
DOMAINS = {"PubMed": "pubmed_200_S_directional", "OPUS": "opus_gpt4omini_186_S_directional",
           "ICLR": "iclr_peer_review_100_S_directional"}
TABLE1 = {"PubMed": (0.129, 0.474, 0.245, 0.825, 0.438, 1.454),
          "OPUS": (0.150, 0.492, 0.268, 0.862, 0.479, 1.547),
          "ICLR": (0.080, 0.580, 0.286, 1.188, 0.588, 2.252)}
TABLE2 = {"PubMed": (-0.112, -0.298, -0.185), "OPUS": (-0.117, -0.322, -0.204),
          "ICLR": (-0.213, -0.528, -0.315)}
TABLE4 = {"PubMed": (0.111, 0.117, 0.972, 0.967), "OPUS": (0.123, 0.126, 0.983, 0.938),
          "ICLR": (0.129, 0.135, 0.950, 0.646)}
TABLE5 = {"Clipped-Linear": 0.121, "Identity + Isotonic": 0.122, "Rasch (Probit)": 0.122,
          "Rasch (Logit)": 0.123, "Nuclear Norm": 0.126, "SVD Baseline": 0.172,
          "UV Factorization": 0.196}


def load(domain: str):
    """Scores and the paper's partition: 1 Faithful, 0 Strategic or Low Effort, NaN else."""
    S = read_scores(DATA / "derived" / f"{DOMAINS[domain]}.csv")
    return S, paper_partition(domain, S.agents)


def paper_partition(domain: str, agents) -> np.ndarray:
    """Table 3's partition ("4 faithful and 15 problematic agents" on PubMed): the
    ``category`` column, Style and Other agents left out (NaN)."""
    frame = pd.read_csv(DATA / "derived" / "agent_labels.csv")
    frame = frame[frame["domain"] == domain.lower()].set_index("agent")
    category = frame.loc[list(agents), "category"]
    good = {"Faithful": 1.0, "Strategic": 0.0, "Low Effort": 0.0}
    return np.array([good.get(c, np.nan) for c in category])


def good_faith_partition(S) -> np.ndarray:
    """``agent_labels.csv``'s ``good_faith`` column: Style agents count as good."""
    labels = read_agent_labels(DATA / "derived" / "agent_labels.csv", S.agents)
    return partition_vector(S.agents, labels)


def tables_1_2(n_rect: int, n_boot: int, out: Path) -> None:
    results, rows1, rows2 = {}, [], []
    for domain in DOMAINS:
        S, _ = load(domain)
        fitted = ClippedLinear(solver="native").fit(S).predict()
        res = results[domain] = curl_test(S, n_rectangles=n_rect, seed=0, n_boot=n_boot,
                                          predictions=fitted)
        ours = [res.median["identity"], res.p95["identity"], res.median["probit"],
                res.p95["probit"], res.median["logit"], res.p95["logit"]]
        rows1.append((domain, str(res.median_exact), *[f"{o:.3f} ({p:.3f})"
                                                       for o, p in zip(ours, TABLE1[domain])]))
        rows2.extend((domain, d.summary(), f"{p:+.3f}") for d, p in zip(res.differences,
                                                                          TABLE2[domain]))
        print(f"{domain}: curl of clipped-linear predictions, median per link:",
              {k: round(v, 4) for k, v in res.prediction_median.items()})
    print("\nTable 1: median / P95 |Delta|, ours (paper)")
    print(format_table(rows1, ["domain", "identity exact", "id med", "id P95", "probit med",
                               "probit P95", "logit med", "logit P95"]))
    print(f"\nTable 2: median differences, {n_boot} bootstrap resamples, ours vs paper point")
    print(format_table(rows2, ["domain", "ours [95% CI]", "paper"]))
    plot_curl_ecdf(results, out / "fig1_curl_ecdf.png")


def table_3(n_boot: int, backend: str) -> None:
    # Bootstrap refits reuse one native model (its factorisations are kept across refits);
    # every refit is certified or raises.
    S, part = load("PubMed")
    hold = holdout_mask(S.observed, 0.2, seed=0)
    dense_train = S.observed & ~hold
    dense = bootstrap_fidelity(ClippedLinear(solver="native"), S, dense_train, hold,
                               n_boot=n_boot, partition=part, backend=backend, n_jobs=None)
    ref = ClippedLinear(solver="native").fit(S.restrict(dense_train)).theta_
    sparse_train = sample_training(S.observed, hold, "nlogn", C=1.6, seed=0).mask
    sparse = bootstrap_fidelity(ClippedLinear(solver="native"), S, sparse_train, hold,
                                n_boot=n_boot, reference_theta=ref, partition=part,
                                backend=backend, n_jobs=None)
    paper = {"dense": {"rmse": "0.111 [0.107, 0.116]", "auc": "0.983 [0.967, 0.992]"},
             "sparse": {"rmse": "0.117 [0.113, 0.122]", "spearman": "0.972 [0.942, 0.986]",
                        "kendall": "0.890 [0.833, 0.933]", "auc": "0.967 [0.942, 0.983]"}}
    rows = []
    for name, res in (("dense", dense), ("sparse", sparse)):
        for metric, (lo, hi) in res.intervals.items():
            est = getattr(res.estimate, metric)
            reps = np.asarray(res.replicates[metric], dtype=float)
            rows.append((name, metric, f"{est:.3f}",
                         f"{np.median(reps):.3f} [{lo:.3f}, {hi:.3f}]",
                         f"{np.mean(reps < est):.0%} / {np.mean(reps > est):.0%}",
                         paper[name].get(metric, "-")))
    print(f"\nTable 3: PubMed, n log n C = 1.6 ({sparse.estimate.coverage:.1%}), "
          f"{n_boot} bootstrap refits; AUC: {int(np.sum(part == 1))} Faithful vs "
          f"{int(np.sum(part == 0))} Strategic + Low Effort agents")
    print(format_table(rows, ["fit", "metric", "all cells", "refits: median [95%]",
                              "refits below / above", "paper"]))
    print("The refits are not centred on the full fit: each sees ~63.2% of the distinct "
          "training cells\n(multinomial weights, the rest weigh 0), so it is a fit on less "
          "information (higher RMSE,\nlower rank correlations). The interval is the 2.5-97.5 "
          "percentiles of the refits (App. D.4).\nThe paper's points lie inside its "
          "intervals: compare them with the refits' medians, not with the full fit.")
    print("Dense AUC of the raw item averages (not the fit's predictions): "
          f"{raw_auc(S, part):.3f} (paper's dense 0.983)")


def raw_auc(S, partition: np.ndarray) -> float:
    """Ranking AUC of each agent's observed scores averaged over items."""
    from evalcert.diagnostics.metrics import ranking_auc

    use = ~np.isnan(partition)
    return ranking_auc(np.nanmean(S.values, axis=1)[use], partition[use] == 1)


def table_4(seeds: int, backend: str) -> None:
    rows = []
    for domain in DOMAINS:
        S, part = load(domain)
        res = sparse_recovery(S, "nlogn", C=1.6, seeds=seeds, partition=part, backend=backend,
                              progress=False)
        good_faith = sparse_recovery(S, "nlogn", C=1.6, seeds=1, partition=good_faith_partition(S),
                                     backend=backend, progress=False).dense.auc
        ours = (res.dense.rmse, res.mean("rmse"), res.mean("spearman"), res.mean("auc"))
        rows.append((domain, *S.shape, *[f"{o:.3f} ({p:.3f})" for o, p in zip(ours,
                                                                             TABLE4[domain])],
                     f"{res.dense.auc:.3f}", f"{good_faith:.3f}", f"{res.mean('coverage'):.1%}"))
        if domain == "ICLR":
            no_ref = part.copy()
            no_ref[list(S.agents).index("Reference")] = np.nan
            iclr_no_reference = sparse_recovery(S, "nlogn", C=1.6, seeds=1, partition=no_ref,
                                                backend=backend, progress=False).dense.auc
    print(f"\nTable 4: n log n C = 1.6, mean over {seeds} seeds, ours (paper)")
    print(format_table(rows, ["domain", "K", "J", "dense RMSE", "sparse RMSE", "Spearman",
                              "sparse AUC", "dense AUC", "good_faith AUC", "coverage"]))
    print("AUC: Faithful vs Strategic + Low Effort (Table 3's caption; PubMed's dense AUC "
          "equals the paper's 0.967).\n'good_faith AUC' counts Style agents as good "
          "(agent_labels.csv's column): ICLR 0.476, the number issue 10 saw.\nICLR's paper "
          "value 0.646 is not reproduced exactly: its 'Reference' agent is labelled Faithful "
          "here (Other elsewhere);\nwithout it the dense AUC is higher still "
          f"({iclr_no_reference:.3f}), so the "
          "paper's ICLR agent pool or labels differ from the data's.")


def table_5() -> None:
    S, part = load("PubMed")
    models = {"Clipped-Linear": ClippedLinear(solver="native"),
              "Identity + Isotonic": IsotonicCalibrated(),
              "Rasch (Probit)": RaschLeastSquares("probit"),
              "Rasch (Logit)": RaschLeastSquares("logit"), "Nuclear Norm": NuclearNormCompletion(),
              "SVD Baseline": MeanImputedSVD(), "UV Factorization": UVFactorization()}
    res = baseline_comparison(S, models, C=1.6, seed=0, partition=part)
    print("\nTable 5 (RMSE ratio ours / paper):")
    print(res.summary())
    print(format_table([(k, m.rmse, TABLE5[k], m.rmse / TABLE5[k]) for k, m in res.metrics.items()],
                       ["method", "ours", "paper", "ratio"]))


def figure_2(seeds: int, backend: str, out: Path, quick: bool = False) -> None:
    S, _ = load("PubMed")
    configs = ([("row", {"alpha": a}) for a in (0.15, 0.30, 0.45)]
               + [("column", {"beta": b}) for b in (0.15, 0.30, 0.45)]
               + [("hybrid", {"alpha": a, "beta": a}) for a in (0.5, 0.6, 0.7)]
               + [("nlogn", {"C": c}) for c in (0.5, 1.0, 1.6, 2.0, 3.0, 5.0)])
    if quick:  # one point per regime, and C = 5 (every seed agrees: the yerr rounding case)
        configs = [configs[1], configs[4], configs[7], configs[11], configs[14]]
    sweep = coverage_sweep(S, configs, seeds=seeds, backend=backend, progress=not quick)
    print("\nFigure 2 data (PubMed):")
    print(sweep.summary())
    plot_coverage_sweep(sweep, out / "fig2_coverage.png")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="2000 rectangles, 20 resamples, 3 seeds, short Fig. 2 (< 1 min)")
    parser.add_argument("--out", default="reproduce_figures", help="folder for the figures")
    parser.add_argument("--backend", default="loky", choices=("loky", "dask", "ray"))
    args = parser.parse_args()
    if not DATA.is_dir():
        raise SystemExit(f"shared data {DATA} is absent; nothing to reproduce")
    n_rect, n_boot, seeds = (2_000, 20, 3) if args.quick else (20_000, 500, 50)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    steps = [("Tables 1-2", lambda: tables_1_2(n_rect, n_boot, out)),
             ("Table 3", lambda: table_3(n_boot, args.backend)),
             ("Table 4", lambda: table_4(seeds, args.backend)),
             ("Table 5", table_5),
             ("Figure 2", lambda: figure_2(seeds, args.backend, out, quick=args.quick))]
    for name, step in steps:
        start = time.perf_counter()
        step()
        print(f"[{name}: {time.perf_counter() - start:.1f} s]")
    print(f"\nfigures written to {out}/")


if __name__ == "__main__":
    main()
