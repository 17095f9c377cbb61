"""The pages of ``evalcert compare`` and ``evalcert rank``: which model is better and how sure,
the forest plot of the ranking with its intervals and the pairwise matrix as a heat-map table
(adjusted p-values of the paired tests; win probabilities of the Bradley-Terry fit), then the
tables, the inputs and the command.

Examples
--------
>>> import numpy as np
>>> from evalcert.data import ScoreMatrix
>>> from evalcert.compare.paired import compare
>>> X = (np.random.default_rng(0).random((3, 80)) < [[0.9], [0.5], [0.3]]).astype(float)
>>> page = page_from_compare(compare(ScoreMatrix.from_array(X, bounds=(0, 1)), n_boot=50))
>>> [getattr(b, "id", "") for b in page.verdict.blocks]
['forest', 'difference-matrix', 'pairwise']
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from evalcert.report.figures import figure_uri, new_figure
from evalcert.report.page import (Facts, Figure, Page, Provenance, Section, Table, Text,
                                  Verdict, versions)

__all__ = ["page_from_compare", "page_from_rank", "p_value_level", "win_level",
           "win_probability", "MATRIX_MODELS"]

#: models shown in a pairwise matrix (the best ranked; a note says how many are not)
MATRIX_MODELS = 12
#: models drawn in a forest plot
FOREST_MODELS = 40


def p_value_level(p: float, alpha: float) -> int:
    """Strength of a heat-map cell from an adjusted p-value: 4 below alpha/50, 3 below
    alpha/5, 2 below alpha, 1 below 4 alpha, else 0.

    Examples
    --------
    >>> [p_value_level(p, 0.05) for p in (1e-4, 0.005, 0.03, 0.1, 0.5, float("nan"))]
    [4, 3, 2, 1, 0, 0]
    """
    if not math.isfinite(p):
        return 0
    for level, cut in ((4, alpha / 50), (3, alpha / 5), (2, alpha), (1, 4 * alpha)):
        if p < cut:
            return level
    return 0


def win_probability(score_row: float, score_col: float) -> float:
    """Bradley-Terry probability that the row model beats the column model (given a
    decisive battle): ``1 / (1 + exp(score_col - score_row))``.

    Examples
    --------
    >>> win_probability(0.0, 0.0), round(win_probability(1.0, 0.0), 4)
    (0.5, 0.7311)
    """
    return float(1.0 / (1.0 + math.exp(score_col - score_row)))


def win_level(p: float) -> int:
    """Heat-map level of a win probability: the distance from 1/2 in steps of 1/8, signed.

    Examples
    --------
    >>> [win_level(p) for p in (0.5, 0.6, 0.76, 0.1, 1.0)]
    [0, 1, 2, -3, 4]
    """
    return int(np.clip(round(8 * (p - 0.5)), -4, 4))


def _forest(rows: Sequence[dict], *, value: str, low: str, high: str, label: str,
            title: str, caption: str, id: str = "forest") -> Figure:
    from evalcert.plots.compare import plot_rank_forest

    shown = [dict(r) for r in rows[:FOREST_MODELS]]
    for r in shown:
        if not (math.isfinite(r[low]) and math.isfinite(r[high])):
            r[low] = r[high] = r[value]
    fig = new_figure(6.0, 0.2 * len(shown) + 1.4)
    ax = fig.subplots()
    plot_rank_forest(shown, ax, value=value, low=low, high=high, label=label)
    if value == "rank":
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.tick_params(axis="y", labelsize=8)
    ax.set_title(f"{title} (first {len(shown)} of {len(rows)} models)" if len(rows) > len(shown)
                 else f"{title} ({len(rows)} models)", fontsize=10)
    fig.tight_layout()
    return Figure(figure_uri(fig), alt="forest plot of the ranking with intervals",
                  caption=caption, id=id, half=True)


def _matrix(models: Sequence[str], value: Any, level: Any, *, caption: str, note: str,
            id: str = "pairwise") -> Table:
    """A K x K table: row model, then ``value(a, b)`` per column model (None on the
    diagonal), each cell shaded ``level(a, b)``."""
    rows, shade = [], []
    for a in models:
        rows.append((a, *(None if a == b else value(a, b) for b in models)))
        shade.append((None, *(None if a == b else level(a, b) for b in models)))
    return Table(("model", *models), tuple(rows), caption=caption, id=id, note=note,
                 shade=tuple(shade))


def _listed(names: Sequence[str], limit: int = 8) -> str:
    from evalcert.results import list_names

    return list_names(names, limit=limit)


def _difference_matrix(result: Any) -> Figure:
    from evalcert.plots.compare import plot_pairwise_matrix

    K = len(result.ranks)
    side = float(np.clip(0.2 * K + 3.0, 4.0, 8.0))
    fig = new_figure(side + 1.0, side)
    ax = fig.subplots()
    plot_pairwise_matrix(result, ax)
    for image in ax.images:             # flat cells: a PNG of a large matrix stays small
        image.set_interpolation("nearest")
        image.set_interpolation_stage("data")
    size = float(np.clip(160 / max(K, 1), 4.0, 8.0))      # 58 names fit on 8 inches
    ax.tick_params(labelsize=size)
    for text in ax.texts:
        text.set_fontsize(size)
    ax.set_title(ax.get_title(), fontsize=9)
    fig.tight_layout()
    return Figure(figure_uri(fig), alt="matrix of differences in mean score",
                  caption="Difference in mean score, row minus column, on the items both "
                          "answered; * marks the pairs that differ after adjustment.",
                  id="difference-matrix", half=True)


# -- compare -----------------------------------------------------------------------------------
def page_from_compare(result: Any, *, scores: Any = None, source: str | None = None,
                      fmt: str | None = None, read: str | None = None,
                      command: str | None = None, limit: int = 50) -> Page:
    """The page of a :class:`~evalcert.compare.paired.CompareResult` (``evalcert compare``).

    Parameters
    ----------
    result : CompareResult
    scores : ScoreMatrix, optional
        The matrix compared (shape, coverage and empty cells in the inputs).
    source, fmt : str, optional
        The file read and its layout or tool.
    read : str, optional
        What a tool's reader found.
    command : str, optional
        The command line that reproduces the comparison.
    limit : int
        Rows of the ranking and pairs tables.

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert.data import ScoreMatrix
    >>> from evalcert.compare.paired import compare
    >>> X = (np.random.default_rng(0).random((2, 200)) < [[0.9], [0.3]]).astype(float)
    >>> page = page_from_compare(compare(ScoreMatrix.from_array(X, bounds=(0, 1)), n_boot=0))
    >>> page.verdict.headline.split(" by ")[0], page.verdict.status
    ('agent_0 is better than agent_1', 'ok')
    """
    from evalcert.report.fit import score_inputs

    ranks = list(result.ranks)
    pairs = list(result.pairs)
    level = f"{100 * (1 - result.alpha):g}%"
    by_pair = {(p["model_a"], p["model_b"]): p for p in pairs}

    def pair(a: str, b: str) -> tuple[dict | None, float]:
        """The pair's row and the sign of (a - b) in it."""
        if (a, b) in by_pair:
            return by_pair[(a, b)], 1.0
        if (b, a) in by_pair:
            return by_pair[(b, a)], -1.0
        return None, 1.0

    n_sig = sum(p["p_adjusted"] < result.alpha for p in pairs)
    adjusted = f"{result.adjust}-adjusted"
    status: Any = "info"
    if len(ranks) < 2:
        head, meaning = "One model: nothing to compare", ""
    else:
        top, second = ranks[0], ranks[1]
        p, sign = pair(top["model"], second["model"])
        contenders = [r["model"] for r in ranks[1:] if r["rank_ci_low"] <= 1]
        if p is None:
            head = f"Best: {top['model']} (no items shared with {second['model']})"
        else:
            diff, lo, hi = (sign * p["diff"], *sorted((sign * p["ci_low"], sign * p["ci_high"])))
            sure = p["p_adjusted"] < result.alpha
            verb = "is better than" if sure else "is ahead of, but not separated from,"
            head = (f"{top['model']} {verb} {second['model']} by {diff:.4g} "
                    f"[{lo:.4g}, {hi:.4g}] ({level}, unadjusted), {adjusted} p = "
                    f"{p['p_adjusted']:.3g}")
            status = "ok" if sure else "warn"
        how_sure = (f"{top['model']}'s rank interval is {top['rank_ci_low']}-"
                    f"{top['rank_ci_high']}" + (
                        f": {len(contenders)} other model(s) may also be first "
                        f"({_listed(contenders)})." if contenders else
                        ": no other model can be first at this level."))
        meaning = (f"Mean scores on shared items, {result.test} test; {n_sig} of {len(pairs)} "
                   f"pairs differ at {result.alpha:g} after the {result.adjust} adjustment. "
                   f"Ranks: {result.rank_method}, {level} simultaneous intervals; "
                   + how_sure)
    facts = Facts((("models", len(ranks)), ("items", int(result.n_items)),
                   ("pairs", len(pairs)), ("pairs that differ", int(n_sig)),
                   ("test", result.test), ("adjustment", result.adjust),
                   ("alpha", float(result.alpha)),
                   ("rank intervals", result.rank_method),
                   *((("clusters", int(result.n_groups)),) if result.n_groups else ())),
                  id="verdict-facts")
    blocks: list[Any] = []
    if ranks:
        blocks.append(_forest(ranks, value="rank", low="rank_ci_low", high="rank_ci_high",
                              label=f"rank ({level} simultaneous interval)",
                              title="ranking",
                              caption=f"Each model's rank (dot) with its {level} "
                                      f"simultaneous interval ({result.rank_method}); "
                                      "intervals that overlap are not separated."))
    if len(ranks) >= 2:
        blocks.append(_difference_matrix(result))
        shown = [r["model"] for r in ranks[:MATRIX_MODELS]]

        def value(a: str, b: str) -> float | None:
            p = pair(a, b)[0]
            return None if p is None else float(p["p_adjusted"])

        def shade(a: str, b: str) -> int | None:
            p, sign = pair(a, b)
            if p is None:
                return None
            return int(np.sign(sign * p["diff"])) * p_value_level(p["p_adjusted"], result.alpha)

        blocks.append(_matrix(
            shown, value, shade,
            caption=f"Pairwise matrix: {adjusted} p-value of row vs column",
            note=(f"Blue: the row model scores higher, orange: lower; the darker, the smaller "
                  f"p (p < {result.alpha:g}/50, /5, {result.alpha:g}, 4 x {result.alpha:g}). "
                  + (f"The best {len(shown)} of {len(ranks)} models shown; every pair is in "
                     "the pairs table." if len(ranks) > len(shown) else ""))))
    sections: list[Section] = []
    rank_rows = tuple((r["rank"], r["rank_ci_low"], r["rank_ci_high"], r["model"],
                       float(r["score"])) for r in ranks)
    sections.append(Section("Ranking", (Table(
        ("rank", "rank low", "rank high", "model", "mean score"), rank_rows[:limit],
        caption=f"Models by mean score, {level} simultaneous rank intervals", id="ranking",
        note=f"first {limit} of {len(ranks)} models shown" if len(ranks) > limit else ""),),
        id="ranking-section"))
    blocks_pairs: list[Any] = []
    ordered = sorted(pairs, key=lambda p: (p["p_value"], p["model_a"], p["model_b"]))
    blocks_pairs.append(Table(
        ("model a", "model b", "shared items", "difference", f"{level} low", f"{level} high",
         "p", "p adjusted", "min. detectable"),
        tuple((p["model_a"], p["model_b"], int(p["n_shared"]), float(p["diff"]),
               float(p["ci_low"]), float(p["ci_high"]), float(p["p_value"]),
               float(p["p_adjusted"]), float(p["mdd"])) for p in ordered[:limit]),
        caption="Every pair, smallest p first (difference: a minus b; a is the better "
                "ranked)", id="pairs",
        note=f"first {limit} of {len(pairs)} pairs shown" if len(pairs) > limit else ""))
    sections.append(Section("Pairs", tuple(blocks_pairs), id="pairs-section"))
    if result.irt_ranks is not None:
        sections.append(Section(f"IRT ({result.irt_model}) ranking", (Table(
            ("rank", "rank low", "rank high", "model", "ability"),
            tuple((r["rank"], r["rank_ci_low"], r["rank_ci_high"], r["model"],
                   float(r["score"])) for r in result.irt_ranks[:limit]),
            caption="Abilities with Bonferroni-simultaneous rank intervals", id="irt-ranking"),),
            id="irt-section"))
    sections.append(Section("Summary as printed", (Text(result.summary(), "pre"),),
                            id="summary"))
    inputs, dropped = score_inputs(scores, source, fmt)
    if read:
        inputs += (("read", read),)
    inputs += (("power (min. detectable)", float(result.power)),
               ("bootstrap resamples", int(result.n_boot)))
    return Page("Which model is better: paired comparison",
                Verdict(head, status, meaning, facts, tuple(blocks)), tuple(sections),
                Provenance(inputs, dropped, command, versions(("statsmodels",))),
                subtitle=f"{len(ranks)} models on {result.n_items} items, {result.test} test, "
                         f"{result.adjust} adjustment")


# -- rank --------------------------------------------------------------------------------------
def page_from_rank(result: Any, *, source: str | None = None, command: str | None = None,
                   limit: int = 60) -> Page:
    """The page of a :class:`~evalcert.compare.leaderboard.RankResult` (``evalcert rank``).

    Parameters
    ----------
    result : RankResult
    source : str, optional
        The battle log read.
    command : str, optional
        The command line that reproduces the ranking.
    limit : int
        Rows of the leaderboard table.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalcert.compare.leaderboard import rank
    >>> log = pd.DataFrame({"model_a": ["a", "b", "c"] * 4, "model_b": ["b", "c", "a"] * 4,
    ...                     "winner": ["model_a", "model_a", "tie"] * 4})
    >>> page = page_from_rank(rank(log))
    >>> page.verdict.headline.split(",")[0], page.verdict.blocks[2].id
    ('Top model: a', 'win-probability')
    """
    from evalcert.compare.leaderboard import ELO_SCALE

    rows = result.rows()
    level = f"{100 * (1 - result.alpha):g}%"
    cert = result.certificate
    boot = result.n_boot > 0
    top = rows[0]
    contenders = [r["model"] for r in rows[1:] if r["rank_ci_low"] <= 1]
    if boot:
        head = (f"Top model: {top['model']}, Elo {top['elo']:.1f} [{top['elo_ci_low']:.1f}, "
                f"{top['elo_ci_high']:.1f}] ({level}), rank interval {top['rank_ci_low']}-"
                f"{top['rank_ci_high']}")
        how_sure = (f"{len(contenders)} other model(s) may also be first at this level "
                    f"({_listed(contenders)})." if contenders else
                    "No other model can be first at this level.")
    else:
        head = f"Top model: {top['model']}, Elo {top['elo']:.1f} (no bootstrap: no intervals)"
        how_sure = ("How sure: run with --bootstrap N (e.g. 1000) for intervals of scores and "
                    "simultaneous rank intervals.")
    if len(rows) > 1:
        gap = top["score"] - rows[1]["score"]
        how_sure = (f"Ahead of {rows[1]['model']} by {ELO_SCALE * gap:.1f} Elo (wins a "
                    f"decisive battle against it with probability "
                    f"{win_probability(top['score'], rows[1]['score']):.3f}). " + how_sure)
    status: Any = ("alarm" if not cert.proves_optimum else
                   "ok" if boot and not contenders else "info")
    ties = ("ties as half a win each way" if result.ties_model == "half" else
            f"Davidson ties (nu = {math.exp(result.tie_parameter):.4g})")
    fit = (f"MAP, prior N(0, {result.prior_sd:g}^2)" if result.prior_sd else
           "maximum likelihood")
    meaning = (f"Bradley-Terry {fit} on {result.n_battles} battles over {result.n_pairs} pairs ({ties}); the "
               f"{cert.summary()}. " + how_sure)
    facts = Facts((("models", len(rows)), ("battles", int(result.n_battles)),
                   ("pairs", int(result.n_pairs)), ("log-likelihood", float(result.loglik)),
                   ("optimum proven", bool(cert.proves_optimum)),
                   ("distance to optimum <=", float(cert.distance_bound)),
                   ("gradient norm", float(cert.grad_norm)),
                   ("bootstrap refits", int(result.n_boot))), id="verdict-facts")
    blocks: list[Any] = [_forest(
        rows, value="elo", low="elo_ci_low", high="elo_ci_high",
        label=f"Elo ({level} bootstrap interval)" if boot else "Elo",
        title="leaderboard",
        caption=(f"Elo (dot) with its {level} bootstrap interval over battles."
                 if boot else "Elo of each model (no bootstrap: no intervals).")),
        _forest(rows, value="rank", low="rank_ci_low", high="rank_ci_high",
                label=f"rank ({level} simultaneous interval)" if boot else "rank",
                title="ranks", id="rank-forest",
                caption=(f"Rank (dot) with its {level} simultaneous interval (max-t over "
                         "the bootstrap refits); intervals that overlap are not separated."
                         if boot else "Ranks (no bootstrap: no intervals)."))]
    shown = [r["model"] for r in rows[:MATRIX_MODELS]]
    score = {r["model"]: r["score"] for r in rows}
    blocks.append(_matrix(
        shown, lambda a, b: win_probability(score[a], score[b]),
        lambda a, b: win_level(win_probability(score[a], score[b])),
        caption="Pairwise matrix: probability that the row model beats the column model",
        note=("From the fitted scores, 1 / (1 + exp(score_col - score_row)), given a decisive "
              "battle. Blue: the row model is favoured, orange: the column model. "
              + (f"The best {len(shown)} of {len(rows)} models shown."
                 if len(rows) > len(shown) else "")),
        id="win-probability"))
    table = Table(("rank", "rank low", "rank high", "model", "score", "Elo",
                   f"Elo {level} low", f"Elo {level} high", "wins", "losses", "ties"),
                  tuple((r["rank"], r["rank_ci_low"], r["rank_ci_high"], r["model"],
                         r["score"], r["elo"], r["elo_ci_low"] if boot else None,
                         r["elo_ci_high"] if boot else None, r["wins"], r["losses"], r["ties"])
                        for r in rows[:limit]),
                  caption="Bradley-Terry leaderboard (score: centred log-strength)",
                  id="leaderboard",
                  note=f"first {limit} of {len(rows)} models shown" if len(rows) > limit else "")
    sections = [Section("Leaderboard", (table,), id="leaderboard-section"),
                Section("Certificate", (Facts((
                    ("optimum proven", bool(cert.proves_optimum)),
                    ("gradient norm", float(cert.grad_norm)),
                    ("least Hessian eigenvalue >=", float(cert.lambda_min)),
                    ("radius", float(cert.radius)),
                    ("distance to optimum <=", float(cert.distance_bound)),
                    ("Newton iterations", int(result.iterations))), id="certificate"),
                    Text("The gradient norm and a Cholesky-verified lower bound on the "
                         "Hessian's least eigenvalue, recomputed at the returned scores, bound "
                         "their distance to the exact optimum.", "note")),
                    id="certificate-section")]
    if result.judge_reliability:
        sections.append(Section("Judges", (Table(
            ("judge", "reliability", "verdicts"),
            tuple((r["judge"], float(r["reliability"]), int(r["n_verdicts"]))
                  for r in result.judge_reliability[:limit]),
            caption="Judge reliabilities, fitted jointly", id="judges"),), id="judges-section"))
    sections.append(Section("Summary as printed", (Text(result.summary(), "pre"),),
                            id="summary"))
    inputs: list[tuple[str, Any]] = [("file", source or "in memory (no file)"),
                                     ("battles counted", int(result.n_battles)),
                                     ("models", len(rows)), ("pairs that met", int(result.n_pairs)),
                                     ("ties", ties)]
    dropped = [f"{n} rows not counted: {why}" for why, n in result.dropped.items() if n]
    if result.n_boot_failed:
        dropped.append(f"{result.n_boot_failed} of {result.n_boot} bootstrap resamples had no "
                       "maximum-likelihood estimate and were left out")
    return Page("Leaderboard: Bradley-Terry from pairwise outcomes",
                Verdict(head, status, meaning, facts, tuple(blocks)), tuple(sections),
                Provenance(tuple(inputs), tuple(dropped), command, versions()),
                subtitle=f"{len(rows)} models, {result.n_battles} battles on {result.n_pairs} "
                         "pairs")
