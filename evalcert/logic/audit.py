"""One audit of a judge log, as the CLI runs it: read, alarm (M=1, M=2 or the full joint),
report (summary, Sec. IV panel statement, JSON, per-(grader, label) CSV, plot).

:func:`run_audit` is the library call behind ``evalcert audit``; everything it prints or
writes comes from the frozen :class:`AuditReport` it returns.
"""

from __future__ import annotations

import csv as _csv
import dataclasses
import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from evalcert.errors import InputError
from evalcert.logic.alarms import alarm, minmax_curve
from evalcert.logic.bounds import METHOD_NAMES, LabelBounds, check_bounds_size, label_bounds
from evalcert.logic.result import AlarmResult
from evalcert.logic.summaries import Decisions, LabelCounts
from evalcert.progress import heartbeat
from evalcert.results import PageMixin, ResultMixin, to_jsonable

__all__ = ["AuditSpec", "AuditReport", "run_audit", "panel_statement", "grader_label_bounds"]

METHODS = ("1", "2", "full")
#: most bootstrap resamples (each costs one closed-form T_1)
MAX_BOOT = 100_000


def panel_statement(result: AlarmResult) -> str:
    """Sec. IV of paper 003 as one sentence about the graders as a panel.

    Examples
    --------
    >>> from evalcert.datasets.mtbench import paper_summaries
    >>> print(panel_statement(alarm(paper_summaries(), "1/2")))
    Given their label counts (M=1), the answer key established by these 2 graders is
    logically consistent with each being at least 2/3 (66.7%) correct on every label,
    and with nothing higher.
    """
    which = {1: "label counts (M=1)", 2: "pair counts (M=2)",
             "full": "full joint decisions"}.get(result.m, str(result.m))
    head = (f"Given their {which}, the answer key established by these {len(result.graders)} "
            f"graders is logically consistent with each being at least {result.T} "
            f"({float(result.T):.1%}) correct on every label")
    if result.T_upper is not None:  # stopped at a time limit: only the proven bounds
        return (head + f", and with nothing higher than {result.T_upper} "
                f"({float(result.T_upper):.1%}); the time limit left the levels between "
                "undecided.")
    return head + ", and with nothing higher."


def grader_label_bounds(data: LabelCounts | Decisions, result: AlarmResult,
                        max_keys: int = 10, *, solver: str = "highs", free: bool = True,
                        verbose: bool = False) -> LabelBounds:
    """Per (grader, label), the exact smallest and largest accuracy at each listed attaining
    key of ``result`` (at most ``max_keys``), under the axioms of the alarm's own M (1, 2 or
    the full joint), over the evaluations with every grader at least ``result.T`` on every
    label, and (``free``) over all evaluations at the key: see :mod:`evalcert.logic.bounds`.

    Examples
    --------
    >>> from evalcert.datasets.mtbench import paper_summaries
    >>> counts = paper_summaries()
    >>> bounds = grader_label_bounds(counts, alarm(counts, "1/2"))
    >>> rows = bounds.rows()  # 2 graders x 3 labels at the one attaining key (6, 15, 4)
    >>> len(rows), bounds.method, rows[0]["key"], rows[0]["max_correct"], rows[0]["max_accuracy"]
    (6, 'M=1', '6/15/4', 5, '5/6')
    >>> rows[1]["grader"], rows[1]["label"], rows[1]["min_accuracy"], rows[1]["max_accuracy"]
    ('authors', 'b', '2/3', '2/3')
    """
    return label_bounds(data, result.attaining_keys[:max_keys], result.T, m=result.m,
                        free=free, solver=solver, verbose=verbose)


#: CSV columns of ``--csv`` (then the ``free_*`` range without the level)
CSV_COLUMNS = ("grader", "label", "key", "items", "method", "min_correct", "max_correct",
               "min_accuracy", "max_accuracy", "free_min_correct", "free_max_correct",
               "free_min_accuracy", "free_max_accuracy")


@dataclasses.dataclass(frozen=True)
class AuditReport(PageMixin, ResultMixin):
    """Everything one audit computed.

    Attributes
    ----------
    result : AlarmResult
    read : dict
        What the reader did (format, items used/dropped, skipped per grader, unparseable);
        ``{"format": "label counts"}`` for a JSON summary.
    notes : tuple of str
        Lines for stderr.
    curve_summary : dict or None
        Number of keys and the extreme values of the M=1 min-max curve, when computed.
    estimates : tuple of Estimate
        Point estimates (crowd-kit), each checked against ``T``.
    agreement : Agreement or None
    bootstrap : dict or None
        Item bootstrap of ``T_1`` (a population statement).
    spec : dict or None
        Per-label thresholds / overall grade checked under M=1 (an ILP): feasible, and a
        key where the spec holds.
    bounds : LabelBounds or None
        Per-(grader, label) accuracy ranges at the attaining keys under the chosen M
        (``--csv`` / ``--bounds``).
    judges : JudgeTable or None
        The per-judge table (``--judges``): estimated and exact, with flags.
    population : tuple of PopulationBound
        Upper confidence bounds on the population's ``T`` (``--population``), for M=1 and
        the chosen M (:mod:`evalcert.logic.population`).
    label_curves : list of dict or None
        Fig. 8 as numbers (``--plot-per-label``): per label the sorted exact values of the
        keys with items of it, thinned to :data:`LABEL_POINTS`
        (:meth:`~evalcert.logic.MinMaxCurve.label_curves`).
    pspace : dict or None
        Fig. 2 as numbers (``--pspace``): stage sizes, class counts and a bounded sample of
        each grader's points (:func:`~evalcert.logic.pspace.pspace_summary`).

    Examples
    --------
    Three judges that agree on every item (the alarm stays silent up to ``T = 1``):

    >>> import tempfile
    >>> rows = "".join(f"q{i},g{g},{'ab'[i % 2]}\\n" for i in range(6) for g in range(3))
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     log = Path(tmp) / "judges.csv"
    ...     _ = log.write_text("item,grader,label\\n" + rows)
    ...     report = run_audit(log, "1/2")
    >>> report.result.T, report.read["items_used"], report.notes
    (Fraction(1, 1), 6, ('read 18 rows (long (csv)): 6 items, 6 used, 0 dropped',))
    """

    result: AlarmResult
    read: dict[str, Any]
    notes: tuple[str, ...]
    curve_summary: dict[str, Any] | None = None
    estimates: tuple[Any, ...] = ()
    agreement: Any = None
    bootstrap: dict[str, Any] | None = None
    spec: dict[str, Any] | None = None
    bounds: LabelBounds | None = None
    judges: Any = None
    population: tuple[Any, ...] = ()
    label_curves: list[dict[str, Any]] | None = None
    pspace: dict[str, Any] | None = None

    def to_frame(self) -> Any:
        """The per-judge table when built (``judges``), else the per-(grader, label) accuracy
        ranges when computed (``bounds``), else the answer keys attaining ``T``."""
        if self.judges is not None:
            return self.judges.to_frame()
        return self.bounds.to_frame() if self.bounds is not None else self.result.to_frame()

    def summary(self, panel: bool = False, bounds: bool = False) -> str:
        text = self.result.summary()
        if self.judges is not None:
            text = "judges: " + self.judges.summary() + "\n" + text
        if panel:
            text += "\n" + panel_statement(self.result)
        if bounds and self.bounds is not None:
            text += "\n" + self.bounds.summary()
        for est in self.estimates:
            text += "\nestimate: " + est.summary()
        if self.agreement is not None:
            text += "\nagreement: " + self.agreement.summary()
        if self.spec is not None:
            sp = self.spec
            text += (f"\nspec {sp['spec']} under M=1: "
                     + (f"logically consistent (e.g. at key {tuple(sp['key'])})"
                        if sp["feasible"] else "INCONSISTENT: no answer key allows it"))
        if self.bootstrap is not None:
            b = self.bootstrap
            text += (f"\nbootstrap ({b['n_boot']} item resamples, seed {b['seed']}): "
                     f"{b['level']:.0%} of tests drawn like this one have T_1 in "
                     f"[{b['interval'][0]:.4f}, {b['interval'][1]:.4f}] (a population "
                     "statement; this test's T is exact)")
        for bound in self.population:
            text += "\n" + bound.sentence()
        if self.label_curves is not None:
            text += "\nper-label min-max (Fig. 8, M=1): " + "; ".join(
                f"{c['label']} {c['min']} to {c['max']} over {c['n_keys']} keys"
                for c in self.label_curves if c["n_keys"])
        if self.pspace is not None:
            p = self.pspace
            runs = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in p["shared_prevalences"])
            text += (f"\nP-space (Fig. 2, M=1): " + (
                f"no prevalence lets every grader clear x = {p['threshold']} (fires)"
                if p["fires"] else f"every grader can clear x = {p['threshold']} at "
                f"Q_{p['labels'][0]} in {runs}{' ...' if p['shared_truncated'] else ''} "
                f"({p['n_shared']} of {p['n_items'] + 1} prevalences)"))
        return text

    def to_dict(self, full_curve: bool = False) -> dict[str, Any]:
        res = {f.name: getattr(self.result, f.name) for f in dataclasses.fields(self.result)
               if f.name != "curve"}
        res["method"] = METHOD_NAMES[self.result.m]
        res["computed_by"] = self.result.method     # closed form, or the ILP and its solver
        out = {**to_jsonable(res), "read": to_jsonable(self.read),
               "curve": self.curve_summary,
               "estimates": [to_jsonable(e) for e in self.estimates],
               "agreement": to_jsonable(self.agreement), "bootstrap": self.bootstrap,
               "spec": to_jsonable(self.spec),
               "bounds": self.bounds.to_dict() if self.bounds is not None else None,
               "judges": self.judges.to_dict() if self.judges is not None else None,
               "population": ({b.m: b.to_dict() for b in self.population}
                              if self.population else None),
               "label_curves": self.label_curves, "pspace": self.pspace}
        if full_curve and self.result.curve is not None:
            c = self.result.curve
            out["curve"] = {**(self.curve_summary or {}), "keys": c.keys.tolist(),
                            "values": [f"{a}/{b}" for a, b in zip(c.numer.tolist(),
                                                                  c.denom.tolist())]}
        return out

    def write_json(self, path: str | Path, full_curve: bool = False) -> None:
        from evalcert.io.outputs import writing
        with writing(path) as tmp:
            tmp.write_text(json.dumps(self.to_dict(full_curve), indent=2))


@dataclasses.dataclass(frozen=True)
class AuditSpec:
    """Everything one audit is asked to do (the CLI builds it from its flags).

    Attributes
    ----------
    path : str or Path
        Judge log or JSON label-count summary.
    threshold : level ``x`` in [0, 1] (number, string or Fraction)
    m : ``"1"``, ``"2"`` or ``"full"``
    fmt, labels, graders, on_missing, item_col, grader_col, label_col, label_map
        How to read ``path`` (:func:`evalcert.io.decisions.load_audit_input`).
    solver : ILP solver for M=2 / the full joint (``"highs"`` or ``"cbc"``)
    plot, csv, squares : output paths (checked by the caller), or None
    squares_key : key of ``squares`` (default: the first attaining key)
    estimators : ``"ds"``, ``"mv"``; with_agreement, n_boot, seed: estimates beside T
    lower, upper : QC bounds on the key's label counts
    sequence : windows of this many consecutive items (App. E), chained through one
        item-level key
    label_thresholds, grade : one M=1 spec to check
    with_bounds, max_keys : per-(grader, label) ranges at the first attaining keys
    judges, judges_csv, judges_plot : build the per-judge table
        (:mod:`evalcert.logic.judges`); write it as CSV / draw it here
    swapped : merge each pairwise comparison's A/B and B/A presentations into one item with
        graders ``<judge>/ab`` and ``<judge>/ba`` (:mod:`evalcert.logic.swaps`); the judges'
        swap consistency goes to ``read["swapped"]`` and the judge table
    tolerance : ordinal labels: a decision within this many steps of the true label (in
        the declared label order) counts as correct (:mod:`evalcert.logic.ordinal`)
    bands : declared bands (``"1-3,4-7,8-10"``): a decision in the true label's band is
        correct; ties : ``"half"`` scores a tie against ``a``/``b`` (either way) as 1/2
    population, confidence, resamples : a statement about the population the items were
        drawn from (:mod:`evalcert.logic.population`): ``"bootstrap"`` (item bootstrap of
        ``T`` for the chosen M, ``resamples`` refits, seeded by ``seed``), ``"exact"``
        (finite-sample Clopper-Pearson bound through the M=1 threshold map) or ``"none"``,
        at level ``confidence``
    time_limit : seconds for the M=2 / full-joint search; past it the result carries the
        proven bounds ``T in [T, T_upper]`` (``result.T_upper``) instead of an exact ``T``
    progress : a progress bar on stderr once the search passes ~3 s (keys decided, bounds
        on ``T``)
    verbose : progress of ILP solves on stderr at once
    page : the HTML page is wanted (``--html``): keep the M=1 min-max curve and build the
        per-judge table when the input allows them (a complete judge log, exact ``T``),
        without failing when it does not
    plot_per_label : draw Fig. 8, the per-label M=1 min-max curves, here (True: no file,
        only the numbers in the report, for the page and the JSON)
    pspace : draw Fig. 2, each grader's M=1 evaluations in P-space with the threshold's
        region, here (two labels; True: no file, only the numbers)

    Examples
    --------
    >>> AuditSpec("judges.csv", "0.6", m="full").m
    'full'
    """

    path: str | Path
    threshold: Any = "0.5"
    m: str | int = "1"
    fmt: str = "auto"
    labels: Sequence[str] | str | None = None
    graders: Sequence[str] | None = None
    on_missing: str = "error"
    item_col: str | None = None
    grader_col: str | None = None
    label_col: str | None = None
    label_map: str | None = None
    solver: str = "highs"
    plot: str | Path | None = None
    csv: str | Path | None = None
    estimators: Sequence[str] = ()
    with_agreement: bool = False
    n_boot: int = 0
    seed: int = 0
    lower: Sequence[int] | str | None = None
    upper: Sequence[int] | str | None = None
    sequence: int = 1
    label_thresholds: str | dict[str, Any] | None = None
    grade: Any = None
    squares: str | Path | None = None
    squares_key: Sequence[int] | str | None = None
    with_bounds: bool = False
    max_keys: int = 10
    judges: bool = False
    judges_csv: str | Path | None = None
    judges_plot: str | Path | None = None
    swapped: bool = False
    tolerance: int = 0
    bands: str | None = None
    ties: str = "none"
    population: str = "none"
    confidence: float = 0.95
    resamples: int = 200
    time_limit: float | None = None
    progress: bool = False
    verbose: bool = False
    page: bool = False
    plot_per_label: str | Path | bool | None = None
    pspace: str | Path | bool | None = None


def run_audit(spec: AuditSpec | str | Path, threshold: Any = None, **options: Any
              ) -> AuditReport:
    """Run one audit: read ``spec.path`` and run the alarm of order ``spec.m`` (``1``, ``2``
    or ``"full"``).

    ``spec`` is an :class:`AuditSpec`; ``run_audit(path, threshold, m=..., ...)`` (the
    fields of :class:`AuditSpec` as keywords) builds one.

    Output paths are the caller's to check (the CLI does it before calling); ``plot`` and
    ``csv`` are written here. ``estimators`` (``"ds"``, ``"mv"``), ``with_agreement`` and
    ``n_boot`` (item bootstrap of ``T_1``, seeded) add :mod:`evalcert.logic.estimates`.
    ``lower``/``upper`` bound the key's label counts (QC bounds); ``sequence`` > 1 audits
    windows of that many consecutive items (App. E) whose key comes from one item-level key
    (:func:`evalcert.logic.sequences.alarm_sequence`; M=1 or the full joint);
    ``label_thresholds`` (``"a=0.6,b=0.5"``) and ``grade`` (overall accuracy) are checked as
    one M=1 spec. ``squares`` writes Figs. 5-6 for the first two graders at ``squares_key``
    (default: the first attaining key). ``csv`` (or ``with_bounds=True``, without a file)
    computes the per-(grader, label) accuracy ranges of :func:`grader_label_bounds` under the
    chosen M at the first ``max_keys`` attaining keys; the CSV has the columns
    ``CSV_COLUMNS``. ``judges`` adds the per-judge table.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "c.json"
    >>> _ = p.write_text(json.dumps({"authors": {"a": 5, "b": 10, "tie": 10},
    ...                              "gpt4": {"a": 4, "b": 18, "tie": 3}}))
    >>> run_audit(AuditSpec(p, "0.5")).result.T
    Fraction(2, 3)
    >>> run_audit(p, "0.5", m="1").result.T  # the keyword path
    Fraction(2, 3)
    """
    if not isinstance(spec, AuditSpec):
        if threshold is not None:
            options["threshold"] = threshold
        spec = AuditSpec(spec, **options)
    elif threshold is not None or options:
        raise InputError("give either an AuditSpec or a path with keywords, not both")
    return _run(spec)


def _run(spec: AuditSpec) -> AuditReport:
    m, solver, verbose, n_boot = str(spec.m), spec.solver, spec.verbose, spec.n_boot
    plot, csv, squares, max_keys = spec.plot, spec.csv, spec.squares, spec.max_keys
    estimators, with_agreement, sequence = tuple(spec.estimators), spec.with_agreement, \
        spec.sequence
    if m not in METHODS:
        raise InputError(f"m={m!r}; use 1, 2 or full")
    if not 0 <= n_boot <= MAX_BOOT:
        raise InputError(f"--bootstrap {n_boot}: give 0 (none) to {MAX_BOOT:,} resamples")
    if not 0 <= spec.seed < 2**63:
        raise InputError(f"--seed {spec.seed}: give a whole number >= 0")
    if isinstance(sequence, bool) or not isinstance(sequence, int) or sequence < 1:
        raise InputError(f"--sequence {sequence!r}: give a whole number >= 1")
    if spec.population not in (None, "none"):
        _check_population(spec)
    from evalcert.io.decisions import load_audit_input   # orchestration: the one file read

    kwargs: dict[str, Any] = {"format": spec.fmt, "item_col": spec.item_col,
                              "grader_col": spec.grader_col, "label_col": spec.label_col,
                              "label_map": spec.label_map}
    with heartbeat(f"reading {spec.path}", enabled=spec.progress):   # says so past 3 s
        data = load_audit_input(spec.path, labels=spec.labels, on_missing=spec.on_missing,
                                graders=spec.graders, **kwargs)
    if isinstance(data, Decisions):
        read = to_jsonable(data.report) if data.report is not None else {}
        notes = tuple(data.report.notes()) if data.report is not None else ()
    else:
        read, notes = {"format": "label counts (json)", "items_used": data.n_items}, ()
    swap = None
    if spec.swapped:
        if not isinstance(data, Decisions):
            raise InputError("--swapped needs a pairwise judge log, not label counts")
        from evalcert.logic.swaps import apply_on_missing, merge_swapped

        merged = merge_swapped(data)
        data, n_drop = apply_on_missing(merged.decisions, spec.on_missing)
        notes += (merged.summary() + (f"; {n_drop} comparisons shown in one order only "
                                      "dropped" if n_drop else ""),)
        read["swapped"] = {"items_before": merged.items_before,
                           "comparisons": merged.items_after, "dropped_one_order": n_drop,
                           "swap_consistency": merged.swap_consistency,
                           "judged_in_both_orders": merged.n_both}
        swap = {f"{g}/{o}": v for g, v in merged.swap_consistency.items() for o in ("ab", "ba")}
    if (spec.tolerance or spec.bands is not None) and spec.labels is None and \
            isinstance(data, Decisions):
        data, note = _ordered_labels(data)
        notes += (note,) if note else ()
    items = data
    with_bounds = spec.with_bounds
    if sequence != 1:
        if not isinstance(data, Decisions):
            raise InputError("--sequence needs the decisions in test order, not label counts")
        needs = [flag for flag, on in (("--csv", csv), ("--bounds", with_bounds or None),
                                       ("--plot", plot), ("--squares", squares),
                                       ("--label-thresholds", spec.label_thresholds),
                                       ("--grade", spec.grade)) if on is not None]
        if needs:
            raise InputError(f"{', '.join(needs)} with --sequence would range over window keys "
                             "no item-level key attains; drop them or --sequence")
        from evalcert.logic.sequences import sequence_aligned

        data = sequence_aligned(data, sequence)
        notes += (f"sequence-aligned (App. E): {len(data.items)} windows of {sequence} "
                  f"consecutive items, {len(data.labels)} labels, chained through one "
                  "item-level key",)
    bounds = {"lower": _ints(spec.lower, "lower"), "upper": _ints(spec.upper, "upper")}
    if m != "1" and not isinstance(data, Decisions):
        raise InputError(f"--m {m} needs question-aligned decisions (a judge log), not label "
                         "counts")
    if m in ("1", "2") and isinstance(data, Decisions) and not data.complete:
        raise InputError(f"--on-missing keep leaves skipped decisions; the M={m} axioms need "
                         "every grader on every item and only --m full handles skips: use "
                         "--m full or --on-missing drop")
    want_judges = spec.judges or spec.judges_csv is not None or spec.judges_plot is not None
    if spec.page and not want_judges and isinstance(data, Decisions) and \
            not _partial(spec) and sequence == 1:
        want_judges = _page_judges(data, max_keys)
        if isinstance(want_judges, str):
            notes += (want_judges,)
            want_judges = False
    if (estimators or with_agreement or n_boot or want_judges) and \
            not isinstance(data, Decisions):
        raise InputError("estimates, agreement, the bootstrap and the per-judge table need "
                         "the decisions (a judge log), not label counts")
    want_bounds = with_bounds or csv is not None or want_judges
    if isinstance(data, Decisions) and not data.complete:
        needs = [flag for flag, on in (("--csv", csv), ("--bounds", with_bounds or None),
                                       ("--plot", plot), ("--squares", squares))
                 if on is not None]
        if needs:
            raise InputError(f"{', '.join(needs)} need{'s' if len(needs) == 1 else ''} "
                             "every grader on every item (M=1 curves and squares, "
                             "accuracies at a fixed key); drop them or use --on-missing drop")
        want_bounds = False
    want_bounds = want_bounds and sequence == 1 and not _partial(spec)
    if not 1 <= max_keys <= 1000:
        raise InputError(f"--max-keys {max_keys}: give 1 to 1000 keys")
    if want_bounds:
        check_bounds_size(max_keys, len(data.graders), len(data.labels))
    key_sq = _ints(spec.squares_key, "key")
    if key_sq is not None:
        n_items = len(data.items) if isinstance(data, Decisions) else data.n_items
        if len(key_sq) != len(data.labels) or min(key_sq) < 0 or sum(key_sq) != n_items:
            raise InputError(f"--key {spec.squares_key}: give {len(data.labels)} counts >= 0 "
                             f"summing to Q = {n_items}, one per label {list(data.labels)}")
    _check_paper_figures(spec, data, bounds)
    curve = None
    want_curve = plot is not None or spec.plot_per_label is not None or (
        spec.page and not _partial(spec) and sequence == 1 and (
        not isinstance(data, Decisions) or data.complete))
    threshold = spec.threshold
    if spec.time_limit is not None and not spec.time_limit > 0:
        raise InputError(f"--time-limit {spec.time_limit}: give a number of seconds > 0")
    search = {"progress": spec.progress, "time_limit": spec.time_limit}
    if _partial(spec):
        result = _credit_alarm(spec, data, threshold, m, search, bounds)
    elif sequence != 1:
        from evalcert.logic.sequences import alarm_sequence

        result = alarm_sequence(items, sequence, threshold, m=m, solver=solver,
                                verbose=verbose, **search, **bounds)
    elif m == "1":
        result = alarm(data, threshold, curves=want_curve, **bounds)
        curve = result.curve
    elif m == "2":
        from evalcert.logic.pairs import alarm_m2

        result = alarm_m2(data, threshold, solver=solver, verbose=verbose, **search, **bounds)
    else:
        from evalcert.logic.joint import alarm_full

        result = alarm_full(data, threshold, solver=solver, verbose=verbose, **search,
                            **bounds)
    curve_summary = None
    extras: dict[str, Any] = {}
    if result.T_upper is not None:
        notes += (f"time limit reached: T in [{result.T}, {result.T_upper}] (proven bounds); "
                  "per-(grader, label) ranges and the judge table's exact columns "
                  "need the exact T and are skipped",)
        want_bounds = False
    if want_curve and curve is None:
        curve = minmax_curve(data, **bounds)
    if plot is not None:
        from evalcert.plots.alarms import plot_minmax_curve

        plot_minmax_curve(curve, plot, alarm_result=result)
        notes += (f"min-max curve written to {plot}",)
    views, figure_notes = _paper_figures(spec, data, curve, result)
    notes += figure_notes
    extras.update(views)
    if curve is not None:
        v = curve.values()
        k_max, k_min = int(np.argmax(v)), int(np.argmin(v))
        curve_summary = {"n_keys": int(len(v)), "max": str(curve.value(k_max)),
                         "min": str(curve.value(k_min)),
                         "argmin": curve.keys[k_min].tolist()}
    if want_bounds:
        extras["bounds"] = lab = grader_label_bounds(data, result, max_keys, solver=solver,
                                                     verbose=verbose)
        if csv is not None:
            from evalcert.io.outputs import writing
            with writing(csv) as tmp, open(tmp, "w", newline="") as fh:
                writer = _csv.DictWriter(fh, fieldnames=list(CSV_COLUMNS))
                writer.writeheader()
                writer.writerows(lab.rows())
            notes += (f"per-(grader, label) accuracy ranges under {lab.method} (every grader "
                      f">= T = {result.T}, and at any level) at {len(lab.keys)} attaining "
                      f"key(s) written to {csv}",)
    if curve is not None and result.curve is None:
        result = dataclasses.replace(result, curve=curve)
    if estimators or with_agreement or n_boot:
        from evalcert.logic import estimates as est

        size = (f"{int((data.array >= 0).sum()):,} decisions ({len(data.items):,} items, "
                f"{len(data.graders)} graders)")
        estimates = []
        for e in estimators:             # crowd-kit's fits have no loop to draw: say so
            with heartbeat(f"{est.ESTIMATOR_NAMES.get(e, e)} on {size}",
                           enabled=spec.progress):
                estimates.append(est.estimate(data, result.T, e, solver=solver))
        extras["estimates"] = tuple(estimates)
        with heartbeat(f"agreement statistics on {size}", enabled=spec.progress):
            extras["agreement"] = est.agreement(data) if with_agreement else None
        with heartbeat(f"item bootstrap ({n_boot} resamples) on {size}",
                       enabled=spec.progress):
            extras["bootstrap"] = est.bootstrap_t(data, n_boot, spec.seed) if n_boot else None
    if spec.population not in (None, "none"):
        extras["population"] = _population(spec, data, result, m)
    if want_judges:
        from evalcert.logic.judges import judge_table

        extras["judges"] = table = judge_table(data, result, extras.get("bounds"),
                                               seed=spec.seed, swap=swap)
        if spec.judges_csv is not None:
            rows = table.csv_rows()
            from evalcert.io.outputs import writing
            with writing(spec.judges_csv) as tmp, open(tmp, "w", newline="") as fh:
                writer = _csv.DictWriter(fh, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
            notes += (f"per-judge table written to {spec.judges_csv}",)
        if spec.judges_plot is not None:
            from evalcert.plots.judges import plot_judges

            plot_judges(table, spec.judges_plot)
            notes += (f"per-judge figure written to {spec.judges_plot}",)
    if squares is not None:
        from evalcert.plots.alarms import plot_correctness_squares

        counts = data.label_counts() if isinstance(data, Decisions) else data
        key = key_sq or result.attaining_keys[0]
        plot_correctness_squares(counts, key, counts.graders[:2], squares,
                                 threshold=float(result.threshold))
        notes += (f"correctness squares of {', '.join(counts.graders[:2])} at key {key} "
                  f"written to {squares}",)
    if spec.label_thresholds is not None or spec.grade is not None:
        extras["spec"] = _spec(data, spec.label_thresholds, spec.grade, bounds, solver)
    return AuditReport(result, read, notes, curve_summary, **extras)


def _check_population(spec: AuditSpec) -> None:
    """Refuse ``--population`` options before any work."""
    if spec.population not in ("bootstrap", "exact"):
        raise InputError(f"--population {spec.population!r}: use bootstrap, exact or none")
    if not 0 < spec.confidence < 1:
        raise InputError(f"--confidence {spec.confidence}: give a level strictly between 0 "
                         "and 1, e.g. 0.95")
    if not 1 <= spec.resamples <= MAX_BOOT:
        raise InputError(f"--resamples {spec.resamples}: give 1 to {MAX_BOOT:,} resamples")
    flags = [flag for flag, on in (("--tolerance/--bands/--ties", _partial(spec) or None),
                                   ("--sequence", spec.sequence != 1 or None),
                                   ("--lower", spec.lower), ("--upper", spec.upper))
             if on is not None]
    if flags:
        raise InputError(f"--population covers exact-match correctness on free keys; drop "
                         f"{', '.join(flags)}")


def _population(spec: AuditSpec, data: Any, result: AlarmResult, m: str) -> tuple[Any, ...]:
    """``--population``: upper confidence bounds on the population's ``T`` for M=1 (when
    the decisions are complete) and the chosen M (:mod:`evalcert.logic.population`)."""
    if result.T_upper is not None:
        raise InputError("--population needs the test's exact T; the time limit left T in "
                         f"[{result.T}, {result.T_upper}]: raise --time-limit")
    from evalcert.logic.population import population_bounds

    complete = not isinstance(data, Decisions) or data.complete
    ms = (["1"] if complete and m != "1" else []) + [m]
    return population_bounds(data, ms, spec.population, {m: result.T}, level=spec.confidence,
                             resamples=spec.resamples, seed=spec.seed, solver=spec.solver,
                             progress=spec.progress)


def _ordered_labels(data: Decisions) -> tuple[Decisions, str | None]:
    """Undeclared labels for ``--tolerance``/``--bands``, which need an order: numbers
    (scores 1-10) are put in numeric order, since the order of first appearance in a file
    says nothing; other labels must be declared in order with ``--labels``.

    Examples
    --------
    >>> dec = Decisions(("q1", "q2"), ("x",), ("7", "10", "2"), ((0,), (1,)))
    >>> ordered, note = _ordered_labels(dec)
    >>> ordered.labels, ordered.codes, note[:36]
    (('2', '7', '10'), ((1,), (2,)), 'labels put in numeric order 2, 7, 10')
    """
    try:
        values = [float(label) for label in data.labels]
    except ValueError:
        raise InputError(f"--tolerance and --bands need the labels in order, but "
                         f"{list(data.labels)[:10]} are not numbers: declare the order with "
                         "--labels (e.g. --labels poor,fair,good)") from None
    order = sorted(range(len(values)), key=values.__getitem__)
    if order == list(range(len(values))):
        return data, None
    rank = {old: new for new, old in enumerate(order)}
    codes = tuple(tuple(rank[c] if c >= 0 else c for c in row) for row in data.codes)
    labels = tuple(data.labels[k] for k in order)
    return (dataclasses.replace(data, labels=labels, codes=codes),
            f"labels put in numeric order {', '.join(labels)} for --tolerance/--bands "
            "(declare --labels to set another)")


def _partial(spec: AuditSpec) -> bool:
    """Whether a partial-credit rule (``--tolerance``, ``--bands``, ``--ties half``) is on."""
    return bool(spec.tolerance) or spec.bands is not None or spec.ties not in (None, "none")


def _credit_alarm(spec: AuditSpec, data: Any, threshold: Any, m: str, search: dict[str, Any],
                  bounds: dict[str, Any]) -> AlarmResult:
    """The alarm under one partial-credit rule (:mod:`evalcert.logic.ordinal`), alone."""
    flags = [flag for flag, on in (("--sequence", spec.sequence != 1 or None),
                                   ("--bounds", spec.with_bounds or None), ("--csv", spec.csv),
                                   ("--plot", spec.plot), ("--squares", spec.squares),
                                   ("--label-thresholds", spec.label_thresholds),
                                   ("--grade", spec.grade)) if on is not None]
    if flags:
        raise InputError("--tolerance, --bands and --ties run the alarm alone (with --judges' "
                         f"estimated columns); drop {', '.join(flags)}")
    from evalcert.logic.ordinal import alarm_bands, alarm_credit, alarm_tolerance, credit_table

    if not isinstance(data, Decisions):
        raise InputError("--tolerance, --bands and --ties need the decisions (a judge log), "
                         "not label counts")
    table = credit_table(data.labels, tolerance=spec.tolerance, bands=spec.bands,
                         ties=spec.ties)
    opts = {"m": m, "solver": spec.solver, "verbose": spec.verbose, **search, **bounds}
    if spec.tolerance:
        return alarm_tolerance(data, threshold, spec.tolerance, **opts)
    if spec.bands is not None:
        return alarm_bands(data, threshold, spec.bands, **opts)
    # half credit runs the key search too (levels over denominators up to 2Q): its bar
    # says the keys decided and the bounds on T past 3 s
    return alarm_credit(data, threshold, table, rule="ties scored as half-right", **opts)


def _page_judges(data: Decisions, max_keys: int) -> bool | str:
    """Whether the HTML page can have its per-judge table (True), or the note saying why
    not: the table needs statsmodels and krippendorff, and its exact ranges a bounded
    number of integer programs."""
    import importlib.util

    missing = [m for m in ("statsmodels", "krippendorff") if importlib.util.find_spec(m) is None]
    if missing:
        return (f"the page's per-judge table needs {', '.join(missing)} (pip install "
                "'evalcert[estimates]'); it is left out")
    if not 1 <= max_keys <= 1000:
        return True                     # refused below with the --max-keys message
    try:
        check_bounds_size(max_keys, len(data.graders), len(data.labels))
    except InputError as exc:
        return f"the page's per-judge table is left out: {exc}"
    return True


def _ints(text: Sequence[int] | str | None, name: str) -> tuple[int, ...] | None:
    if text is None or not isinstance(text, str):
        return None if text is None else tuple(int(v) for v in text)
    try:
        return tuple(int(v) for v in text.split(","))
    except ValueError:
        raise InputError(f"--{name} {text!r}: give one whole number per label, e.g. "
                         "0,5,0") from None


def _spec(data: Any, label_thresholds: Any, grade: Any, bounds: dict[str, Any],
          solver: str) -> dict[str, Any]:
    from evalcert.logic.ilp import consistent_ilp
    from evalcert.io.decisions import parse_label_map

    levels = parse_label_map(label_thresholds) if label_thresholds is not None else None
    res = consistent_ilp(data, label_thresholds=levels, grade=grade, solver=solver, **bounds)
    text = ", ".join(f"{k} > {v}" for k, v in (levels or {}).items())
    if grade is not None:
        text += (", " if text else "") + f"grade > {grade}"
    return {"spec": f"every grader: {text}", "feasible": res.feasible, "key": res.key,
            "correct": res.correct, "solver": res.solver}


def _check_paper_figures(spec: AuditSpec, data: Any, bounds: dict[str, Any]) -> None:
    """Refuse Fig. 8 / Fig. 2 outputs where the M=1 view they draw does not exist."""
    asked = [f for f, v in (("--plot-per-label", spec.plot_per_label),
                            ("--pspace", spec.pspace)) if v is not None]
    if not asked:
        return
    if spec.sequence != 1 or _partial(spec):
        raise InputError(f"{', '.join(asked)} draw{'s' if len(asked) == 1 else ''} M=1 "
                         "views of item-level keys; drop them or --sequence/--tolerance/"
                         "--bands/--ties")
    if isinstance(data, Decisions) and not data.complete:
        raise InputError(f"{', '.join(asked)} need every grader on every item (M=1 label "
                         "counts of one test); drop them or use --on-missing drop")
    if spec.pspace is not None:
        if len(data.labels) != 2:
            raise InputError(f"--pspace draws two-label tests (Fig. 2's three axes: P_a and "
                             f"two accuracies); this one has {len(data.labels)} labels "
                             f"{list(data.labels)}")
        if bounds["lower"] is not None or bounds["upper"] is not None:
            raise InputError("--pspace draws the whole prevalence range; drop --lower/--upper")
        if spec.pspace is not True:                     # sized before the audit runs
            from evalcert.logic.pspace import MAX_POINTS, pspace_size

            counts = data.label_counts() if isinstance(data, Decisions) else data
            size = sum(pspace_size(counts.n_items, counts.array[i], "axioms")
                       for i in range(min(len(counts.graders), PSPACE_GRADERS)))
            if size > MAX_POINTS:
                raise InputError(f"--pspace {spec.pspace}: {size:,} evaluations to draw at "
                                 f"Q = {counts.n_items} (limit {MAX_POINTS:,}); give --pspace "
                                 "without a file and --json/--html for its numbers")


#: most graders drawn by ``--pspace`` (one 3-D panel each)
PSPACE_GRADERS = 6
#: largest a-priori set drawn behind the graders' points (Fig. 2 itself)
PSPACE_BACKGROUND = 20_000
#: points per label of Fig. 8 in the report (JSON, page) and in the figure drawn from it
LABEL_POINTS = 500
#: points per grader of Fig. 2 listed in the report (the class counts cover all)
PSPACE_POINTS = 200


def _paper_figures(spec: AuditSpec, data: Any, curve: Any, result: AlarmResult
                   ) -> tuple[dict[str, Any], tuple[str, ...]]:
    """Fig. 8 (per-label curves) and Fig. 2 (P-space) when asked: their numbers for the
    report, each figure drawn when a file was named; the notes."""
    notes: tuple[str, ...] = ()
    views: dict[str, Any] = {}
    if spec.plot_per_label is not None:
        views["label_curves"] = curve.label_curves(LABEL_POINTS)
        if spec.plot_per_label is not True:
            from evalcert.plots.alarms import plot_label_curves

            plot_label_curves(curve, spec.plot_per_label, threshold=float(result.threshold),
                              max_points=LABEL_POINTS)
            notes += (f"per-label min-max curves (Fig. 8) written to {spec.plot_per_label}",)
    if spec.pspace is not None:
        from evalcert.logic.pspace import pspace_evaluations, pspace_size, pspace_summary

        counts = data.label_counts() if isinstance(data, Decisions) else data
        views["pspace"] = pspace_summary(counts.n_items, counts.array.tolist(),
                                         result.threshold, counts.graders, counts.labels,
                                         max_points=PSPACE_POINTS)
        if spec.pspace is not True:
            from evalcert.plots.alarms import plot_pspace

            shown = counts.graders[:PSPACE_GRADERS]
            spaces = [pspace_evaluations(counts.n_items, counts.array[i], "axioms",
                                         counts.labels) for i in range(len(shown))]
            back = (pspace_evaluations(counts.n_items, stage="a priori", labels=counts.labels)
                    if pspace_size(counts.n_items) <= PSPACE_BACKGROUND else None)
            plot_pspace(spaces, spec.pspace, result.threshold, graders=shown,
                        background=back, seed=spec.seed)
            more = (f" (the first {len(shown)} of {len(counts.graders)} graders)"
                    if len(shown) < len(counts.graders) else "")
            notes += (f"P-space view (Fig. 2) of the M=1 evaluations at x = "
                      f"{result.threshold} written to {spec.pspace}{more}",)
    return views, notes
