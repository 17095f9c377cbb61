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


# -- limits the user set: ulimit -v (RLIMIT_AS) and cgroups (issue 21 item 7) ---------------

class _FakeResource:
    """``resource`` with ``ulimit -v`` at ``soft`` bytes (no RLIMIT_DATA)."""
    RLIMIT_AS = 9
    RLIM_INFINITY = -1

    def __init__(self, soft):
        self.soft = soft

    def getrlimit(self, which):
        assert which == self.RLIMIT_AS
        return (self.soft, self.RLIM_INFINITY)


@pytest.fixture
def no_cgroup(monkeypatch, tmp_path):
    from evalcert import memory
    monkeypatch.setattr(memory, "CGROUP_ROOT", str(tmp_path / "no-cgroup"))
    monkeypatch.setattr(memory, "_own_cgroup", lambda: "")
    return memory


def test_memory_available_honours_rlimit_as(monkeypatch, no_cgroup):
    from evalcert.errors import InputError
    memory = no_cgroup
    physical = memory.memory_available()
    monkeypatch.setattr(memory, "_status_bytes", lambda field: 256 * 2 ** 20)  # VmSize
    monkeypatch.setattr(memory, "resource", _FakeResource(2 ** 30))
    assert memory.memory_available() == 768 * 2 ** 20 or physical < 2 ** 30
    with pytest.raises(InputError, match=r"needs 600\.0 MiB but only 768\.0 MiB"):
        memory.require_memory(600 * 2 ** 20, "a matrix")
    monkeypatch.setattr(memory, "resource", _FakeResource(-1))  # unlimited
    assert memory.memory_available() >= physical // 2


def test_memory_available_honours_a_cgroup_limit(monkeypatch, tmp_path, no_cgroup):
    memory = no_cgroup
    monkeypatch.setattr(memory, "resource", None)
    physical = memory.memory_available()
    root = tmp_path / "cgroup"
    (root / "user.slice").mkdir(parents=True)
    monkeypatch.setattr(memory, "CGROUP_ROOT", str(root))
    (root / "memory.max").write_text("max\n")  # the root: no limit
    (root / "memory.current").write_text(f"{5 * 2 ** 30}\n")
    assert abs(memory.memory_available() - physical) < 2 ** 28  # MemAvailable drifts a little
    # the process's own group, v2: limit 2 GiB, 1.5 GiB used
    monkeypatch.setattr(memory, "_own_cgroup", lambda: "user.slice")
    (root / "user.slice" / "memory.max").write_text(f"{2 * 2 ** 30}\n")
    (root / "user.slice" / "memory.current").write_text(f"{3 * 2 ** 29}\n")
    assert memory.memory_available() == 2 ** 29 or physical < 2 ** 30
    # cgroup v1 files at the mount
    (root / "memory").mkdir()
    (root / "memory" / "memory.limit_in_bytes").write_text(f"{2 ** 30}\n")
    (root / "memory" / "memory.usage_in_bytes").write_text(f"{2 ** 30 - 2 ** 20}\n")
    assert memory.memory_available() == 2 ** 20


def test_count_fields_and_the_read_estimate(tmp_path):
    from evalcert.memory import count_fields, estimate_table_read_bytes
    path = tmp_path / "t.csv"
    path.write_text("a,b,c\n" + "1,2,3\n" * 1000)
    assert count_fields(path, chunk=7) == count_fields(path) == 3 * 1001 + 1
    assert estimate_table_read_bytes(100, 10) < estimate_table_read_bytes(100, 11)


# The child sets ulimit -v to its own address space + 1 GiB after the imports (so the
# limit does not depend on what the imports reserve on this machine), then runs the CLI.
_LIMITED = """
import os, resource, sys
import pandas, pyarrow, pyarrow.parquet, pyarrow.dataset, scipy.sparse
import evalcert.cli, evalcert.io.scores, evalcert.io.tables
vm_size = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status")
               if line.startswith("VmSize:"))
limit = vm_size + 2 ** 30
resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
for argv in (["fit", sys.argv[1]], ["fit", sys.argv[2], "--format", "long"],
             ["audit", sys.argv[2]]):
    try:
        code = evalcert.cli.main(argv)
    except MemoryError:
        code = "MemoryError"
    print(argv[0], code, flush=True)
"""


def test_cli_refuses_up_front_under_rlimit_as(tmp_path):
    """A text table with 1.4 x 10^7 fields (28 MB) and a long Parquet file of 1.2 x 10^7 rows
    (a few MB) need more than 1 GiB as strings: under ``ulimit -v`` (address space + 1 GiB)
    each is refused with one line naming the estimate, instead of a MemoryError."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    text = tmp_path / "wide.csv"
    with open(text, "w") as fh:
        fh.write("agent," + ",".join(f"q{j}" for j in range(3500)) + "\n")
        row = ",0" * 3500 + "\n"
        fh.writelines(f"m{k}{row}" for k in range(4000))
    n, J = 12_000_000, 3000
    idx = np.arange(n, dtype=np.int32)
    agents = pa.DictionaryArray.from_arrays(idx // J, pa.array([f"m{k}" for k in range(n // J)]))
    items = pa.DictionaryArray.from_arrays(idx % J, pa.array([f"q{j}" for j in range(J)]))
    long = tmp_path / "long.parquet"
    pq.write_table(pa.table({"agent": agents, "item": items, "score": np.full(n, 0.5)}), long)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", _LIMITED, str(text), str(long)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["fit", "2", "fit", "2", "audit", "2"], proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("evalcert: error")]
    assert len(errors) == 3 and all(" needs " in line and "available" in line
                                    for line in errors), proc.stderr[-2000:]
