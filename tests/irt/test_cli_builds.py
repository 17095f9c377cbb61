"""``evalcert irt fit`` builds its estimator once and writes its tables through the library."""

from __future__ import annotations

import pandas as pd

import evalcert.irt
from evalcert.cli import main
from evalcert.io.irt_tables import read_item_table
from tests.irt.conftest import simulate


def test_irt_fit_builds_the_estimator_once_and_the_library_writes_the_tables(
        tmp_path, monkeypatch, capsys):
    Y, *_ = simulate(40, 12, seed=3)
    path = tmp_path / "r.csv"
    pd.DataFrame(Y, index=[f"m{i}" for i in range(40)],
                 columns=[f"q{j}" for j in range(12)]).to_csv(path)
    built = []
    make = evalcert.irt.make_estimator

    def counting(*args, **kwargs):
        built.append(args)
        return make(*args, **kwargs)

    monkeypatch.setattr(evalcert.irt, "make_estimator", counting)
    assert main(["irt", "fit", str(path), "--method", "cml", "--out-dir",
                 str(tmp_path / "out")]) == 0
    assert len(built) == 1
    params, _ = read_item_table(tmp_path / "out" / "items.csv")
    models = pd.read_csv(tmp_path / "out" / "models.csv")
    assert params.item_names == tuple(f"q{j}" for j in range(12))
    assert sorted(models["model"]) == sorted(f"m{i}" for i in range(40))
    assert "wrote" in capsys.readouterr().out
