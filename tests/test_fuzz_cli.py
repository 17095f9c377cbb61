"""Fuzz every CLI verb with malformed files and odd parameters (issue 10, Definition of done).

Each case runs ``evalcert.cli.main`` in-process under a time limit and must end in exit
status 0, or in status 2 with exactly one error line on stderr naming the problem (the
last line; lines before it may only be counts a reader reports): never a
traceback (an exception escaping ``main`` fails the case), never a hang (the time limit
fails it). Cases are generated from seeded loops: every numeric option the parser
declares (found by walking it, so new options are fuzzed too) gets odd values, and
every verb that reads a file gets every malformed file. Cases a verb owned elsewhere
still fails are marked ``xfail(strict=True)`` in ``KNOWN`` with the reason, so a fix
turns them into a failure that asks for the mark's removal.

Issue 21 added files that are not what they seem (a named pipe, a cell of 200,000
characters, JSON nested 100,000 deep, integers of 5,000 digits), output paths that are
symbolic links (dangling or to an existing file, with and without ``--force``: refused,
the target untouched), and runs in a subprocess under ``ulimit -v`` (RLIMIT_AS) and
with a named pipe, where neither a hang nor the allocator can take the test run down.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys

import numpy as np
import pytest

from evalcert.cli import build_parser
from tests._cli import run_cli

SECONDS = 20  # per case; every case here takes well under a second on an idle machine
ODD = ("0", "-1", "nan", "inf", "-inf", "1e308", "99999999999999999999", "abc", "")

# verb -> (words before the file, words after it); {out} is a fresh output folder
FILE_VERBS = {
    "fit": (["fit"], []),
    "gini": (["gini"], []),
    "curl": (["curl"], ["--rectangles", "200"]),
    "experiment": (["experiment", "sparse-recovery", "--scores"],
                   ["--C", "1.6", "--seeds", "2", "--n-jobs", "1", "--no-progress"]),
    "audit": (["audit"], []),
    "irt-fit": (["irt", "fit"], []),
    "irt-holdout": (["irt", "holdout"], []),
    "irt-itemfit": (["irt", "itemfit"], []),
    "irt-compare": (["irt", "compare"], []),
    "irt-anchors": (["irt", "anchors"], ["--n-anchors", "3"]),
}
GOOD_FILE = {"fit": "scores.csv", "gini": "scores.csv", "curl": "scores.csv",
             "experiment": "scores.csv", "audit": "decisions.csv", "irt-fit": "binary.csv",
             "irt-holdout": "binary.csv", "irt-itemfit": "binary.csv",
             "irt-compare": "binary.csv", "irt-anchors": "binary.csv"}
BENCH_BASE = ["bench", "--quick", "--family", "ilp-m1", "--backends", "native", "--profile",
              "low", "--jobs", "1", "--no-memory", "--out", "{out}"]

#: case id -> why it still fails (owned by another engineer; forwarded by the lead)
KNOWN: dict[str, str] = {}


def _scores_text() -> str:
    rng = np.random.default_rng(0)
    theta, b = rng.uniform(-0.3, 0.3, 8), rng.uniform(-0.3, 0.3, 10)
    values = np.clip(theta[:, None] - b[None, :] + rng.normal(0, 0.05, (8, 10)), -1, 1)
    rows = ["agent," + ",".join(f"q{j}" for j in range(10))]
    rows += [f"a{i}," + ",".join(f"{v:.3f}" for v in values[i]) for i in range(8)]
    return "\n".join(rows) + "\n"


def _binary_text() -> str:
    rng = np.random.default_rng(1)
    theta, b = rng.normal(0, 1, 30), rng.normal(0, 1, 8)
    y = (rng.random((30, 8)) < 1 / (1 + np.exp(-(theta[:, None] - b)))).astype(int)
    rows = ["model," + ",".join(f"i{j}" for j in range(8))]
    rows += [f"m{i}," + ",".join(map(str, y[i])) for i in range(30)]
    return "\n".join(rows) + "\n"


DECISIONS = "item,g1,g2,g3\n" + "".join(
    f"{k},{'ab'[k % 2]},{'ab'[(k // 2) % 2]},{'ab'[(k // 3) % 2]}\n" for k in range(12))


FIFO = "FIFO"  # a named pipe: opening it for reading blocks until a writer comes


def _malformed(good: str) -> dict[str, bytes | str | None]:
    """Malformed variants of a good CSV; None marks a directory, FIFO a named pipe."""
    lines = good.splitlines()
    body = "\n".join(lines[1:]) + "\n"
    rng = np.random.default_rng(2)
    return {
        "no_header": body.encode(),
        "empty": b"",
        "header_only": (lines[0] + "\n").encode(),
        "binary": bytes(rng.integers(0, 256, 300, dtype=np.uint8)),
        "gzip_named_csv": gzip.compress(good.encode()),
        "semicolons": good.replace(",", ";").encode(),
        "nan_inf": good.replace(lines[1].split(",")[1], "nan", 1)
                       .replace(lines[2].split(",")[2], "inf", 1).encode(),
        "huge_values": "\n".join([lines[0]] + [",".join([r.split(",")[0]] + ["1e308"] *
                                  (len(r.split(",")) - 1)) for r in lines[1:]]).encode(),
        "duplicate_names": (lines[0] + "\n" + lines[1] + "\n" + lines[1] + "\n"
                            + "\n".join(lines[2:]) + "\n").encode(),
        "duplicate_columns": good.replace(lines[0], ",".join(
            lines[0].split(",")[:-1] + [lines[0].split(",")[1]]), 1).encode(),
        "latin1_names": good.replace(lines[1].split(",")[0], "mod\u00e8le", 1).encode("latin-1"),
        "ragged": (good + lines[1] + ",0.5,0.5\n").encode(),
        "directory": None,
        "fifo": FIFO,
        # a cell past csv's default limit (131,072 characters): a _csv.Error traceback
        "huge_cell": good.replace(lines[1].split(",")[1], "7" * 200_000, 1).encode(),
        "huge_name": good.replace(lines[1].split(",")[0], "n" * 200_000, 1).encode(),
    }


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    goods = {"scores.csv": _scores_text(), "binary.csv": _binary_text(),
             "decisions.csv": DECISIONS}
    for name, text in goods.items():
        (root / name).write_text(text)
        for kind, data in _malformed(text).items():
            path = root / f"{kind}-{name}"
            if data is None:
                path.mkdir()
            elif data == FIFO:
                os.mkfifo(path)
            else:
                path.write_bytes(data)
    (root / "corrupt.parquet").write_bytes(b"PAR1" + bytes(range(64)) + b"PAR1")
    (root / "bad.json").write_text('{"g1": {"a": 1}, "g1": {"a": 2}')
    # Python's JSON reader: RecursionError past ~1000 levels, ValueError past 4,300 digits
    (root / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (root / "deep.jsonl").write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    (root / "bigint.jsonl").write_text(
        '{"agent": "a", "model": "a", "item": "q", "grader": "g", "score": '
        + "1" * 5000 + ', "correct": 1, "label": "x"}\n')
    (root / "bigint.json").write_text('{"g1": {"a": ' + "1" * 5000 + ', "b": 1}, '
                                      '"g2": {"a": 1, "b": 1}}')
    return root


def _numeric_options() -> list[tuple[tuple[str, ...], str]]:
    """(verb words, option) of every option with a type= function, found by walking."""
    out = []

    def walk(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, words + (name,))
            elif action.option_strings and action.type is not None:
                out.append((words, action.option_strings[-1]))

    walk(build_parser(), ())
    return out


def _verb_key(words: tuple[str, ...]) -> str | None:
    if words[:1] == ("experiment",):
        return "experiment"
    key = "-".join(words)
    return key if key in FILE_VERBS or key == "bench" else None


def _cases() -> list:
    cases = []
    for verb in FILE_VERBS:  # malformed files x verbs that read files
        for kind in (*_malformed(_scores_text()), "missing", "corrupt_parquet", "bad_json",
                     *_JSON_FILES):
            cases.append((f"{verb}-file-{kind}", verb, ("file", kind), None))
    rng = np.random.default_rng(10)  # odd values for every numeric option
    for words, option in _numeric_options():
        verb = _verb_key(words)
        if verb is None:
            continue
        for value in rng.permutation(ODD)[:5]:
            cases.append((f"{verb}-{option}={value or 'EMPTY'}", verb, ("option", option),
                          str(value)))
    cases += [("audit---threshold=nan", "audit", ("option", "--threshold"), "nan"),
              ("audit---threshold=2", "audit", ("option", "--threshold"), "2"),
              ("demo---json-nodir", "demo", ("demo", "--json"), "nodir/x.json"),
              ("demo---solver-unknown", "demo", ("demo", "--solver"), "nosuch")]
    return [pytest.param(*c[1:], id=c[0], marks=[pytest.mark.xfail(strict=True,
                                                                   reason=KNOWN[c[0]])]
                         if c[0] in KNOWN else []) for c in cases]


_JSON_FILES = {"deep_json": "deep.json", "deep_jsonl": "deep.jsonl",
               "bigint_jsonl": "bigint.jsonl", "bigint_json": "bigint.json"}


def _argv(verb: str, what: tuple[str, str], value: str | None, files, tmp_path) -> list[str]:
    if what[0] == "demo":
        return ["demo", what[1], str(tmp_path / value) if what[1] == "--json" else value]
    if verb == "bench":
        return [w.format(out=tmp_path / "bench") for w in BENCH_BASE] + [what[1], value]
    before, after = FILE_VERBS[verb]
    good = files / GOOD_FILE[verb]
    if what[0] == "file":
        kind = what[1]
        path = {"missing": files / "no-such-file.csv", "corrupt_parquet": files / "corrupt.parquet",
                "bad_json": files / "bad.json",
                **{k: files / name for k, name in _JSON_FILES.items()}}.get(
                    kind, files / f"{kind}-{good.name}")
        return [*before, str(path), *after]
    return [*before, str(good), *after, what[1], value]


@pytest.mark.parametrize("verb, what, value", _cases())
def test_cli_case_ends_cleanly(verb, what, value, files, tmp_path):
    argv = _argv(verb, what, value, files, tmp_path)
    if verb == "bench" and value is not None:
        # Never run a bench the parser accepts with an odd job count: it would start
        # that many worker processes. The property checked is the parser's refusal.
        if what[1] == "--jobs":
            with pytest.raises(SystemExit):
                build_parser().parse_args(argv)
            return
    status, out, err = run_cli(argv, seconds=SECONDS)
    lines = [line for line in err.splitlines() if line.strip()]
    if status == 0:
        return
    assert status == 2, f"exit status {status}; stderr:\n{err}"
    # One error line, last; lines before it may only be the counts a reader reports.
    errors = [line for line in lines if ": error: " in line]
    assert len(errors) == 1 and lines[-1] == errors[0], f"expected one error line:\n{err}"
    assert "Traceback" not in err and len(errors[0]) > 20


def test_fuzz_covers_every_verb():
    ids = {p.id for p in _cases()}
    for verb in (*FILE_VERBS, "bench", "demo"):
        assert any(i.startswith(verb + "-") for i in ids), verb
    assert len(ids) == len(_cases())  # ids are unique
    json.dumps(sorted(ids))  # ids are plain strings


# ---- badly scaled fits through the CLI, every backend ----------------------------------------

def _badly_scaled_csv(path, seed: int):
    """Scores whose magnitudes span 1e-6..1, some on the box, 70% of cells observed."""
    rng = np.random.default_rng(seed)
    K, J = 9, 12
    theta, b = rng.uniform(-0.6, 0.6, K), rng.uniform(-0.6, 0.6, J)
    S = theta[:, None] - b[None, :] + rng.normal(0, 1, (K, J)) * 10.0 ** rng.uniform(-6, 0,
                                                                                   (K, J))
    S = np.clip(S, -1, 1)
    S[rng.random((K, J)) > 0.7] = np.nan
    S[np.arange(K), np.arange(K) % J] = 1.0  # every agent observed, some cells on the box
    lines = ["agent," + ",".join(f"q{j}" for j in range(J))]
    lines += [f"a{i}," + ",".join("" if np.isnan(v) else repr(float(v)) for v in S[i])
              for i in range(K)]
    path.write_text("\n".join(lines) + "\n")
    return S


def _reference_objective(S: np.ndarray, lam: float, box: str) -> float:
    """Eq. 7 with sum b = 0 written cell by cell in CVXPY, Clarabel at 1e-12."""
    import cvxpy as cp

    K, J = S.shape
    rows, cols = np.nonzero(~np.isnan(S))
    theta, b = cp.Variable(K), cp.Variable(J)
    fit = theta[rows] - b[cols]
    cons = [cp.sum(b) == 0]
    if box == "observed":
        cons.append(cp.abs(fit) <= 1)
    elif box == "all":
        cons.append(cp.abs(cp.reshape(theta, (K, 1), order="C") @ np.ones((1, J))
                           - np.ones((K, 1)) @ cp.reshape(b, (1, J), order="C")) <= 1)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(fit - S[rows, cols])
                                  + lam * (cp.sum_squares(theta) + cp.sum_squares(b))), cons)
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    return float(prob.value)


@pytest.mark.parametrize("seed, box", [(0, "all"), (1, "observed"), (2, "none")])
def test_fit_answers_on_every_backend_are_within_their_certified_bound(seed, box, tmp_path):
    # A certified answer (exit 0) may not be beaten by an independent formulation by more
    # than the suboptimality bound its certificate reports; a refusal is one line.
    from evalcert.commands.fit import SOLVERS

    csv = tmp_path / "s.csv"
    S = _badly_scaled_csv(csv, seed)
    reference, certified = None, []
    for solver in SOLVERS:
        out = tmp_path / f"{solver}.json"
        status, _, err = run_cli(["fit", str(csv), "--box", box, "--solver", solver,
                                  "--json", str(out)], seconds=SECONDS)
        if status == 2:
            assert len([x for x in err.splitlines() if ": error: " in x]) == 1, err
            continue
        assert status == 0
        result = json.loads(out.read_text())
        if reference is None:
            reference = _reference_objective(S, 1e-6, box)
        slack = 1e-8 * max(1.0, reference)  # the reference's own accuracy
        assert result["certificate"]["passed"] is True
        assert result["objective"] - reference <= (result["certificate"]["suboptimality_bound"]
                                                   + slack), solver
        certified.append(solver)
    assert "native" in certified, certified


# ---- symbolic links on output paths (issue 21): refused, the target untouched --------------

#: verb -> (argv with {inp} and {out}; the output's name; the input file)
OUTPUT_CASES = {
    "fit---json": (["fit", "{inp}", "--json", "{out}"], "o.json", "scores.csv"),
    "gini---json": (["gini", "{inp}", "--json", "{out}"], "o.json", "scores.csv"),
    "curl---plot": (["curl", "{inp}", "--rectangles", "50", "--plot", "{out}"], "o.png",
                    "scores.csv"),
    "audit---json": (["audit", "{inp}", "--json", "{out}"], "o.json", "decisions.csv"),
    "audit---csv": (["audit", "{inp}", "--csv", "{out}"], "o.csv", "decisions.csv"),
    "audit---plot": (["audit", "{inp}", "--plot", "{out}"], "o.png", "decisions.csv"),
    "irt-fit---json": (["irt", "fit", "{inp}", "--json", "{out}"], "o.json", "binary.csv"),
    "irt-fit---out-dir": (["irt", "fit", "{inp}", "--out-dir", "{dir}"], "models.csv",
                          "binary.csv"),
    "irt-holdout---json": (["irt", "holdout", "{inp}", "--json", "{out}"], "o.json",
                           "binary.csv"),
    "demo---json": (["demo", "--json", "{out}"], "o.json", None),
    "bench-report.md": ([w if w != "{out}" else "{dir}" for w in BENCH_BASE], "report.md", None),
}


@pytest.mark.parametrize("force", [False, True], ids=["", "force"])
@pytest.mark.parametrize("link", ["dangling", "existing"])
@pytest.mark.parametrize("case", list(OUTPUT_CASES))
def test_output_symlinks_are_refused(case, link, force, files, tmp_path):
    words, name, inp = OUTPUT_CASES[case]
    folder = tmp_path / "out"
    folder.mkdir()
    victim = tmp_path / ("victim" + os.path.splitext(name)[1])
    if link == "existing":
        victim.write_bytes(b"keep")
    (folder / name).symlink_to(victim)
    argv = [w.format(inp=files / inp if inp else "", out=folder / name, dir=folder)
            for w in words] + (["--force"] if force else [])
    status, _, err = run_cli(argv, seconds=SECONDS)
    errors = [line for line in err.splitlines() if ": error: " in line]
    assert status == 2 and len(errors) == 1 and "Traceback" not in err, err
    assert "symbolic link" in errors[0]
    if link == "existing":
        assert victim.read_bytes() == b"keep"
    else:
        assert not victim.exists()


# ---- in a subprocess: a hang and an address-space cap cannot take the test run down ------

def _run_capped(argv: list[str], cap: int | None) -> subprocess.Popen:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               MKL_NUM_THREADS="1", MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(
                   os.path.abspath(__file__))), os.environ.get("PYTHONPATH", "")]))

    def limit() -> None:  # in the child, before exec
        if cap is not None:
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    return subprocess.Popen([sys.executable, "-m", "evalcert", *argv], env=env,
                            preexec_fn=limit, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def test_fifo_and_address_space_cap_end_cleanly_in_a_subprocess(files, tmp_path):
    # ulimit -v 1 GiB: evalcert and its imports fit; a 20,000 x 20,000 dense response
    # table (3 GiB, from a 20,000-row long file) does not, and must be one line with
    # status 2, not a MemoryError traceback. A FIFO must not block (was: forever).
    diag = tmp_path / "diag.csv"
    diag.write_text("model,item,correct\n" + "".join(f"m{i},i{i},{i % 2}\n"
                                                     for i in range(20_000)))
    gib = 1 << 30
    runs = {"irt-diag-capped": (["irt", "fit", str(diag), "--format", "long"], gib, 2),
            "audit-capped": (["audit", str(files / "decisions.csv")], gib, 0),
            "fit-fifo": (["fit", str(files / "fifo-scores.csv")], None, 2),
            "irt-fifo": (["irt", "fit", str(files / "fifo-binary.csv")], None, 2)}
    procs = {key: _run_capped(argv, cap) for key, (argv, cap, _) in runs.items()}
    try:
        for key, proc in procs.items():
            _, err = proc.communicate(timeout=180)
            lines = [x for x in err.splitlines() if ": error: " in x]
            assert "Traceback" not in err, (key, err)
            assert proc.returncode == runs[key][2], (key, err)
            if proc.returncode == 2:
                assert len(lines) == 1, (key, err)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
            proc.communicate()


# ---- the same campaign under an address-space cap (ulimit -v, issue 21 item 7) -------------

# The child caps its address space at what it holds after the imports + 1 GiB (so the cap
# does not depend on what the imports reserve on this machine), then runs every case
# in-process; a MemoryError or any other exception escaping the CLI is reported, not raised.
_CAPPED_CAMPAIGN = """
import json, resource, sys
import pandas, pyarrow, pyarrow.parquet, scipy.sparse, matplotlib
matplotlib.use("Agg")
import evalcert.cli
from tests._cli import run_cli
vm_size = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status")
               if line.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS,
                   (vm_size + 2 ** 30, resource.getrlimit(resource.RLIMIT_AS)[1]))
for case, argv in json.loads(open(sys.argv[1]).read()):
    try:
        status, _, err = run_cli(argv, seconds=60)
    except BaseException as exc:  # noqa: BLE001 - the parent fails the case, naming it
        status, err = type(exc).__name__, repr(exc)[:300]
    print(json.dumps([case, status, err[-600:]]), flush=True)
"""


def test_malformed_and_oversized_files_under_an_address_space_cap(files, tmp_path):
    # Every verb that reads a file, on its good file, on files that are not what they seem
    # (a FIFO, a 200,000-character cell and name, JSON nested 100,000 deep) and on a table
    # whose 1.4 x 10^7 fields need more than the 1 GiB left: status 0 or 2 with one error
    # line, never a MemoryError or a traceback; the oversized table is refused up front
    # with the estimate ("needs ... available").
    wide = tmp_path / "wide.csv"
    with open(wide, "w") as fh:
        fh.write("agent," + ",".join(f"q{j}" for j in range(3500)) + "\n")
        row = ",0" * 3500 + "\n"
        fh.writelines(f"m{k}{row}" for k in range(4000))
    kinds = ("good", "fifo", "huge_cell", "huge_name", "deep_json", "deep_jsonl", "oversized")
    cases = []
    for verb, (before, after) in FILE_VERBS.items():
        good = files / GOOD_FILE[verb]
        paths = {"good": good, "oversized": wide,
                 **{k: files / name for k, name in _JSON_FILES.items()}}
        for kind in kinds:
            path = paths.get(kind, files / f"{kind}-{good.name}")
            extra = ["--penalised"] if verb == "gini" else []  # the good file is noisy
            cases.append((f"{verb}-{kind}", [*before, str(path), *after, *extra]))
    plan = tmp_path / "cases.json"
    plan.write_text(json.dumps(cases))
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               MKL_NUM_THREADS="1", MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(
                   os.path.abspath(__file__))), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", _CAPPED_CAMPAIGN, str(plan)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("[")]
    assert [r[0] for r in results] == [c[0] for c in cases], proc.stderr[-2000:]
    bad = []
    for case, status, err in results:
        errors = [line for line in err.splitlines() if ": error: " in line]
        lines = [line for line in err.splitlines() if line.strip()]
        if case.endswith("-good"):
            ok = status == 0
        elif case.endswith("-oversized"):
            ok = status == 2 and len(errors) == 1 and " needs " in errors[0]
        else:
            ok = status in (0, 2) and (status == 0 or (len(errors) == 1
                                                       and lines[-1] == errors[0]))
        if not ok or "Traceback" in err:
            bad.append((case, status, err[-300:]))
    assert not bad, bad
