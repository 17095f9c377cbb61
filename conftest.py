"""Doctests of the package (``--doctest-modules`` over ``evalcert/``, see pyproject).

Every public object's docstring example runs in CI. An example that reads the real data
in ``../shared/data`` (never copied into the repository) is skipped with the reason when
that folder is absent, like the tests that need it.

The header of every run names the versions of the numerical dependencies, so a red run
on a fresh machine (newest releases) or against ``constraints/oldest.txt`` says which
ones it had.
"""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")

SHARED_DATA = Path(__file__).resolve().parent.parent / "shared" / "data"

#: distributions whose version a red run must name (pytest's header)
REPORTED_DISTRIBUTIONS = ("numpy", "scipy", "cvxpy", "osqp", "highspy", "pulp", "pandas",
                          "pyarrow", "clarabel", "scs", "matplotlib")


def dependency_versions() -> str:
    """``"numpy 2.4.6, scipy 1.17.1, ..."`` for :data:`REPORTED_DISTRIBUTIONS`."""
    found = []
    for name in REPORTED_DISTRIBUTIONS:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} not installed")
    return ", ".join(found)


def pytest_report_header(config):  # noqa: ARG001 - pytest hook signature
    return f"evalcert dependencies: {dependency_versions()}"


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001
    # `pytest -q` (README's quick start) hides the header: a red run names the versions last
    if exitstatus not in (0, 5):
        terminalreporter.write_line(f"evalcert dependencies: {dependency_versions()}")


# the deprecated alias warns on import; tests/test_layout.py checks it
collect_ignore = ["evalcert/solvers/irt/__init__.py"]


def pytest_collection_modifyitems(config, items):  # noqa: ARG001 - pytest hook signature
    if SHARED_DATA.is_dir():
        return
    skip = pytest.mark.skip(reason=f"example reads real data in {SHARED_DATA}, which is "
                                   "absent (it lives beside the repository, never in it)")
    for item in items:
        test = getattr(item, "dtest", None)  # a doctest item
        if test is not None and any("shared/data" in ex.source for ex in test.examples):
            item.add_marker(skip)
