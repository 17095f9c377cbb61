"""Which model is better, and how sure: paired tests, rank intervals, Bradley-Terry.

* :func:`compare` (also ``evalcert.compare(...)``: this package is callable): every pair
  of models on their shared items - difference with a paired (or cluster-robust)
  interval, exact McNemar / paired t / Wilcoxon p-values, Holm or Benjamini-Hochberg
  adjustment, minimum detectable difference - and simultaneous rank intervals from an
  item bootstrap or IRT abilities;
* :func:`rank` (``evalcert.rank``): Bradley-Terry on pairwise outcomes (Chatbot Arena
  battles, judge verdicts) aggregated to per-pair counts, with a convexity certificate,
  a refusal naming the models when the MLE does not exist, and bootstrap intervals;
* :class:`PairwiseCounts`: the per-pair counts the readers in :mod:`evalcert.io.arena`
  and :mod:`evalcert.io.pairwise` produce.

Everything here works in memory; files are read by :mod:`evalcert.io`.

Example
-------
>>> import evalcert, numpy as np
>>> from evalcert.data import ScoreMatrix
>>> S = ScoreMatrix.from_array(np.array([[1, 1, 0, 1.], [0, 1, 0, 0.]]), agents=["a", "b"],
...                            bounds=(0, 1))
>>> evalcert.compare(S, n_boot=0).to_dict()["pairs"][0]["diff"]
0.5
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

__all__ = ["compare", "CompareResult", "rank", "RankResult", "PairwiseCounts",
           "fit_bradley_terry", "check_mle_exists", "BTFit", "BTCertificate",
           "fit_judge_weighted", "JudgeWeightedFit"]

_WHERE = {"compare": "paired", "CompareResult": "paired", "rank": "leaderboard",
          "RankResult": "leaderboard", "PairwiseCounts": "counts",
          "fit_bradley_terry": "bradley_terry", "check_mle_exists": "bradley_terry",
          "BTFit": "bradley_terry", "BTCertificate": "bradley_terry",
          "fit_judge_weighted": "judges", "JudgeWeightedFit": "judges"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"evalcert.compare.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'evalcert.compare' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)


class _CallablePackage(types.ModuleType):
    """``evalcert.compare(S, ...)`` calls :func:`evalcert.compare.paired.compare`."""

    def __call__(self, *args: Any, **kwargs: Any):
        from evalcert.compare.paired import compare
        return compare(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
