"""`evalcert audit --csv` writes the bounds of the chosen M (issue 11 item 7).

Old code: `--m 2` and `--m full` wrote the M=1 closed-form best accuracies (columns
best_correct, best_accuracy) whatever M was chosen, so these tests fail on it.
"""

import csv
import json
from fractions import Fraction

import pytest

from evalcert.cli import main
from evalcert.datasets.mtbench import load_table1
from evalcert.logic import label_bounds
from evalcert.io.decisions import load_audit_input

COLUMNS = ["grader", "label", "key", "items", "method", "min_correct", "max_correct",
           "min_accuracy", "max_accuracy", "free_min_correct", "free_max_correct",
           "free_min_accuracy", "free_max_accuracy"]


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "w.csv"
    load_table1()[["item", "authors", "gpt4", "experts"]].to_csv(path, index=False)
    return path


def _run(log, tmp_path, m, capsys):
    out, js = tmp_path / f"b{m}.csv", tmp_path / f"b{m}.json"
    assert main(["audit", str(log), "--m", m, "--csv", str(out), "--json", str(js),
                 "--max-keys", "4"]) == 0
    err = capsys.readouterr().err
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    data = json.loads(js.read_text())
    return rows, data, err


def test_each_m_writes_its_own_bounds_and_they_nest(log, tmp_path, capsys):
    got = {}
    for m, method in (("1", "M=1"), ("2", "M=2"), ("full", "full joint")):
        rows, data, err = _run(log, tmp_path, m, capsys)
        assert rows and list(rows[0]) == COLUMNS
        assert {r["method"] for r in rows} == {method}
        assert f"under {method} (every grader >= T = {data['T']}" in err
        assert data["bounds"]["method"] == method and data["bounds"]["rows"] == rows_json(rows)
        T = Fraction(data["T"])
        for r in rows:
            lo, hi = Fraction(r["min_accuracy"]), Fraction(r["max_accuracy"])
            assert Fraction(int(r["min_correct"]), int(r["items"])) == lo
            assert T <= lo <= hi <= 1            # every grader at least T at the level
            assert Fraction(r["free_min_accuracy"]) <= lo
            assert hi <= Fraction(r["free_max_accuracy"])
        # binding pairs: computed by the alarm at every listed key (M=1) or the first 3
        keys = ["/".join(map(str, k)) for k in data["attaining_keys"][:4 if m == "1" else 3]]
        binds = {(r["grader"], r["label"]) for r in rows
                 if r["key"] in keys and Fraction(r["max_accuracy"]) == T}
        assert binds == {tuple(b) for b in data["binding"]}
        got[m] = (T, {(r["key"], r["grader"], r["label"]): r for r in rows})
    assert got["full"][0] <= got["2"][0] <= got["1"][0]
    # the full joint's CSV ranges lie inside the M=2 and M=1 ranges at the same keys and level
    t_full, full = got["full"]
    keys = sorted({tuple(map(int, k.split("/"))) for k, _, _ in full})
    dec = load_audit_input(log)
    for m in (2, 1):
        wide = {(r["key"], r["grader"], r["label"]): r
                for r in label_bounds(dec, keys, t_full, m=m).rows()}
        assert set(wide) == set(full)
        for k, r in full.items():
            w = wide[k]
            for pre in ("", "free_"):
                assert w[pre + "min_correct"] <= int(r[pre + "min_correct"])
                assert w[pre + "max_correct"] >= int(r[pre + "max_correct"])


def rows_json(rows):
    """CSV rows (strings) as the JSON rows (ints where the CSV had ints)."""
    ints = {"items", "min_correct", "max_correct", "free_min_correct", "free_max_correct"}
    return [{k: int(v) if k in ints else v for k, v in r.items()} for r in rows]


def test_bounds_flag_prints_the_ranges_and_max_keys(log, capsys):
    assert main(["audit", str(log), "--m", "2", "--bounds", "--max-keys", "1"]) == 0
    out = capsys.readouterr().out
    assert "per-(grader, label) accuracy bounds (M=2) at 1 key(s)" in out
    assert main(["audit", str(log), "--bounds", "--max-keys", "0"]) == 2
    assert "--max-keys" in capsys.readouterr().err


def test_too_many_programs_refused_before_the_alarm(tmp_path, capsys, monkeypatch):
    from tests.logic._helpers import forbid_solvers

    forbid_solvers(monkeypatch)
    rows = "".join(f"q{i},g{g},{'abc'[(i + g) % 3]}\n" for i in range(12) for g in range(40))
    path = tmp_path / "many.csv"
    path.write_text("item,grader,label\n" + rows)
    assert main(["audit", str(path), "--m", "full", "--csv", str(tmp_path / "b.csv")]) == 2
    err = capsys.readouterr().err
    assert "integer programs" in err and "--max-keys" in err
    assert not (tmp_path / "b.csv").exists()
