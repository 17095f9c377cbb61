"""``--solver cbc`` through PuLP: the binary PuLP 3 bundles, and COIN_CMD where PuLP no longer
has ``PULP_CBC_CMD`` (PuLP 4.0 removes it)."""

import warnings

import pulp
import pytest

from evalcert.datasets.mtbench import paper_summaries
from evalcert.errors import BackendUnavailableError
from evalcert.logic import ilp
from evalcert.logic.ilp import best_min_accuracy_ilp


def test_cbc_answers_as_highs_without_passing_on_pulps_deprecation_warning():
    counts = paper_summaries()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        cbc = best_min_accuracy_ilp(counts, (6, 15, 4), solver="cbc")
    highs = best_min_accuracy_ilp(counts, (6, 15, 4), solver="highs")
    assert (cbc.status, cbc.value, cbc.key) == (highs.status, highs.value, highs.key)


def test_cbc_falls_back_to_coin_cmd_where_pulp_has_no_bundled_binary(monkeypatch):
    monkeypatch.delattr(pulp, "PULP_CBC_CMD", raising=False)
    backend = ilp.SOLVERS["cbc"]()
    assert isinstance(backend, pulp.COIN_CMD)
    if not backend.available():        # no cbc on PATH: a clear, typed error naming the fix
        with pytest.raises(BackendUnavailableError, match=r"pulp\[cbc\]"):
            best_min_accuracy_ilp(paper_summaries(), (6, 15, 4), solver="cbc")
