"""The suite runs against the newest releases and against the oldest ones pyproject allows.

``constraints/oldest.txt`` pins every requirement of ``project.dependencies`` and of the
``test`` extra to its lower bound (``pip install -c constraints/oldest.txt ".[test]"``);
these tests keep the two files from drifting apart, and check that pytest's header names
the versions of the numerical dependencies (issue 21).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*>=\s*([^,;\s]+)$")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _lower_bounds(requirements: list[str]) -> dict[str, str]:
    bounds = {}
    for req in requirements:
        match = REQUIREMENT.match(req.strip())
        assert match, f"{req!r} in pyproject.toml has no plain '>=' lower bound"
        bounds[_canonical(match.group(1))] = match.group(3)
    return bounds


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _constraints() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints" / "oldest.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep, f"constraints/oldest.txt: {line!r} is not an exact pin 'name==version'"
            assert _canonical(name) not in pins, f"constraints/oldest.txt pins {name} twice"
            pins[_canonical(name)] = version.strip()
    return pins


def test_oldest_constraints_pin_exactly_the_lower_bounds():
    project = _pyproject()
    wanted = _lower_bounds(project["dependencies"])
    for name, bound in _lower_bounds(project["optional-dependencies"]["test"]).items():
        assert wanted.setdefault(name, bound) == bound, f"{name}: two lower bounds"
    assert _constraints() == wanted


def test_every_extra_repeats_the_same_lower_bound():
    """The docs, qp and estimates extras repeat pins of the test extra: the same bound."""
    pins = _constraints()
    for extra, requirements in _pyproject()["optional-dependencies"].items():
        for name, bound in _lower_bounds(requirements).items():
            if name in pins:
                assert bound == pins[name], f"extra {extra!r}: {name}>={bound}, test has {pins[name]}"


def test_pytest_header_names_the_dependency_versions(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-p",
                           "no:cacheprovider", str(ROOT / "evalcert" / "quiet.py")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    header = next((line for line in proc.stdout.splitlines()
                   if line.startswith("evalcert dependencies:")), None)
    assert header is not None, proc.stdout[:500]
    for name in ("numpy", "scipy", "cvxpy", "osqp", "highspy", "pulp", "pandas"):
        assert f"{name} {metadata.version(name)}" in header, header


def test_a_red_quiet_run_names_the_versions_at_its_end(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    (tmp_path / "test_red.py").write_text("def test_red():\n    assert False\n")
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-p", "conftest", str(tmp_path / "test_red.py")],
                         capture_output=True, text=True, cwd=root, timeout=300)
    assert out.returncode == 1
    assert any(line.startswith("evalcert dependencies: ") and "highspy" in line
               for line in out.stdout.splitlines()), out.stdout[-2000:]
