"""Paths of the tools' files in tests/data/formats and a CLI runner that captures stderr."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

FORMATS = Path(__file__).resolve().parents[1] / "data" / "formats"
LM_EVAL = FORMATS / "lm_eval"
INSPECT_EVAL = FORMATS / "inspect" / "eval"
INSPECT_JSON = FORMATS / "inspect" / "json"
HELM = FORMATS / "helm"


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """``evalcert <argv>``: exit status, stdout, stderr."""
    from evalcert.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(a) for a in argv])
    return status, out.getvalue(), err.getvalue()


def copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
