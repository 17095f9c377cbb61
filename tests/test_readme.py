"""README.md cannot drift (issue 10, item 11): every ```python block runs, every value a
comment claims (``expr  # value: why``) holds, and every CLI line exits 0 on shipped or
generated data.

How README lines are read
-------------------------
* Python blocks and commands run in a temporary folder holding the fixture files
  below (``scores.csv``, ``S.csv``, ``decisions.csv``, ``pairs.csv``, ``agent_labels.csv``,
  ``responses.csv``) and a link ``evalcert/`` to the package, so shipped files can be
  named by their path in the repository (``evalcert/datasets/mtbench_table1.csv``).
* A line ``EXPR  # CLAIM`` or ``EXPR  # CLAIM: explanation`` whose CLAIM is a Python
  expression asserts ``EXPR == CLAIM``; comments that are prose are left alone.
* Shell lines: ``[...]`` optional parts and ``...`` are dropped, ``a|b|c`` keeps its
  first alternative, ``\\`` continues a line, ``&&`` separates commands, ``#`` starts a
  comment; the commands of one block run in order in one folder. ``evalcert ...`` runs
  in-process with a time limit; ``pip install`` and ``pytest`` are the install and this
  suite (not rerun); ``python benchmarks/...`` scripts must be listed in
  ``COVERED_ELSEWHERE`` (the test run that covers them).
* A block that cannot run on shipped data is marked in README.md by a hidden comment on
  the line just above it: ``<!-- readme-test: skip REASON -->``; the test reports the
  skip with that reason.
"""

from __future__ import annotations

import re
import shlex
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests._cli import run_cli
from tests.conftest import REPO_ROOT

README = REPO_ROOT / "README.md"
SKIP_MARK = re.compile(r"<!--\s*readme-test:\s*skip\s*(.*?)\s*-->")
#: commands of README that other tests run; the value says where
COVERED_ELSEWHERE = {"benchmarks/reproduce_paper.py": "tests/test_reproduce_paper.py runs "
                                                      "it with --quick"}
CLI_SECONDS = 180


def _blocks() -> list[tuple[int, str, str, str | None]]:
    """(first line number, language, text, skip reason) of every fenced block."""
    lines = README.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        fence = re.match(r"^```(\w*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        start, lang, body = i + 1, fence.group(1), []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        above = next((lines[k] for k in range(start - 2, -1, -1) if lines[k].strip()), "")
        mark = SKIP_MARK.search(above)
        blocks.append((start + 1, lang, "\n".join(body), mark.group(1) if mark else None))
        i += 1
    return blocks


def _commands(text: str) -> list[str]:
    joined = re.sub(r"\\\n\s*", " ", text)
    return [cmd.strip() for line in joined.splitlines() for cmd in line.split("&&")
            if cmd.strip() and not cmd.strip().startswith("#")]


def _words(command: str) -> list[str]:
    """The runnable form of a README command line (see the module docstring)."""
    while re.search(r"\[[^\[\]]*\]", command):
        command = re.sub(r"\s*\[[^\[\]]*\]", "", command)
    words = shlex.split(command, comments=True)
    return [w.split("|")[0] if "|" in w and not w.startswith("|") else w for w in words
            if w != "..."]


PYTHON = [b for b in _blocks() if b[1] == "python"]
SHELL = [(b[0], _commands(b[2]), b[3]) for b in _blocks() if b[1] in ("bash", "sh", "console")]


@pytest.fixture()
def workdir(tmp_path, monkeypatch):
    """A folder with the files README's examples name, made from shipped or generated data."""
    from evalcert.datasets.demo import demo_scores

    frame = demo_scores().to_frame()
    frame.to_csv(tmp_path / "scores.csv")
    frame.to_csv(tmp_path / "S.csv")
    # the shipped MT-Bench Table I, its three grader columns (wide decisions: item + graders)
    mtbench = pd.read_csv(REPO_ROOT / "evalcert" / "datasets" / "mtbench_table1.csv", dtype=str)
    mtbench[["item", "experts", "authors", "gpt4"]].to_csv(tmp_path / "decisions.csv",
                                                           index=False)
    # pairwise judgments of the same table, each comparison also shown swapped (B/A)
    win = {"a": "model_a", "b": "model_b", "tie": "tie"}
    flip = {"a": "model_b", "b": "model_a", "tie": "tie"}
    pairs = [(r.question_id, a, b, w[getattr(r, judge)], judge)
             for r in mtbench.itertuples() for judge in ("authors", "gpt4")
             for a, b, w in ((r.model_a, r.model_b, win), (r.model_b, r.model_a, flip))]
    pd.DataFrame(pairs, columns=["question_id", "model_a", "model_b", "winner",
                                 "judge"]).to_csv(tmp_path / "pairs.csv", index=False)
    pd.DataFrame({"agent": frame.index, "good_faith": np.arange(len(frame)) % 2}).to_csv(
        tmp_path / "agent_labels.csv", index=False)
    rng = np.random.default_rng(0)
    theta, b = rng.normal(0, 1, 200), rng.normal(0, 1, 20)
    prob = 1 / (1 + np.exp(-(theta[:, None] - b[None, :])))
    responses = pd.DataFrame((rng.random(prob.shape) < prob).astype(int),
                             index=[f"model{i}" for i in range(200)],
                             columns=[f"item{j}" for j in range(20)])
    responses.index.name = "model"
    responses.to_csv(tmp_path / "responses.csv")
    # per-item results of 4 models (compare) and a battle log (rank)
    results = pd.DataFrame((rng.random((4, 60)) < [[0.9], [0.7], [0.6], [0.4]]).astype(int),
                           index=[f"model{i}" for i in range(4)],
                           columns=[f"q{j // 2}/turn{j % 2 + 1}" for j in range(60)])
    results.index.name = "model"
    results.to_csv(tmp_path / "results.csv")
    from evalcert.datasets.battles import simulate_battles
    simulate_battles(n_models=8, n_battles=5000, seed=0)[0].to_csv(tmp_path / "battles.csv",
                                                                   index=False)
    # README may name shipped files by their path in the repository
    (tmp_path / "evalcert").symlink_to(REPO_ROOT / "evalcert", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _claims(code: str) -> list[tuple[str, str]]:
    """``(expression, claimed value)`` pairs of ``EXPR  # CLAIM[: why]`` lines."""
    out = []
    for line in code.splitlines():
        if "#" not in line or line.lstrip().startswith("#"):
            continue
        expr, _, comment = line.partition("#")
        claim = comment.split(":")[0].strip()
        try:
            compile(expr.strip(), "<expr>", "eval")
            compile(claim, "<claim>", "eval")
        except SyntaxError:
            continue
        head = expr.strip().split("(")[0]
        if expr.strip() and "=" not in head and head != "print":  # not assignments, prints
            out.append((expr.strip(), claim))
    return out


@pytest.mark.parametrize("line, lang, code, skip", PYTHON, ids=[f"line{b[0]}" for b in PYTHON])
def test_python_block_runs_and_its_claims_hold(line, lang, code, skip, workdir):
    if skip is not None:
        pytest.skip(f"README.md line {line} is marked not runnable here: {skip}")
    namespace: dict = {"__name__": "__readme__"}
    exec(compile(code, f"README.md:{line}", "exec"), namespace)  # our own README, not input
    for expr, claim in _claims(code):
        try:
            expected = eval(claim, {"Fraction": Fraction}, dict(namespace))
        except NameError:  # prose that happens to parse, e.g. "abilities, difficulties"
            continue
        actual = eval(expr, namespace)
        assert actual == expected, f"README.md line {line}: {expr} is {actual!r}, the " \
                                   f"comment says {claim}"


def _run_command(line: int, command: str) -> None:
    words = _words(command)
    if words[:1] == ["evalcert"]:
        status, out, err = run_cli(words[1:], seconds=CLI_SECONDS)
        assert status == 0, f"README.md line {line}: {' '.join(words)} -> {status}\n{err}"
        return
    text = " ".join(words)
    if re.match(r"python3? -m pip install", text):
        return  # installs the package: .ci/run runs it in a fresh virtual environment
    if re.match(r"python3? -m pytest", text):
        return  # this test suite
    if any(script in text for script in COVERED_ELSEWHERE):
        return
    pytest.fail(f"README.md line {line}: {command!r} is neither an evalcert verb nor known "
                "here; mark its block with <!-- readme-test: skip REASON --> or add it to "
                "COVERED_ELSEWHERE")


@pytest.mark.parametrize("line, commands, skip", SHELL,
                         ids=[f"line{c[0]}" for c in SHELL])
def test_shell_block_exits_zero(line, commands, skip, workdir):
    # The commands of one block run in order in one folder (a later one may read what an
    # earlier one wrote, e.g. irt fit --out-dir fit && irt score fit/items.csv).
    if skip is not None:
        pytest.skip(f"README.md line {line} is marked not runnable here: {skip}")
    for command in commands:
        _run_command(line, command)


def test_readme_has_blocks_to_check():
    # the parser above finds the README's examples (guards against a silent no-op test)
    assert len(PYTHON) >= 2 and sum(len(c) for _, c, _ in SHELL) >= 6
    assert _words("evalcert fit s.csv [--format wide|long] [--lam 1e-6]") == ["evalcert",
                                                                              "fit", "s.csv"]
    assert _words("evalcert irt fit r.csv --model rasch|2pl ...") == ["evalcert", "irt", "fit",
                                                                     "r.csv", "--model",
                                                                     "rasch"]
