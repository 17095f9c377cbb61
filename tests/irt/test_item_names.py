"""``irt holdout`` and ``irt anchors`` name models and items as the file does (issue 21
item 9): their refits on sub-matrices called item ``q2`` "item1" and model ``m5`` "model2"."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests._cli import run_cli


@pytest.fixture
def responses(tmp_path):
    rng = np.random.default_rng(3)
    K, J = 40, 12
    theta, b = rng.normal(size=K), rng.normal(size=J)
    Y = (rng.random((K, J)) < 1 / (1 + np.exp(-(theta[:, None] - b)))).astype(int)
    Y[:, 1] = 1          # item q2: every model right
    Y[5, :] = 1          # model m5: every item right
    path = tmp_path / "responses.csv"
    rows = ["model," + ",".join(f"q{j + 1}" for j in range(J))]
    rows += [f"m{k}," + ",".join(map(str, Y[k])) for k in range(K)]
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("argv", [["holdout"], ["holdout", "--scheme", "columns"],
                                  ["anchors", "--n-anchors", "4"]])
def test_warnings_use_the_files_names(responses, argv):
    code, out, err = run_cli(["irt", argv[0], str(responses), *argv[1:]], seconds=120)
    excluded = re.search(r"excluded \d+ models \(([^)]*)\) and \d+ items \(([^)]*)\)", err)
    assert excluded, err
    models, items = excluded.groups()
    assert "'q2'" in items and "item" not in items, err
    assert "'m5'" in models and "model" not in models, err
