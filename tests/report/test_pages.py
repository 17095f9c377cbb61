"""The HTML page of every verb with ``--html``: its structure, that it is self-contained
(nothing fetched, no script), and that the numbers it shows are the JSON's of the same run."""

from __future__ import annotations

import csv
import json
import math
import pickle
import re
import shlex
from fractions import Fraction

import numpy as np
import pytest

from evalcert.cli import build_parser
from tests._cli import run_cli
from tests.report._html import Page, external_references

VERBS = ("fit", "audit", "audit-views", "irt", "curl", "bench", "compare", "rank", "cat")
MAX_BYTES = 2_000_000


def _json(run):
    return json.loads(run.json.read_text())


def _close(shown: str, value: float) -> bool:
    """The rounded number shown agrees with ``value`` to the digits shown."""
    if shown in ("–", ""):
        return value is None or not math.isfinite(value)
    digits = shown.split("e")[0].split(".")[-1] if "." in shown else ""
    scale = abs(value) if "e" in shown else 1.0
    return abs(float(shown) - value) <= 0.51 * 10 ** -len(digits) * max(scale, 1e-300) + 1e-15


@pytest.mark.parametrize("verb", VERBS)
def test_page_structure(pages, verb):
    """Title, verdict first, sections with a table of contents, then the inputs, the exact
    command and the versions."""
    run = pages[verb]
    text = run.text
    page = Page(text)
    assert text.startswith("<!DOCTYPE html>") and "<title>" in text
    order = [text.index(f'id="{ident}"') for ident in ("verdict", "provenance")]
    assert order == sorted(order)
    assert page.texts["verdict"]
    words = shlex.split(page.texts["command"])       # the command reproduces the run
    assert words[0] == "evalcert"
    parse = build_parser().parse_args
    assert vars(parse(words[1:])) == vars(parse(run.argv))
    versions = page.texts["versions"]
    assert "evalcert 0." in versions and "numpy" in versions and "jinja2" in versions
    for ident in re.findall(r'href="#([^"]+)"', text):      # every in-page link lands
        assert f'id="{ident}"' in text


@pytest.mark.parametrize("verb", VERBS)
def test_page_is_self_contained(pages, verb):
    text = pages[verb].text
    page = Page(text)
    assert "script" not in page.tags and "link" not in page.tags and "iframe" not in page.tags
    assert external_references(text, page) == []
    images = [v for tag, name, v in page.urls if tag == "img"]
    assert images and all(re.match(r"data:image/(svg\+xml|png);base64,", v) for v in images)
    assert len(text.encode()) < MAX_BYTES


def test_fit_numbers_equal_json(pages):
    run = pages["fit"]
    page, data = Page(run.text), _json(run)
    cert = data["certificate"]
    assert float(page.facts["objective"][1]) == data["objective"]
    assert float(page.facts["suboptimality bound (abs)"][1]) == cert["suboptimality_bound"]
    assert float(page.facts["certified lower bound"][1]) == cert["lower_bound"]
    assert page.facts["binding groups"][0] == str(len(cert["binding"]))
    theta = dict(zip(data["agents"], data["theta"]))
    agents = [t for t, _ in page.column("ranking", "agent")]
    values = page.column("ranking", "theta")
    assert len(agents) == min(50, len(theta))
    for name, (shown, exact) in zip(agents, values):
        assert float(exact) == theta[name] and _close(shown, theta[name])
    assert [float(v) for _, v in values] == sorted(theta.values(), reverse=True)[:len(values)]
    rows = {r[0][0]: float(r[1][1]) for r in page.tables["certificate"]["rows"]}
    assert rows["primal residual"] == cert["primal_residual"]
    assert rows["duality gap (rel)"] == cert["relative_gap"]
    verdict = "PASSED" if cert["passed"] else "FAILED"
    assert f"Certificate {verdict}" in page.texts["verdict"]


def test_audit_numbers_equal_json(pages):
    run = pages["audit"]
    page, data = Page(run.text), _json(run)
    assert page.facts["T (exact threshold)"][1] == data["T"]
    assert page.facts["x (level asked)"][1] == data["threshold"]
    T = Fraction(data["T"])
    assert page.facts["T (exact threshold)"][0] == f"{T} ({float(T):.4f})"
    assert ("FIRES" if data["fires"] else "silent") in page.texts["verdict"]
    keys = [[int(v) for _, v in row] for row in page.tables["keys"]["rows"]]
    assert keys == data["attaining_keys"][:len(keys)] and keys
    judges = page.tables["judges"]             # the per-judge table, built for the page
    heads = judges["headers"]
    rows = {row[0][0]: dict(zip(heads, row)) for row in judges["rows"]}
    assert set(rows) == set(data["graders"])
    for judge in data["judges"]:
        row = rows[judge["judge"]]
        assert float(row["DS accuracy"][1]) == judge["ds_accuracy"]
        assert Fraction(row["min acc. at T"][1]) == Fraction(judge["min_accuracy"])
        assert Fraction(row["max worst at T"][1]) == Fraction(judge["max_accuracy"])
        assert row["binds T"][0] == ("yes" if judge["binds"] else "no")
        assert row["flag"][0] == (judge["flag"] or "")
    assert "judges-figure" in page.texts
    bounds = page.tables["bounds"]
    assert len(bounds["rows"]) == len(data["bounds"]["rows"])
    k = bounds["headers"].index("max_accuracy")
    assert [r[k][0] for r in bounds["rows"]] == [r["max_accuracy"] for r in data["bounds"]["rows"]]


def test_audit_views_numbers_equal_json(pages):
    """Fig. 8 and Fig. 2 (``--plot-per-label --pspace`` without files): the page's tables
    show the JSON's numbers, and its figures are there."""
    run = pages["audit-views"]
    page, data = Page(run.text), _json(run)
    curves = page.tables["label-curves"]
    heads = curves["headers"]
    assert len(curves["rows"]) == len(data["label_curves"]) == 2
    for row, curve in zip(curves["rows"], data["label_curves"]):
        cell = dict(zip(heads, row))
        assert cell["label"][0] == curve["label"]
        assert int(cell["keys with items of it"][1]) == curve["n_keys"]
        assert Fraction(cell["min"][1]) == Fraction(curve["min"])
        assert Fraction(cell["max"][1]) == Fraction(curve["max"])
        assert cell["key at min"][0] == " / ".join(map(str, curve["argmin"]))
        assert cell["key at max"][0] == " / ".join(map(str, curve["argmax"]))
        assert int(cell["points drawn"][1]) == len(curve["values"])
    ps = data["pspace"]
    table = page.tables["pspace"]
    heads = table["headers"]
    assert [r[0][0] for r in table["rows"]] == [g["grader"] for g in ps["graders"]]
    for row, grader in zip(table["rows"], ps["graders"]):
        cell = dict(zip(heads, row))
        assert [int(cell[f"decided {lab}"][1]) for lab in "ab"] == grader["decided"]
        for name, value in {**grader["stages"], **grader["classes"]}.items():
            if name != "a priori":
                assert int(cell[name][1]) == value
        assert f"a priori there are {grader['stages']['a priori']:,} for every grader" \
            in page.texts["pspace-section"]
        runs = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in grader["clears_at"])
        assert cell["clears x at Q_a"][0] == (runs or "none")
    section = page.texts["pspace-section"]
    runs = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in ps["shared_prevalences"])
    assert ("M=1 alarm fires" in section) == ps["fires"] == data["fires"]
    assert f"Q_a in {runs} ({ps['n_shared']} of {ps['n_items'] + 1} prevalences" in section
    assert "label-curves-figure" in page.texts and "pspace-figure" in page.texts
    assert f"T = {data['T']}" in page.texts["verdict"]


def test_irt_numbers_equal_json(pages):
    run = pages["irt"]
    page, data = Page(run.text), _json(run)
    theta = dict(zip(data["model_names"], data["parameters"]["abilities"]))
    se = dict(zip(data["model_names"], data["standard_errors"]["abilities"]))
    rows = page.tables["ranking"]["rows"]
    assert [int(r[0][1]) for r in rows] == list(range(1, len(rows) + 1))
    for row in rows:
        name = row[1][0]
        assert float(row[2][1]) == theta[name] and _close(row[2][0], theta[name])
        assert float(row[3][1]) == se[name]
        assert float(row[4][1]) == pytest.approx(theta[name] - 1.959963984540054 * se[name])
    best = max(theta, key=theta.get)
    assert rows[0][1][0] == best and best in page.texts["verdict"]
    assert page.facts["converged"][0] == ("yes" if data["converged"] else "no")
    assert float(page.facts["log-likelihood (marginal)"][1]) == data["loglik"]
    assert {"forest", "item-map", "information"} <= set(page.texts)
    assert "misfit" in page.tables or "No item misfits" in page.texts["verdict-blocks"]


def test_curl_numbers_equal_json(pages):
    run = pages["curl"]
    page, data = Page(run.text), _json(run)
    for row in page.tables["links"]["rows"]:
        link = row[0][0]
        assert float(row[1][1]) == data["median"][link] and _close(row[1][0], data["median"][link])
        assert float(row[2][1]) == data["p95"][link]
    best = min(data["median"], key=data["median"].get)
    assert f"Most nearly additive: {best} link" in page.texts["verdict"]
    diffs = page.tables["differences"]["rows"]
    assert [float(r[1][1]) for r in diffs] == [d["estimate"] for d in data["differences"]]


def test_bench_numbers_equal_runs_csv(pages, tmp_path):
    run = pages["bench"]
    page = Page(run.text)
    out = run.argv[run.argv.index("--out") + 1]
    with open(f"{out}/runs.csv", newline="") as fh:
        records = list(csv.DictReader(fh))
    successes = sum(r["success"] == "True" for r in records)
    assert page.facts["runs"][1] == str(len(records))
    assert page.facts["certified"][1] == str(successes)
    solved = [r[3][0] for r in page.tables["summary-table"]["rows"]]
    assert solved == [f"{successes}/{len(records)}"]


def _heat(page, table):
    """{(row model, column model): (shown, exact, css class)} of a heat-map table."""
    return {(row[0][0], head): cell for row in page.tables[table]["rows"]
            for head, cell in zip(page.tables[table]["headers"][1:], row[1:])}


def test_compare_numbers_equal_json(pages):
    run = pages["compare"]
    page, data = Page(run.text), _json(run)
    ranks = data["ranks"]
    rows = page.tables["ranking"]["rows"]
    assert [r[3][0] for r in rows] == [r["model"] for r in ranks]
    for row, r in zip(rows, ranks):
        assert [int(row[k][1]) for k in range(3)] == [r["rank"], r["rank_ci_low"],
                                                      r["rank_ci_high"]]
        assert float(row[4][1]) == r["score"] and _close(row[4][0], r["score"])
    pairs = {(p["model_a"], p["model_b"]): p for p in data["pairs"]}
    shown = page.tables["pairs"]["rows"]
    assert len(shown) == len(pairs) == 28
    for row in shown:
        p = pairs[(row[0][0], row[1][0])]
        assert int(row[2][1]) == p["n_shared"]
        assert float(row[3][1]) == p["diff"] and _close(row[3][0], p["diff"])
        assert float(row[7][1]) == p["p_adjusted"] and _close(row[7][0], p["p_adjusted"])
    assert [float(r[6][1]) for r in shown] == sorted(p["p_value"] for p in pairs.values())
    # the pairwise matrix: each cell is the pair's adjusted p-value, either way round
    matrix = Page(run.text).tables["pairwise"]
    cells = {(row[0][0], head): cell for row in matrix["rows"]
             for head, cell in zip(matrix["headers"][1:], row[1:])}
    models = matrix["headers"][1:]
    assert models == [r["model"] for r in ranks][:len(models)]
    for (a, b), (text, exact) in cells.items():
        if a == b:
            assert text == "–" and exact is None
            continue
        p = pairs.get((a, b)) or pairs[(b, a)]
        assert float(exact) == p["p_adjusted"]
    top = ranks[0]["model"]
    second = ranks[1]["model"]
    p = pairs.get((top, second)) or pairs[(second, top)]
    verdict = page.texts["verdict"]
    assert verdict.startswith(top) and second in verdict
    assert ("is better than" in verdict) == (p["p_adjusted"] < data["alpha"])
    n_sig = sum(p["p_adjusted"] < data["alpha"] for p in pairs.values())
    assert page.facts["pairs that differ"][1] == str(n_sig)
    assert {"forest", "difference-matrix"} <= set(page.texts)


def test_compare_matrix_is_shaded_by_direction_and_p(pages):
    """A cell is blue (heat-p*) when the row model scores higher, orange (heat-n*) when
    lower, and darker the smaller the adjusted p-value; the diagonal is plain."""
    run = pages["compare"]
    data = _json(run)
    pairs = {(p["model_a"], p["model_b"]): p for p in data["pairs"]}
    text = run.text
    table = re.search(r'<table id="pairwise" class="heatmap">(.*?)</table>', text, re.S).group(1)
    models = re.findall(r'<th scope="col">([^<]+)</th>', table)[1:]
    for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)[1:]:
        cells = re.findall(r'<td(?: class="([^"]*)")?[^>]*>', row)
        a = re.search(r"<td[^>]*>([^<]+)</td>", row).group(1)
        assert len(cells) == len(models) + 1
        for b, css in zip(models, cells[1:]):
            if a == b:
                assert "heat" not in css
                continue
            p = pairs.get((a, b)) or pairs[(b, a)]
            sign = 1 if (a, b) in pairs else -1
            level = re.search(r"heat-(p|n)?(\d)", css)
            assert level, (a, b, css)
            strength = int(level.group(2))
            if strength:
                assert (level.group(1) == "p") == (sign * p["diff"] > 0)
            assert (strength >= 2) == (p["p_adjusted"] < data["alpha"])


def test_rank_numbers_equal_json(pages):
    run = pages["rank"]
    page, data = Page(run.text), _json(run)
    ranks = data["ranks"]
    rows = page.tables["leaderboard"]["rows"]
    heads = page.tables["leaderboard"]["headers"]
    assert [r[3][0] for r in rows] == [r["model"] for r in ranks] and len(rows) == 14
    col = {h: k for k, h in enumerate(heads)}
    for row, r in zip(rows, ranks):
        assert int(row[col["rank"]][1]) == r["rank"]
        assert int(row[col["rank low"]][1]) == r["rank_ci_low"]
        assert float(row[col["score"]][1]) == r["score"]
        assert float(row[col["Elo"]][1]) == r["elo"] and _close(row[col["Elo"]][0], r["elo"])
        assert float(row[col["Elo 95% low"]][1]) == r["elo_ci_low"]
        assert [int(row[col[k]][1]) for k in ("wins", "losses", "ties")] == [
            r["wins"], r["losses"], r["ties"]]
    cert = data["certificate"]
    assert float(page.facts["gradient norm"][1]) == cert["grad_norm"]
    assert float(page.facts["distance to optimum <="][1]) == cert["distance_bound"]
    assert page.facts["optimum proven"][0] == ("yes" if cert["proves_optimum"] else "no")
    assert page.facts["battles"][1] == str(data["n_battles"])
    score = {r["model"]: r["score"] for r in ranks}
    matrix = _heat(page, "win-probability")
    assert len(matrix) == 12 * 12
    for (a, b), (text, exact) in matrix.items():
        if a == b:
            assert exact is None
        else:
            assert float(exact) == pytest.approx(1 / (1 + math.exp(score[b] - score[a])),
                                                 abs=1e-12)
    top = ranks[0]
    assert page.texts["verdict"].startswith(f"Top model: {top['model']}, Elo {top['elo']:.1f}")
    assert data["dropped"] == {"self-battle": 5} or sum(data["dropped"].values()) == 5
    assert "5 rows not counted" in page.texts["dropped"]
    assert {"forest", "rank-forest"} <= set(page.texts)


def test_cat_numbers_equal_json(pages):
    run = pages["cat"]
    page, data = Page(run.text), _json(run)
    curve = page.tables["curve"]["rows"]
    assert [int(r[0][1]) for r in curve] == [c["n_items"] for c in data["curve"]]
    for row, c in zip(curve, data["curve"]):
        assert [float(row[k][1]) for k in (1, 2, 3)] == [c["mae_accuracy"], c["mae_random"],
                                                         c["mae_anchors"]]
    final = data["curve"][-1]
    assert float(page.facts["MAE adaptive"][1]) == final["mae_accuracy"]
    assert float(page.facts["MAE random items"][1]) == final["mae_random"]
    models = {m["model"]: m for m in data["models"]}
    rows = page.tables["models"]["rows"]
    assert len(rows) == len(models) == 15                      # 30% of 50 models held out
    errors = []
    for row in rows:
        m = models[row[0][0]]
        assert int(row[1][1]) == m["items_used"]
        assert float(row[2][1]) == m["theta"]
        assert float(row[4][1]) == m["predicted_accuracy"]
        assert float(row[5][1]) == m["actual_accuracy"]
        errors.append(abs(float(row[6][1])))
    assert errors == sorted(errors, reverse=True)
    verdict = page.texts["verdict"]
    assert verdict.startswith(f"12 of {data['n_items']} items")
    assert f"within {final['mae_accuracy']:.4f}" in verdict
    assert {"error-curve", "predicted-vs-actual"} <= set(page.texts)
    given = sum(len(a) for a in data["administered"])
    assert given == 12 * len(models)


def test_html_path_checked_before_any_work(tmp_path):
    """Like --json: a wrong extension, an existing file without --force, or the input itself
    are refused with one line and status 2 before the fit runs."""
    from evalcert.datasets.demo import demo_scores

    scores = tmp_path / "s.csv"
    demo_scores(n_agents=5, n_items=8).to_frame().to_csv(scores, index_label="agent")
    status, out, err = run_cli(["fit", str(scores), "--html", str(tmp_path / "page.txt")])
    assert status == 2 and "--html" in err and ".html" in err and out == ""
    (tmp_path / "page.html").write_text("mine")
    status, out, err = run_cli(["curl", str(scores), "--html", str(tmp_path / "page.html")])
    assert status == 2 and "exists" in err and (tmp_path / "page.html").read_text() == "mine"
    status, _, err = run_cli(["irt", "fit", str(scores), "--html", str(scores)])
    assert status == 2
    status, _, err = run_cli(["bench", "--family", "ilp-m1", "--html", str(tmp_path / "x.pdf")])
    assert status == 2 and "--html" in err
    status, out, err = run_cli(["compare", str(scores), "--html", str(tmp_path / "c.txt")])
    assert status == 2 and "--html" in err and out == ""
    status, out, err = run_cli(["rank", str(scores), "--html", str(tmp_path / "page.html")])
    assert status == 2 and "exists" in err and out == ""
    status, out, err = run_cli(["irt", "cat", str(scores), "--html", str(scores)])
    assert status == 2 and out == ""


def test_to_html_and_notebook_fragment():
    """``result.to_html()`` is the page; ``_repr_html_`` the same content as one scoped
    ``<div>`` (its CSS rules all start with ``.evalcert-page``, so the notebook keeps its
    own style)."""
    from evalcert import ClippedLinear, alarm
    from evalcert.datasets.demo import demo_scores

    result = ClippedLinear().fit(demo_scores(n_agents=6, n_items=10)).result_
    page, fragment = result.to_html(), result._repr_html_()
    assert page.startswith("<!DOCTYPE html>") and "<html" not in fragment
    assert fragment.lstrip().startswith('<div class="evalcert-page">')
    assert Page(page).facts["objective"] == Page(fragment).facts["objective"]
    css = re.search(r"<style>(.*?)</style>", fragment, re.S).group(1)
    selectors = re.findall(r"(?:^|})\s*([^{}]+?)\s*\{", css)
    assert selectors and all(s.strip().startswith(".evalcert-page") for sel in selectors
                             for s in sel.split(","))
    res = alarm({"a": {"x": 3, "y": 1}, "b": {"x": 2, "y": 2}}, "1/2")
    assert "Alarm" in res._repr_html_() and "Python session" in res.to_html()


def test_page_escapes_names():
    """Names from the user's file are text, never markup."""
    from evalcert import ClippedLinear, ScoreMatrix

    S = ScoreMatrix.from_array(np.array([[0.5, 0.1], [0.2, -0.3]]),
                               agents=["<script>alert(1)</script>", "b"], items=["q1", "q2"])
    text = ClippedLinear().fit(S).result_.to_html()
    assert "<script>" not in text and "&lt;script&gt;" in text


def test_results_with_pages_pickle_with_their_page(pages):
    """A result sent to a worker or saved comes back with the same page."""
    from evalcert import ClippedLinear
    from evalcert.datasets.demo import demo_scores

    result = ClippedLinear().fit(demo_scores(n_agents=5, n_items=8)).result_
    again = pickle.loads(pickle.dumps(result))
    assert Page(again.to_html()).facts == Page(result.to_html()).facts


def test_audit_page_under_a_time_limit_shows_the_proven_bounds():
    """A search stopped at its time limit has proven bounds T <= T* <= T_upper: the page
    says so, and whether x is decided, instead of an exact T."""
    import dataclasses

    from evalcert import alarm
    from evalcert.report.audit import page_from_audit

    exact = alarm({"a": {"x": 3, "y": 1}, "b": {"x": 2, "y": 2}}, "0.7")   # T = 2/3
    stopped = dataclasses.replace(exact, fires=False, T_upper=Fraction(4, 5))
    page = page_from_audit(stopped)
    assert page.verdict.status == "warn"
    assert page.verdict.headline == "Time limit reached: T in [2/3, 4/5] at x = 7/10"
    assert "undecided" in page.verdict.meaning


@pytest.mark.parametrize("counts, x, fires, figure", [
    ({"g1": {"a": 4, "b": 6}, "g2": {"a": 7, "b": 3}}, "0.9", True, True),
    ({"g1": {"a": 60_000, "b": 40_000}, "g2": {"a": 45_000, "b": 55_000}}, "0.5", False,
     False),                      # Q = 100,000: billions of points, no figure, same table
])
def test_audit_page_views_fire_and_real_size(tmp_path, counts, x, fires, figure):
    """Fig. 2 on the page when the M=1 alarm fires (no shared prevalence), and at Q =
    100,000 where the points are too many to draw: the page says so and stays small."""
    import json as _json_mod

    from evalcert.logic.audit import run_audit
    from evalcert.report import write_page

    summary = tmp_path / "counts.json"
    summary.write_text(_json_mod.dumps(counts))
    report = run_audit(summary, x, plot_per_label=True, pspace=True, page=True)
    assert report.result.fires == fires == report.pspace["fires"]
    html = tmp_path / "p.html"
    write_page(report, html)
    text = html.read_text(encoding="utf-8")
    page = Page(text)
    section = page.texts["pspace-section"]
    assert ("M=1 alarm fires" in section) == fires
    assert ("pspace-figure" in page.texts) == figure
    assert figure or "The figure is left out" in section
    assert [int(r[page.tables["pspace"]["headers"].index("axioms")][1])
            for r in page.tables["pspace"]["rows"]] == \
        [g["stages"]["axioms"] for g in report.to_dict()["pspace"]["graders"]]
    assert len(text.encode()) < MAX_BYTES and external_references(text, page) == []
    assert len(_json_mod.dumps(report.to_dict())) < 200_000


def test_rank_page_without_bootstrap_and_with_judges():
    """No bootstrap: the page says there are no intervals (nothing invented); a judge-weighted
    fit lists each judge's reliability."""
    from evalcert.compare.counts import CountsBuilder
    from evalcert.compare.leaderboard import rank
    from evalcert.report.compare import page_from_rank

    b = CountsBuilder()
    a, c = b.codes(["x", "y", "z", "x"] * 5), b.codes(["y", "z", "x", "z"] * 5)
    b.add(a, c, np.array([0, 0, 0, 1] * 5), judge=b.judge_codes(["j1", "j2"] * 10))
    result = rank(b.build(), judge_weighted=True)
    page = Page(result.to_html())
    assert "no bootstrap: no intervals" in page.texts["verdict"]
    assert {row[0][0] for row in page.tables["judges"]["rows"]} == {"j1", "j2"}
    assert all(r[6][0] == "–" for r in page.tables["leaderboard"]["rows"])
    assert page_from_rank(result).verdict.status == "info"


def test_cat_page_when_the_whole_bank_is_given():
    """--max-items at least the bank: nothing was saved, and the page says so instead of
    claiming the adaptive test beats the baselines."""
    from evalcert.irt.cat import simulate_cat
    from evalcert.irt.information import ItemParameters
    from evalcert.report.cat import page_from_cat

    rng = np.random.default_rng(0)
    b, theta = rng.normal(size=8), rng.normal(size=30)
    Y = (rng.random((30, 8)) < 1 / (1 + np.exp(b - theta[:, None]))) * 1.0
    bank = ItemParameters(np.ones(8), b, np.zeros(8), tuple(f"q{j}" for j in range(8)), "rasch")
    page = page_from_cat(simulate_cat(bank, Y, holdout=None, max_items=8))
    assert page.verdict.status == "info" and "whole bank" in page.verdict.meaning
    assert page.verdict.headline.startswith("8 of 8 items")


def test_heat_map_table_checks_its_levels():
    from evalcert.report.page import Table

    with pytest.raises(ValueError, match="one level per cell"):
        Table(("a", "b"), ((1, 2),), shade=((1,),))
    with pytest.raises(ValueError, match="-4 to 4"):
        Table(("a",), ((1,),), shade=((5,),))
