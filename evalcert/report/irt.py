"""The page of an IRT fit: the ranking of models with intervals, the item map, the test
information curve and the misfitting items, then the estimates and the inputs.

Examples
--------
>>> import numpy as np
>>> from evalcert.irt import Rasch
>>> Y = (np.random.default_rng(0).random((30, 10)) < 0.6).astype(float)
>>> est = Rasch(method="mml").fit(Y)
>>> page = page_from_irt(est.result_, responses=Y, estimator=est)
>>> page.verdict.status, [getattr(b, "id", "") for b in page.verdict.blocks][:3]
('ok', ['forest', 'item-map', 'information'])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evalcert.report.figures import figure_uri, new_figure
from evalcert.report.page import (Facts, Figure, Page, Provenance, Section, Table, Text,
                                  Verdict, source_inputs, versions)

__all__ = ["page_from_irt", "ranking_rows", "Z95"]

#: half-width of a 95% normal interval in standard errors
Z95 = 1.959963984540054


def _first(values: Any) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    return v if v.ndim == 1 else v[:, 0]


def ranking_rows(result: Any) -> list[tuple[int, str, float, float, float, float]]:
    """``(rank, model, ability, se, low, high)`` best first; the interval is ability
    +- 1.96 SE (NaN without SEs). Multidimensional fits rank by the first dimension.

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((30, 10)) < 0.6).astype(float)
    >>> est = Rasch(method="mml").fit(Y)
    >>> rank, model, ability, se, low, high = ranking_rows(est.result_)[0]
    >>> rank, bool(low < ability < high), bool(abs(high - low - 2 * Z95 * se) < 1e-12)
    (1, True, True)
    """
    theta = _first(result.parameters["abilities"])
    se = (_first(result.standard_errors["abilities"]) if "abilities" in result.standard_errors
          else np.full(theta.shape, np.nan))
    order = np.argsort(-np.nan_to_num(theta, nan=-np.inf), kind="stable")
    return [(r + 1, str(result.model_names[k]), float(theta[k]), float(se[k]),
             float(theta[k] - Z95 * se[k]), float(theta[k] + Z95 * se[k]))
            for r, k in enumerate(order)]


def _item_parameters(result: Any) -> Any:
    from evalcert.irt.information import ItemParameters

    if result.model not in ("rasch", "2pl", "3pl"):
        return None
    p = result.parameters
    b = np.asarray(p["difficulties"], dtype=float)
    a = np.asarray(p.get("discriminations", np.where(np.isfinite(b), 1.0, np.nan)), float)
    c = np.asarray(p.get("guessing", np.where(np.isfinite(b), 0.0, np.nan)), float)
    if c.ndim == 0:
        c = np.full(b.shape, float(c))
    return ItemParameters(a, b, c, tuple(result.item_names), result.model)


def _forest(rows: list[tuple[int, str, float, float, float, float]], limit: int = 30) -> Figure:
    shown = rows[:limit]
    fig = new_figure(6.0, 0.19 * len(shown) + 1.3)
    ax = fig.subplots()
    y = np.arange(len(shown))[::-1]
    est = np.array([r[2] for r in shown])
    low, high = np.array([r[4] for r in shown]), np.array([r[5] for r in shown])
    has_ci = np.isfinite(low) & np.isfinite(high)
    ax.hlines(y[has_ci], low[has_ci], high[has_ci], color="#0969da", lw=1.6, alpha=0.6)
    ax.scatter(est, y, s=16, color="#0969da", zorder=3)
    if has_ci[0]:
        ax.axvspan(low[0], high[0], color="#1a7f37", alpha=0.08)
    ax.set_yticks(y, [r[1][:28] for r in shown], fontsize=8)
    ax.grid(axis="x", color="#eee")
    ax.set_xlabel("ability (95% interval: estimate +- 1.96 SE)")
    ax.set_title(f"ranking ({len(shown)} of {len(rows)} models)", fontsize=10)
    fig.tight_layout()
    return Figure(figure_uri(fig), alt="forest plot of model abilities with 95% intervals",
                  caption="Abilities with 95% intervals; shaded: the top model's interval.",
                  id="forest", half=True)


def _item_map(theta: np.ndarray, b: np.ndarray) -> Figure:
    theta, b = theta[np.isfinite(theta)], b[np.isfinite(b)]
    fig = new_figure(6.0, 4.2)
    left, right = fig.subplots(1, 2, sharey=True)
    edges = np.histogram_bin_edges(np.r_[theta, b], bins=min(40, max(8, (theta.size + b.size)
                                                                          // 4)))
    left.hist(theta, bins=edges, orientation="horizontal", color="#0969da", alpha=0.75)
    left.invert_xaxis()
    left.set_title(f"models ({theta.size}): ability", fontsize=10)
    left.set_ylabel("logit scale")
    right.hist(b, bins=edges, orientation="horizontal", color="#bf8700", alpha=0.75)
    right.set_title(f"items ({b.size}): difficulty", fontsize=10)
    for ax in (left, right):
        ax.set_xlabel("count")
        ax.grid(axis="y", color="#eee")
    fig.tight_layout()
    return Figure(figure_uri(fig), alt="item map: abilities and difficulties on one scale",
                  caption="Item map (Wright map): a model at the height of an item has about "
                          "even odds of solving it (Rasch); items far above or below every "
                          "model say little about the ranking.", id="item-map", half=True)


def _information(params: Any, theta: np.ndarray) -> tuple[Figure, float, float]:
    from evalcert.irt.information import test_information

    usable = params.take(params.usable)
    fin = theta[np.isfinite(theta)]
    lo, hi = -4.0, 4.0
    if fin.size:
        lo, hi = min(lo, fin.min() - 1), max(hi, fin.max() + 1)
    grid = np.linspace(lo, hi, 241)
    info = test_information(grid, usable)
    fig = new_figure(6.0, 3.4)
    ax = fig.subplots()
    ax.plot(grid, info, color="#0969da", label="test information I(theta)")
    ax.set_xlabel("ability theta")
    ax.set_ylabel("information")
    ax2 = ax.twinx()
    ax2.plot(grid, 1 / np.sqrt(np.maximum(info, 1e-300)), color="#cf222e", ls="--",
             label="SE = 1/sqrt(I)")
    ax2.set_ylabel("standard error")
    ax2.set_ylim(0, min(3.0, float(np.nanmax(1 / np.sqrt(np.maximum(info, 1e-300))))) * 1.05)
    ax.plot(fin, np.zeros_like(fin), "|", color="grey", alpha=0.6)
    lines = ax.get_legend_handles_labels(), ax2.get_legend_handles_labels()
    ax.legend(lines[0][0] + lines[1][0], lines[0][1] + lines[1][1], fontsize=8, loc="upper left")
    fig.tight_layout()
    peak = int(np.argmax(info))
    return (Figure(figure_uri(fig), alt="test information curve and standard error",
                   caption="Where the test measures best: the information peaks at theta = "
                           f"{grid[peak]:.2f}; the ticks on the axis are the fitted models.",
                   id="information", half=True), float(grid[peak]), float(info[peak]))


def _misfit(estimator: Any, responses: Any, threshold: float, limit: int) -> list[Any]:
    from evalcert.irt.itemfit import item_fit

    res = item_fit(estimator, responses, threshold=threshold)
    t = np.maximum(np.abs(np.nan_to_num(res.items["outfit_t"])),
                   np.abs(np.nan_to_num(res.items["infit_t"])))
    flagged = set(res.flagged("items"))
    order = [k for k in np.argsort(-t, kind="stable") if res.item_names[k] in flagged]
    rows = [(str(res.item_names[k]), float(res.items["infit"][k]), float(res.items["infit_t"][k]),
             float(res.items["outfit"][k]), float(res.items["outfit_t"][k]), int(res.items["n"][k]))
            for k in order[:limit]]
    note = (f"{len(flagged)} of {len(res.item_names)} items have |infit t| or |outfit t| > "
            f"{threshold:g} ({res.model} {res.method}); first {len(rows)} shown, worst first")
    return [Table(("item", "infit", "infit t", "outfit", "outfit t", "responses"), tuple(rows),
                  caption="Misfitting items (Wright & Masters 1982 mean squares)",
                  id="misfit", note=note)] if rows else [
        Text(f"No item misfits: every |infit t| and |outfit t| <= {threshold:g} "
             f"({len(res.item_names)} items).", "note")]


def page_from_irt(result: Any, *, responses: Any = None, estimator: Any = None,
                  source: str | None = None, fmt: str | None = None,
                  read: str | None = None, command: str | None = None,
                  misfit_threshold: float = 2.0, limit: int = 50) -> Page:
    """The page of an :class:`~evalcert.irt.base.IRTResult` (``evalcert irt fit``).

    Parameters
    ----------
    result : IRTResult
    responses : DataFrame or ndarray, optional
        The fitted responses; with ``estimator``, the misfitting items are computed.
    estimator : fitted IRT estimator, optional
    source, fmt : str, optional
        The file read and its layout.
    read : str, optional
        What the reader found (``ResponseTable.describe()``).
    command : str, optional
        The command line that reproduces the fit.
    misfit_threshold : float
        Items with ``|t|`` above it are listed.
    limit : int
        Rows of the ranking and item tables.

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert.irt import Rasch
    >>> Y = (np.random.default_rng(0).random((30, 10)) < 0.6).astype(float)
    >>> est = Rasch(method="mml").fit(Y)
    >>> page = page_from_irt(est.result_, responses=Y, estimator=est, source="r.csv")
    >>> page.verdict.headline.startswith("Top model: "), page.sections[0].title
    (True, 'Ranking')
    """
    rows = ranking_rows(result)
    multi = np.asarray(result.parameters["abilities"]).ndim > 1
    top = rows[0] if rows else None
    has_se = top is not None and np.isfinite(top[3])
    tied = [r[1] for r in rows[1:] if has_se and r[5] >= top[4]] if top else []
    status = "ok" if result.converged else "warn"
    if top is None:
        head = f"{result.model} {result.method}: no model to rank"
    elif has_se:
        head = (f"Top model: {top[1]}, ability {top[2]:.3f} "
                f"[{top[4]:.3f}, {top[5]:.3f}] (95%)")
    else:
        head = f"Top model: {top[1]}, ability {top[2]:.3f} (no standard errors)"
    meaning = (f"{result.model} fitted by {result.method} ({result.solver or 'solver'}) "
               f"{'converged' if result.converged else 'did NOT converge'}"
               f"; identification: {result.identification}. "
               + (f"{len(tied)} other model(s) have intervals overlapping the top model's: "
                  "this test does not separate them from it." if has_se and tied else
                  "No other model's interval overlaps the top model's." if has_se else
                  "Fit with standard errors for intervals.")
               + (" Multidimensional fit: models ranked by the first dimension." if multi
                  else ""))
    facts = Facts((("model", result.model), ("method", result.method),
                   ("converged", bool(result.converged)), ("iterations", int(result.n_iter)),
                   (f"log-likelihood ({result.loglik_kind})", float(result.loglik)),
                   ("models x items", f"{result.n_models} x {result.n_items}"),
                   ("observed cells", int(result.n_observed)),
                   ("stationarity (SEs)", float(result.stationarity))), id="verdict-facts")
    blocks: list[Any] = [_forest(rows)] if rows else []
    sections: list[Section] = []
    ranking = Table(("rank", "model", "ability", "se", "95% low", "95% high"),
                    tuple(rows[:limit]), caption="Models by ability", id="ranking",
                    note=f"first {limit} of {len(rows)} models shown" if len(rows) > limit
                    else "")
    sections.append(Section("Ranking", (ranking,), id="ranking-section"))
    params = _item_parameters(result)
    theta = _first(result.parameters["abilities"])
    if params is not None:
        blocks += [_item_map(theta, params.b), _information(params, theta)[0]]
    if estimator is not None and responses is not None and result.model in ("rasch", "2pl",
                                                                            "3pl"):
        blocks += _misfit(estimator, responses, misfit_threshold, limit)
    else:
        blocks.append(Text("Misfitting items: item fit needs the fitted estimator and the "
                           "responses (evalcert irt fit --html computes it; in Python: "
                           "page_from_irt(result, responses=Y, estimator=est)); binary rasch, "
                           "2pl and 3pl fits only.", "note"))
    item_rows, item_heads = _item_table(result)
    if item_rows:
        sections.append(Section("Items", (Table(item_heads, tuple(item_rows[:limit]),
                                                caption="Item estimates", id="items",
                                                note=f"first {limit} of {len(item_rows)} "
                                                f"items shown" if len(item_rows) > limit
                                                else ""),), id="items-section"))
    sections.append(Section("Fit summary as printed", (Text(result.summary(), "pre"),),
                            id="summary"))
    inputs = source_inputs(source, fmt, read)
    inputs += [("models x items", f"{result.n_models} x {result.n_items}"),
               ("observed cells", int(result.n_observed))]
    dropped = []
    if result.excluded_models:
        dropped.append(f"{len(result.excluded_models)} model(s) excluded from the fit (all "
                       f"responses equal: no finite ability): "
                       f"{', '.join(result.excluded_models[:10])}")
    if result.excluded_items:
        dropped.append(f"{len(result.excluded_items)} item(s) excluded (every model got them "
                       f"right, or every model wrong): {', '.join(result.excluded_items[:10])}")
    dropped += [f"note: {n}" for n in result.notes]
    return Page(f"IRT fit: {result.model} ({result.method})",
                Verdict(head, status, meaning, facts, tuple(blocks)), tuple(sections),
                Provenance(tuple(inputs), tuple(dropped), command, versions()),
                subtitle=f"{result.n_models} models x {result.n_items} items, "
                         f"{result.n_observed} observed responses")


def _item_table(result: Any) -> tuple[list[tuple[Any, ...]], tuple[str, ...]]:
    heads, columns = ["item"], []
    for key in ("difficulties", "discriminations", "guessing"):
        v = np.asarray(result.parameters.get(key, []), dtype=float)
        if v.ndim == 1 and v.size == result.n_items:
            heads.append(key[:-3] + "y" if key.endswith("ies") else key.rstrip("s"))
            columns.append(v)
            se = result.standard_errors.get(key)
            if se is not None and np.ndim(se) == 1:
                heads.append("se")
                columns.append(np.asarray(se, float))
    if not columns:
        return [], ()
    rows = [(str(name), *(float(c[j]) for c in columns))
            for j, name in enumerate(result.item_names)]
    return rows, tuple(heads)
