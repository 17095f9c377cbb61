"""The page of a curl (discrete integrability) test: which link leaves the scores closest to
additive, the ECDF of ``|Delta|`` per link (Fig. 1 of paper 000), the bootstrap differences.

Examples
--------
>>> import numpy as np
>>> from evalcert.data import ScoreMatrix
>>> from evalcert.diagnostics.curl import curl_test
>>> S = ScoreMatrix.from_array(np.add.outer([0.5, 0.1, -0.2], [0.0, 0.2, -0.3]))
>>> page = page_from_curl(curl_test(S, n_rectangles=100), scores=S)
>>> page.verdict.headline.split(",")[0]   # additive scores: the identity link's Delta is 0
'Most nearly additive: identity link'
"""

from __future__ import annotations

from typing import Any

from evalcert.report.figures import figure_uri
from evalcert.report.page import (Facts, Figure, Page, Provenance, Section, Table, Text,
                                  Verdict, versions)

__all__ = ["page_from_curl"]


def _g(value: float) -> str:
    return f"{value:.4g}"


def page_from_curl(result: Any, *, scores: Any = None, source: str | None = None,
                   command: str | None = None) -> Page:
    """The page of a :class:`~evalcert.diagnostics.curl.CurlResult` (``evalcert curl``).

    Parameters
    ----------
    result : CurlResult
    scores : ScoreMatrix, optional
        The matrix tested (shape, coverage and missing rows in the inputs).
    source : str, optional
        The file read.
    command : str, optional
        The command line that reproduces the test.

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert.data import ScoreMatrix
    >>> from evalcert.diagnostics.curl import curl_test
    >>> S = ScoreMatrix.from_array(np.random.default_rng(0).uniform(-1, 1, (6, 9)))
    >>> page = page_from_curl(curl_test(S, n_rectangles=200), scores=S)
    >>> [s.title for s in page.sections], page.verdict.blocks[0].id
    (['ECDF of |Delta|'], 'links')
    """
    from evalcert.plots.curl import plot_curl_ecdf
    from evalcert.report.fit import score_inputs

    best = min(result.links, key=lambda link: result.median[link])
    others = ", ".join(f"{link} {_g(result.median[link])}" for link in result.links
                       if link != best)
    head = (f"Most nearly additive: {best} link, median |Delta| = {_g(result.median[best])}"
            + (f" ({others})" if others else ""))
    meaning = ("Delta = s_ij - s_i'j - s_ij' + s_i'j' over random rectangles of observed cells "
               "is 0 on every rectangle when the scores are additive (theta_i - b_j) on the "
               "link's scale (paper 000, Sec. 4.2-4.3); the smaller |Delta|, the better an "
               "additive model with that link can fit.")
    if result.differences:
        clear = [d for d in result.differences if d.excludes_zero]
        meaning += (f" {len(clear)} of {len(result.differences)} bootstrap differences of "
                    "medians exclude 0 (below).")
    facts = Facts((("rectangles", int(result.n_rectangles)), ("seed", int(result.seed)),
                   *((f"median |Delta| ({link})", float(result.median[link]))
                     for link in result.links),
                   *(() if result.median_exact is None else
                     (("identity median, exact", result.median_exact),))), id="verdict-facts")
    header = ["link", "median |Delta|", "P95 |Delta|"]
    rows = [[link, float(result.median[link]), float(result.p95[link])] for link in result.links]
    if result.prediction_median:
        header += ["median (pred)", "P95 (pred)"]
        for row, link in zip(rows, result.links):
            row += [float(result.prediction_median[link]), float(result.prediction_p95[link])]
    table = Table(tuple(header), tuple(tuple(r) for r in rows), caption="Curl per link "
                  "(Table 1)", id="links")
    blocks: list[Any] = [table]
    if not result.prediction_median:
        blocks.append(Text("Curl of fitted predictions (Table 6) not computed: pass "
                           "predictions= in Python (curl_test(S, predictions=model.predict())).",
                           "note"))
    sections = [Section("ECDF of |Delta|", (Figure(
        figure_uri(plot_curl_ecdf({source or "scores": result})),
        alt="ECDF of |Delta| per link", caption="Fig. 1 of paper 000: the same rectangles for "
        "every link; a curve further left is closer to additive.", id="ecdf"),),
        id="ecdf-section")]
    if result.differences:
        sections.append(Section("Bootstrap differences of medians", (Table(
            ("difference", "estimate", "low", "high", "excludes 0"),
            tuple((f"{d.a} - {d.b}", float(d.estimate), float(d.lower), float(d.upper),
                   bool(d.excludes_zero)) for d in result.differences),
            caption=f"{result.n_boot} resamples of agents and items (Table 2)",
            id="differences"),), id="differences-section"))
    inputs, dropped = score_inputs(scores, source, None)
    return Page("Curl test (discrete integrability)",
                Verdict(head, "info", meaning, facts, tuple(blocks)), tuple(sections),
                Provenance(inputs, dropped, command, versions()),
                subtitle=f"{result.n_rectangles} rectangles (seed {result.seed}), the same for "
                         "every link")
