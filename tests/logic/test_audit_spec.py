"""``run_audit`` with one spec object, the CLI that builds it (``--ilp-solver``, the old
``--solver``, ``--judges``), the chained ``--sequence`` statement, the M=2 refusal of
skipped items, and the Dawid-Skene check of the whole evaluation (issues 22 and 25)."""

import csv
import json
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import evalcert
from evalcert.cli import main
from evalcert.datasets.mtbench import table1_decisions
from evalcert.errors import InputError
from evalcert.logic.audit import AuditSpec, run_audit
from evalcert.logic.estimates import accuracies_consistent
from evalcert.logic.joint import full_alarm_threshold
from evalcert.logic.levels import farey_successor
from tests.logic._helpers import decisions, instance

TABLE1 = "evalcert/datasets/mtbench_table1.csv"


def test_spec_and_keyword_paths_agree():
    spec = AuditSpec(TABLE1, "0.5", m="2", labels="a,b,tie", graders=("authors", "gpt4"))
    by_kw = run_audit(TABLE1, "0.5", m="2", labels="a,b,tie", graders=("authors", "gpt4"))
    assert run_audit(spec).result.T == by_kw.result.T == Fraction(5, 8)
    with pytest.raises(InputError, match="not both"):
        run_audit(spec, "0.5")


def test_top_level_names():
    assert evalcert.run_audit is run_audit
    assert evalcert.AuditReport.__name__ == "AuditReport"
    assert evalcert.alarm_full(table1_decisions(), "0.5").T == Fraction(5, 8)
    assert evalcert.GradedResponse.__name__ == "GradedResponse"


@pytest.mark.parametrize("flag", ["--ilp-solver", "--solver"])
def test_ilp_solver_flag_and_its_old_spelling(flag, capsys):
    assert main(["audit", TABLE1, "--graders", "authors,gpt4", "--labels", "a,b,tie",
                 "--m", "2", flag, "highs"]) == 0
    assert "T = 5/8" in capsys.readouterr().out


def test_sequence_panel_statement_is_three_sevenths(capsys):
    assert main(["audit", TABLE1, "--graders", "authors,gpt4", "--labels", "a,b,tie",
                 "--sequence", "2", "--m", "full", "--panel"]) == 0
    out = capsys.readouterr().out
    assert "T = 3/7" in out and "at least 3/7 (42.9%) correct on every label" in out
    assert main(["audit", TABLE1, "--graders", "authors,gpt4", "--labels", "a,b,tie",
                 "--sequence", "2", "--m", "2"]) == 2
    assert "--m 2" in capsys.readouterr().err


def test_m2_with_skipped_items_names_m2(tmp_path, capsys):
    log = tmp_path / "skips.csv"
    log.write_text("item,grader,label\n" + "".join(
        f"q{k},g{g},{'ab'[(k + g) % 2]}\n" for k in range(6) for g in range(3)
        if not (k == 0 and g == 2)))
    assert main(["audit", str(log), "--m", "2", "--on-missing", "keep"]) == 2
    err = capsys.readouterr().err
    assert "M=2" in err and "M=1" not in err and "--m full" in err


def test_judges_cli_text_json_and_csv(tmp_path, capsys):
    out_json, out_csv, out_png = tmp_path / "a.json", tmp_path / "j.csv", tmp_path / "j.png"
    assert main(["audit", TABLE1, "--labels", "a,b,tie", "--graders", "experts,authors,gpt4",
                 "--judges", "--json", str(out_json), "--judges-plot", str(out_png),
                 "--judges-csv", str(out_csv)]) == 0
    assert out_png.read_bytes()[:4] == b"\x89PNG"
    assert capsys.readouterr().out.startswith("judges: ")
    judges = json.loads(out_json.read_text())["judges"]
    assert {j["judge"] for j in judges} == {"experts", "authors", "gpt4"}
    with open(out_csv) as fh:
        rows = list(csv.DictReader(fh))
    assert [r["judge"] for r in rows] == [j["judge"] for j in judges]


def test_ds_check_is_the_whole_evaluation_at_the_full_joint_threshold():
    """Every grader at T_full on every label is consistent; one step above is not."""
    dec = table1_decisions(("experts", "authors", "gpt4"))
    t = full_alarm_threshold(dec)
    at = {g: [t] * 3 for g in dec.graders}
    above = {g: [farey_successor(t, 25)] * 3 for g in dec.graders}
    assert accuracies_consistent(dec, at)
    assert not accuracies_consistent(dec, above)
    report = run_audit(TABLE1, "0.5", labels="a,b,tie", graders=("authors", "gpt4"),
                       estimators=("ds",))
    assert "full-joint axioms" in report.estimates[0].checked


@settings(max_examples=25, deadline=None)
@given(instance(max_q=5, skip=True), st.lists(st.fractions(0, 1, max_denominator=4),
                                              min_size=9, max_size=9))
def test_accuracies_consistent_equals_brute_force(case, levels):
    """Some item-level key gives every grader at least its level on every label it decided
    items of, iff the MILP says so."""
    import itertools

    r, cols = case
    dec = decisions(cols, [f"l{t}" for t in range(r)], on_missing="keep")
    want = {g: levels[3 * i:3 * i + r] for i, g in enumerate(dec.graders)}
    arr = dec.array
    brute = False
    for z in itertools.product(range(r), repeat=len(dec.items)):
        z = np.array(z)
        if all(int(((z == t) & (arr[:, i] == t)).sum())
               >= want[g][t] * int(((z == t) & (arr[:, i] >= 0)).sum())
               for i, g in enumerate(dec.graders) for t in range(r)):
            brute = True
            break
    assert accuracies_consistent(dec, want) == brute
