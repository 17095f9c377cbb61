"""The page of a solver benchmark: which backend to use (derived from the runs), the summary
table, the performance profiles, the failures, the machine.

Examples
--------
>>> from evalcert.benchmarking import bench
>>> result = bench(["ilp-m1"], backends=["pulp-highs"], profiles=["default"], quick=True,
...                n_jobs=1, memory=False, progress=False)
>>> page_from_bench(result).verdict.headline
'Solver benchmark: 2 of 2 runs certified'
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from evalcert.report.figures import figure_uri
from evalcert.report.page import (Facts, Figure, Page, Provenance, Section, Table, Text,
                                  Verdict, versions)

__all__ = ["page_from_bench"]


def page_from_bench(result: Any, *, command: str | None = None) -> Page:
    """The page of a :class:`~evalcert.benchmarking.runner.BenchmarkResult`
    (``evalcert bench``).

    Parameters
    ----------
    result : BenchmarkResult
    command : str, optional
        The command line that reproduces the run.

    Examples
    --------
    >>> from evalcert.benchmarking import bench
    >>> result = bench(["ilp-m1"], backends=["pulp-highs"], profiles=["default"], quick=True,
    ...                n_jobs=1, memory=False, progress=False)
    >>> page = page_from_bench(result, command="evalcert bench --family ilp-m1 --quick")
    >>> page.verdict.status, [s.title for s in page.sections][:2]
    ('ok', ['Summary', 'Performance profiles'])
    """
    from evalcert.benchmarking.verdict import verdict
    from evalcert.plots.profiles import plot_performance_profile

    s, m = result.settings, result.machine
    n_ok = sum(r.success for r in result.records)
    n = len(result.records)
    lines = verdict(result)
    facts = Facts((("runs", n), ("certified", n_ok), ("problems", s.get("n_problems")),
                   ("time limit (s)", float(s["time_limit"])), ("SGM shift (s)",
                                                                float(s["shift"])),
                   ("wall seconds", float(result.wall_seconds)),
                   ("scale", s.get("scale", "")), ("workers", f"{s.get('joblib_backend')}, "
                                                               f"n_jobs={s.get('n_jobs')}")),
                  id="verdict-facts")
    head = Verdict(f"Solver benchmark: {n_ok} of {n} runs certified",
                   "ok" if n_ok == n else ("warn" if n_ok else "alarm"),
                   "A run succeeds when the solver reports success, evalcert's own certificate "
                   "passes at the profile's tolerance and it finishes within the time limit. "
                   "Which backend to use, derived from the runs (it holds for these problems "
                   "on this machine):", facts,
                   (Text("\n".join(_plain_text(line) for line in lines) or "No runs.", "list"),))
    heads, rows = result.summary_rows()
    sections = [Section("Summary", (Table(tuple(heads), tuple(tuple(_plain(v) for v in r)
                                                              for r in rows),
                                          caption="Per kind, profile and backend (SGM: "
                                                  "shifted geometric mean of runtime, failures "
                                                  "charged the time limit)", id="summary-table"),),
                        id="summary-section")]
    figures = tuple(Figure(figure_uri(plot_performance_profile(p)),
                           alt=f"performance profile {p.kind} {p.profile}",
                           id=f"profile-{p.kind}-{p.profile}", half=True)
                    for p in result.profiles)
    if figures:
        sections.append(Section("Performance profiles", (
            Text("Share of problems solved and certified within tau times the fastest "
                 "backend; the height at the right edge is the success rate.", "note"),
            *figures), id="profiles-section"))
    failures = Counter((r.backend, r.profile, r.reason) for r in result.records
                       if not r.success)
    sections.append(Section("Failures", (Table(("backend", "profile", "reason", "runs"),
                                               tuple((*k, v) for k, v in sorted(
                                                   failures.items())), id="failures"),)
                             if failures else (Text("No failures.", "note"),),
                            id="failures-section"))
    machine = (("CPU", m.get("cpu")), ("logical CPUs", m.get("cpu_count")),
               ("usable CPUs", m.get("usable_cpus")),
               ("load before", ", ".join(f"{v:.2f}" for v in m.get("load_before", ()))),
               ("load after", ", ".join(f"{v:.2f}" for v in m.get("load_after", ()))))
    sections.append(Section("Machine", (Facts(machine, id="machine"),), id="machine-section"))
    solver_versions = tuple(sorted(m.get("versions", {})))
    inputs = (("families", ", ".join(sorted({r.family for r in result.records}))),
              ("backends", ", ".join(sorted({r.backend for r in result.records}))),
              ("profiles", ", ".join(dict.fromkeys(r.profile for r in result.records))))
    return Page("Solver benchmark", head, tuple(sections),
                Provenance(inputs, tuple(s.get("notes", ())), command,
                           versions(solver_versions)),
                subtitle=f"{n} runs on {s.get('n_problems')} problems in "
                         f"{result.wall_seconds:.1f} s")


def _plain_text(line: str) -> str:
    """A line of the Markdown verdict as plain text (no bullets, bold or code marks)."""
    return line.lstrip("- ").replace("**", "").replace("`", "")


def _plain(value: Any) -> Any:
    item = getattr(value, "item", None)
    return item() if callable(item) and not isinstance(value, str) else value
