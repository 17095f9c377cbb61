"""evalcert.memory's estimate of a read + fit against a measured run (issue 13 item 2)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from evalcert.memory import FIT_FROM_FILE_BYTES, estimate_fit_from_file_bytes

#: the estimate must be within this factor of the measured peak (README, bench_scale.py)
FACTOR = 1.5

# The peak is the process's VmHWM (evalcert.memory.peak_rss), not ru_maxrss:
# after fork + exec, Linux reports the parent's (pytest's) resident size in
# the child's ru_maxrss.
_CHILD = """
import os, sys
os.environ["OPENBLAS_NUM_THREADS"] = "1"
from evalcert.io.scores import read_scores
from evalcert.solvers import ClippedLinear
S = read_scores(sys.argv[1], format="long")
model = ClippedLinear(solver="native").fit(S)
assert model.result_.certificate.passed
from evalcert.memory import peak_rss
print(S.n_observed, peak_rss())
"""


def _write_design(path, K, J, per_item, seed=0):
    """A long Parquet file: item j seen by one agent in each of the windows
    ``s_j + [k w, (k + 1) w)`` (mod K, ``w = K // per_item``), random starts ``s_j``
    (``s_j = j`` for the first K items: every agent is seen)."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    rng = np.random.default_rng(seed)
    start = rng.integers(0, K, J)
    start[:K] = np.arange(K)
    cols = np.repeat(np.arange(J), per_item)
    width = K // per_item                      # one agent from each of per_item windows
    rows = (start[cols] + np.tile(np.arange(per_item) * width, J)
            + rng.integers(0, width, len(cols))) % K
    scores = np.clip(rng.normal(0.2, 0.6, K)[rows] - rng.normal(0, 0.3, J)[cols], -1, 1)
    pq.write_table(pa.table({"agent": pa.array([f"m{k}" for k in range(K)]).take(rows),
                             "item": pa.array([f"q{j}" for j in range(J)]).take(cols),
                             "score": scores}), path, row_group_size=250_000)
    return len(rows)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's /proc")
def test_the_read_and_fit_estimate_matches_a_measured_peak(tmp_path):
    K, J, per_item = 1000, 40_000, 20                  # 8 x 10^5 cells, ~1 s of work
    n = _write_design(tmp_path / "s.parquet", K, J, per_item)
    out = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path / "s.parquet")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    cells, peak = map(int, out.stdout.split())
    assert cells == n
    est = estimate_fit_from_file_bytes(n, K, J)
    assert est / FACTOR <= peak <= est * FACTOR, (peak / 2 ** 20, est / 2 ** 20)


def test_the_estimate_is_linear_in_cells_and_names():
    c = FIT_FROM_FILE_BYTES
    assert estimate_fit_from_file_bytes(0, 0, 0) == c["base"]
    assert estimate_fit_from_file_bytes(10 ** 8, 10 ** 4, 10 ** 6) == \
        c["base"] + 10 ** 8 * c["cell"] + (10 ** 4 + 10 ** 6) * c["name"]


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's /proc")
def test_peak_rss_of_a_spawned_process_is_its_own_not_its_parents():
    # bench_dask reported every Dask worker at its client's peak (3268 MiB for all
    # three at 2 x 10^7 cells): ru_maxrss of a fork + exec child starts at the parent's
    ballast = np.ones(300 * 2 ** 20 // 8)              # 300 MiB resident in this process
    code = ("import resource; from evalcert.memory import peak_rss; "
            "print(peak_rss(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    own, inherited = map(int, out.stdout.split())
    assert own < 250 * 2 ** 20 <= ballast.nbytes, own / 2 ** 20
    assert own <= inherited                          # VmHWM never above ru_maxrss
