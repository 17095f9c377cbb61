"""The public API under ``mypy --strict``: a user's script that imports and uses it type-checks,
and every public name has a real type (none is ``Any``, which would check nothing).

mypy is in the ``test`` extra; without it these tests are skipped with the reason.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import evalcert

ROOT = Path(__file__).resolve().parents[1]


def _mypy() -> list[str]:
    if importlib.util.find_spec("mypy") is not None:
        return [sys.executable, "-m", "mypy"]
    found = shutil.which("mypy")
    if found is None:
        pytest.skip("mypy is not installed (pip install '.[test]' brings it)")
    return [found]


def _run(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "user_script.py"
    script.write_text(source)
    env = {**os.environ, "MYPYPATH": str(ROOT)}     # the source tree, not an installed copy
    return subprocess.run(
        [*_mypy(), "--strict", "--follow-imports=silent", "--no-incremental",
         "--python-executable", sys.executable, "--cache-dir", str(tmp_path / "cache"),
         str(script)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)


def test_py_typed_marker_ships():
    assert (ROOT / "evalcert" / "py.typed").is_file()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"evalcert" = ["py.typed"]' in pyproject


def test_type_checking_block_matches_public_names():
    """The ``if TYPE_CHECKING`` imports of ``evalcert/__init__.py`` name every public name
    (``X as X``), so a type checker sees what ``from evalcert import X`` returns."""
    text = (ROOT / "evalcert" / "__init__.py").read_text()
    block = text[text.index("if TYPE_CHECKING:"):text.index("#: Subpackages")]
    block = "\n".join(line.split("#")[0] for line in block.splitlines())
    exported = set(re.findall(r"\b(\w+) as \1\b", block))
    assert exported == set(evalcert._PUBLIC)


#: a user's script: it must type-check cleanly under --strict
USER_SCRIPT = """
from __future__ import annotations

from fractions import Fraction

import numpy as np
import numpy.typing as npt

from evalcert import (AlarmResult, ClippedLinear, ClippedLinearResult, InputError,
                      IRTResult, Rasch, ScoreMatrix, alarm, curl_test, read_scores)


def fit(S: ScoreMatrix) -> ClippedLinearResult:
    model = ClippedLinear(lam=1e-6, box="all").fit(S)
    result: ClippedLinearResult = model.result_
    return result


def audit() -> Fraction:
    res: AlarmResult = alarm({"authors": {"a": 5, "b": 10, "tie": 10},
                              "gpt4": {"a": 4, "b": 18, "tie": 3}}, threshold="1/2")
    page: str = res.to_html()
    assert page.startswith("<!DOCTYPE html>")
    return res.T


def irt(Y: npt.NDArray[np.float64]) -> IRTResult:  # numpy < 2.2: a bare ndarray is an error
    return Rasch(method="mml").fit(Y).result_


def main() -> None:
    S = ScoreMatrix.from_array(np.array([[0.9, 0.5], [0.1, -0.3]]))
    result = fit(S)
    print(result.summary(), result.certificate.passed, result.ranking())
    print(audit(), curl_test(S, n_rectangles=10).summary())
    try:
        read_scores("missing.csv")
    except InputError as exc:
        print(exc)
"""


def test_public_api_under_mypy_strict(tmp_path):
    """One mypy run (it takes ~20 s): the user's script has no error, and assigning each
    public name to an ``int`` fails. A name mypy saw as ``Any`` (a lazy ``__getattr__``
    without a ``TYPE_CHECKING`` import) would pass that assignment silently."""
    names = sorted(evalcert._PUBLIC)
    clean = USER_SCRIPT.count("\n") + 1
    probes = "".join(f"x_{name}: int = {name}  # must fail\n" for name in names)
    imports = "".join(f"from evalcert import {name}\n" for name in names)
    source = USER_SCRIPT + "\n" + imports + probes
    result = _run(tmp_path, source)
    errors = [int(n) for n in re.findall(r"user_script\.py:(\d+): error", result.stdout)]
    in_script = [n for n in errors if n <= clean]
    assert not in_script, result.stdout + result.stderr
    lines = source.splitlines()
    missing = [name for name in names
               if lines.index(f"x_{name}: int = {name}  # must fail") + 1 not in errors]
    assert not missing, f"typed as Any by mypy: {missing}\n{result.stdout}"
