"""Holdout and sampling regimes (paper 000, Sec. 5, App. D.1-D.2)."""

from __future__ import annotations

import numpy as np
import pytest

from evalcert.diagnostics import masks
from evalcert.diagnostics.sampling import holdout_mask, nlogn_budget, sample_training
from evalcert.errors import InputError

OBS = np.ones((30, 200), bool)


def test_nlogn_budget_gives_a_third_of_pubmed_at_C_1_6():
    assert nlogn_budget(30, 200, 1.6) == 2001          # 2001 / 6000 = 33.4 % (Sec. 6.1)


def test_holdout_is_fixed_by_its_seed_and_uses_the_masks_module():
    h = holdout_mask(OBS, 0.2, seed=7)
    np.testing.assert_array_equal(h, masks.entrywise_mask(OBS.shape, 0.2, seed=7, observed=OBS))
    assert abs(h.mean() - 0.2) < 0.02
    assert holdout_mask(OBS, 0.2, 7, "row").any(axis=1).sum() == 6
    assert holdout_mask(OBS, 0.2, 7, "L").sum() == 6 * 40


@pytest.mark.parametrize("regime,kw,coverage", [
    ("row", {"alpha": 0.3}, 0.30), ("column", {"beta": 0.3}, 0.30),
    ("hybrid", {"alpha": 0.5, "beta": 0.5}, 0.2), ("nlogn", {"C": 1.6}, 0.3335)])
def test_regimes_avoid_the_holdout_and_reach_dcore_3(regime, kw, coverage):
    h = holdout_mask(OBS, 0.2, seed=0)
    design = sample_training(OBS, h, regime, seed=1, **kw)
    assert not (design.mask & h).any()
    assert design.dcore.satisfied and design.dcore.d == 3
    assert design.coverage == pytest.approx(coverage, abs=0.02)
    again = sample_training(OBS, h, regime, seed=1, **kw)
    assert np.array_equal(design.mask, again.mask)


def test_row_regime_gives_every_agent_alpha_J_items():
    design = sample_training(OBS, np.zeros_like(OBS), "row", alpha=0.15, seed=0)
    assert design.n_sampled == 30 * 30 and design.mask.sum(axis=1).min() >= 30


def test_low_C_needs_a_top_up():
    design = sample_training(OBS, holdout_mask(OBS, 0.2), "nlogn", C=0.3, seed=0)
    assert design.n_cells > design.n_sampled and design.dcore.satisfied


def test_bad_sampling_input_is_typed():
    h = holdout_mask(OBS)
    with pytest.raises(InputError, match="alpha"):
        sample_training(OBS, h, "row")
    with pytest.raises(InputError, match="regime"):
        sample_training(OBS, h, "diagonal", C=1.0)
    with pytest.raises(InputError, match="shape"):
        sample_training(OBS, h[:, :10], "nlogn", C=1.0)
    with pytest.raises(InputError, match="fraction|between"):
        holdout_mask(OBS, 1.5)
    with pytest.raises(InputError, match="scheme"):
        holdout_mask(OBS, 0.2, scheme="temporal")
