"""The page of a judge audit: the alarm's verdict and exact threshold T, the graders (which
bind at T), the curve, the attaining answer keys, then the inputs read.

Examples
--------
>>> from evalcert.logic import alarm
>>> res = alarm({"authors": {"a": 5, "b": 10, "tie": 10},
...              "gpt4": {"a": 4, "b": 18, "tie": 3}}, "1/2")
>>> page = page_from_audit(res)
>>> page.verdict.headline
'Alarm silent at x = 1/2: T = 2/3, so x < T'
"""

from __future__ import annotations

from typing import Any

from evalcert.report.figures import figure_uri
from evalcert.report.page import (Facts, Figure, Page, Provenance, Section, Table, Text,
                                  Verdict, versions)

__all__ = ["page_from_audit", "grader_table"]

_METHOD = {1: "M=1 (label counts)", 2: "M=2 (pair counts)", "full": "full joint decisions"}


def grader_table(report: Any, result: Any) -> tuple[Table, str]:
    """One row per grader: whether it binds at ``T`` (on which labels) and, when the report
    has per-(grader, label) bounds, its largest accuracy per label at the first attaining
    key; and a sentence naming the weakest grader(s).

    The audit's own per-judge table (``report.judges``, :mod:`evalcert.logic.judges`:
    estimated and exact columns, flags, a verdict naming the weakest judge) is shown
    instead when it was built.

    Examples
    --------
    >>> from evalcert.logic import alarm
    >>> res = alarm({"authors": {"a": 5, "b": 10, "tie": 10},
    ...              "gpt4": {"a": 4, "b": 18, "tie": 3}}, "1/2")
    >>> table, weakest = grader_table(res, res)
    >>> table.rows
    (('authors', 'b'), ('gpt4', 'a'))
    """
    judges = getattr(report, "judges", None)
    if judges is not None and getattr(judges, "rows", None):
        order = sorted(judges.rows, key=lambda r: (r.flag is None, r.ds_accuracy))
        rows = tuple((r.judge, r.flag or "", r.ds_accuracy, r.ds_ci_low, r.ds_ci_high,
                      r.kappa_mean, r.alpha_without, r.min_accuracy, r.max_accuracy,
                      bool(r.binds), r.reason) for r in order)
        table = Table(("judge", "flag", "DS accuracy", "low", "high", "kappa", "alpha w/o",
                       "min acc. at T", "max worst at T", "binds T", "why"), rows,
                      caption=f"Per judge: Dawid-Skene accuracy (estimated; {judges.level:.0%} "
                              "bootstrap interval low-high) beside the exact accuracies every "
                              "consistent evaluation allows with every judge >= T", id="judges")
        return table, "\n".join(judges.verdict)
    binding: dict[str, list[str]] = {}
    for grader, label in result.binding:
        binding.setdefault(grader, []).append(label)
    headers = ["grader", "binds at T on"]
    bounds = getattr(report, "bounds", None)
    maxima: dict[str, list[Any]] = {}
    if bounds is not None and len(bounds.keys):
        from fractions import Fraction

        key = bounds.keys[0]
        headers += [f"max accuracy on {lab} (key {'/'.join(map(str, key))})"
                    for lab in bounds.labels]
        for g, grader in enumerate(bounds.graders):
            maxima[grader] = [Fraction(int(bounds.max_correct[0, g, k]), int(key[k]))
                              if key[k] else None for k in range(len(bounds.labels))]
    rows = tuple((g, ", ".join(binding.get(g, [])) or "–", *maxima.get(g, []))
                 for g in result.graders)
    if binding:
        text = (f"Weakest: {', '.join(binding)} (binding at T: no consistent answer key lets "
                f"{'it' if len(binding) == 1 else 'them'} be better than T = {result.T} on "
                f"{'that label' if sum(map(len, binding.values())) == 1 else 'those labels'}).")
    else:
        text = "No grader binds at T (T = 1: every grader can be perfect)."
    return Table(tuple(headers), rows, caption="Per grader", id="graders"), text


def _curve_figure(result: Any) -> Figure | None:
    if result.curve is None:
        return None
    from evalcert.plots.alarms import plot_minmax_curve

    fig = plot_minmax_curve(result.curve, alarm_result=result)
    return Figure(figure_uri(fig), alt="min-max curve of the answer keys",
                  caption="Every answer key's v(q) under M=1, sorted (Fig. 7); its maximum "
                          "is T_1. The dashed line is x.", id="curve")


def page_from_audit(report: Any, *, source: str | None = None, command: str | None = None,
                    limit: int = 20) -> Page:
    """The page of an :class:`~evalcert.logic.audit.AuditReport` (``evalcert audit``) or of
    an :class:`~evalcert.logic.alarms.AlarmResult` (``alarm(...)`` in Python).

    Parameters
    ----------
    report : AuditReport or AlarmResult
    source : str, optional
        The file read (default: the one the report names).
    command : str, optional
        The command line that reproduces the audit.
    limit : int
        Attaining keys listed.

    Examples
    --------
    >>> from evalcert.logic import alarm
    >>> res = alarm({"a": {"x": 3, "y": 1}, "b": {"x": 2, "y": 2}}, "0.9")
    >>> page = page_from_audit(res, command="python audit.py")
    >>> page.verdict.status, page.verdict.headline
    ('alarm', 'Alarm FIRES at x = 9/10: T = 2/3, so x >= T')
    """
    from evalcert.logic.audit import panel_statement

    result = getattr(report, "result", report)
    read = dict(getattr(report, "read", None) or {})
    T, x = result.T, result.threshold
    which = _METHOD.get(result.m, str(result.m))
    if result.fires:
        head = f"Alarm FIRES at x = {x}: T = {T}, so x >= T"
        meaning = (f"No answer key lets every grader be better than x = {x} on every label "
                   f"({which}): whatever the truth, some grader is at most T = {T} "
                   f"({float(T):.1%}) correct on some label.")
    else:
        head = f"Alarm silent at x = {x}: T = {T}, so x < T"
        meaning = panel_statement(result) + (" Silence is not a certificate of quality: "
                                             "it says the decisions cannot rule it out.")
    upper = getattr(result, "T_upper", None)
    if upper is not None:               # stopped at the time limit: proven bounds on T
        head = f"Time limit reached: T in [{T}, {upper}] at x = {x}"
        meaning = (f"The search stopped at its time limit with proven bounds {T} <= T <= "
                   f"{upper} ({which}). At x = {x} the alarm "
                   + ("fires for certain (x >= the upper bound)." if result.fires else
                      "is silent for certain (x < the lower bound)." if x < T else
                      "is undecided (x lies between the bounds).")
                   + " Raise --time-limit for the exact T.")
    facts = Facts((("x (level asked)", x), ("T (exact threshold)", T),
                   ("fires", bool(result.fires)), ("method", which),
                   ("computed by", result.method), ("answer keys", result.n_keys),
                   ("keys attaining T", result.n_attaining
                    if result.n_attaining is not None else "witness only"),
                   ("integer programs", result.n_solves)), id="verdict-facts")
    table, weakest = grader_table(report, result)
    verdict = Verdict(head, "alarm" if result.fires else ("warn" if upper is not None else "ok"),
                      meaning, facts,
                      (table, Text(weakest, "list")))
    sections: list[Section] = []
    figure = _curve_figure(result)
    if figure is not None:
        sections.append(Section("Min-max curve", (figure,), id="curve-section"))
    judges = getattr(report, "judges", None)
    if judges is not None and getattr(judges, "rows", None):
        from evalcert.plots.judges import plot_judges

        sections.append(Section("Judges", (Figure(
            figure_uri(plot_judges(judges)), alt="per-judge accuracies",
            caption="Each judge's Dawid-Skene accuracy with its bootstrap interval "
                    "(estimated) beside its exact accuracy range at T (grey: certain); "
                    "T dashed.", id="judges-figure"),), id="judges-section"))
    keys = result.attaining_keys[:limit]
    n_att = result.n_attaining
    sections.append(Section("Answer keys attaining T", (
        Table(tuple(f"items labelled {lab}" for lab in result.labels), tuple(keys),
              caption=("Label counts of the keys where the best consistent level is T"
                       if n_att is not None else "A key attaining T (a witness; not all "
                       "attaining keys were enumerated)"), id="keys",
              note=f"first {len(keys)} of {n_att} shown" if n_att and n_att > len(keys)
              else ""),), id="keys-section"))
    bounds = getattr(report, "bounds", None)
    if bounds is not None:
        from evalcert.report.page import table_from_frame
        import pandas as pd

        frame = pd.DataFrame(bounds.rows())
        sections.append(Section("Per-(grader, label) accuracy ranges", (
            Text(f"Under {bounds.method}: the exact smallest and largest accuracy of each "
                 f"grader on each label, over the evaluations consistent with the decisions in "
                 f"which every grader is at least T = {T} on every label (then free_*: at any "
                 "level), at each listed attaining key.", "note"),
            table_from_frame(frame, id="bounds", limit=60)), id="bounds-section"))
    extra = [e.summary() for e in getattr(report, "estimates", ())]
    if getattr(report, "agreement", None) is not None:
        extra.append("agreement: " + report.agreement.summary())
    if extra or getattr(report, "bootstrap", None) or getattr(report, "spec", None):
        text = report.summary().split("\n")
        start = len(result.summary().split("\n"))
        sections.append(Section("Estimates, agreement, bootstrap and spec",
                                (Text("\n".join(text[start:]), "pre"),), id="extras"))
    sections.append(Section("Summary as printed", (Text(
        report.summary(panel=True, bounds=bounds is not None) if hasattr(report, "read")
        else result.summary(), "pre"),), id="summary"))
    inputs: list[tuple[str, Any]] = [("file", source or read.get("path") or "in memory")]
    for key in ("format", "rows", "items_read", "items_used", "items_dropped", "on_missing"):
        if key in read:
            inputs.append((key.replace("_", " "), read[key]))
    inputs += [("graders", ", ".join(result.graders)), ("labels", ", ".join(result.labels))]
    notes = tuple(n for n in getattr(report, "notes", ()) if "written to" not in n)
    return Page(f"Judge audit: no-knowledge alarm, {which}", verdict, tuple(sections),
                Provenance(tuple(inputs), notes, command, versions(("pulp", "highspy"))),
                subtitle=f"{len(result.graders)} graders, labels {', '.join(result.labels)}")
