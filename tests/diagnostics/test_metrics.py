"""Fidelity metrics (paper 000, App. D.3)."""

from __future__ import annotations

import numpy as np
import pytest

from evalcert.data import ScoreMatrix
from evalcert.diagnostics.metrics import fidelity, holdout_rmse, partition_vector, ranking_auc
from evalcert.errors import InputError
from evalcert.io.agent_labels import read_agent_labels


def test_auc_is_the_mann_whitney_probability_with_half_ties():
    good = np.array([True, True, False, False])
    assert ranking_auc(np.array([3.0, 1.0, 2.0, 0.0]), good) == 0.75
    assert ranking_auc(np.array([1.0, 1.0, 1.0, 1.0]), good) == 0.5


def test_one_class_partition_is_an_input_error():
    with pytest.raises(InputError, match="both classes"):
        ranking_auc(np.arange(3.0), np.array([True, True, True]))


def test_holdout_rmse_uses_observed_held_out_cells_only():
    S = ScoreMatrix.from_array(np.array([[0.0, 0.5], [np.nan, 1.0]]))
    hold = np.array([[False, True], [True, True]])
    assert holdout_rmse(np.zeros((2, 2)), S, hold) == pytest.approx(np.sqrt((0.25 + 1) / 2))
    with pytest.raises(InputError, match="boolean"):
        holdout_rmse(np.zeros((2, 2)), S, hold[:1])


def test_fidelity_ranks_against_the_reference_and_the_partition():
    S = ScoreMatrix.from_array(np.subtract.outer([0.6, 0.3, 0.1, -0.2], [0.0, 0.1, 0.2]))
    pred = S.values.copy()
    theta = np.array([0.6, 0.3, 0.1, -0.2])
    hold = np.zeros(S.shape, bool)
    hold[:, 0] = True
    m = fidelity(pred, theta, S, ~hold, hold, theta[::-1].copy(),
                 np.array([1.0, 1.0, 0.0, np.nan]))
    assert m.rmse == 0.0 and m.spearman == -1.0 and m.kendall == -1.0 and m.auc == 1.0
    assert m.n_train == 8 and m.n_holdout == 4


def test_labels_match_the_domain_by_agent_names(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("domain,agent,good_faith\nx,a,1\nx,b,0\ny,a,0\ny,c,1\ny,d,\n")
    labels = read_agent_labels(path, ("a", "c", "d"))
    assert labels == {"a": False, "c": True}
    assert np.isnan(partition_vector(("a", "c", "d"), labels)[2])
    with pytest.raises(InputError, match="domain"):
        read_agent_labels(path, ("a", "z"))
