"""Rasch CML estimates and standard errors against eRm (issue 12, item 3).

The numbers below were printed by eRm 1.0-2 (Debian ``r-cran-erm``, R 4.2.2)
with ``sprintf('%.10g')`` from

.. code-block:: r

    fit <- RM(X)                 # sum-zero easiness (default)
    fit <- RM(X, sum0 = FALSE)   # the first item's easiness fixed at 0
    fit$betapar; fit$se.beta; fit$loglik
    pp <- person.parameter(RM(X)); pp$thetapar; pp$se.theta   # SMALL only

on the data defined in this file: LSAT6/LSAT7 expanded from their 32 pattern
frequencies (the first item is the most significant bit of the pattern index,
as in ``test_standard_errors.py``; in R ``pat[rep(1:32, freq), ]`` with
``pat <- t(sapply(0:31, function(k) bitwAnd(bitwShiftR(k, 4:0), 1)))``), and
two small literal matrices, complete and with missing cells ("." = NA). eRm's
``betapar`` are easiness parameters: ``difficulties_ = -betapar``. The R script
is ``benchmarks/bench_erm.py --reference``.

eRm's ``se.beta`` is ``sqrt(diag(W H^-1 W'))`` with ``H`` the Hessian of the
conditional log-likelihood in the free parameters (``nlm``'s finite-difference
Hessian) and ``W`` the design matrix of the identification: that is the exact
inverse conditional information under each identification, which evalcert
computes in closed form (:mod:`evalcert.irt.estimation.cml_information`). They
agree to 4e-5 relative, the accuracy of ``nlm``'s finite differences; the
estimates to 4e-6 (``nlm``'s stopping rule). Before this the CML SEs were
``1/sqrt(I_jj)``: 21-25% too large on these 5-item tests.
"""

import warnings

import numpy as np
import pytest

from evalcert.irt import Rasch
from evalcert.irt.estimation.esf import log_esf

LSAT7 = [12, 19, 1, 7, 3, 19, 3, 17, 10, 5, 3, 7, 7, 23, 8, 28, 7, 39, 11, 34, 14, 51, 15, 90,
         6, 25, 7, 35, 18, 136, 32, 308]
LSAT6 = [3, 6, 2, 11, 1, 1, 3, 4, 1, 8, 0, 16, 0, 3, 2, 15, 10, 29, 14, 81, 3, 28, 15, 80, 16,
         56, 21, 173, 11, 61, 28, 298]
PATTERNS = np.array([[(k >> (4 - j)) & 1 for j in range(5)] for k in range(32)], float)
SMALL = ["11011010", "11111000", "11110110", "01000100", "11111001", "10000000", "11100010",
         "00000000", "11000000", "11111100", "11000000", "11101111", "10001000", "11101100",
         "10001000", "11101111", "11111111", "11110111", "11111000", "11011111", "11001000",
         "10111000", "00010000", "00010100", "10000010", "01101001", "10111011", "10010010",
         "11100110", "00000000"]
SMALL_NA = ["1101.01.", "11111.00", "1111011.", "01..0100", "111.1001", "1.000000",
            "11.00010", ".0000000", "11.00000", "1111.100", "1.0.000.", "1110111.",
            "100.100.", ".1101100", "10.0.0.0", "11101.11", "1.1111.1", "11.10111",
            "11.11000", "..01111.", "1.0.1000", "101.1000", "00.10000", ".0010100",
            "100.0010", "0..01001", "10.110.1", ".0.1...0", "11100110", "00000..."]


def _literal(rows):
    return np.array([[np.nan if ch == "." else float(ch) for ch in row] for row in rows])


DATA = {"LSAT6": np.repeat(PATTERNS, LSAT6, axis=0), "LSAT7": np.repeat(PATTERNS, LSAT7, axis=0),
        "SMALL": _literal(SMALL), "SMALL_NA": _literal(SMALL_NA)}
# eRm 1.0-2: (betapar, se.beta) per (data set, sum0)
ERM = {
    ("LSAT6", True): (
        [1.256127964, -0.4749071475, -1.235980613, -0.1684100717, 0.623169868],
        [0.1044056934, 0.06991706747, 0.06877769117, 0.07261944485, 0.08591741373]),
    ("LSAT6", False): (
        [0, -1.731041741, -2.492120281, -1.424546408, -0.6329620747],
        [0, 0.1446533321, 0.1441522704, 0.1464530804, 0.156624683]),
    ("LSAT7", True): (
        [0.5414703273, -0.5365454726, 0.1335826505, -0.8051663839, 0.6666588787],
        [0.07916838296, 0.06796087699, 0.07313264457, 0.06745668319, 0.08151802423]),
    ("LSAT7", False): (
        [0, -1.07801669, -0.4078887832, -1.34663851, 0.1251886243],
        [0, 0.1170484014, 0.1214754473, 0.1166119727, 0.1292880611]),
    ("SMALL", True): (
        [1.923375374, 0.7724413961, 0.0003042032532, -0.1900295151, 0.1915224506,
         -0.7627213169, -0.5705037588, -1.364388833],
        [0.5162742631, 0.4247710236, 0.4112873044, 0.4110481616, 0.4127172567, 0.418599841,
         0.4145296615, 0.4435944855]),
    ("SMALL", False): (
        [0, -1.15094791, -1.923085043, -2.11341825, -1.731866665, -2.686109312, -2.493891045,
         -3.287780167],
        [0, 0.7073432013, 0.7106609773, 0.7138549492, 0.7080901767, 0.727478058, 0.7221260524,
         0.7513717595]),
    ("SMALL_NA", True): (
        [2.038737211, 0.4492107325, -0.1585440955, -0.0293336017, 0.07102779569,
         -0.5163173921, -0.6877389122, -1.167041737],
        [0.5770959381, 0.4535198915, 0.5116007483, 0.4783399824, 0.4400607237, 0.4379405065,
         0.4366573655, 0.5044506095]),
    ("SMALL_NA", False): (
        [0, -1.589527124, -2.197283613, -2.068078872, -1.967710826, -2.555061182,
         -2.726480302, -3.205782176],
        [0, 0.7881785947, 0.8401015911, 0.8139137492, 0.773648555, 0.780381193, 0.7872907444,
         0.8410563988]),
}
ERM_LOGLIK = {"LSAT6": -1091.56969, "LSAT7": -1182.699899, "SMALL": -74.00729322,
              "SMALL_NA": -57.82394552}


def _fit(name, sum0):
    kwargs = {} if sum0 else {"anchor_item": 0}
    with pytest.warns(Warning, match="all 0 or all 1"):     # eRm drops them from CML too
        return Rasch(method="cml", tol=1e-10, **kwargs).fit(DATA[name])


@pytest.mark.parametrize("name,sum0", list(ERM))
def test_cml_matches_erm(name, sum0):
    est = _fit(name, sum0)
    beta, se = map(np.array, ERM[name, sum0])
    assert np.max(np.abs(est.difficulties_ + beta)) < 2e-5
    free = se > 0
    assert np.max(np.abs(est.difficulties_se_[free] / se[free] - 1)) < 1e-3
    if not sum0:
        assert est.difficulties_se_[0] == 0.0     # the anchor item is fixed, as in eRm
    assert est.result_.identification == ("sum-zero difficulties" if sum0
                                          else "difficulty of 'item0' = 0")
    assert not any("SEs" in note for note in est.result_.notes)    # exact, not the fallback
    assert est.loglik_ == pytest.approx(ERM_LOGLIK[name], rel=1e-9)


def test_diagonal_information_ses_were_far_from_erm():
    """Regression: the old SEs, 1/sqrt(I_jj), are 21-25% above eRm's on LSAT7."""
    est = _fit("LSAT7", True)
    _, se = map(np.array, ERM["LSAT7", True])
    rows = ~np.isin(DATA["LSAT7"].sum(1), (0, 5))
    Y = DATA["LSAT7"][rows]
    b = est.difficulties_
    # 1/sqrt(sum_i pi_ij (1 - pi_ij)), pi from the exact ESFs of each raw score
    lg = log_esf(b)
    info = np.zeros(5)
    for r in Y.sum(1).astype(int):
        pi = np.array([np.exp(-b[j] + log_esf(np.delete(b, j))[r - 1] - lg[r])
                       for j in range(5)])
        info += pi * (1 - pi)
    assert np.all(1 / np.sqrt(info) / se > 1.2)
    assert np.max(np.abs(est.difficulties_se_ / se - 1)) < 1e-3


def test_diagonal_fallback_beyond_the_flop_budget_says_so(monkeypatch):
    """Above ``_SE_FLOPS`` the SEs are 1/sqrt(I_jj): a note, and about 1/items too large."""
    from evalcert.irt import rasch
    rng = np.random.default_rng(5)
    theta, b = rng.normal(size=300), rng.normal(size=100)
    Y = (rng.random((300, 100)) < 1 / (1 + np.exp(b - theta[:, None]))).astype(float)
    Y[rng.random(Y.shape) < 0.2] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exact = Rasch(method="cml", tol=1e-9).fit(Y)
        monkeypatch.setattr(rasch, "_SE_FLOPS", 0.0)
        diagonal = Rasch(method="cml", tol=1e-9).fit(Y)
    assert not any("SEs" in note for note in exact.result_.notes)
    assert any("from the diagonal of the conditional information only" in note
               for note in diagonal.result_.notes)
    ratio = diagonal.difficulties_se_ / exact.difficulties_se_
    assert np.all(ratio > 1 + 0.5 / 100) and np.all(ratio < 1 + 2 / 100)    # measured 1.0098
    assert np.array_equal(diagonal.difficulties_, exact.difficulties_)
    # anchored: sqrt(1/I_jj + 1/I_aa), 0 for the anchor, near the exact anchored SEs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        anchored = Rasch(method="cml", tol=1e-9, anchor_item=3).fit(Y)
        monkeypatch.setattr(rasch, "_SE_FLOPS", 4e9)
        exact_anchored = Rasch(method="cml", tol=1e-9, anchor_item=3).fit(Y)
    assert anchored.difficulties_se_[3] == exact_anchored.difficulties_se_[3] == 0.0
    ratio = (np.delete(anchored.difficulties_se_, 3)
             / np.delete(exact_anchored.difficulties_se_, 3))
    assert np.all(ratio > 1) and np.all(ratio < 1.02)      # measured 1.003-1.006


def test_anchor_model_keeps_sum_zero_ses_and_says_so():
    est = _fit("SMALL", True)
    with pytest.warns(Warning, match="all 0 or all 1"):
        anchored = Rasch(method="cml", tol=1e-10, anchor_model=0).fit(DATA["SMALL"])
    assert np.allclose(anchored.difficulties_se_, est.difficulties_se_, rtol=1e-9)
    assert any("sum-zero difficulties" in note for note in anchored.result_.notes)


# eRm 1.0-2, person.parameter(RM(X)) on SMALL (persons 8, 17 and 30 have extreme scores and no
# estimate): ML abilities given the sum-zero CML difficulties, and se.theta = 1/sqrt(sum p q)
ERM_THETA = [0.6351200311, 0.6351200311, 1.304473487, -1.283730012, 1.304473487, -2.279683308,
             0.03580311581, -1.283730012, 1.304473487, -1.283730012, 2.229782556, -1.283730012,
             0.6351200311, -1.283730012, 2.229782556, 2.229782556, 0.6351200311, 2.229782556,
             -0.5756213447, 0.03580311581, -2.279683308, -1.283730012, -1.283730012,
             0.03580311581, 1.304473487, -0.5756213447, 0.6351200311]
ERM_SE_THETA = [0.7859265389, 0.7859265389, 0.8637467396, 0.8943523617, 0.8637467396,
                1.143348213, 0.7703837521, 0.8943523617, 0.8637467396, 0.8943523617,
                1.104544428, 0.8943523617, 0.7859265389, 0.8943523617, 1.104544428,
                1.104544428, 0.7859265389, 1.104544428, 0.8014397431, 0.7703837521,
                1.143348213, 0.8943523617, 0.8943523617, 0.7703837521, 0.8637467396,
                0.8014397431, 0.7859265389]


def test_cml_abilities_and_ses_match_erm_person_parameter():
    est = _fit("SMALL", True)
    kept = np.isfinite(est.abilities_)
    assert np.flatnonzero(~kept).tolist() == [7, 16, 29]
    assert np.max(np.abs(est.abilities_[kept] - ERM_THETA)) < 2e-5
    assert np.max(np.abs(est.abilities_se_[kept] / ERM_SE_THETA - 1)) < 1e-3
