"""``benchmarks/reproduce_paper.py --quick`` runs to the end (issue 10, item 2), so the
script cannot rot; and the Fig. 2 error bars that crashed it."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from tests.conftest import REPO_ROOT, require_shared

SCRIPT = REPO_ROOT / "benchmarks" / "reproduce_paper.py"


def test_min_max_bars_are_never_negative():
    # Before: mean - min of 50 equal RMSEs was -1.4e-17 and matplotlib raised
    # "'yerr' must not contain negative values" after two minutes of work.
    from evalcert.plots.coverage import min_max_bars

    rng = np.random.default_rng(0)
    values = np.vstack([np.full(50, x) for x in rng.uniform(0.05, 0.9, 200)])
    assert (values.mean(axis=1) - values.min(axis=1) < 0).any()  # the rounding case occurs
    bars = min_max_bars(values)
    assert bars.shape == (2, 200) and (bars >= 0).all() and (bars < 1e-15).all()
    spread = rng.uniform(0, 1, (5, 7))
    expected = [spread.mean(1) - spread.min(1), spread.max(1) - spread.mean(1)]
    assert np.allclose(min_max_bars(spread), expected)


def test_reproduce_paper_quick_runs_to_the_end(tmp_path):
    require_shared("tvd/llm-peer-prediction/derived/agent_labels.csv")
    out = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path,
                         env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr[-3000:]
    for table in ("Table 1", "Table 2", "Table 3", "Table 4", "Table 5", "Figure 2 data"):
        assert table in out.stdout
    # the partition of Table 3's caption (4 Faithful vs 15 Strategic + Low Effort on PubMed)
    assert "4 Faithful vs 15 Strategic + Low Effort" in out.stdout
    assert "refits below / above" in out.stdout
    assert (tmp_path / "fig1_curl_ecdf.png").stat().st_size > 0
    assert (tmp_path / "fig2_coverage.png").stat().st_size > 0
