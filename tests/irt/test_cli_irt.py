"""``evalcert irt``: reading (wide, long, header-less), refusals, outputs, new verbs, real data."""

from __future__ import annotations

import gzip
import inspect
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalcert.commands.irt as cirt
from evalcert.cli import main
from evalcert.irt import MODELS, Rasch, TwoPL
from evalcert.io.responses import read_responses
from evalcert.irt.scoring import score_models
from tests.irt.conftest import simulate

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "irt"


def _frame(n=40, m=15, seed=0, slopes=False):
    Y, *_ = simulate(n, m, seed=seed, slopes=slopes)
    return pd.DataFrame(Y, index=[f"m{i}" for i in range(n)], columns=[f"q{j}" for j in range(m)])


@pytest.fixture
def wide(tmp_path):
    path = tmp_path / "r.csv"
    _frame().to_csv(path)
    return path


def _run(argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _refused(argv, capsys, match):
    code, out, err = _run(argv, capsys)
    assert code == 2, (out, err)
    last = err.strip().splitlines()[-1]
    assert "Traceback" not in err and match in last, err
    return last


def test_spelled_out_defaults_and_methods_match_the_estimators():
    assert set(cirt.DEFAULTS) == set(MODELS) == set(cirt.METHODS)
    for name, cls in MODELS.items():
        sig = inspect.signature(cls.__init__).parameters
        assert cirt.METHODS[name] == cls.methods
        for key, value in cirt.DEFAULTS[name].items():
            if key == "method" and key not in sig:         # one method only (je)
                assert cls.methods == (value,)
                continue
            assert sig[key].default == value, (name, key)


def test_help_shows_per_model_defaults(capsys):
    assert main(["irt", "fit", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "rasch jml, 2pl mml, factor map" in text and "2pl 4" in text


def test_fit_prints_ranking_and_writes_tables(wide, tmp_path, capsys):
    out = tmp_path / "out"
    code, text, err = _run(["irt", "fit", wide, "--model", "2pl", "--out-dir", out], capsys)
    assert code == 0 and "ranking of models" in text and "0 missing cells" in err
    models = pd.read_csv(out / "models.csv")
    items = pd.read_csv(out / "items.csv")
    assert list(models["rank"]) == list(range(1, 41))
    assert {"ability", "ability_se", "accuracy"} <= set(models.columns)
    assert {"difficulty", "difficulty_se", "discrimination", "discrimination_se"} <= set(
        items.columns)
    # existing outputs are refused without --force, before any fit
    _refused(["irt", "fit", wide, "--out-dir", out], capsys, "--force")
    assert _run(["irt", "fit", wide, "--out-dir", out, "--force"], capsys)[0] == 0
    _refused(["irt", "fit", wide, "--json", wide], capsys, "input")


def test_out_dir_that_cannot_be_created_is_refused_before_the_fit(wide, tmp_path, capsys,
                                                                   monkeypatch):
    """A parent that exists but refuses the folder (read-only mount, /proc): one line, code 2."""
    def read_only(self, *args, **kwargs):
        raise OSError(30, "Read-only file system")
    monkeypatch.setattr(Path, "mkdir", read_only)
    _refused(["irt", "fit", wide, "--out-dir", tmp_path / "new"], capsys, "cannot create it")


def test_score_verb_matches_the_library(wide, tmp_path, capsys):
    table = pd.read_csv(wide, index_col=0)
    est = TwoPL().fit(table)
    out = tmp_path / "o"
    assert _run(["irt", "fit", wide, "--model", "2pl", "--out-dir", out], capsys)[0] == 0
    new = tmp_path / "new.csv"
    table.iloc[:5, ::-1].to_csv(new)                       # columns matched by name
    res_json = tmp_path / "s.json"
    code, text, _ = _run(["irt", "score", out / "items.csv", new, "--method", "eap", "--json",
                          res_json], capsys)
    assert code == 0 and "EAP abilities" in text
    got = json.loads(res_json.read_text())
    ref = score_models(est, table.iloc[:5], method="eap")
    np.testing.assert_allclose(got["abilities"], ref.abilities, rtol=1e-6)


def test_long_format_with_custom_columns(tmp_path, capsys):
    frame = _frame()
    long = frame.stack().rename("ok").reset_index().rename(columns={"level_0": "who",
                                                                    "level_1": "task"})
    long.loc[3, "ok"] = np.nan
    path = tmp_path / "long.csv"
    long.to_csv(path, index=False)
    code, text, err = _run(["irt", "fit", path, "--format", "long", "--model-col", "who",
                            "--item-col", "task", "--response-col", "ok", "--method", "cml"],
                           capsys)
    assert code == 0 and "1 missing cells" in err
    read = read_responses(path, format="long", model_col="who", item_col="task",
                          response_col="ok").table
    assert read.shape == (40, 15) and np.isnan(read.iloc[0, 3])
    dup = tmp_path / "dup.csv"
    pd.concat([long, long.iloc[:2]]).to_csv(dup, index=False)
    _refused(["irt", "fit", dup, "--format", "long", "--model-col", "who", "--item-col",
              "task", "--response-col", "ok"], capsys, "duplicate (model, item) pairs")
    _refused(["irt", "fit", path, "--format", "long"], capsys, "--model-col")


def test_headerless_raschdat_is_refused_and_no_header_reads_it(tmp_path, capsys):
    """Regression: eRm's raschdat1 without header fitted 29 of 30 items, 98 duplicate names."""
    Y, *_ = simulate(100, 30, seed=3)
    path = tmp_path / "raschdat1.csv"
    np.savetxt(path, Y, fmt="%d", delimiter=",")
    _refused(["irt", "fit", path], capsys, "--no-header")
    code, text, err = _run(["irt", "fit", path, "--no-header", "--method", "cml"], capsys)
    assert code == 0 and "100 models x 30 items" in err
    # a header row of numbers that are not column numbers, with names in the first column
    named = tmp_path / "named.csv"
    named.write_text("a,1,0\nb,0,0\nc,1,1\n")
    _refused(["irt", "fit", named], capsys, "header row is all numbers")
    # duplicate model names are refused, not merged
    dup = tmp_path / "dup.csv"
    dup.write_text("model,q1,q2\nx,1,0\nx,0,1\ny,1,1\n")
    _refused(["irt", "fit", dup], capsys, "duplicate model names")


@pytest.mark.parametrize("cell, match", [("true", "write 1/0"), ("NA", "leave missing cells "
                                                                        "empty"),
                                          ("0.5", "threshold"), ("nan", "empty")])
def test_response_values_are_validated(tmp_path, capsys, cell, match):
    frame = _frame(20, 6).astype(object)
    frame.iloc[2, 3] = cell
    path = tmp_path / "r.csv"
    frame.to_csv(path)
    _refused(["irt", "fit", path], capsys, match)


def test_bad_files_give_one_line(tmp_path, capsys, wide):
    _refused(["irt", "fit", tmp_path / "nope.csv"], capsys, "no such file")
    _refused(["irt", "fit", tmp_path], capsys, "directory")
    (tmp_path / "empty.csv").write_text("")
    _refused(["irt", "fit", tmp_path / "empty.csv"], capsys, "empty")
    (tmp_path / "z.csv").write_bytes(gzip.compress(wide.read_bytes()))
    _refused(["irt", "fit", tmp_path / "z.csv"], capsys, "gzip")
    (tmp_path / "latin.csv").write_bytes("model,q1\nr\xe9sum\xe9,1\n".encode("latin-1"))
    _refused(["irt", "fit", tmp_path / "latin.csv"], capsys, "UTF-8")
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 this is not parquet")
    _refused(["irt", "fit", tmp_path / "bad.parquet"], capsys, "Parquet")


def test_options_that_do_nothing_are_refused_before_fitting(wide, capsys):
    _refused(["irt", "fit", wide, "--method", "jml", "--lam", "2"], capsys, "--lam")
    _refused(["irt", "fit", wide, "--dims", "2"], capsys, "--dims")
    _refused(["irt", "fit", wide, "--model", "factor", "--dims", "16"], capsys,
             "above the number of items")
    _refused(["irt", "fit", wide, "--model", "beta", "--method", "cml"], capsys,
             "supports --method")
    _refused(["irt", "fit", wide, "--slope-prior", "0"], capsys, "--slope-prior")
    _refused(["irt", "fit", wide, "--model", "2pl", "--method", "jml", "--slope-prior", "0"],
             capsys, "--slope-prior applies to --method mml")
    _refused(["irt", "fit", wide, "--model", "je"], capsys, "--item-embeddings")
    _refused(["irt", "fit", wide, "--plot", "x.png", "--model", "factor"], capsys, "2pl or 3pl")


@pytest.mark.parametrize("argv", [["--exposure", "0"], ["--exposure", "1"], ["--frac", "1.5"],
                                  ["--seed", "-1"], ["--frac", "nan"]])
def test_holdout_ranges_are_refused_by_the_parser(wide, capsys, argv):
    assert main(["irt", "holdout", str(wide), *argv]) == 2
    assert "(0, 1)" in capsys.readouterr().err or "-1" in argv


def test_max_iter_tol_slope_prior_and_progress_reach_the_estimator(wide, capsys):
    # max_iter=1 cannot converge: the typed error proves the option reached the estimator
    _refused(["irt", "fit", wide, "--method", "cml", "--max-iter", "1"], capsys, "1")
    assert _run(["irt", "fit", wide, "--model", "2pl", "--slope-prior", "0", "--tol", "1e-4"],
                capsys)[0] == 0
    takes = "verbose" in inspect.signature(Rasch.__init__).parameters
    code, _, err = _run(["irt", "fit", wide, "--method", "mml", "--progress"], capsys)
    assert code == (0 if takes else 2), err


def test_itemfit_compare_anchors_verbs(wide, tmp_path, capsys):
    code, text, _ = _run(["irt", "itemfit", wide, "--method", "cml", "--plot",
                          tmp_path / "fit.png"], capsys)
    assert code == 0 and "outfit_t" in text and (tmp_path / "fit.png").stat().st_size > 0
    code, text, _ = _run(["irt", "compare", wide, "--slope-prior", "0"], capsys)
    assert code == 0 and "LR test rasch vs 2pl" in text
    code, text, _ = _run(["irt", "anchors", wide, "--n-anchors", "5", "--method", "mml",
                          "--plot", tmp_path / "a.png", "--json", tmp_path / "a.json"], capsys)
    assert code == 0 and "held-out" in text and json.loads((tmp_path / "a.json").read_text())
    _refused(["irt", "anchors", wide, "--n-anchors", "15"], capsys, "--n-anchors")
    _refused(["irt", "anchors", wide, "--model", "factor"], capsys, "item curves")
    _refused(["irt", "itemfit", wide, "--model", "beta"], capsys, "0/1")
    code, _, _ = _run(["irt", "itemfit", wide, "--method", "cml", "--json", tmp_path / "f.json"],
                      capsys)
    assert code == 0 and "outfit" in json.loads((tmp_path / "f.json").read_text())["items"]
    code, text, _ = _run(["irt", "fit", wide, "--plot", tmp_path / "c.png"], capsys)
    assert code == 0 and (tmp_path / "c.png").stat().st_size > 0


# -- real matrices (../shared/data/irt): small slices, end to end through the CLI ---------------
def _shared(name: str) -> Path:
    path = SHARED / name
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared data folder is not on this machine)")
    return path


def test_real_chembench_through_the_cli(capsys):
    path = _shared("irt-on-bench/binary_matrix.csv")
    code, text, err = _run(["irt", "fit", path, "--transpose", "--method", "cml"], capsys)
    assert code == 0 and "22 models x 2854 items" in err
    # the items nobody solves are reported on one stderr line, not a warning traceback
    assert "evalcert: warning: ExtremeResponseWarning: excluded 0 models () and 134 items" in err
    assert "GPT-4o" in text or "o1" in text


def test_real_psn_irt_without_header_through_the_cli(tmp_path, capsys):
    path = _shared("PSN-IRT/combine.csv")
    head = tmp_path / "psn_slice.csv"                   # first 3000 items, still no header
    with open(path) as fh:
        head.write_text("".join(",".join(line.rstrip("\n").split(",")[:3000]) + "\n"
                                for line in fh))
    _refused(["irt", "fit", head], capsys, "--no-header")
    code, text, err = _run(["irt", "fit", head, "--no-header", "--method", "mml"], capsys)
    assert code == 0 and "12 models x 3000 items" in err and "model0" in text


def test_real_alpaca_eval_beta_through_the_cli(tmp_path, capsys):
    path = _shared("alpaca_eval/preference_matrix.csv")
    table = read_responses(path, kind="unit").table
    small = tmp_path / "alpaca_slice.csv"
    table.iloc[:, :60].to_csv(small)
    code, text, err = _run(["irt", "fit", small, "--model", "beta"], capsys)
    assert code == 0 and "58 models x 60 items" in err
    _refused(["irt", "fit", small], capsys, "threshold")          # continuous cells, binary model


def test_3pl_and_graded_through_the_cli(wide, tmp_path, capsys):
    code, text, _ = _run(["irt", "fit", wide, "--model", "3pl", "--guessing", "0.2",
                          "--out-dir", tmp_path / "o3"], capsys)
    assert code == 0 and "3pl" in text
    items = pd.read_csv(tmp_path / "o3" / "items.csv")
    assert np.all(items["guessing"] == 0.2)
    code, text, _ = _run(["irt", "score", tmp_path / "o3" / "items.csv", wide], capsys)
    assert code == 0 and "frozen 3pl items" in text
    _refused(["irt", "fit", wide, "--guessing", "0.2"], capsys, "--guessing")
    rng = np.random.default_rng(0)
    scores = pd.DataFrame(rng.integers(1, 11, (60, 5)), index=[f"j{i}" for i in range(60)],
                          columns=[f"p{j}" for j in range(5)])
    path = tmp_path / "judge.csv"
    scores.to_csv(path)
    code, text, _ = _run(["irt", "fit", path, "--model", "graded", "--out-dir",
                          tmp_path / "og"], capsys)
    assert code == 0 and "mean_response" in text
    assert "threshold_8" in pd.read_csv(tmp_path / "og" / "items.csv").columns
    _refused(["irt", "fit", path], capsys, "not 0 or 1")          # 1-10 scores, binary model


def test_real_chembench_slice_with_progress(tmp_path, capsys):
    """Item 6: a real matrix end to end with a progress bar (3pl with a 1/4 floor)."""
    table = read_responses(_shared("irt-on-bench/binary_matrix.csv"), transpose=True).table
    small = tmp_path / "chem_slice.csv"
    table.iloc[:, :60].to_csv(small)
    code, text, err = _run(["irt", "fit", small, "--model", "3pl", "--guessing", "0.25",
                            "--progress"], capsys)
    assert code == 0 and "3pl mml" in err and "it/s" in err          # the tqdm bar
    assert "GPT-4o" in text
    if "verbose" in inspect.signature(Rasch.__init__).parameters:    # once the core adds it
        assert _run(["irt", "fit", small, "--method", "mml", "--progress"], capsys)[0] == 0


def test_cat_verb_replays_held_out_models_and_a_fitted_bank(tmp_path, capsys):
    path = tmp_path / "many.csv"
    _frame(n=80, m=60, seed=3, slopes=True).to_csv(path)
    code, text, _ = _run(["irt", "cat", path, "--model", "2pl", "--max-items", "10",
                          "--holdout", "0.25", "--json", tmp_path / "cat.json"], capsys)
    assert code == 0 and "MAE adaptive" in text, text
    out = json.loads((tmp_path / "cat.json").read_text())
    assert len(out["models"]) == 20 and out["curve"][-1]["n_items"] == 10
    assert set(out["models"][0]) == {"model", "items_used", "theta", "se",
                                     "predicted_accuracy", "actual_accuracy"}
    folder = tmp_path / "fit"
    assert _run(["irt", "fit", path, "--model", "2pl", "--out-dir", folder], capsys)[0] == 0
    code, text, _ = _run(["irt", "cat", path, "--items", folder / "items.csv", "--max-items",
                          "30", "--se-stop", "0.5", "--selection", "kl", "--update", "map"],
                         capsys)
    assert code == 0 and "80 models" in text and "se stop 0.5" in text
    _refused(["irt", "cat", path, "--items", folder / "items.csv", "--holdout", "0.2"], capsys,
             "--holdout")
    _refused(["irt", "cat", path, "--model", "factor"], capsys, "item curves")
    _refused(["irt", "cat", path, "--max-exposure", "0"], capsys, "(0, 1]")
    _refused(["irt", "cat", path, "--prior-sd", "2"], capsys, "--items")


def test_items_only_header_lsat_layout_is_detected_and_said(tmp_path, capsys):
    # issue 21: LSAT6/LSAT7 as usually distributed (a header of items, no model-name
    # column) were refused with a message blaming a missing header row
    from evalcert.cli import main

    rng = np.random.default_rng(6)
    theta, b = rng.normal(0, 1, 300), np.array([-1.5, -0.5, 0.0, 0.4, 1.2])
    Y = (rng.random((300, 5)) < 1 / (1 + np.exp(-(theta[:, None] - b)))).astype(int)
    items = [f"Item {j + 1}" for j in range(5)]
    bare = tmp_path / "lsat.csv"
    bare.write_text(",".join(items) + "\n" + "".join(",".join(map(str, r)) + "\n" for r in Y))
    named = tmp_path / "named.csv"
    named.write_text("model," + ",".join(items) + "\n"
                     + "".join(f"row{i + 1}," + ",".join(map(str, r)) + "\n"
                               for i, r in enumerate(Y)))
    outs = {}
    for path, extra in ((bare, []), (bare, ["--no-names"]), (named, [])):
        out = tmp_path / f"{path.stem}{len(extra)}"
        assert main(["irt", "fit", str(path), "--method", "mml", "--out-dir", str(out),
                     *extra]) == 0
        err = capsys.readouterr().err
        assert ("no model-name column" in err) == (path is bare)
        assert "read 300 models x 5 items" in err
        outs[(path.stem, len(extra))] = pd.read_csv(out / "items.csv")
    for key in (("lsat", 0), ("lsat", 1)):
        assert outs[key]["item"].tolist() == items
        assert np.allclose(outs[key]["difficulty"], outs[("named", 0)]["difficulty"])
    two = tmp_path / "two.csv"                  # two distinct rows: nothing repeats, so only
    two.write_text("i1,i2,i3\n1,0,1\n0,1,1\n")  # --no-names can say it
    assert main(["irt", "fit", str(two), "--method", "map", "--no-names"]) == 0
    assert "row1..rowN" in capsys.readouterr().err
@pytest.mark.parametrize("model", ["4pl", "3plu"])
def test_4pl_and_3plu_through_the_cli(model, wide, tmp_path, capsys):
    code, text, _ = _run(["irt", "fit", wide, "--model", model, "--no-se",
                          "--out-dir", tmp_path / model], capsys)
    assert code == 0 and model in text
    items = pd.read_csv(tmp_path / model / "items.csv")
    kept = ~items["excluded"]
    assert np.all((items["upper"][kept] > items["guessing"][kept])
                  & (items["upper"][kept] < 1))
    assert np.all(items["guessing"][kept] == 0) == (model == "3plu")
