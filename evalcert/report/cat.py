"""The page of ``evalcert irt cat``: how many items an adaptive test needed and how well it
predicted each model's full-bank accuracy, against random items and static anchors of the
same length; the curve of error against items used; the per-model table.

Examples
--------
>>> import numpy as np
>>> from evalcert.irt.cat import simulate_cat
>>> from evalcert.irt.information import ItemParameters
>>> rng = np.random.default_rng(1)
>>> a, b, theta = rng.lognormal(0, 0.5, 120), rng.normal(size=120), rng.normal(size=40)
>>> Y = (rng.random((40, 120)) < 1 / (1 + np.exp(-a * (theta[:, None] - b)))) * 1.0
>>> bank = ItemParameters(a, b, np.zeros(120), tuple(f"q{j}" for j in range(120)), "2pl")
>>> page = page_from_cat(simulate_cat(bank, Y, holdout=None, max_items=10))
>>> [getattr(b, "id", "") for b in page.verdict.blocks]
['error-curve', 'predicted-vs-actual', 'curve']
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from evalcert.report.figures import figure_uri, new_figure
from evalcert.report.page import (Facts, Figure, Page, Provenance, Section, Table, Text,
                                  Verdict, source_inputs, versions)

__all__ = ["page_from_cat"]

#: how each baseline is drawn in the error curve: (key, label, colour, marker)
_LINES = (("mae_accuracy", "adaptive", "#0969da", "o"),
          ("mae_random", "random items", "#bf8700", "s"),
          ("mae_anchors", "information anchors", "#8250df", "^"))


def _curve_figure(result: Any) -> Figure:
    fig = new_figure(6.0, 3.6)
    ax = fig.subplots()
    n = [c["n_items"] for c in result.curve]
    for key, label, colour, marker in _LINES:
        ax.plot(n, [c[key] for c in result.curve], marker=marker, ms=4, color=colour,
                label=label)
    ax.set_xlabel("items used")
    ax.set_ylabel("mean absolute error of accuracy")
    if len(n) > 1 and n[-1] / max(n[0], 1) >= 20:
        ax.set_xscale("log")
    ax.set_ylim(bottom=0)
    ax.grid(color="#eee")
    ax.legend(fontsize=8)
    ax.set_title(f"error against items used (bank of {result.n_items})", fontsize=10)
    fig.tight_layout()
    return Figure(figure_uri(fig), alt="mean absolute error of the predicted accuracy against "
                  "the number of items used", caption="Mean absolute error of the predicted "
                  "full-bank accuracy of the tested models after k items: adaptive, k random "
                  "items, k static information anchors.", id="error-curve", half=True)


def _scatter(result: Any) -> Figure:
    pred = np.array([m["predicted_accuracy"] for m in result.models])
    actual = np.array([m["actual_accuracy"] for m in result.models])
    fig = new_figure(6.0, 3.6)
    ax = fig.subplots()
    lo = float(min(pred.min(), actual.min(), 1.0))
    hi = float(max(pred.max(), actual.max(), 0.0))
    ax.plot([lo, hi], [lo, hi], color="#999", lw=0.8, ls="--")
    ax.scatter(actual, pred, s=14, color="#0969da", alpha=0.7)
    ax.set_xlabel("actual accuracy on the bank")
    ax.set_ylabel("predicted by the adaptive test")
    ax.grid(color="#eee")
    ax.set_title(f"{len(result.models)} models tested", fontsize=10)
    fig.tight_layout()
    return Figure(figure_uri(fig), alt="predicted against actual accuracy of each tested model",
                  caption="Each tested model's accuracy on the whole bank (x) and the accuracy "
                          "its adaptive test predicts (y); the dashed line is equality.",
                  id="predicted-vs-actual", half=True)


def page_from_cat(result: Any, *, source: str | None = None, fmt: str | None = None,
                  read: str | None = None, bank: str | None = None,
                  command: str | None = None, limit: int = 60) -> Page:
    """The page of a :class:`~evalcert.irt.cat.CATResult` (``evalcert irt cat``).

    Parameters
    ----------
    result : CATResult
    source, fmt : str, optional
        The response file read and its layout.
    read : str, optional
        What the reader found.
    bank : str, optional
        The item file used as the bank (``--items``); else the bank was fitted.
    command : str, optional
        The command line that reproduces the run.
    limit : int
        Rows of the per-model table.

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert.irt.cat import simulate_cat
    >>> from evalcert.irt.information import ItemParameters
    >>> rng = np.random.default_rng(1)
    >>> a, b, theta = rng.lognormal(0, 0.5, 120), rng.normal(size=120), rng.normal(size=40)
    >>> Y = (rng.random((40, 120)) < 1 / (1 + np.exp(-a * (theta[:, None] - b)))) * 1.0
    >>> bank = ItemParameters(a, b, np.zeros(120), tuple(f"q{j}" for j in range(120)), "2pl")
    >>> page = page_from_cat(simulate_cat(bank, Y, holdout=None, max_items=10))
    >>> page.verdict.headline.startswith("10 of 120 items"), page.verdict.status
    (True, 'ok')
    """
    used = np.array([m["items_used"] for m in result.models], dtype=float)
    final = result.curve[-1]
    mae, rand, anch = final["mae_accuracy"], final["mae_random"], final["mae_anchors"]
    best_base = min(rand, anch)
    if np.all(used == used[0]):
        items = f"{int(used[0])} of {result.n_items} items"
    else:
        items = (f"{used.mean():.1f} of {result.n_items} items on average "
                 f"({int(used.min())}-{int(used.max())})")
    head = (f"{items}: accuracy predicted within {mae:.4f} on average "
            f"(random items {rand:.4f}, anchors {anch:.4f})")
    whole = used.min() >= result.n_items
    if whole:
        status, verdict = "info", (
            f"Every model was given the whole bank ({result.n_items} items, no more than "
            f"--max-items {result.max_items}): the adaptive test saved nothing and the "
            "errors only check the scoring; give fewer items than the bank holds.")
    elif mae < best_base:
        status = "ok"
        verdict = (f"The adaptive test's error is {mae / best_base:.2f} x that of the better "
                   "baseline: it beats random items and static anchors of the same length.")
    else:
        status = "warn"
        verdict = ("A baseline of the same length does as well as the adaptive test: the "
                   "bank, the selection or the stopping rule may not suit these models.")
    meaning = (f"Mean absolute error of the predicted full-bank accuracy of {len(result.models)} "
               f"models after at most {final['n_items']} items. " + verdict
               + f" Items chosen by {result.selection}, abilities by {result.update.upper()}"
               + (f"; the bank was calibrated on {result.n_train} other models"
                  if result.n_train else "; the bank was given (no models held out)") + ".")
    stops = [f"at most {result.max_items} items"]
    if result.se_stop:
        stops.append(f"SE <= {result.se_stop:g}")
    if result.delta_stop:
        stops.append(f"change < {result.delta_stop:g}")
    facts = Facts((("models tested", len(result.models)), ("bank items", int(result.n_items)),
                   ("items used", f"{int(used[0])}" if np.all(used == used[0]) else
                    f"{used.mean():.1f} on average ({int(used.min())}-{int(used.max())})"),
                   ("MAE adaptive", float(mae)), ("MAE random items", float(rand)),
                   ("MAE anchors", float(anch)), ("selection", result.selection),
                   ("stopping", ", ".join(stops))), id="verdict-facts")
    curve = Table(("items", "MAE adaptive", "MAE random", "MAE anchors"),
                  tuple((int(c["n_items"]), float(c["mae_accuracy"]), float(c["mae_random"]),
                         float(c["mae_anchors"])) for c in result.curve),
                  caption="Mean absolute error of the predicted accuracy by test length",
                  id="curve")
    blocks = (_curve_figure(result), _scatter(result), curve)
    order = sorted(result.models, key=lambda m: -abs(m["predicted_accuracy"]
                                                     - m["actual_accuracy"]))
    rows = tuple((m["model"], int(m["items_used"]), float(m["theta"]), float(m["se"]),
                  float(m["predicted_accuracy"]), float(m["actual_accuracy"]),
                  float(m["predicted_accuracy"] - m["actual_accuracy"])) for m in order[:limit])
    models = Table(("model", "items used", "ability", "se", "predicted accuracy",
                    "actual accuracy", "error"), rows,
                   caption="Each tested model, largest error first", id="models",
                   note=f"first {limit} of {len(order)} models shown" if len(order) > limit
                   else "")
    exposure = Counter(item for items in result.administered for item in items)
    top = exposure.most_common(15)
    sections = [Section("Models", (models,), id="models-section")]
    if top:
        sections.append(Section("Item exposure", (Table(
            ("item", "models given it", "share"),
            tuple((item, int(n), n / len(result.models)) for item, n in top),
            caption="Most administered items", id="exposure",
            note=f"{len(exposure)} of {result.n_items} bank items were given at least once"
                 + (f"; exposure cap {result.max_exposure:g}" if result.max_exposure else "")
                 + (f"; randomesque among {result.randomesque}" if result.randomesque > 1
                    else "")),), id="exposure-section"))
    sections.append(Section("Summary as printed", (Text(result.summary(), "pre"),),
                            id="summary"))
    inputs = source_inputs(source, fmt, read)
    inputs += [("bank", bank or (f"{result.item_model} fitted on {result.n_train} models"
                                 if result.n_train else f"{result.item_model}, given")),
               ("ability prior", f"N({result.prior[0]:g}, {result.prior[1]:g}^2)"),
               ("seed", int(result.seed))]
    return Page("Adaptive testing: how few items predict a model",
                Verdict(head, status, meaning, facts, blocks), tuple(sections),
                Provenance(tuple(inputs), tuple(result.notes), command, versions()),
                subtitle=f"{len(result.models)} models, {result.item_model} bank of "
                         f"{result.n_items} items, {result.selection} selection")
