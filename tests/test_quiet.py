"""stdout holds evalcert's result only: native solver chatter (HiGHS's banner) goes nowhere.

Issue 21, item 5: ``evalcert audit --m 2 | head -1`` printed "Running HiGHS 1.16.0 ...:
Copyright ..." because highspy >= 1.16 prints its banner from C++ on file descriptor 1 when
the first ``Highs()`` of a process is built. The CLI runs in a fresh subprocess here, so the
banner would be the process's first.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from evalcert.quiet import native_stdout

ROOT = Path(__file__).resolve().parents[1]


def test_native_stdout_discards_descriptor_1_and_restores_it(capfd):
    with native_stdout():
        os.write(1, b"banner of a C library\n")
    os.write(1, b"after\n")
    out, err = capfd.readouterr()
    assert out == "after\n" and err == ""


def test_native_stdout_to_stderr_and_nested(capfd):
    with native_stdout(to_stderr=True):
        with native_stdout():  # nested: the outer redirection holds
            os.write(1, b"solver log\n")
        os.write(1, b"more log\n")
    os.write(1, b"result\n")
    out, err = capfd.readouterr()
    assert out == "result\n" and err == "solver log\nmore log\n"


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    return subprocess.run([sys.executable, "-m", "evalcert", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def judge_log(tmp_path):
    rng = np.random.default_rng(21)
    rows = ["item,grader,label"] + [f"q{i},g{g},{'ab'[rng.integers(2)]}"
                                    for i in range(20) for g in range(3)]
    path = tmp_path / "log.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("m", ["2", "full"])
def test_audit_ilp_stdout_first_line_is_evalcerts(judge_log, m):
    proc = _run(["audit", str(judge_log), "--m", m], judge_log.parent)
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("no-knowledge alarm ("), proc.stdout[:300]
    assert "HiGHS" not in proc.stdout.replace("(highs)", ""), proc.stdout[:300]


@pytest.mark.skipif(importlib.util.find_spec("qpsolvers") is None
                    or importlib.util.find_spec("highspy") is None, reason="needs qpsolvers")
def test_fit_qpsolvers_highs_stdout_first_line_is_evalcerts(tmp_path):
    rng = np.random.default_rng(5)
    lines = ["model," + ",".join(f"i{j}" for j in range(12))]
    lines += [f"m{k}," + ",".join(f"{v:.3f}" for v in rng.uniform(-1, 1, 12)) for k in range(6)]
    (tmp_path / "s.csv").write_text("\n".join(lines) + "\n")
    proc = _run(["fit", "s.csv", "--solver", "qpsolvers-highs"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("clipped-linear fit"), proc.stdout[:300]
    assert "Copyright" not in proc.stdout


def test_solver_log_points_descriptor_1_at_stderr_and_switches_solvers_on(capfd):
    from evalcert.quiet import solver_log, solver_log_enabled

    with solver_log(False):
        assert not solver_log_enabled()
        with native_stdout():  # default: discard
            os.write(1, b"banner\n")
    with solver_log():
        assert solver_log_enabled()
        with native_stdout():  # default inside solver_log: stderr
            os.write(1, b"solver log\n")
    assert not solver_log_enabled()
    os.write(1, b"result\n")
    out, err = capfd.readouterr()
    assert out == "result\n", out
    assert err == "solver log\n", err


def _log_lines(text: str, word: str) -> list[str]:
    """Lines naming ``word`` that are not evalcert's own (its summary names the solver)."""
    return [line for line in text.splitlines()
            if word in line and not line.startswith(("no-knowledge", "evalcert:"))
            and f"({word.lower()})" not in line]


@pytest.mark.parametrize("verbose", [False, True], ids=["quiet", "verbose"])
def test_audit_verbose_sends_highs_log_to_stderr_only(judge_log, verbose):
    proc = _run(["audit", str(judge_log), "--m", "2"] + ["--verbose"] * verbose,
                judge_log.parent)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("no-knowledge alarm ("), proc.stdout[:300]
    assert not _log_lines(proc.stdout, "HiGHS"), proc.stdout[:300]
    solver_lines = _log_lines(proc.stderr, "HiGHS")
    assert bool(solver_lines) == verbose, proc.stderr[:600]


@pytest.mark.parametrize("solver, word, verbose", [
    ("osqp-direct", "OSQP", False), ("osqp-direct", "OSQP", True),  # OSQP's C library
    ("clarabel", "CVXPY", True)])  # CVXPY's Python log (sys.stdout) and Clarabel's
def test_fit_verbose_sends_the_solver_log_to_stderr_only(tmp_path, solver, word, verbose):
    rng = np.random.default_rng(8)
    lines = ["model," + ",".join(f"i{j}" for j in range(10))]
    lines += [f"m{k}," + ",".join(f"{v:.3f}" for v in rng.uniform(-1, 1, 10)) for k in range(5)]
    (tmp_path / "s.csv").write_text("\n".join(lines) + "\n")
    proc = _run(["fit", "s.csv", "--solver", solver] + ["--verbose"] * verbose, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("clipped-linear fit"), proc.stdout[:300]
    assert word not in proc.stdout.replace(f"({solver})", "").replace(solver, "")
    assert (word in proc.stderr) == verbose, proc.stderr[:600]
