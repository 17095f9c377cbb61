"""Shared test fixtures.

``shared_data`` is ``<repo root>/../shared/data``: real data that no one here
made and that is never copied into the project. Tests that need it skip with a
clear reason when it is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"

settings.register_profile("evalcert", deadline=None, max_examples=40, derandomize=True)
settings.load_profile("evalcert")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path to ``../shared/data``; skips the test when the folder is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data folder {SHARED_DATA} is absent (it lives beside the "
                    "repository as ../shared/data and is never copied into it)")
    return SHARED_DATA


def require_shared(relative: str) -> Path:
    """Return ``../shared/data/<relative>`` or skip the calling test with a reason."""
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(f"real data {path} is absent (needs ../shared/data beside the repo)")
    return path
