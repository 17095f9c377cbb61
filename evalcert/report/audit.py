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


def _label_curves_section(report: Any, result: Any) -> Section | None:
    """Fig. 8 (``--plot-per-label``): the figure drawn from the report's numbers and a
    table of each label's exact range."""
    curves = getattr(report, "label_curves", None)
    if curves is None or result.curve is None:
        return None
    from fractions import Fraction

    from evalcert.logic.audit import LABEL_POINTS
    from evalcert.plots.alarms import plot_label_curves

    fig = plot_label_curves(result.curve, threshold=float(result.threshold),
                            max_points=LABEL_POINTS)
    rows = tuple((c["label"], c["n_keys"],
                  Fraction(c["min"]) if c["min"] is not None else None,
                  " / ".join(map(str, c["argmin"] or ())) or "–",
                  Fraction(c["max"]) if c["max"] is not None else None,
                  " / ".join(map(str, c["argmax"] or ())) or "–",
                  len(c["values"])) for c in curves)
    return Section("Per-label min-max curves (Fig. 8)", (
        Figure(figure_uri(fig), alt="per-label min-max curves",
               caption="Per label, the best accuracy of the worst grader at each answer key "
                       "with items of the label (M=1), each label sorted on its own; a "
                       "label whose range reaches 1 cannot carry an alarm alone. The "
                       "dashed line is x.", id="label-curves-figure"),
        Table(("label", "keys with items of it", "min", "key at min", "max", "key at max",
               "points drawn"), rows, id="label-curves",
              caption="Exact range of each label's curve (keys as label counts "
                      f"{' / '.join(result.labels)}); the JSON's label_curves holds the "
                      "points drawn")), id="label-curves-section")


def _pspace_section(report: Any) -> Section | None:
    """Fig. 2 (``--pspace``): the figure recomputed from the report's decided counts, a
    table of stage sizes and point classes per grader, and the shared prevalences."""
    ps = getattr(report, "pspace", None)
    if ps is None:
        return None
    from fractions import Fraction

    from evalcert.logic.audit import PSPACE_BACKGROUND, PSPACE_GRADERS
    from evalcert.logic.pspace import (CLASSES, MAX_POINTS, STAGES, pspace_evaluations,
                                       pspace_size)

    q, labels, a = ps["n_items"], ps["labels"], ps["labels"][0]
    stages = STAGES[1:]                 # "a priori" is the same for every grader: caption
    rows = tuple((g["grader"], *g["decided"], *(g["stages"][st] for st in stages),
                  *(g["classes"][c] for c in CLASSES),
                  ", ".join(f"{x}" if x == y else f"{x}-{y}" for x, y in g["clears_at"])
                  + (" ..." if g["clears_at_truncated"] else "") or "none")
                 for g in ps["graders"])
    table = Table(("grader", f"decided {labels[0]}", f"decided {labels[1]}", *stages,
                   *CLASSES, f"clears x at Q_{a}"), rows, id="pspace",
                  caption=f"Per grader: its evaluations once the decided counts' "
                          "inequalities hold, then the M=1 axiom (a priori there are "
                          f"{pspace_size(q):,} for every grader), and the axiom-stage points "
                          f"by class at x = {ps['threshold']}")
    runs = ", ".join(f"{x}" if x == y else f"{x}-{y}" for x, y in ps["shared_prevalences"])
    sentence = (f"No prevalence Q_{a} lets every grader clear x = {ps['threshold']}: the M=1 "
                "alarm fires." if ps["fires"] else
                f"Every grader can clear x = {ps['threshold']} at Q_{a} in {runs}"
                + (" ..." if ps["shared_truncated"] else "")
                + f" ({ps['n_shared']} of {q + 1} prevalences, P_{a} from "
                f"{ps['shared_prevalences'][0][0] / q:.4g} to "
                f"{ps['shared_prevalences'][-1][1] / q:.4g}): the M=1 alarm is silent.")
    shown = ps["graders"][:PSPACE_GRADERS]
    size = sum(g["stages"]["axioms"] for g in shown)
    blocks: list[Any] = [Text(sentence, "p")]
    if size <= MAX_POINTS:
        from evalcert.plots.alarms import plot_pspace

        spaces = [pspace_evaluations(q, g["decided"], "axioms", labels) for g in shown]
        back = (pspace_evaluations(q, stage="a priori", labels=labels)
                if pspace_size(q) <= PSPACE_BACKGROUND else None)
        fig = plot_pspace(spaces, threshold=Fraction(ps["threshold"]),
                          graders=[g["grader"] for g in shown], background=back)
        more = (f" (the first {len(shown)} of {len(ps['graders'])} graders)"
                if len(shown) < len(ps["graders"]) else "")
        blocks.append(Figure(figure_uri(fig), alt="evaluations in P-space",
                             caption="Each grader's evaluations allowed by the M=1 axiom in "
                                     f"P-space{more}: green where it clears x at a "
                                     "prevalence where every grader can, orange where it "
                                     "clears x alone, grey below x; faint: the a-priori set.",
                             id="pspace-figure"))
    else:
        blocks.append(Text(f"The figure is left out: {size:,} points (limit {MAX_POINTS:,}); "
                           "the table counts them all.", "note"))
    blocks.append(table)
    return Section("P-space (Fig. 2)", tuple(blocks), id="pspace-section")


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
    for extra in (_label_curves_section(report, result), _pspace_section(report)):
        if extra is not None:
            sections.append(extra)
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
