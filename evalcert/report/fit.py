"""The page of a clipped-linear fit (Eq. 7): the certificate, its bound, the binding cells,
then the ranking, the items and the inputs.

Examples
--------
>>> import numpy as np
>>> from evalcert import ClippedLinear, ScoreMatrix
>>> S = ScoreMatrix.from_array(np.array([[0.9, 0.5, np.nan], [0.1, -0.3, 0.0],
...                                      [1.0, 1.0, 0.8]]))
>>> page = page_from_fit(ClippedLinear().fit(S).result_, scores=S)
>>> page.verdict.status, [s.title for s in page.sections]
('ok', ['Ranking', 'Items', 'Certificate'])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evalcert.report.figures import figure_uri, new_figure
from evalcert.report.page import (Facts, Figure, Page, Provenance, Section, Table, Text,
                                  Verdict, source_inputs, table_from_frame, versions)

__all__ = ["page_from_fit", "binding_table", "score_inputs"]


def binding_table(binding: list[dict[str, Any]], limit: int = 20) -> Table:
    """The binding box constraints: which side, which agents and items, the multiplier.

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert import ClippedLinear, ScoreMatrix
    >>> S = ScoreMatrix.from_array(np.array([[0.9, 0.5, np.nan], [0.1, -0.3, 0.0],
    ...                                      [1.0, 1.0, 0.8]]))
    >>> result = ClippedLinear().fit(S).result_
    >>> binding_table(result.certificate.binding).rows[0][:3]  # agent_2 sits on the upper box
    ('upper box', 1.0, 'agent_2')
    """
    rows = []
    for g in binding[:limit]:
        if "side" in g:
            items = ", ".join(map(str, g["items"][:8])) + (" ..." if len(g["items"]) > 8 else "")
            rows.append((f"{g['side']} box", g["bound"], ", ".join(map(str, g["agents"])),
                         items, g["multiplier"]))
        else:
            rows.append(("cell", g["bound"], str(g["agent"]), str(g["item"]), g["multiplier"]))
    note = f"first {limit} of {len(binding)} groups shown" if len(binding) > limit else ""
    return Table(("constraint", "theta_i - b_j at", "agents", "items", "multiplier"),
                 tuple(rows), caption="Binding box constraints", id="binding", note=note)


def score_inputs(scores: Any, source: str | None, fmt: str | None
                 ) -> tuple[tuple[tuple[str, Any], ...], tuple[str, ...]]:
    """Provenance lines of a score file: (inputs, dropped).

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert import ScoreMatrix
    >>> inputs, dropped = score_inputs(ScoreMatrix.from_array(np.zeros((2, 3))), "s.csv", "wide")
    >>> dict(inputs)["agents x items"], dropped
    ('2 x 3', ())
    """
    inputs = source_inputs(source, fmt)
    dropped: list[str] = []
    if scores is not None:
        inputs += [("agents x items", f"{scores.n_agents} x {scores.n_items}"),
                   ("observed cells", scores.n_observed), ("coverage", float(scores.coverage)),
                   ("score range", f"[{scores.bounds[0]:g}, {scores.bounds[1]:g}]")]
        if scores.n_missing:
            dropped.append(f"{scores.n_missing} rows with an empty score (NA, nan, blank) are "
                           "not cells: they were not used")
    return tuple(inputs), tuple(dropped)


def _ranking_figure(result: Any) -> Figure:
    theta, b = np.asarray(result.theta, float), np.asarray(result.b, float)
    order = np.argsort(-theta, kind="stable")
    shown = order[:40]
    fig = new_figure(9.0, 0.2 * len(shown) + 1.6)
    ax, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    y = np.arange(len(shown))[::-1]
    ax.scatter(theta[shown], y, s=18, color="#0969da", zorder=3)
    ax.set_yticks(y, [result.agents[k] for k in shown], fontsize=8)
    ax.axvline(0, color="#999", lw=0.8)
    ax.grid(axis="x", color="#eee")
    ax.set_xlabel("ability theta")
    ax.set_title(f"agents by ability ({len(shown)} of {len(theta)})", fontsize=10)
    ax2.hist(theta, bins=min(30, max(5, len(theta) // 2)), alpha=0.6, label="abilities theta",
             color="#0969da")
    ax2.hist(b, bins=min(30, max(5, len(b) // 2)), alpha=0.6, label="difficulties b",
             color="#bf8700")
    ax2.set_title("abilities and item difficulties", fontsize=10)
    ax2.legend(fontsize=8)
    fig.tight_layout()
    return Figure(figure_uri(fig), alt="agents sorted by ability, and histograms of abilities "
                  "and difficulties", id="ranking-figure")


def page_from_fit(result: Any, *, scores: Any = None, source: str | None = None,
                  fmt: str | None = None, command: str | None = None,
                  limit: int = 50) -> Page:
    """The page of a :class:`~evalcert.solvers.clipped_linear.ClippedLinearResult`.

    Parameters
    ----------
    result : ClippedLinearResult
    scores : ScoreMatrix, optional
        The matrix fitted (shape, coverage and missing rows in the inputs).
    source, fmt : str, optional
        The file read and its layout.
    command : str, optional
        The command line that reproduces the fit.
    limit : int
        Rows of the ranking and item tables.

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert import ClippedLinear, ScoreMatrix
    >>> S = ScoreMatrix.from_array(np.array([[0.9, 0.5, np.nan], [0.1, -0.3, 0.0],
    ...                                      [1.0, 1.0, 0.8]]))
    >>> result = ClippedLinear().fit(S).result_
    >>> page = page_from_fit(result, scores=S, source="scores.csv")
    >>> page.verdict.headline.startswith("Certificate PASSED"), page.verdict.blocks[0].id
    (True, 'binding')
    """
    cert = result.certificate
    K, J = len(result.agents), len(result.items)
    n_bind = len(cert.binding)
    verdict = "PASSED" if cert.passed else "FAILED"
    bind_text = (f"{n_bind} group(s) of box constraints bind (below)" if n_bind
                 else ("no box constraint binds" if result.box != "none"
                       else f"no box: {result.n_clipped} prediction(s) clipped"))
    meaning = (f"evalcert recomputed the KKT residuals and the duality gap at the returned "
               f"primal and dual point: the objective {result.objective:.10g} is at most "
               f"{cert.suboptimality_bound:.3g} above the optimum of Eq. 7 (certified lower "
               f"bound {cert.lower_bound:.10g}); {bind_text}."
               + (f" The bound assumes an optimum with ||x*||_inf <= {cert.radius:.3g}."
                  if cert.radius_assumed else ""))
    facts = Facts((("objective", float(result.objective)),
                   ("certified lower bound", float(cert.lower_bound)),
                   ("suboptimality bound (abs)", float(cert.suboptimality_bound)),
                   ("suboptimality bound (rel)", float(cert.relative_suboptimality_bound)),
                   ("binding groups", n_bind), ("solver", result.solver),
                   ("status", result.status), ("iterations", int(result.iterations))),
                  id="verdict-facts")
    head = Verdict(f"Certificate {verdict}: objective within "
                   f"{cert.suboptimality_bound:.3g} of the optimum",
                   "ok" if cert.passed else "alarm", meaning, facts,
                   (binding_table(cert.binding),) if n_bind else ())
    ranking = result.ranking()
    import pandas as pd

    items = (pd.DataFrame({"item": list(result.items), "b": result.b})
             .sort_values("b", kind="stable").reset_index(drop=True))
    cert_rows = (("primal residual", cert.primal_residual), ("dual residual", cert.dual_residual),
                 ("complementary slackness", cert.complementary_slackness),
                 ("primal objective", cert.primal_objective),
                 ("dual objective", cert.dual_objective), ("duality gap (abs)", cert.duality_gap),
                 ("duality gap (rel)", cert.relative_gap),
                 ("certified lower bound on optimum", cert.lower_bound),
                 ("suboptimality bound (abs)", cert.suboptimality_bound),
                 ("suboptimality bound (rel)", cert.relative_suboptimality_bound))
    t = result.timings
    sections = (
        Section("Ranking", (_ranking_figure(result),
                            table_from_frame(ranking, caption="Agents by ability theta",
                                             id="ranking", limit=limit)), id="ranking-section"),
        Section("Items", (table_from_frame(items, caption="Items by difficulty b (sum b = 0)",
                                           id="items", limit=limit),), id="items-section"),
        Section("Certificate", (
            Table(("quantity", "value"), tuple((k, float(v)) for k, v in cert_rows),
                  caption=f"Recomputed by evalcert (tolerance {cert.tolerance.summary()})",
                  id="certificate"),
            Table(("phase", "seconds"), (("build", t.build), ("compile", t.compile),
                                         ("solve", t.solve), ("certify", t.certify)),
                  caption="Timings", id="timings"),
            Text("The certificate holds for the data and options above: "
                 "model.result_.certificate.verify(S) recomputes it from the data alone.",
                 "note")), id="certificate-section"))
    inputs, dropped = score_inputs(scores, source, fmt)
    inputs += (("options", f"lam={result.lam:g}, box={result.box!r}"),)
    return Page("Clipped-linear fit (Eq. 7)", head, sections,
                Provenance(inputs, dropped, command, versions(_solver_libraries(result))),
                subtitle=f"{K} agents x {J} items, {result.n_observed} observed cells, "
                         f"lam={result.lam:g}, box={result.box!r}, scores in "
                         f"[{result.bounds[0]:g}, {result.bounds[1]:g}]")


def _solver_libraries(result: Any) -> tuple[str, ...]:
    name = result.solver.lower()
    return tuple(lib for lib in ("osqp", "cvxpy", "clarabel", "scs", "ecos", "qpsolvers",
                                 "highspy") if lib in name)
