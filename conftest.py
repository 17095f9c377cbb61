"""Doctests of the package (``--doctest-modules`` over ``evalcert/``, see pyproject).

Every public object's docstring example runs in CI. An example that reads the real data
in ``../shared/data`` (never copied into the repository) is skipped with the reason when
that folder is absent, like the tests that need it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")

SHARED_DATA = Path(__file__).resolve().parent.parent / "shared" / "data"

# the deprecated alias warns on import; tests/irt/test_layout.py checks it
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
