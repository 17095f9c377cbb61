"""The evidence side of paper 000: curl test, connectivity, sampling, metrics,
bootstrap, baselines, TVD-MI scores and the paper's experiments (in memory: the agent labels
and TVD-MI example files are read by :mod:`evalcert.io.agent_labels` and :mod:`evalcert.io.tvdmi`)."""

from evalcert.diagnostics.baselines import (IsotonicCalibrated, MeanImputedSVD,
                                            NuclearNormCompletion, RaschLeastSquares,
                                            UVFactorization)
from evalcert.diagnostics.bootstrap import BootstrapResult, bootstrap_fidelity
from evalcert.diagnostics.connectivity import (DCoreResult, dcore_cells, dcore_mask,
                                               enforce_dcore, enforce_dcore_cells)
from evalcert.diagnostics.curl import CurlResult, curl_test, link_transform, sample_rectangles
from evalcert.diagnostics.experiments import (baseline_comparison, coverage_sweep,
                                              sparse_recovery)
from evalcert.diagnostics.masks import holdout_cells
from evalcert.diagnostics.metrics import (FidelityMetrics, fidelity, holdout_rmse,
                                          partition_vector, ranking_auc)
from evalcert.diagnostics.sampling import (SamplingResult, holdout_mask, holdout_on_cells,
                                           sample_training, sample_training_cells)
from evalcert.diagnostics.tvdmi import TVDMIScores, scores_from_pairwise, tvdmi_scores

__all__ = ["IsotonicCalibrated", "MeanImputedSVD", "NuclearNormCompletion", "RaschLeastSquares",
           "UVFactorization", "BootstrapResult", "bootstrap_fidelity", "DCoreResult",
           "dcore_cells", "dcore_mask", "enforce_dcore", "enforce_dcore_cells", "CurlResult",
           "curl_test", "link_transform", "sample_rectangles", "baseline_comparison",
           "coverage_sweep", "sparse_recovery", "holdout_cells", "FidelityMetrics", "fidelity",
           "holdout_rmse", "partition_vector", "ranking_auc",
           "SamplingResult", "holdout_mask", "holdout_on_cells", "sample_training",
           "sample_training_cells", "TVDMIScores", "scores_from_pairwise",
           "tvdmi_scores"]
