"""Write a benchmark's outputs: the CSV of every run, a Markdown report, PNG profiles.

Files written into the output folder by :func:`write_report`:

``runs.csv``                 one row per (problem, backend, profile) run;
``report.md``                machine and library versions, settings, the tolerance
                             each backend was given, summary tables, profile tables,
                             success by family and the failure reasons;
``profile_<kind>_<profile>.png``  Dolan-More performance profiles;
``scaling.png``              runtime against observed cells on the sparse family.

The report opens with a "which backend should I use" verdict computed from
the runs (:mod:`evalcert.benchmarking.verdict`).
"""

from __future__ import annotations

import datetime
import importlib.metadata
import math
import os
import platform
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import pandas as pd

from evalcert.benchmarking.backends import solver_parameters
from evalcert.benchmarking.verdict import scaling_table, verdict
from evalcert.solvers.backends.base import SolveSettings
from evalcert.solvers.certificates import Tolerance

if TYPE_CHECKING:
    from evalcert.benchmarking.results import BenchmarkResult

__all__ = ["LIBRARIES", "machine_info", "markdown_table", "report_files", "check_report_paths",
           "write_report"]

LIBRARIES = ("evalcert", "numpy", "scipy", "cvxpy", "osqp", "clarabel", "scs", "ecos",
             "highspy", "pulp", "qpsolvers", "piqp", "proxsuite", "daqp", "cvxopt", "joblib")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info() -> dict[str, Any]:
    """CPU model, core counts, platform and the versions of the solver libraries.

    Examples
    --------
    >>> info = machine_info()
    >>> sorted(info)
    ['cpu', 'cpu_count', 'platform', 'python', 'usable_cpus', 'versions']
    >>> set(info["versions"]) == set(LIBRARIES), info["versions"]["numpy"] != "not installed"
    (True, True)
    """
    versions = {}
    for lib in LIBRARIES:
        try:
            versions[lib] = importlib.metadata.version(lib)
        except importlib.metadata.PackageNotFoundError:
            versions[lib] = "not installed"
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu": _cpu_model(), "cpu_count": os.cpu_count(), "usable_cpus": usable,
            "platform": platform.platform(), "python": platform.python_version(),
            "versions": versions}


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return "-" if math.isnan(v) else f"{v:.3g}"
    return str(v)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table; floats with 3 significant digits.

    Examples
    --------
    >>> rows = [["native", 0.123456], ["scs", float("nan")]]
    >>> print(markdown_table(["backend", "SGM (s)"], rows))
    | backend | SGM (s) |
    |---|---|
    | native | 0.123 |
    | scs | - |
    """
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _tolerance_table(result: "BenchmarkResult") -> str:
    rows = []
    for name in result.settings["backends"]:
        if name.startswith("pulp-"):
            rows.append([name, "exact", "gapRel=0 (MIP optimality), value checked exactly"])
            continue
        for prof, tier in result.settings["profiles"].items():
            opts = solver_parameters(name, SolveSettings(
                tolerance=Tolerance(tier, tier), time_limit=result.settings["time_limit"]))
            shown = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                              for k, v in opts.items() if k != "verbose")
            rows.append([name, f"{prof} ({tier:g})", shown])
    return markdown_table(["backend", "profile", "parameters given to the solver"], rows)


def _by_family(result: "BenchmarkResult") -> str:
    backends = list(dict.fromkeys(r.backend for r in result.records))
    cells: dict[tuple[str, str], dict[str, list[bool]]] = {}
    for r in result.records:
        cells.setdefault((r.family, r.profile), {}).setdefault(r.backend, []).append(r.success)
    rows = [[fam, prof] + [f"{sum(c[b])}/{len(c[b])}" if b in c else "" for b in backends]
            for (fam, prof), c in cells.items()]
    return markdown_table(["family", "profile"] + backends, rows)


def _failures(result: "BenchmarkResult") -> str:
    count = Counter((r.backend, r.profile, r.reason) for r in result.records if not r.success)
    rows = [[b, p, reason, n] for (b, p, reason), n in sorted(count.items())]
    return markdown_table(["backend", "profile", "reason", "runs"], rows) if rows \
        else "No failures."


def _scaling_section(result: "BenchmarkResult") -> list[str]:
    parts = []
    for box in ("all", "observed"):
        sizes, table, slopes = scaling_table(result.records, box)
        if len(sizes) < 2:
            continue
        rows = [[b, *row, slopes[b]] for b, row in sorted(table.items())]
        parts += [f"### Box `{box}`",
                  markdown_table(["backend", *[f"{c} cells" for c in sizes], "a"], rows)]
    if not parts:
        return []
    return ["## Scaling with observed cells (sparse family, default profile)",
            "Runtime of a certified fit in seconds (- = failed or stopped at the time limit); "
            "`a` is the slope of log(time) against log(cells) over the certified sizes.",
            *parts, "![scaling](scaling.png)"]


def _markdown(result: "BenchmarkResult", pngs: dict[str, str], command: str | None) -> str:
    m, s = result.machine, result.settings
    heads, rows = result.summary_rows()
    taus = (1.0, 2.0, 10.0, math.inf)
    prof_rows = [[p.kind, p.profile, b] + [p.fraction(b, t) for t in taus]
                 for p in result.profiles for b in p.backends]
    versions = ", ".join(f"{k} {v}" for k, v in m["versions"].items())
    parts = [
        "# evalcert solver benchmark",
        f"Command: `{command or 'evalcert.benchmarking.run_benchmark(...)'}`  ",
        f"Finished {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}; "
        f"{len(result.records)} runs on {s['n_problems']} problems in "
        f"{result.wall_seconds:.1f} s wall ({s['joblib_backend']}, "
        f"n_jobs={s['n_jobs']})"
        + (f"; {m['cpu_seconds']:.1f} s of CPU time (this process and its runs: when wall x "
           "workers is much larger, the machine was shared)."
           if math.isfinite(m.get("cpu_seconds", math.nan)) else "."),
        "## Machine",
        f"- CPU: {m['cpu']}; {m['cpu_count']} logical CPUs, {m['usable_cpus']} usable\n"
        f"- load average (1/5/15 min) before: {', '.join(f'{v:.2f}' for v in m['load_before'])}"
        f"; after: {', '.join(f'{v:.2f}' for v in m['load_after'])}\n"
        f"- {m['platform']}, Python {m['python']}\n"
        f"- {versions}",
        "## How to read this",
        f"- A run **succeeds** when the solver reports success, evalcert's own certificate "
        f"(primal residual, dual residual, complementary slackness, duality gap recomputed "
        f"from the problem data) passes at the profile's tolerance `Tolerance(abs=tier, "
        f"rel=tier)`, and the run finishes within the time limit ({s['time_limit']:g} s). "
        "ILPs succeed when PuLP reports Optimal and the exact value equals the closed-form "
        "M=1 value (M=1) or does not exceed it (M=2).\n"
        f"- **SGM**: shifted geometric mean of runtime (build + compile + solve), shift "
        f"{s['shift']:g} s, failures charged the time limit; **SGM ratio** = SGM / best SGM "
        "of the same kind and profile.\n"
        "- **max obj. err**: largest `|objective - reference| / max(1, |reference|)` of a "
        "successful run; the reference is the certified run with the smallest KKT error.\n"
        f"- **peak MiB**: {s['memory']}.",
        "## Which backend should I use?",
        "Derived from the runs below by `evalcert.benchmarking.verdict` (rules in its "
        "docstring); it holds for these problems on this machine.",
        "\n".join(verdict(result)) or "No runs.",
        *(["## Notes", "\n".join(f"- {n}" for n in s.get("notes", []))]
          if s.get("notes") else []),
        "## Summary",
        markdown_table(heads, rows),
        "## Performance profiles",
        "Share of problems solved (and certified) within tau times the fastest backend.",
        markdown_table(["kind", "profile", "backend"] + [f"rho({t:g})" for t in taus],
                       prof_rows),
        "\n".join(f"![{key}]({file})" for key, file in pngs.items()),
        *_scaling_section(result),
        "## Tolerances given to each backend",
        _tolerance_table(result),
        "## Success by family",
        _by_family(result),
        "## Failures",
        _failures(result),
    ]
    return "\n\n".join(parts) + "\n"


def report_files(profiles: Sequence[str]) -> list[str]:
    """Names of every file :func:`write_report` may write for these profiles.

    Examples
    --------
    >>> report_files(["low"])
    ['runs.csv', 'report.md', 'scaling.png', 'profile_qp_low.png', 'profile_ilp_exact.png']
    """
    pngs = [f"profile_qp_{p}.png" for p in profiles] + ["profile_ilp_exact.png"]
    return ["runs.csv", "report.md", "scaling.png", *pngs]


def check_report_paths(out: Path, profiles: Sequence[str], force: bool = False,
                       follow_symlinks: bool = False) -> Path:
    """Refuse, before any run, an ``out`` that is a file or whose report files
    exist (unless ``force``), or whose parent folder is missing, or that is a
    symbolic link (unless ``follow_symlinks``), or whose report files are links
    leading outside it; see :func:`evalcert.io.outputs.check_outputs`. Returns the
    folder to write (``out``, or its target when a link is followed).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = check_report_paths(Path(tmp) / "bench", ["default"])  # new folder: fine
    ...     _ = (Path(tmp) / "report.md").write_text("an earlier report")
    ...     _ = check_report_paths(Path(tmp), ["default"], force=True)  # replaced on request
    ...     check_report_paths(Path(tmp), ["default"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    evalcert.errors.InputError: --out ... exists; pass --force to overwrite it ...
    """
    from evalcert.errors import InputError
    from evalcert.io.outputs import check_outputs

    if out.is_symlink():
        if not follow_symlinks:
            raise InputError(f"--out {out} is a symbolic link; evalcert does not write through "
                             "links: give the folder itself, or pass --follow-symlinks")
        out = Path(os.path.realpath(out))
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is a file; give a folder for the benchmark report")
    if not out.exists():
        parent = out.parent if str(out.parent) else Path(".")
        if not parent.is_dir():
            raise InputError(f"--out {out}: folder {parent} does not exist; create it first")
        return out
    check_outputs({f"--out {out} ({name})": out / name for name in report_files(profiles)},
                  force=force, follow_symlinks=follow_symlinks, within=out)
    return out


def write_report(result: "BenchmarkResult", out: Path,
                 command: str | None = None) -> dict[str, Path]:
    """Write ``runs.csv``, ``report.md``, the profile PNGs and ``scaling.png`` (with
    a sparse family of two sizes or more) into ``out``; return their paths.

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np, scipy.sparse as sp
    >>> from evalcert.benchmarking.backends import select_backends
    >>> from evalcert.benchmarking.families import StandardQP
    >>> from evalcert.benchmarking.runner import run_benchmark
    >>> from evalcert.solvers.certificates import QP
    >>> qp = QP(P=sp.eye(1, format="csc"), q=np.array([-2.0]), A=sp.eye(1, format="csc"),
    ...         l=np.array([-1.0]), u=np.array([1.0]))
    >>> result = run_benchmark([StandardQP("demo", "demo-qp", qp, (1, 1))],
    ...                        select_backends(["native"]), ["default"], n_jobs=1,
    ...                        memory=False, progress=False)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     paths = write_report(result, Path(tmp) / "bench")
    ...     written = sorted(p.name for p in (Path(tmp) / "bench").iterdir())
    >>> sorted(paths)
    ['csv', 'markdown', 'profile_qp_default']
    >>> written
    ['profile_qp_default.png', 'report.md', 'runs.csv']
    """
    from evalcert.io.outputs import writing
    from evalcert.plots.profiles import plot_performance_profile, plot_scaling

    out.mkdir(parents=True, exist_ok=True)
    paths = {"csv": out / "runs.csv", "markdown": out / "report.md"}
    with writing(paths["csv"]) as tmp:
        pd.DataFrame([r.to_dict() for r in result.records]).to_csv(tmp, index=False)
    pngs = {}
    for prof in result.profiles:
        file = f"profile_{prof.kind}_{prof.profile}.png"
        plot_performance_profile(prof, out / file)
        paths[f"profile_{prof.kind}_{prof.profile}"] = out / file
        pngs[f"{prof.kind} {prof.profile}"] = file
    panels = {box: scaling_table(result.records, box)[:2] for box in ("all", "observed")}
    panels = {box: p for box, p in panels.items() if len(p[0]) >= 2}
    if panels:
        plot_scaling(panels, out / "scaling.png")
        paths["scaling"] = out / "scaling.png"
    with writing(paths["markdown"]) as tmp:
        tmp.write_text(_markdown(result, pngs, command), encoding="utf-8")
    return paths
